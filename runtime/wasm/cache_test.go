package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/asm"
)

func exitModule(code int64) []byte {
	return asm.Module(true, []string{"start"}, [][]byte{asm.Cat(asm.OpI32Const(code), asm.OpCall(0))}, map[string]int{"_start": 1}, nil)
}

// keeping returns an Executor, closed at the end of the test, that keeps
// n compiled modules and no disk cache.
func keeping(t *testing.T, n int) *Executor {
	t.Helper()
	e, err := New(context.Background(), WithCacheDir(""), WithKeep(n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func kept(e *Executor) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.mods.byKey)
}

// TestKeep: an Executor keeps at most WithKeep compiled modules, the most
// recently run ones, and runs a module it let go of again.
func TestKeep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := keeping(t, 2)
	for _, code := range []int64{1, 2, 1, 3, 1, 4, 2, 1} {
		res, err := e.Run(ctx, Spec{Module: exitModule(code)})
		if err != nil || res.ExitCode != int(code) {
			t.Fatalf("module exiting %d: %v %+v", code, err, res)
		}
		if n := kept(e); n > 2 {
			t.Fatalf("%d modules kept, want at most 2", n)
		}
	}
	if _, err := New(ctx, WithKeep(0)); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("WithKeep(0): %v", err)
	}
}

// TestKeepWhileRunning: a module evicted while a run of it is going on is
// closed only once that run ends, which ends as it would have.
func TestKeepWhileRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := keeping(t, 1)
	// Compile first, so that the sleeping run's 500 ms are spent running
	// (on a loaded machine, compiling under -race can take longer).
	if res, err := e.Run(ctx, Spec{Module: guests["probe"], Args: []string{"exit", "0"}}); err != nil || !res.OK() {
		t.Fatalf("the probe: %v %+v", err, res)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	ran := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(ran)
		res, err := e.Run(ctx, Spec{Module: guests["probe"], Args: []string{"sleep"}, Limits: job.Limits{Timeout: 500 * time.Millisecond}})
		if err != nil || res.Reason != job.Timeout {
			t.Errorf("the sleeping run: %v %+v", err, res)
		}
	}()
	key := sha256.Sum256(guests["probe"])
	var sleeping *compiled
	for sleeping == nil { // until the probe is compiled and running
		select {
		case <-ran:
			t.Skip("the sleeping run ended before it was seen running (a loaded machine)")
		case <-time.After(10 * time.Millisecond):
		}
		e.mu.Lock()
		if c := e.mods.byKey[key]; c != nil && c.done && c.users > 0 {
			sleeping = c
		}
		e.mu.Unlock()
	}
	for _, code := range []int64{5, 6, 7} {
		if res, err := e.Run(ctx, Spec{Module: exitModule(code)}); err != nil || res.ExitCode != int(code) {
			t.Fatalf("module exiting %d: %v %+v", code, err, res)
		}
	}
	e.mu.Lock()
	evicted, users := sleeping.evicted, sleeping.users
	e.mu.Unlock()
	if !evicted || users != 1 {
		t.Errorf("the running probe: evicted %v, users %d; want evicted, 1", evicted, users)
	}
	wg.Wait()
	if res, err := e.Run(ctx, Spec{Module: guests["probe"], Args: []string{"exit", "3"}}); err != nil || res.ExitCode != 3 {
		t.Fatalf("the probe again: %v %+v", err, res)
	}
}

// TestKeepConcurrent: many runs of more modules than are kept, at once,
// under -race.
func TestKeepConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := keeping(t, 2)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := int64(i % 5)
			res, err := e.Run(ctx, Spec{Module: exitModule(code)})
			if err != nil || res.ExitCode != int(code) {
				t.Errorf("module exiting %d: %v %+v", code, err, res)
			}
		}()
	}
	wg.Wait()
	if n := kept(e); n > 2 {
		t.Fatalf("%d modules kept", n)
	}
}

// TestCloseDuringCompile: Close while a module compiles in the background
// does not close wazero's runtime under it (which panics, ending the
// process): the compilation ends with ErrClosed and the runtime is closed
// after it.
func TestCloseDuringCompile(t *testing.T) {
	e, err := New(context.Background(), WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	bin := guests["hello"]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.compile(ctx, sha256.Sum256(bin), bin, "", func(bool) {})
		done <- err
	}()
	// Let the compilation start, then give up on it and close.
	for {
		e.mu.Lock()
		n := e.compiling
		e.mu.Unlock()
		if n > 0 {
			break
		}
		runtime.Gosched()
	}
	cancel()
	<-done
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Wait for the background compilation to finish and close the runtime.
	for {
		e.mu.Lock()
		n := e.compiling
		e.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}
