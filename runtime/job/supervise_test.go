package job

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// noLeak fails the test when, once it ended, a goroutine of this package
// other than a paused parallel test is still there (goleak-style: it
// retries for a while, since a goroutine that ends needs a moment).
func noLeak(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		var left []string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			left = left[:0]
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			for i, g := range strings.Split(string(buf), "\n\n") {
				if i == 0 { // this goroutine
					continue
				}
				if strings.Contains(g, "ccrun/runtime/job.") && !strings.Contains(g, "testing.(*T).Parallel") &&
					!strings.Contains(g, "testing.tRunner.func") && !strings.Contains(g, "testing.(*T).Run(") {
					left = append(left, g)
				}
			}
			if len(left) == 0 {
				return
			}
		}
		t.Errorf("%d goroutine(s) left behind:\n%s", len(left), strings.Join(left, "\n\n"))
	})
}

// proc is a fake run for the supervisor: it runs until killed (or until
// it exits by itself when exit is closed), counting the kills.
type proc struct {
	exit     chan struct{} // closed: the run exits by itself
	killed   chan struct{} // closed by the first kill
	kills    atomic.Int32
	ignore   bool // the kill does nothing: the run ends only on exit
	code     int
	lastKill atomic.Value
	once     sync.Once
}

func newProc() *proc { return &proc{exit: make(chan struct{}), killed: make(chan struct{})} }

func (p *proc) wait() (Status, error) {
	if p.ignore {
		<-p.exit
		return Status{Code: p.code}, nil
	}
	select {
	case <-p.exit:
		return Status{Code: p.code}, nil
	case <-p.killed:
		return Status{Code: 137}, nil
	}
}

func (p *proc) kill(why Reason) {
	p.kills.Add(1)
	p.lastKill.Store(why)
	p.once.Do(func() { close(p.killed) })
}

func (p *proc) supervisor(lim Limits) *Supervisor {
	return &Supervisor{Limits: lim, Wait: p.wait, Kill: p.kill}
}

func TestSupervisorExit(t *testing.T) {
	noLeak(t)
	p := newProc()
	p.code = 3
	s := p.supervisor(Limits{Timeout: time.Minute, Output: 10})
	s.Start = func(ctx context.Context, out *Capture) error {
		go func() {
			out.Stdout.Write([]byte("out"))
			out.Stderr.Write([]byte("err"))
			close(p.exit)
		}()
		return nil
	}
	res, err := s.Run(context.Background())
	if err != nil || res.Reason != Exit || res.ExitCode != 3 || string(res.Stdout) != "out" || string(res.Stderr) != "err" || res.Truncated {
		t.Fatalf("got %+v, %v; want exit 3 with its output", res, err)
	}
	if n := p.kills.Load(); n != 0 {
		t.Errorf("killed %d times, want none", n)
	}
	s.Stop(Timeout, "") // after the end: nothing
	if s.StopReason() != "" {
		t.Errorf("a stop after the exit was recorded: %s", s.StopReason())
	}
}

func TestSupervisorStatusFromWait(t *testing.T) {
	noLeak(t)
	s := &Supervisor{Limits: Limits{Output: -1}, Wait: func() (Status, error) {
		return Status{Code: 137, Reason: Memory, Detail: "oom", Truncated: true}, nil
	}}
	res, err := s.Run(context.Background())
	if err != nil || res.Reason != Memory || res.ExitCode != 137 || res.Detail != "oom" || !res.Truncated {
		t.Fatalf("got %+v, %v; want the Status of Wait", res, err)
	}
}

