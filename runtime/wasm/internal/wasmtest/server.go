package wasmtest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
)

// ListenShort listens on wasm.sock in a new 0700 directory with a short
// path (a socket path has at most 107 bytes), removed at the end of the
// test.
func ListenShort(t testing.TB) (string, *net.UnixListener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ccrun-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "wasm.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	return sock, l
}

// RuntimeDir sets XDG_RUNTIME_DIR, for the test, to a new directory with
// a short path (the sockets under it have at most 107 bytes), removed at
// the end of the test. The test cannot be parallel (t.Setenv).
func RuntimeDir(t *testing.T) string {
	t.Helper()
	run, err := os.MkdirTemp("", "ccrun-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	t.Setenv("XDG_RUNTIME_DIR", run)
	return run
}

// Serve runs serve (a warm server's Serve) on a socket of ListenShort's
// until the end of the test, which fails if serve does, and returns the
// socket.
func Serve(t *testing.T, serve func(context.Context, *net.UnixListener) error) string {
	t.Helper()
	sock, l := ListenShort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return sock
}

// Eventually waits (at most 30s) for cond.
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 30s", what)
		}
	}
}

// StoppedIsStopped runs, under a Supervisor with the limits it gives
// wait, a guest that wait says exited 0 by itself: stopped first (by its
// timeout, by the output cap), the run must be reported as stopped,
// whatever the guest did once stopped; not stopped, as the guest's own
// exit. name says whose wait it is.
func StoppedIsStopped(t *testing.T, name string, wait func(job.Limits) (job.Status, error)) {
	t.Helper()
	lim := job.Limits{Timeout: time.Minute, Output: 1 << 20}
	for _, why := range []job.Reason{job.Timeout, job.OutputCap, ""} {
		sup := &job.Supervisor{Limits: lim}
		sup.Start = func(context.Context, *job.Capture) error {
			if why != "" {
				sup.Stop(why, "")
			}
			return nil
		}
		sup.Wait = func() (job.Status, error) { return wait(lim) }
		res, err := sup.Run(context.Background())
		want := why
		if want == "" {
			want = job.Exit // not stopped: the guest's own exit
		}
		if err != nil || res.Reason != want {
			t.Errorf("%s, stopped by %q, guest exited 0: %v %+v, want %s", name, why, err, res, want)
		}
	}
}
