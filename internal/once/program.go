package once

import _ "embed"

// once itself, a static ELF executable of about 2.3 KB for each
// architecture an engine may run, built from src/once.c by `make once`
// (TestBuiltFromSource).
var (
	//go:embed once_amd64.bin
	amd64 []byte
	//go:embed once_arm64.bin
	arm64 []byte
)

// Arches returns the architectures once is built for, as Go's GOARCH and
// Kubernetes' kubernetes.io/arch label name them.
func Arches() []string { return []string{"amd64", "arm64"} }

// ELF is once for arch (a name of Arches), or nil where there is none.
// arch is the engine's (the Docker Engine's, a node's), which may not be
// ccrun's own.
func ELF(arch string) []byte {
	switch arch {
	case "amd64":
		return amd64
	case "arm64":
		return arm64
	}
	return nil
}
