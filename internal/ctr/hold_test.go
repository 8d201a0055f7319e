package ctr

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestHolder: the holder (internal/once's TestBuiltFromSource checks that
// it is what hold/hold.c builds to) is, for each architecture, a static
// executable of that machine with no interpreter and no writable segment,
// that blocks until a signal ends it (run here when this host runs that
// architecture's programs: natively, or by binfmt_misc under
// qemu-user-static).
func TestHolder(t *testing.T) {
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		t.Run(arch, func(t *testing.T) {
			code := Holder(arch)
			f, err := elf.NewFile(bytes.NewReader(code))
			if err != nil {
				t.Fatal(err)
			}
			if f.Machine != machine || f.Type != elf.ET_EXEC || len(code) > 1<<10 {
				t.Errorf("machine %s, type %s, %d bytes", f.Machine, f.Type, len(code))
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("holder has a %s segment: not static", p.Type)
				}
				if p.Type == elf.PT_LOAD && p.Flags&elf.PF_W != 0 {
					t.Error("holder has a writable segment")
				}
			}
			binfmt := map[string]string{"amd64": "qemu-x86_64", "arm64": "qemu-aarch64"}[arch]
			if b, _ := os.ReadFile("/proc/sys/fs/binfmt_misc/" + binfmt); arch != runtime.GOARCH && !bytes.HasPrefix(b, []byte("enabled\n")) {
				t.Skipf("%s programs do not run here (binfmt_misc, qemu-user-static)", arch)
			}
			blocksUntilSignalled(t, code)
		})
	}
	if Holder("riscv64") != nil || Holder("") != nil {
		t.Error("a holder for an architecture it is not built for")
	}
}

// blocksUntilSignalled runs the holder code and checks that it stays until
// SIGTERM ends it.
func blocksUntilSignalled(t *testing.T, code []byte) {
	path := filepath.Join(t.TempDir(), "hold")
	if err := os.WriteFile(path, code, 0o555); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("holder exited by itself: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("holder ended %v, want killed by SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("holder ignored SIGTERM")
	}
}
