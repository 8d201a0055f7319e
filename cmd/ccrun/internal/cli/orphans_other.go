//go:build !linux

package cli

// endOrphans ends nothing on this OS: the helpers are found through /proc
// and pinned with a pidfd, which only Linux has (and the @wasm worker, the
// only helper that can be orphaned, needs Linux's parent-death signal).
func endOrphans(Helpers) ([]orphan, error) { return nil, nil }
