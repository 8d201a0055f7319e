// Package relay is the program of the container that stands for the
// egress proxy for @docker calls (src/relay.c): in a network namespace of
// loopback only, which a call's container joins, it listens on a TCP port
// and hands each connection, byte for byte, to the proxy's unix socket
// bound into it; a byte on its stdin resets it between calls (every
// connection killed, the listener made again), and the end of its stdin
// ends it. A static ELF
// executable of about 2 KB for each architecture an engine may run, built
// by `make relay` (TestBuiltFromSource).
package relay

import _ "embed"

var (
	//go:embed relay_amd64.bin
	amd64 []byte
	//go:embed relay_arm64.bin
	arm64 []byte
)

// ELF is relay for arch (GOARCH's name of the engine's architecture), or
// nil where there is none.
func ELF(arch string) []byte {
	switch arch {
	case "amd64":
		return amd64
	case "arm64":
		return arm64
	}
	return nil
}