func TestSupervisorStops(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lim    Limits
		stop   func(s *Supervisor, cancel context.CancelCauseFunc, out *Capture)
		reason Reason
		code   int
		detail string
	}{
		{"timeout", Limits{Timeout: 20 * time.Millisecond, Output: 10}, nil, Timeout, TimeoutExit, "killed after the 20ms timeout"},
		{"cancel", Limits{Output: 10}, func(_ *Supervisor, cancel context.CancelCauseFunc, _ *Capture) { cancel(nil) },
			Cancelled, KilledExitCode, "killed: cancelled by the caller"},
		{"cancel with a cause", Limits{Output: 10}, func(_ *Supervisor, cancel context.CancelCauseFunc, _ *Capture) {
			cancel(errors.New("the client went away"))
		}, Cancelled, KilledExitCode, "the client went away"},
		{"output cap", Limits{Output: 4}, func(_ *Supervisor, _ context.CancelCauseFunc, out *Capture) {
			out.Stderr.Write([]byte("too much"))
		}, OutputCap, KilledExitCode, "killed: output went past 4 bytes on one stream"},
		{"memory", Limits{Output: 10, Memory: 1 << 20}, func(s *Supervisor, _ context.CancelCauseFunc, _ *Capture) { s.Stop(Memory, "") },
			Memory, KilledExitCode, "killed: memory limit of 1048576 bytes reached"},
		{"refused", Limits{Output: 10}, func(s *Supervisor, _ context.CancelCauseFunc, _ *Capture) { s.Stop(Refused, "rm is not allowed") },
			Refused, RefusedExit, "rm is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeak(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			p := newProc()
			s := p.supervisor(tc.lim)
			var startCtx context.Context
			s.Start = func(ctx context.Context, out *Capture) error {
				startCtx = ctx
				if tc.stop != nil {
					go tc.stop(s, cancel, out)
				}
				return nil
			}
			res, err := s.Run(ctx)
			if startCtx == nil && tc.reason == Timeout {
				// On a loaded machine the timer can fire before Start.
				tc.detail = "stopped by the 20ms timeout before the program started"
			}
			if err != nil || res.Reason != tc.reason || res.ExitCode != tc.code || res.Detail != tc.detail {
				t.Fatalf("got %+v, %v; want %s %d %q", res, err, tc.reason, tc.code, tc.detail)
			}
			if startCtx == nil {
				return
			}
			if n := p.kills.Load(); n != 1 || p.lastKill.Load() != tc.reason {
				t.Errorf("killed %d times (last for %v), want once for %s", n, p.lastKill.Load(), tc.reason)
			}
			var se *StopError
			if !errors.As(context.Cause(startCtx), &se) || se.Reason != tc.reason {
				t.Errorf("Start's context ended with %v, want a StopError for %s", context.Cause(startCtx), tc.reason)
			}
			if tc.reason == OutputCap && (!res.Truncated || string(res.Stderr) != "too ") {
				t.Errorf("stderr %q truncated %v, want the first 4 bytes, truncated", res.Stderr, res.Truncated)
			}
		})
	}
}

// TestSupervisorIgnoresKill: a run that ignores the kill is abandoned
// after KillGrace, with the stop's Result; its Wait goroutine ends when
// the run finally does.
func TestSupervisorIgnoresKill(t *testing.T) {
	noLeak(t)
	p := newProc()
	p.ignore = true
	s := p.supervisor(Limits{Timeout: 10 * time.Millisecond, Output: 10})
	s.KillGrace = 20 * time.Millisecond
	var abandoned []Result
	s.Abandon = func(r Result) { abandoned = append(abandoned, r) }
	res, err := s.Run(context.Background())
	if err != nil || res.Reason != Timeout || res.ExitCode != TimeoutExit {
		t.Fatalf("got %+v, %v; want the timeout", res, err)
	}
	if len(abandoned) != 1 || abandoned[0].Reason != Timeout || abandoned[0].Stdout != nil {
		t.Errorf("Abandon called with %+v, want once with the timeout, without output", abandoned)
	}
	close(p.exit) // the run ends after all: the Wait goroutine must too
}

// TestSupervisorNoGrace: KillGrace < 0 takes only a Wait that already
// returned.
func TestSupervisorNoGrace(t *testing.T) {
	noLeak(t)
	p := newProc()
	p.ignore = true
	s := p.supervisor(Limits{Output: 10})
	s.KillGrace = -1
	abandoned := false
	s.Abandon = func(Result) { abandoned = true }
	s.Start = func(context.Context, *Capture) error { s.Stop(Cancelled, "x"); return nil }
	res, err := s.Run(context.Background())
	if err != nil || res.Reason != Cancelled || !abandoned {
		t.Fatalf("got %+v, %v, abandoned %v; want cancelled, abandoned", res, err, abandoned)
	}
	close(p.exit)
}

// TestSupervisorCapAtDeadline: the output cap and the timeout fire
// together, again and again: one reason wins, the kill is for it, once,
// and the Result agrees with it.
func TestSupervisorCapAtDeadline(t *testing.T) {
	noLeak(t)
	for i := 0; i < 200; i++ {
		p := newProc()
		s := p.supervisor(Limits{Timeout: time.Millisecond, Output: 1})
		started := false
		s.Start = func(_ context.Context, out *Capture) error {
			started = true
			go func() {
				time.Sleep(time.Millisecond)
				out.Stdout.Write([]byte("xx"))
			}()
			return nil
		}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := map[Reason]int{Timeout: TimeoutExit, OutputCap: KilledExitCode}
		if code, ok := want[res.Reason]; !ok || res.ExitCode != code {
			t.Fatalf("run %d: got %s %d, want timeout 124 or output 137", i, res.Reason, res.ExitCode)
		}
		if !started { // the timer fired before Start: nothing to kill
			if res.Reason != Timeout || p.kills.Load() != 0 {
				t.Fatalf("run %d: not started, got %s and %d kills; want the timeout, no kill", i, res.Reason, p.kills.Load())
			}
			continue
		}
		if n := p.kills.Load(); n != 1 || p.lastKill.Load() != res.Reason {
			t.Fatalf("run %d: %d kills, the last for %v; want one for %s", i, n, p.lastKill.Load(), res.Reason)
		}
	}
}

