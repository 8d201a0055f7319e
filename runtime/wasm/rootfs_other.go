//go:build !linux

package wasm

// fileKey is not implemented outside Linux: modules given by path are
// read and hashed on every run.
func fileKey(string) string { return "" }
