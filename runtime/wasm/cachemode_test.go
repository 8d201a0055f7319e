package wasm

import (
	"context"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
)

// Code compiled without interrupt checks (a worker's) never reaches a run
// that must be stoppable through the disk cache they share, nor the other
// way round: wazero's cache key does not include the checks. Both orders:
// an endless loop is stopped at its timeout in process after a worker-mode
// Executor compiled the module into the same directory first.
func TestCacheKeepsModesApart(t *testing.T) {
	for _, first := range []bool{false, true} {
		t.Run(map[bool]string{false: "unchecked first", true: "checked first"}[first], func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			a, err := New(ctx, WithCacheDir(dir), WithInterrupt(!first))
			if err != nil {
				t.Fatal(err)
			}
			if res, err := a.Run(ctx, probe("spin", "1")); err != nil || !res.OK() {
				t.Fatalf("%+v %v", res, err)
			}
			_ = a.Close(ctx)
			checked, err := New(ctx, WithCacheDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			defer checked.Close(ctx)
			// Compile (or load) first: the bound below is the run's alone.
			if res, err := checked.Run(ctx, probe("spin", "1")); err != nil || !res.OK() {
				t.Fatalf("%+v %v", res, err)
			}
			s := probe("forever")
			s.Limits.Timeout = 200 * time.Millisecond
			done := make(chan *job.Result, 1)
			go func() {
				res, err := checked.Run(ctx, s)
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			select {
			case res := <-done:
				if res == nil || res.Reason != job.Timeout {
					t.Errorf("got %+v, want a timeout", res)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("an endless loop outlived its 200ms timeout by 30 s: the cache gave a checked run unchecked code")
			}
		})
	}
}
