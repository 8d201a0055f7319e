package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ccrun/ccrun/internal/once"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// ackTimeout bounds the wait for once's ack of a request: an attach
// session is up in milliseconds, and a once that does not answer is not
// one (the call then runs cold).
const ackTimeout = 10 * time.Second

// coldOnce returns the argv of a cold run of s and the path of once's
// file when once is to run it (else prog is ""): the exit status comes
// from its trailer, right after the program's output, not from the
// engine's word of the container's exit (40–50 ms later here). Not when
// the container binds a path writable or protected: there the run must
// end with the container, so that nothing the program left behind writes
// there after Run returns; nor where there is no once, or the image is
// not local yet (the classic path pulls it and says what is wrong).
func (e *Executor) coldOnce(ctx context.Context, s Spec, prot *protection) (argv []string, prog string) {
	if e.poolDir == "" || len(prot.binds) != 0 {
		return nil, ""
	}
	for _, m := range s.Mounts {
		if m.Writable {
			return nil, ""
		}
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	img, err := e.inspect(ictx, s.Image)
	if err != nil {
		return nil, ""
	}
	argv = execArgv(img, s.Cmd)
	if len(argv) == 0 || once.Check(argv, nil) != nil {
		return nil, ""
	}
	prog, err = e.onceFile()
	if err != nil {
		return nil, ""
	}
	return argv, prog
}

// runColdOnce runs argv in the created, not started, container id whose
// program is once (coldOnce): callOnce starts it once attached. The
// container has the call's environment in its configuration. auto: the
// engine removes the container as it exits; ended is set when nothing is
// left for Run's cleanup to remove.
func (e *Executor) runColdOnce(ctx, rctx context.Context, id string, s Spec, lim job.Limits, argv []string, begin time.Time, auto bool, ended *atomic.Bool) (*job.Result, error) {
	var oom <-chan struct{}
	if auto {
		oom = e.watchOOM(rctx, id) // the inspection may come after the removal
	}
	start := func(sctx context.Context) error {
		if err := e.eng.ContainerStart(sctx, id, container.StartOptions{}); err != nil {
			return classify(e.host, "start container", err)
		}
		return nil
	}
	res, later, err := e.callOnce(ctx, id, s, lim, argv, begin, start, oom)
	var ns once.NotStarted
	switch {
	case errors.As(err, &ns):
		return nil, newError(ErrUnavailable, err, "docker: container %.12s: %v", id, err)
	case err != nil:
		return nil, err
	case res.Reason != job.Exit && auto:
		ended.Store(true)
		e.awaitRemoved(ctx, id) // killed: seen removed (by the engine) before Run returns
	case later && auto:
		ended.Store(true) // once ends, and the engine removes the container
	}
	return res, nil
}

// onceServes reports whether once, the pooled container's program, can
// serve a call of s running argv, rather than an exec into the container:
// once can be sent argv and the environment (once.Check: the image's
// entrypoint is not validated with the Spec), and each environment entry
// is NAME=value (an exec also takes a bare NAME, which unsets the
// variable; once does not).
func onceServes(s Spec, argv []string) bool {
	for _, kv := range s.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return false
		}
	}
	return once.Check(argv, s.Env) == nil
}

