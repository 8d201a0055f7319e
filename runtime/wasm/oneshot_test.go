package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
)

// One-shot runs leave guests running and switch the collector off, so each
// case runs in a process of its own: this test binary started again with
// oneShotTestEnv=CASE (and the guest's module path in oneShotModuleEnv).
const (
	oneShotTestEnv   = "CCRUN_WASM_TEST_ONESHOT"
	oneShotModuleEnv = "CCRUN_WASM_TEST_ONESHOT_MODULE"
	oneShotCacheEnv  = "CCRUN_WASM_TEST_ONESHOT_CACHE"
)

// oneShotReport is what a one-shot case prints on stdout, as JSON.
type oneShotReport struct {
	Result       *job.Result `json:"result"`
	Err          string      `json:"err"`
	ClosedAfter  bool        `json:"closed_after"`   // a second Run is ErrClosed
	GCPercent    int         `json:"gc_percent"`     // after the run
	Overshoot    int64       `json:"overshoot_ns"`   // how long past the timeout Run returned
	ExitedByHook bool        `json:"exited_by_hook"` // never printed: the hook exits
}

// oneShotMain runs one case and returns the process's exit code: 0 when it
// printed its report, 124 when the exit hook ended it.
func oneShotMain(c string) int {
	ctx := context.Background()
	e, err := New(ctx, WithCacheDir(os.Getenv(oneShotCacheEnv)), WithOneShot(func(r *job.Result) {
		if r.Reason == job.Timeout {
			os.Exit(124)
		}
		os.Exit(137)
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s := Spec{Path: os.Getenv(oneShotModuleEnv), Name: "probe"}
	// A first run compiles (or loads) the module, so that the case's
	// Duration is the run's own.
	warm := Spec{Path: s.Path, Name: "probe", Args: []string{"spin", "10"}}
	if res, err := e.Run(ctx, warm); err != nil || !res.OK() {
		fmt.Fprintln(os.Stderr, "warm-up:", res, err)
		return 2
	}
	switch c {
	case "ok":
		s.Args = []string{"spin", "10"}
	case "timeout", "hang-after":
		s.Args, s.Limits.Timeout = []string{"forever"}, 300*time.Millisecond
	case "timeout-with-garbage":
		// Another goroutine allocates while the guest spins in compiled
		// code: a collection would wait for the guest for ever, and the
		// timer that ends the run with it.
		s.Args, s.Limits.Timeout = []string{"forever"}, 300*time.Millisecond
		go func() {
			time.Sleep(50 * time.Millisecond) // the guest is in its loop
			var keep [][]byte
			for i := 0; i < 50_000; i++ { // 200 MiB, under gcHard
				keep = append(keep, make([]byte, 4096))
				if len(keep) > 1000 {
					keep = keep[:0]
				}
			}
		}()
	case "output":
		s.Args, s.Limits.Output = []string{"flood"}, 64<<10
	case "memory":
		s.Args, s.Limits.Memory = []string{"bomb"}, 64<<20
	case "cancel":
		s.Args = []string{"forever"}
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(300*time.Millisecond, cancel)
		ctx = cctx
	default:
		fmt.Fprintln(os.Stderr, "unknown case", c)
		return 2
	}
	res, err := e.Run(ctx, s)
	rep := oneShotReport{Result: res}
	if err != nil {
		rep.Err = err.Error()
	}
	if res != nil && s.Limits.Timeout > 0 {
		rep.Overshoot = int64(res.Duration - s.Limits.Timeout)
	}
	_, err = e.Run(context.Background(), warm)
	rep.ClosedAfter = errors.Is(err, ErrClosed)
	if !rep.ClosedAfter { // never with a guest left running: a collection would wait for it for ever
		rep.GCPercent = debug.SetGCPercent(100)
	}
	if res != nil {
		res.Stdout, res.Stderr = nil, nil
	}
	_ = e.Close(context.Background())
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	if c == "hang-after" {
		select {} // a CLI stuck after reporting: the exit hook must end it
	}
	return 0
}

func runOneShotCase(t *testing.T, c string) (oneShotReport, int) {
	t.Helper()
	mod := filepath.Join(t.TempDir(), "probe.wasm")
	if err := os.WriteFile(mod, guests["probe"], 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = []string{oneShotTestEnv + "=" + c, oneShotModuleEnv + "=" + mod, oneShotCacheEnv + "=" + sharedCache}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("case %s: the process did not end in two minutes; stderr %s", c, errb.String())
	}
	var rep oneShotReport
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("case %s: %v: %q; stderr %s", c, err, out.String(), errb.String())
		}
	}
	return rep, code
}

// WithOneShot: a guest running at full speed still ends at each limit,
// Run reporting it at once; the Executor then takes no more runs; a run
// that ends by itself leaves the collector as it found it.
func TestOneShot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason job.Reason
		code   int
		closed bool // no more runs afterwards
	}{
		{"ok", job.Exit, 0, false},
		{"timeout", job.Timeout, job.TimeoutExit, true},
		{"timeout-with-garbage", job.Timeout, job.TimeoutExit, true},
		{"output", job.OutputCap, job.KilledExitCode, true},
		{"memory", job.Memory, job.KilledExitCode, false},
		{"cancel", job.Cancelled, job.KilledExitCode, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep, code := runOneShotCase(t, tc.name)
			if code != 0 || rep.Result == nil {
				t.Fatalf("exit %d, report %+v", code, rep)
			}
			if rep.Result.Reason != tc.reason || rep.Result.ExitCode != tc.code {
				t.Errorf("got %s/%d (%s), want %s/%d", rep.Result.Reason, rep.Result.ExitCode, rep.Result.Detail, tc.reason, tc.code)
			}
			if rep.ClosedAfter != tc.closed {
				t.Errorf("a second run refused: %v, want %v", rep.ClosedAfter, tc.closed)
			}
			if !tc.closed && rep.GCPercent != 100 {
				t.Errorf("GOGC after the run %d, want it restored to 100", rep.GCPercent)
			}
			if rep.Overshoot != 0 {
				// Reported, not asserted (2 shared cores): the goal is 100 ms.
				t.Logf("Run returned %s past the timeout", time.Duration(rep.Overshoot))
			}
		})
	}
}

// A one-shot process that does not end after a run it left running is
// ended by the exit function, with the code of the Result.
func TestOneShotExitHook(t *testing.T) {
	rep, code := runOneShotCase(t, "hang-after")
	if code != 124 {
		t.Errorf("exit %d, want 124 from the exit function; report %+v", code, rep)
	}
	if rep.Result == nil || rep.Result.Reason != job.Timeout {
		t.Errorf("report %+v, want a timeout reported before the hang", rep)
	}
}
