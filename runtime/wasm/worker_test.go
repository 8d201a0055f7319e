package wasm

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

func newWorkerExecutor(t *testing.T) *Executor {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), WithCacheDir(sharedCache), WithWorkerProcess(exe))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	// Warm the disk cache: the worker's code (without interrupt checks) is
	// compiled apart from the in-process one.
	workerWarm.Do(func() {
		for _, g := range []string{"hello", "probe", "escape"} {
			if _, err := e.Run(context.Background(), Spec{Module: guests[g]}); err != nil {
				t.Fatalf("warm %s: %v", g, err)
			}
		}
	})
	return e
}

var workerWarm sync.Once

// TestWorker runs the limits through a worker process: a guest computing
// without end is killed at the timeout.
func TestWorker(t *testing.T) {
	t.Parallel()
	e := newWorkerExecutor(t)
	tests := []struct {
		name   string
		spec   Spec
		reason job.Reason
		code   int
		out    string
	}{
		{"hello", Spec{Module: guests["hello"]}, job.Exit, 0, "hello, world\n"},
		{"exit code", probe("exit", "3"), job.Exit, 3, ""},
		{"args", probe("args", "x"), job.Exit, 0, "probe\nargs\nx\n"},
		{"infinite loop", probe("forever"), job.Timeout, job.TimeoutExit, ""},
		{"sleeping", probe("sleep"), job.Timeout, job.TimeoutExit, ""},
		{"blocked on stdin", Spec{Module: guests["probe"], Args: []string{"cat"}, Streams: job.Streams{Stdin: blockingReader{make(chan struct{})}}}, job.Timeout, job.TimeoutExit, ""},
		{"flood", probe("flood"), job.OutputCap, job.KilledExitCode, ""},
		{"memory bomb", probe("bomb"), job.Memory, job.KilledExitCode, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.spec
			s.Limits = job.Limits{Timeout: 20 * time.Second, Output: 64 << 10, Memory: 64 << 20}
			if tc.reason == job.Timeout {
				s.Limits.Timeout = time.Second
			}
			done := make(chan struct{})
			var res *job.Result
			var err error
			go func() { res, err = e.Run(context.Background(), s); close(done) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the worker was not stopped")
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason || res.ExitCode != tc.code {
				t.Errorf("got %s %d (%s), want %s %d", res.Reason, res.ExitCode, res.Detail, tc.reason, tc.code)
			}
			if tc.out != "" && string(res.Stdout) != tc.out {
				t.Errorf("stdout %q, want %q", res.Stdout, tc.out)
			}
		})
	}
	t.Run("bad module", func(t *testing.T) {
		t.Parallel()
		if _, err := e.Run(context.Background(), Spec{Module: []byte("\x00asm\x01\x00\x00\x00")}); !errors.Is(err, ErrMissingStart) {
			t.Errorf("err = %v, want ErrMissingStart", err)
		}
	})
}

// TestWorkerEscape: the worker confines mounts as the in-process runs do
// (the same code: a sample of the attacks, one of each kind, is enough).
func TestWorkerEscape(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	s.exec = newWorkerExecutor(t)
	sample := map[string]bool{
		"dotdot read": true, "existing absolute symlink": true, "write through existing relative symlink": true,
		"new relative symlink out": true, "hard link from ro mount into rw mount, then write": true,
		"compilation cache through symlink": true, "write read-only file": true,
	}
	for _, tc := range escapes(s) {
		if !sample[tc.name] {
			continue
		}
		if got := s.run(t, tc.args...); len(got) < 7 || got[:7] != "BLOCKED" {
			t.Errorf("escape %q: got %q, want BLOCKED", tc.args, got)
		}
	}
	s.unchanged(t)
}

// TestStoppedRunIsStopped: stopping a run cuts the guest's stdin, and a
// guest copying stdin may exit 0 on that EOF before the kill lands (CI saw
// it once: "exit 0" for a run stopped at its timeout). Whatever the guest
// did once the run was stopped, the run is reported as stopped: here in
// process, wazero having returned no error (internal/remote's test of the
// same name has the worker's reply say exit 0).
func TestStoppedRunIsStopped(t *testing.T) {
	wasmtest.StoppedIsStopped(t, "in process", func(lim job.Limits) (job.Status, error) { return shared.exitStatus(nil, &allocator{}, lim) })
}
