package relay

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun/internal/cbuild"
)

// TestBuiltFromSource: the committed binaries are what src/relay.c builds
// to with the Makefile's rule.
func TestBuiltFromSource(t *testing.T) {
	out := cbuild.Make(t, "../../../..", "relay", "RELAY_OUT")
	for _, arch := range []string{"amd64", "arm64"} {
		name := "relay_" + arch + ".bin"
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := ELF(arch); !bytes.Equal(got, want) {
			t.Errorf("%s (%d bytes) differs from what src/relay.c builds to (%d bytes): run make relay", name, len(got), len(want))
		}
	}
}

// TestELF: relay is a static executable of each machine, with no
// writable segment and no interpreter; none for another architecture.
func TestELF(t *testing.T) {
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		f, err := elf.NewFile(bytes.NewReader(ELF(arch)))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if f.Machine != machine {
			t.Errorf("%s: machine %s", arch, f.Machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC || (p.Type == elf.PT_LOAD && p.Flags&elf.PF_W != 0) {
				t.Errorf("%s: a %s segment (flags %s)", arch, p.Type, p.Flags)
			}
		}
	}
	if ELF("riscv64") != nil {
		t.Error("a relay for riscv64")
	}
}
