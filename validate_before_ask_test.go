package ccrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// TestRefusedBeforeAsking: a call that cannot run — a module that is not
// wasm or that the guard refuses, a mount whose source is missing — is
// refused before anyone is asked, so no grant is written for it.
func TestRefusedBeforeAsking(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "text.wasm"), []byte("#!/bin/sh\necho not wasm\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "short.wasm"), []byte("\x00asm"), 0o644)
	os.WriteFile(filepath.Join(dir, "v2.wasm"), []byte("\x00asm\x0d\x00\x01\x00"), 0o644)
	var asked atomic.Int32
	rt, err := ccrun.New(engines.Wasm(), engines.Docker(), ccrun.WithProjectDir(dir), ccrun.WithApprover(permission.ApproverFunc(
		func(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error) {
			asked.Add(1)
			return ceiling.AlwaysThisProject, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tc := range []struct {
		name string
		call ccrun.Call
		want error
	}{
		{"text file", ccrun.Call{Module: "text.wasm"}, wasm.ErrNotWasm},
		{"truncated", ccrun.Call{Module: "short.wasm"}, wasm.ErrTruncated},
		{"a component", ccrun.Call{Module: "v2.wasm"}, wasm.ErrNotWasm},
		{"missing mount", ccrun.Call{Image: "ccrun-test:busybox", Mounts: []job.Mount{{Host: "nope", Guest: "/data"}}}, ccrun.ErrInvalidCall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.Exec(context.Background(), &tc.call)
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("asked %d times, want none", n)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ccrun.json")); err == nil {
		t.Errorf("a grant was written: %s", b)
	}
}
