package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Supervisor is the lifecycle every executor shares: it starts a run,
// waits for it to exit by itself or to be stopped (Limits.Timeout, the
// caller's context, Limits.Output, or Stop from the executor: a memory
// signal, a refusal), kills it, drains its output and says how it ended.
// What differs between a process, a wazero module, a worker over a
// socket, a container and a pod are the functions Start, Wait, Kill and
// Drain; the rest is the Supervisor's, in one place.
//
// The reason a run ends is recorded once: the first of its own exit and
// the stops wins, so a run stopped at its timeout is a Timeout even when
// the program exits by itself while it is being killed, and a run that
// exited stays an Exit when a stop comes after.
//
// Set the fields, then call Run once. Stop may be called from any
// goroutine, before, during or after Run.
type Supervisor struct {
	// Limits bounds the run as given (apply WithDefaults first): Timeout
	// (<= 0: none) counts from Run, before Start; Output (< 0: none) caps
	// each stream of the Capture, and going past it stops the run with
	// OutputCap.
	Limits Limits
	// Streams are where the Capture copies the output as it arrives.
	Streams Streams
	// Begin is when the run began, for the Result's Duration. Zero: when
	// Run is called.
	Begin time.Time
	// Capture, when set, is the Capture that Run fills and hands to
	// Start: one the executor made before Run because it needed it
	// already (its overflow function calls Stop, or nothing when the cap
	// is enforced elsewhere). nil: Run makes one from Limits.Output and
	// Streams, whose overflow stops the run with OutputCap.
	Capture *Capture
	// TimeoutAfterStart makes Limits.Timeout count from when Start
	// returned rather than from Run: for a run whose start is an engine's
	// work (a container), which the program's time should not pay for.
	// Default false.
	TimeoutAfterStart bool

	// Start starts the run, writing its output to out. Its ctx carries the
	// caller's values; it is done once the run is stopped (with the
	// StopError as its cause), or once Run returns, never by the caller's
	// context directly, so that nothing the run does on it can end the
	// run before the stop is recorded. A Start that fails must undo what
	// it made; Run then returns its error, unless the run was stopped
	// meanwhile (a cancel during the start), which is the stop's Result.
	// nil: nothing to start (Wait runs the program).
	Start func(ctx context.Context, out *Capture) error
	// Wait blocks until the run ends, and says how it ended by itself. It
	// runs on a goroutine of its own, after Start succeeded. An error
	// means the run could not be run or was lost; it is dropped when the
	// run was stopped first. Required.
	Wait func() (Status, error)
	// Kill stops the run for why. It is called at most once, from Run's
	// goroutine, after Start returned, when a stop came before the run
	// ended by itself. nil: cancelling Start's context is the kill.
	Kill func(why Reason)
	// Drain waits for the run's output to end once it has ended or been
	// killed, at most until ctx is done (DrainGrace). nil: nothing to
	// drain (the output was written synchronously).
	Drain func(ctx context.Context)
	// Abandon is called, with the Result that Run is about to fill, when
	// Wait did not return within KillGrace of the kill: the run may go on,
	// and the executor must release nothing it still uses. nil: nothing to
	// do.
	Abandon func(Result)

	// KillGrace bounds how long Run waits for Wait after Kill. Zero: as
	// long as it takes (for a run that always ends once killed); < 0: not
	// at all (only a Wait that already returned counts).
	KillGrace time.Duration
	// DrainGrace bounds Drain. Zero: DefaultDrainGrace.
	DrainGrace time.Duration

	mu     sync.Mutex
	ended  chan struct{} // closed by the first of the stops and the exit
	exited bool          // the run ended by itself first
	why    Reason        // the stop, when not exited
	detail string        // the stop's detail; "": the default for why
	cancel context.CancelCauseFunc
	ran    bool // Run was called
}

// DefaultDrainGrace is how long a Supervisor waits for the output of a run
// that ended, when Drain is set and DrainGrace is not.
const DefaultDrainGrace = 5 * time.Second

