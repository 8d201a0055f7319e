// Package relay is the program of the container that stands for the
// egress proxy on a @docker call's internal network (src/relay.c): it
// listens on a TCP port of that network and hands each connection, byte
// for byte, to the proxy's unix socket bound into it. A static ELF
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
