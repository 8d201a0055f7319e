package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
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

// onceServes reports whether once, the pooled container's program, can
// serve a call of s running argv, rather than an exec into the container:
// the request fits once's limit, and each environment entry is NAME=value
// (an exec also takes a bare NAME, which unsets the variable; once does
// not).
func onceServes(s Spec, argv []string) bool {
	for _, kv := range s.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return false
		}
	}
	return once.RequestSize(argv, s.Env) <= once.Max
}

// callOnce runs argv in the claimed, started container id through its
// once, with the call's environment added to the container's (replacing
// what it names, as an exec has it; argv[0] without a '/' is looked for in
// that environment's PATH, as an exec does): it attaches to the container's streams, sends the request (and
// stdin, in frames), and takes the exit status from once's trailer, which
// comes on each stream after all the program wrote. There is no exec to
// create, start and inspect, and no wait for the container's end: once
// ends by itself once released, and the container with it (later true:
// the caller removes it, off the run's path). When it killed the container
// (a stop, or a check for an out-of-memory kill) it removes it before
// returning. An error that is a once.NotStarted means nothing ran.
func (e *Executor) callOnce(ctx context.Context, id string, s Spec, lim job.Limits, argv []string, begin time.Time) (res *job.Result, later bool, err error) {
	defer func() {
		if !later {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			e.remove(cctx, id)
		}
	}()
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
			return once.NotStarted{Err: classify(e.host, "attach to pooled container", err)}
		}
		c, stderr = newOnceConn(hj), out.Stderr
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
			checked = true
			if e.oomKilled(ctx, id) {
				return job.Status{Code: job.KilledExitCode, Reason: job.Memory,
					Detail: fmt.Sprintf("killed by the kernel: out of memory (limit %d bytes)", lim.Memory)}, nil
			}
			return job.Status{}, newError(ErrUnavailable, c.Err(), "docker: pooled container %.12s ended before its program did: %v", id, cmp.Or(c.Err(), io.EOF))
		}
		code, sig := once.WaitStatus(ws)
		st := job.Status{Code: code}
		if msg := once.ExecMessage(argv[0], ws); msg != "" {
			// Like docker-init on the cold path: exit 127, the reason on
			// stderr.
			fmt.Fprint(stderr, msg)
		}
		if sig == 9 {
			// Killed by SIGKILL: by the kernel, out of memory? The engine
			// marks the container OOMKilled only once it stopped, so stop
			// it first.
			checked = true
			if e.oomKilled(ctx, id) {
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

// onceConn is an attach session to a pooled container whose program is
// once: a once.Conn. What is written goes to once's stdin; the session's
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
