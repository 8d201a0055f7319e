package ctr

import _ "embed"

// hold, a static ELF executable of a few hundred bytes for each
// architecture an engine may run, built from hold/hold.c by `make once`
// (internal/once's TestBuiltFromSource).
var (
	//go:embed hold_amd64.bin
	holdAMD64 []byte
	//go:embed hold_arm64.bin
	holdARM64 []byte
)

// Holder is the program that keeps a container started without running
// anything of its image's (a pod's copy container on Kubernetes), for
// arch, the engine's architecture as GOARCH names it ("amd64", "arm64"),
// which may not be ccrun's own. It blocks in ppoll(2), waiting on nothing,
// until a fatal signal ends it (SIGTERM included: it handles none). It
// reads nothing, writes nothing, opens nothing and needs no library, so it
// runs in any image of that architecture (the image may hold no program
// at all).
//
// Nil for an architecture without one.
func Holder(arch string) []byte {
	switch arch {
	case "amd64":
		return holdAMD64
	case "arm64":
		return holdARM64
	}
	return nil
}
