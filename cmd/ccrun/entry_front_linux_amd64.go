//go:build ccrunfront && linux && amd64

package main

// frontEntry is the front's ELF entry point (entry_front_linux_amd64.s):
// `make build` links the front with -ldflags=-E=main.frontEntry.
func frontEntry()
