package remote

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A started server is named for ps: "wasm-server SOCKET" after its
// program, not a bare ccrun-full for minutes.
func TestStartServerNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "argv")
	exe := filepath.Join(dir, "fake-server")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho \"$@\" >"+out+".tmp && mv "+out+".tmp "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "wasm.sock")
	if err := StartServer(exe, sock, filepath.Join(dir, "cache")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(out)
		if err == nil {
			if got, want := string(b), "wasm-server "+sock+"\n"; got != want {
				t.Errorf("server arguments %q, want %q", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never started")
		}
	}
}
