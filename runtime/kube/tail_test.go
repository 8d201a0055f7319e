package kube

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// slowWriter counts what it is given, a millisecond a write: a caller
// that reads a call's output slowly.
type slowWriter struct{ n atomic.Int64 }

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// TestRunSlowReader: a call whose caller reads its stdout slowly gets all
// of it, warm and cold. The attach stream then backs up into containerd,
// whose pipe from the container is still full when the program exits and
// its stderr ends: one stream's end must not cut the other's tail (a
// warm pod's single attach session lost up to 124 KiB of it so).
func TestRunSlowReader(t *testing.T) {
	e := newTest(t, WithPool(1))
	const size = 32 << 20
	for _, warm := range []bool{true, false} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for i := range 2 {
				s := spec("sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; echo done >&2", size))
				s.Pool = warm
				s.Limits.Memory = 64 << 20
				s.Limits.Output = 2 * size
				s.Limits.Timeout = 3 * time.Minute
				if warm {
					if err := e.Warm(ctx, s); err != nil {
						t.Fatal(err)
					}
				}
				var w slowWriter
				s.Streams.Stdout = &w
				before := e.pooledRuns.Load()
				r, err := e.Run(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				if got := e.pooledRuns.Load() - before; got != map[bool]int64{true: 1, false: 0}[warm] {
					t.Errorf("run %d: %d warm pods served it", i, got)
				}
				if r.ExitCode != 0 || w.n.Load() != size || string(r.Stderr) != "done\n" {
					t.Fatalf("run %d: exit %d (%s %s), stdout %d of %d bytes, stderr %q", i, r.ExitCode, r.Reason, r.Detail, w.n.Load(), size, r.Stderr)
				}
			}
		})
	}
	e.DrainPool(context.Background())
}