// Status is how a run ended by itself, as its Wait says.
type Status struct {
	// Code is the program's exit code.
	Code int
	// Reason is why it ended: "" or Exit, it exited by itself; an executor
	// may also tell Memory (the kernel killed it for memory) or Refused.
	Reason Reason
	// Detail says more, for a person (a trap, an out-of-memory kill).
	Detail string
	// Truncated says the output was cut where the run was (a remote
	// worker or server capped it), beyond what the Capture saw.
	Truncated bool
}

// StopError is the cause of the context that Start was given, once the
// run was stopped.
type StopError struct{ Reason Reason }

// Error says why the run was stopped.
func (e *StopError) Error() string { return "run stopped: " + string(e.Reason) }

// ErrNoWait is returned by Run for a Supervisor without Wait.
var ErrNoWait = errors.New("job: supervisor without a Wait function")

func (s *Supervisor) init() {
	if s.ended == nil {
		s.ended = make(chan struct{})
	}
}

// Stop stops the run for why, with a detail for the Result ("" for the
// default of why). The first stop wins; one after the run ended, or after
// another stop, does nothing. Stop does not wait.
func (s *Supervisor) Stop(why Reason, detail string) {
	s.mu.Lock()
	s.init()
	if s.exited || s.why != "" {
		s.mu.Unlock()
		return
	}
	s.why, s.detail = why, detail
	if s.cancel != nil {
		s.cancel(&StopError{why}) // before Run can see the stop and return
	}
	close(s.ended)
	s.mu.Unlock()
}

// exit records that the run ended by itself, unless a stop came first.
func (s *Supervisor) exit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exited || s.why != "" {
		return
	}
	s.exited = true
	close(s.ended)
}

// StopReason returns the stop that ended the run, or "" when none did
// (yet).
func (s *Supervisor) StopReason() Reason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.why
}

type waited struct {
	exit Status
	err  error
}

