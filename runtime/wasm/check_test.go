package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun/runtime/wasm/internal/asm"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
)

// TestCheckVerdict: a module the guard accepts leaves a verdict in the disk
// cache, a refused one none; a verdict planted for a refused module lets
// Check pass (it only lets the gate ask) but never lets the module run:
// the compilation guards it again. A verdict directory another user could
// write to is not used.
func TestCheckVerdict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	e, err := New(ctx, WithCacheDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })

	good := exitModule(0)
	goodSum := sha256.Sum256(good)
	if err := e.Check(good, goodSum); err != nil {
		t.Fatalf("Check of a valid module: %v", err)
	}
	verdicts, _ := filepath.Glob(filepath.Join(dir, "guarded-*", hex.EncodeToString(goodSum[:])))
	if len(verdicts) != 1 {
		t.Fatalf("verdicts for the valid module: %v, want one", verdicts)
	}
	vdir := filepath.Dir(verdicts[0])

	bad := asm.StartModule(nil, asm.Cat(asm.Uleb(2), asm.Uleb(wasmbin.MaxLocals), []byte{0x7f}, asm.Uleb(1), []byte{0x7e}), nil)
	badSum := sha256.Sum256(bad)
	if err := e.Check(bad, badSum); !errors.Is(err, ErrInvalidModule) {
		t.Fatalf("Check of a refused module: %v, want ErrInvalidModule", err)
	}
	planted := filepath.Join(vdir, hex.EncodeToString(badSum[:]))
	if _, err := os.Lstat(planted); err == nil {
		t.Fatal("a refused module left a verdict")
	}

	if err := os.WriteFile(planted, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(bad, badSum); err != nil {
		t.Errorf("Check with a verdict on file: %v, want it taken", err)
	}
	if _, err := e.Run(ctx, Spec{Module: bad, Sum: badSum}); !errors.Is(err, ErrInvalidModule) {
		t.Errorf("Run of the refused module with a planted verdict: %v, want ErrInvalidModule", err)
	}

	// Not a module at all: refused before any verdict is looked at.
	junk := []byte("#!/bin/sh\necho hi\n")
	junkSum := sha256.Sum256(junk)
	if err := os.WriteFile(filepath.Join(vdir, hex.EncodeToString(junkSum[:])), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(junk, junkSum); !errors.Is(err, ErrNotWasm) {
		t.Errorf("Check of a text file with a verdict: %v, want ErrNotWasm", err)
	}

	// A verdict directory others may write to is not trusted.
	if err := os.Chmod(vdir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(bad, badSum); !errors.Is(err, ErrInvalidModule) {
		t.Errorf("Check with a world-writable verdict directory: %v, want ErrInvalidModule", err)
	}
	// A verdict that is a link is not one.
	if err := os.Chmod(vdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(planted); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(verdicts[0], planted); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(bad, badSum); !errors.Is(err, ErrInvalidModule) {
		t.Errorf("Check with a verdict that is a link: %v, want ErrInvalidModule", err)
	}
}

// TestCheckWithoutCache: with no disk cache, Check is CheckModule.
func TestCheckWithoutCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := New(ctx, WithCacheDir(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })
	bad := asm.StartModule(nil, asm.Cat(asm.Uleb(1), asm.Uleb(0xfffffff0), []byte{0x7f}), nil)
	for i := 0; i < 2; i++ {
		if err := e.Check(bad, sha256.Sum256(bad)); !errors.Is(err, ErrInvalidModule) {
			t.Fatalf("Check %d: %v, want ErrInvalidModule", i, err)
		}
	}
	good := exitModule(3)
	if err := e.Check(good, sha256.Sum256(good)); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeMadeOnFirstCompile: New and Check make no wazero runtime (an
// executor whose runs go to the warm server never needs one); the first
// run does; a Close before any run leaves none to make, and a run after it
// is ErrClosed.
func TestRuntimeMadeOnFirstCompile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := New(ctx, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	mod := exitModule(7)
	if err := e.Check(mod, sha256.Sum256(mod)); err != nil {
		t.Fatal(err)
	}
	if e.runtimeMade() != nil {
		t.Fatal("New and Check made a wazero runtime")
	}
	res, err := e.Run(ctx, Spec{Module: mod})
	if err != nil || res.ExitCode != 7 {
		t.Fatalf("Run: %v %+v", err, res)
	}
	if e.runtimeMade() == nil {
		t.Fatal("a run compiled here and made no runtime")
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}

	idle, err := New(ctx, WithCacheDir(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Close(ctx); err != nil {
		t.Fatalf("Close of an executor that never ran: %v", err)
	}
	if _, err := idle.Run(ctx, Spec{Module: mod}); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
	if idle.runtimeMade() != nil {
		t.Error("a run after Close made a runtime")
	}
}