// TestSupervisorCancelDuringStart: a cancel while Start waits ends Start's
// context; a Start that then fails makes the Result Cancelled, not an
// error, and nothing is killed or waited for.
func TestSupervisorCancelDuringStart(t *testing.T) {
	noLeak(t)
	ctx, cancel := context.WithCancel(context.Background())
	waited := false
	s := &Supervisor{
		Limits: Limits{Output: 10},
		Start: func(ctx context.Context, _ *Capture) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		},
		Wait: func() (Status, error) { waited = true; return Status{}, nil },
		Kill: func(Reason) { t.Error("killed a run that never started") },
	}
	res, err := s.Run(ctx)
	if err != nil || res.Reason != Cancelled || res.ExitCode != KilledExitCode || !strings.Contains(res.Detail, "before the program started") {
		t.Fatalf("got %+v, %v; want cancelled before the start", res, err)
	}
	if waited {
		t.Error("Wait was called for a run that never started")
	}
}

// TestSupervisorCancelAsStartSucceeds: a Start that succeeds although the
// run was cancelled meanwhile: the run is killed.
func TestSupervisorCancelAsStartSucceeds(t *testing.T) {
	noLeak(t)
	ctx, cancel := context.WithCancel(context.Background())
	p := newProc()
	s := p.supervisor(Limits{Output: 10})
	s.Start = func(ctx context.Context, _ *Capture) error {
		cancel()
		<-ctx.Done()
		return nil
	}
	res, err := s.Run(ctx)
	if err != nil || res.Reason != Cancelled || p.kills.Load() != 1 {
		t.Fatalf("got %+v, %v, %d kills; want cancelled, killed once", res, err, p.kills.Load())
	}
}