// Run runs the job to its end and returns how it ended: a Result, built
// from the Capture, or the error of Start or Wait (the run could not be
// run). When Run returns, Kill has been called if the run was stopped,
// and Wait has returned unless the run was abandoned (see KillGrace).
func (s *Supervisor) Run(ctx context.Context) (*Result, error) {
	if s.Wait == nil {
		return nil, ErrNoWait
	}
	begin := s.Begin
	if begin.IsZero() {
		begin = time.Now()
	}
	out := s.Capture
	if out == nil {
		out = NewCapture(s.Limits.Output, s.Streams, func() { s.Stop(OutputCap, "") })
	}
	if out.Start.IsZero() || !s.Begin.IsZero() {
		out.Start = begin
	}

	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	s.mu.Lock()
	s.init()
	if s.ran {
		s.mu.Unlock()
		return nil, errors.New("job: supervisor run twice")
	}
	s.ran, s.cancel = true, cancel
	if s.why != "" { // stopped before Run
		cancel(&StopError{s.why})
	}
	s.mu.Unlock()

	if ctx.Err() != nil {
		s.Stop(Cancelled, cancelDetail(ctx))
	}
	unwatch := context.AfterFunc(ctx, func() { s.Stop(Cancelled, cancelDetail(ctx)) })
	defer unwatch()
	var (
		timer    *time.Timer
		deadline time.Time // when the timeout runs out; zero: none
	)
	startClock := func() {
		if s.Limits.Timeout > 0 {
			deadline = time.Now().Add(s.Limits.Timeout)
			timer = time.AfterFunc(s.Limits.Timeout, func() { s.Stop(Timeout, "") })
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	if !s.TimeoutAfterStart {
		startClock()
	}

	if s.StopReason() != "" {
		return s.result(out, Status{}, false), nil
	}
	if s.Start != nil {
		if err := s.Start(runCtx, out); err != nil {
			if s.StopReason() != "" {
				return s.result(out, Status{}, false), nil
			}
			return nil, err
		}
	}
	if s.TimeoutAfterStart {
		startClock()
	}

	done := make(chan waited, 1)
	go func() {
		x, err := s.Wait()
		// A stop whose cause is there already wins over the exit: the
		// run may have seen the caller's context end (a stdin reader
		// that gives up) before the stop was recorded from it.
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			s.Stop(Timeout, "")
		}
		if ctx.Err() != nil {
			s.Stop(Cancelled, cancelDetail(ctx))
		}
		s.exit()
		done <- waited{x, err}
	}()
	<-s.ended

	var w waited
	if why := s.StopReason(); why != "" {
		if s.Kill != nil {
			s.Kill(why)
		}
		var ok bool
		if w, ok = s.waitAfterKill(done); !ok && s.Abandon != nil {
			s.Abandon(*s.result(nil, Status{}, true))
		}
	} else {
		w = <-done
	}
	if s.Drain != nil {
		grace := s.DrainGrace
		if grace == 0 {
			grace = DefaultDrainGrace
		}
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		s.Drain(dctx)
		dcancel()
	}
	if s.StopReason() == "" && w.err != nil {
		return nil, w.err
	}
	return s.result(out, w.exit, true), nil
}

// waitAfterKill waits for Wait as KillGrace says; ok is false when it did
// not return.
func (s *Supervisor) waitAfterKill(done chan waited) (waited, bool) {
	switch {
	case s.KillGrace == 0:
		return <-done, true
	case s.KillGrace < 0:
		select {
		case w := <-done:
			return w, true
		default:
			return waited{}, false
		}
	}
	t := time.NewTimer(s.KillGrace)
	defer t.Stop()
	select {
	case w := <-done:
		return w, true
	case <-t.C:
		return waited{}, false
	}
}

// result is how the run ended: its own exit x, or the stop that came
// first. out nil: the Result without output.
func (s *Supervisor) result(out *Capture, x Status, started bool) *Result {
	s.mu.Lock()
	why, detail := s.why, s.detail
	s.mu.Unlock()
	var r *Result
	if why == "" {
		if x.Reason == "" {
			x.Reason = Exit
		}
		r = &Result{Reason: x.Reason, ExitCode: x.Code, Detail: x.Detail}
	} else {
		r = Stopped(why, s.Limits, detail, started)
	}
	if out != nil {
		out.Fill(r)
	}
	r.Truncated = r.Truncated || (why == "" && x.Truncated)
	return r
}

// Stopped is the Result of a run stopped for why (without its output): the
// exit code ccrun reports for it (TimeoutExit, RefusedExit, else
// KilledExitCode) and detail, or, when detail is "", the words for why
// under lim. started false says the program never started.
func Stopped(why Reason, lim Limits, detail string, started bool) *Result {
	r := &Result{Reason: why, ExitCode: KilledExitCode, Detail: detail}
	switch why {
	case Timeout:
		r.ExitCode = TimeoutExit
	case Refused:
		r.ExitCode = RefusedExit
	}
	if detail != "" {
		return r
	}
	switch why {
	case Timeout:
		r.Detail = fmt.Sprintf("killed after the %s timeout", lim.Timeout)
	case OutputCap:
		r.Detail = fmt.Sprintf("killed: output went past %d bytes on one stream", lim.Output)
	case Cancelled:
		r.Detail = "killed: cancelled by the caller"
	case Memory:
		r.Detail = fmt.Sprintf("killed: memory limit of %d bytes reached", lim.Memory)
	case Refused:
		r.Detail = "a step was refused where it runs"
	}
	if !started {
		switch why {
		case Timeout:
			r.Detail = fmt.Sprintf("stopped by the %s timeout before the program started", lim.Timeout)
		case Cancelled:
			r.Detail = "cancelled by the caller before the program started"
		default:
			r.Detail += ", before the program started"
		}
	}
	return r
}

// cancelDetail words a cancelled ctx: the caller's own cause when it gave
// one, "" (the default) for a plain cancel or deadline.
func cancelDetail(ctx context.Context) string {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return ""
	}
	return cause.Error()
}
