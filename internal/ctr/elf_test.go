package ctr

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestHolder: the holder is a static executable of 129 bytes, with no
// interpreter and no writable segment, that blocks until a signal ends it.
func TestHolder(t *testing.T) {
	code := Holder()
	if code == nil {
		t.Skip("no holder for this architecture")
	}
	if len(code) != 129 {
		t.Errorf("holder is %d bytes, want 129", len(code))
	}
	f, err := elf.NewFile(bytes.NewReader(code))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC || f.Entry != 0x400000+64+56 {
		t.Errorf("machine %s, type %s, entry %#x", f.Machine, f.Type, f.Entry)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("holder has a %s segment: not static", p.Type)
		}
		if p.Flags&elf.PF_W != 0 {
			t.Error("holder has a writable segment")
		}
	}
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