// callOnce runs argv in container id through its once (a pooled
// container claimed, started: start nil; or a cold one, not yet started:
// start starts it once the session is attached), with the call's
// environment added to the container's (replacing what it names, as an
// exec has it; argv[0] without a '/' is looked for in that environment's
// PATH, as an exec does). It attaches to the container's streams, sends
// the request (and stdin, in frames), and takes the exit status from
// once's trailer, which comes on each stream after all the program wrote. There is no exec to
// create, start and inspect, and no wait for the container's end: once
// ends by itself once released, and the container with it. later is true
// then: the container may be removed off the run's path; false when it
// was killed (a stop, or a check for an out-of-memory kill), and it should
// be removed before Run returns. oom, when not nil, is the engine's word of
// an out-of-memory kill in a container the engine removes as it exits
// (see watchOOM), which cannot be inspected after. An error that is a
// once.NotStarted means nothing ran.
func (e *Executor) callOnce(ctx context.Context, id string, s Spec, lim job.Limits, argv []string, begin time.Time, start func(context.Context) error, oom <-chan struct{}) (res *job.Result, later bool, err error) {
	// The session lives as long as the run, whatever the caller does.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer rcancel()

	var (
		c       *onceConn
		oc      *once.Call
		stderr  io.Writer // the Capture's
		checked bool      // set by Wait: killed and inspected for memory
	)
	sup := &job.Supervisor{Limits: lim, Streams: s.Streams, Begin: begin, TimeoutAfterStart: true,
		KillGrace: -1, DrainGrace: drainTimeout}
	sup.Start = func(_ context.Context, out *job.Capture) error {
		hj, err := e.eng.ContainerAttach(rctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
		if err != nil {
			return once.NotStarted{Err: classify(e.host, "attach to container", err)}
		}
		c, stderr = newOnceConn(hj), out.Stderr
		if start != nil {
			if err := start(rctx); err != nil {
				return err
			}
		}
		oc = once.Start(c, argv, s.Env, s.Streams.Stdin, out.Stdout, out.Stderr, ackTimeout)
		e.onceRuns.Add(1)
		return nil
	}
	sup.Wait = func() (job.Status, error) {
		var err error
		select {
		case err = <-oc.Ended():
		case <-oc.Released():
			// Both trailers came: all the program wrote is here, and
			// once ends by itself. What a process the program left
			// writes after is not the program's.
			c.SetOutput(nil, nil)
		}
		if sup.StopReason() != "" {
			return job.Status{}, nil // killed: the stop is the Result
		}
		var ns once.NotStarted
		if errors.As(err, &ns) {
			e.onceRuns.Add(-1)
			return job.Status{}, err
		}
		ws, whole := oc.Result()
		if !whole {
			// The streams ended without once's trailer: the container
			// went away under the program, by the kernel's OOM killer
			// (which may take once with it) or by somebody else.
			checked = oom == nil // oomKilled stopped it
			if e.outOfMemory(ctx, id, oom) {
				return job.Status{Code: job.KilledExitCode, Reason: job.Memory,
					Detail: fmt.Sprintf("killed by the kernel: out of memory (limit %d bytes)", lim.Memory)}, nil
			}
			return job.Status{}, newError(ErrUnavailable, c.Err(), "docker: container %.12s ended before its program did: %v", id, cmp.Or(c.Err(), io.EOF))
		}
		code, sig := once.WaitStatus(ws)
		st := job.Status{Code: code}
		if msg := once.ExecMessage(argv[0], ws); msg != "" {
			// Like docker-init on the cold path: exit 127, the reason on
			// stderr.
			fmt.Fprint(stderr, msg)
		}
		if sig == int(syscall.SIGKILL) {
			// Killed by SIGKILL: by the kernel, out of memory? The engine
			// marks the container OOMKilled only once it stopped, so stop
			// it first.
			checked = oom == nil // oomKilled stopped it
			if e.outOfMemory(ctx, id, oom) {
				st.Reason = job.Memory
				st.Detail = fmt.Sprintf("killed by the kernel: out of memory (limit %d bytes)", lim.Memory)
			}
		}
		return st, nil
	}
	// The container is single-use: kill all of it, once too. The
	// session's end is not waited for (the output's is, by Drain).
	sup.Kill = e.killer(ctx, id)
	sup.Drain = func(dctx context.Context) {
		select {
		case <-c.Done():
		case <-oc.Released():
		case <-dctx.Done():
		}
	}
	res, err = sup.Run(ctx)
	if c != nil {
		c.Abort(nil)
	}
	if err != nil || res.Reason != job.Exit {
		return res, false, err
	}
	return res, !checked, nil
}

// outOfMemory reports whether the kernel killed a process of container id
// for want of memory: by the engine's word oom when there is one (the
// container is removed as it exits), else by stopping it and inspecting it
// (see oomKilled).
func (e *Executor) outOfMemory(ctx context.Context, id string, oom <-chan struct{}) bool {
	if oom != nil {
		return oomSeen(oom, job.KilledExitCode)
	}
	return e.oomKilled(ctx, id)
}

// onceConn is an attach session to a container whose program is once: a
// once.Conn. What is written goes to once's stdin; the session's
// output, demultiplexed, to the sinks a call sets.
type onceConn struct {
	hj             types.HijackedResponse
	stdout, stderr once.Sink
	done           chan struct{} // closed when the output ended; err says why
	err            error
	closing        sync.Once
}

func newOnceConn(hj types.HijackedResponse) *onceConn {
	c := &onceConn{hj: hj, done: make(chan struct{})}
	go func() {
		_, err := stdcopy.StdCopy(&c.stdout, &c.stderr, hj.Reader)
		c.err = cmp.Or(err, io.EOF)
		close(c.done)
	}()
	return c
}

func (c *onceConn) Write(p []byte) (int, error) { return c.hj.Conn.Write(p) }
func (c *onceConn) Abort(error)                 { c.closing.Do(c.hj.Close) }
func (c *onceConn) SetOutput(w, e io.Writer)    { c.stdout.Set(w); c.stderr.Set(e) }
func (c *onceConn) Done() <-chan struct{}       { return c.done }

// Err is why the session ended, once Done is closed.
func (c *onceConn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}