func TestSupervisorCancelledBeforeRun(t *testing.T) {
	noLeak(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &Supervisor{
		Limits: Limits{Output: 10},
		Start:  func(context.Context, *Capture) error { t.Error("started a cancelled run"); return nil },
		Wait:   func() (Status, error) { return Status{}, nil },
	}
	res, err := s.Run(ctx)
	if err != nil || res.Reason != Cancelled || res.Detail != "cancelled by the caller before the program started" {
		t.Fatalf("got %+v, %v; want cancelled before the start", res, err)
	}
}

func TestSupervisorStartError(t *testing.T) {
	noLeak(t)
	boom := errors.New("no such image")
	s := &Supervisor{
		Limits: Limits{Output: 10},
		Start:  func(context.Context, *Capture) error { return boom },
		Wait:   func() (Status, error) { t.Error("waited on a run that did not start"); return Status{}, nil },
	}
	if res, err := s.Run(context.Background()); !errors.Is(err, boom) || res != nil {
		t.Fatalf("got %+v, %v; want %v", res, err, boom)
	}
}

// TestSupervisorDoubleStop: many stops, from many goroutines, and the
// caller's cancel: the first wins, the run is killed once.
func TestSupervisorDoubleStop(t *testing.T) {
	noLeak(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newProc()
	s := p.supervisor(Limits{Output: 10})
	s.Stop(Refused, "first") // before Run: Run starts nothing
	s.Stop(Timeout, "")
	s.Start = func(context.Context, *Capture) error { t.Error("started a stopped run"); return nil }
	res, err := s.Run(ctx)
	if err != nil || res.Reason != Refused || res.Detail != "first" {
		t.Fatalf("got %+v, %v; want the first stop", res, err)
	}

	p = newProc()
	s = p.supervisor(Limits{Output: 10})
	s.Start = func(context.Context, *Capture) error {
		var wg sync.WaitGroup
		for _, why := range []Reason{Memory, Timeout, OutputCap, Refused, Memory} {
			wg.Add(1)
			go func() { defer wg.Done(); s.Stop(why, "") }()
		}
		cancel()
		wg.Wait()
		return nil
	}
	res, err = s.Run(ctx)
	if err != nil || p.kills.Load() != 1 || p.lastKill.Load() != res.Reason || res.Reason != s.StopReason() {
		t.Fatalf("got %+v, %v, %d kills (last %v); want one kill for the reason recorded", res, err, p.kills.Load(), p.lastKill.Load())
	}
}

// TestSupervisorWaitError: Wait's error is Run's when the run ended by
// itself, and dropped when a stop came first.
func TestSupervisorWaitError(t *testing.T) {
	noLeak(t)
	lost := errors.New("pod lost")
	s := &Supervisor{Limits: Limits{Output: 10}, Wait: func() (Status, error) { return Status{}, lost }}
	if _, err := s.Run(context.Background()); !errors.Is(err, lost) {
		t.Errorf("got %v, want %v", err, lost)
	}
	killed := make(chan struct{})
	s = &Supervisor{
		Limits: Limits{Timeout: time.Millisecond, Output: 10},
		Wait:   func() (Status, error) { <-killed; return Status{}, lost },
		Kill:   func(Reason) { close(killed) },
	}
	if res, err := s.Run(context.Background()); err != nil || res.Reason != Timeout {
		t.Errorf("got %+v, %v; want the timeout", res, err)
	}
}

// TestSupervisorDrain: Drain runs after the kill, with a deadline, even
// when it would wait for ever.
func TestSupervisorDrain(t *testing.T) {
	noLeak(t)
	p := newProc()
	s := p.supervisor(Limits{Output: 10})
	s.Start = func(context.Context, *Capture) error { go s.Stop(Timeout, ""); return nil }
	s.DrainGrace = 10 * time.Millisecond
	var hadDeadline, afterKill bool
	s.Drain = func(ctx context.Context) {
		_, hadDeadline = ctx.Deadline()
		afterKill = p.kills.Load() == 1
		<-ctx.Done()
	}
	if res, err := s.Run(context.Background()); err != nil || res.Reason != Timeout {
		t.Fatalf("got %+v, %v; want the timeout", res, err)
	}
	if !hadDeadline || !afterKill {
		t.Errorf("Drain: deadline %v, after the kill %v; want both", hadDeadline, afterKill)
	}
}

// TestSupervisorCancelIsTheKill: without Kill, the stop cancels Start's
// context, and a Wait that watches it returns.
func TestSupervisorCancelIsTheKill(t *testing.T) {
	noLeak(t)
	var runCtx context.Context
	s := &Supervisor{
		Limits: Limits{Output: 10},
		Wait:   func() (Status, error) { <-runCtx.Done(); return Status{Code: 1}, nil },
	}
	s.Start = func(ctx context.Context, _ *Capture) error { runCtx = ctx; go s.Stop(Timeout, ""); return nil }
	if res, err := s.Run(context.Background()); err != nil || res.Reason != Timeout || res.ExitCode != TimeoutExit {
		t.Fatalf("got %+v, %v; want the timeout", res, err)
	}
}

func TestSupervisorNoWait(t *testing.T) {
	if _, err := (&Supervisor{}).Run(context.Background()); !errors.Is(err, ErrNoWait) {
		t.Errorf("got %v, want ErrNoWait", err)
	}
}

// TestSupervisorTimeoutAfterStart: with TimeoutAfterStart, a slow Start
// does not use up the timeout.
func TestSupervisorTimeoutAfterStart(t *testing.T) {
	noLeak(t)
	p := newProc()
	s := p.supervisor(Limits{Timeout: 30 * time.Millisecond, Output: 10})
	s.TimeoutAfterStart = true
	var stopDuringStart Reason
	s.Start = func(context.Context, *Capture) error {
		time.Sleep(60 * time.Millisecond)
		stopDuringStart = s.StopReason()
		return nil
	}
	res, err := s.Run(context.Background())
	if err != nil || res.Reason != Timeout || stopDuringStart != "" || p.kills.Load() != 1 {
		t.Fatalf("got %+v, %v, stop during Start %q, %d kills; want the timeout after Start, one kill", res, err, stopDuringStart, p.kills.Load())
	}
}

// TestSupervisorRunSeesCancelFirst: a run that ends because it saw the
// caller's context end (its stdin gave up) is Cancelled, although it may
// end before the supervisor's own watch of that context records the stop.
func TestSupervisorRunSeesCancelFirst(t *testing.T) {
	noLeak(t)
	for i := 0; i < 200; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		s := &Supervisor{
			Limits: Limits{Output: 10},
			Start:  func(context.Context, *Capture) error { cancel(); return nil },
			Wait:   func() (Status, error) { <-ctx.Done(); return Status{Code: 1}, nil },
		}
		res, err := s.Run(ctx)
		if err != nil || res.Reason != Cancelled {
			t.Fatalf("run %d: got %+v, %v; want cancelled", i, res, err)
		}
	}
}

// TestSupervisorOwnCapture: a Capture made before Run is the one filled.
func TestSupervisorOwnCapture(t *testing.T) {
	noLeak(t)
	out := NewCapture(2, Streams{}, nil) // the cap is enforced elsewhere
	out.Stdout.Write([]byte("abc"))
	s := &Supervisor{Limits: Limits{Output: 2}, Capture: out, Wait: func() (Status, error) { return Status{Code: 0}, nil }}
	res, err := s.Run(context.Background())
	if err != nil || res.Reason != Exit || string(res.Stdout) != "ab" || !res.Truncated {
		t.Fatalf("got %+v, %v; want exit 0 with the Capture's output, truncated", res, err)
	}
}
