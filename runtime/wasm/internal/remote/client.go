package remote

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/runtime/job"
)

// ErrServerGone: the connection to the warm server ended before the run
// started (the guest did not run).
var ErrServerGone = errdefs.ErrUnavailable.WithMessage("wasm server gone")

// Dial connects to the server at socket, with a short timeout, after
// checking the socket's directory, and checks that the server is of this
// uid. Errors: ErrUnsafeSocket, or the dial's.
func Dial(socket string) (*net.UnixConn, error) {
	if err := checkSocketDir(filepath.Dir(socket)); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.Dial("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("wasm server: %w", err)
	}
	uc := c.(*net.UnixConn)
	if uid, err := peerUID(uc); err != nil || uid != os.Getuid() {
		_ = uc.Close()
		return nil, fmt.Errorf("wasm server: peer uid %d (%v): %w", uid, err, ErrUnsafeSocket)
	}
	return uc, nil
}

// StartServer starts exe as the server at socket, with the disk cache in
// cacheDir, detached (a session of its own, stdio on /dev/null, working
// directory /), with nothing of this process's environment but the idle
// time and the number of runs when set, and the directory of the locks of
// writable mounts (mountlock.DirEnv). Its arguments, which it does not
// read (ServerEnv marks it), name it for ps: "wasm-server SOCKET".
func StartServer(exe, socket, cacheDir string) error {
	dir := filepath.Dir(socket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cmd := exec.Command(exe, "wasm-server", socket)
	cmd.Env = []string{ServerEnv + "=1", serverSocketEnv + "=" + socket, serverCacheEnv + "=" + cacheDir,
		mountlock.DirEnv + "=" + mountlock.Dir()}
	for _, k := range []string{ServerIdleEnv, ServerRunsEnv} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reap it should it end while we live
	return nil
}

// ackTimeout is how long a client waits for the server to acknowledge a
// run (it does as soon as it has read the request and the module) before
// it takes the server for hung.
const ackTimeout = 2 * time.Second

// awaitAck waits for the server on uc to acknowledge the run (started
// closed), to end the connection, or for ctx. It returns false when the
// server did not answer by ackBy: then it has killed the process at the
// other end of uc (the next run starts a new server) and the guest did
// not run. done, when it received, is given its value back.
func awaitAck[T any](ctx context.Context, uc *net.UnixConn, ackBy time.Time, started <-chan struct{}, done chan T) bool {
	t := time.NewTimer(time.Until(ackBy))
	defer t.Stop()
	select {
	case <-started:
	case v := <-done:
		done <- v
	case <-ctx.Done():
	case <-t.C:
		select {
		case <-started: // at the last moment
			return true
		default:
		}
		killPeer(uc)
		_ = uc.Close()
		<-done
		return false
	}
	return true
}

// hungPeer kills the server at the other end of uc when err says that it
// did not take the request in time (a write past its deadline).
func hungPeer(uc *net.UnixConn, err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		killPeer(uc)
	}
}

// RunOn runs s on the connection uc to a server, which it closes, as a
// run that began at start. began says whether the server started the run;
// when it did not, the error is nil and the guest did not run (the caller
// may run it elsewhere).
func RunOn(ctx context.Context, uc *net.UnixConn, s Spec, start time.Time) (*job.Result, bool, error) {
	defer uc.Close()
	lim := s.Limits
	c := newConn(uc)
	req := serverRequest{Name: s.Name, Args: s.Args, Env: s.Env, Mounts: s.Mounts,
		Timeout: int64(lim.Timeout), Memory: lim.Memory, Output: lim.Output,
		Deterministic: s.Deterministic, Stdin: s.Streams.Stdin != nil, Protocol: protocol}
	if req.Mounts == nil {
		req.Mounts = []job.Mount{}
	}
	if s.Sum != ([sha256.Size]byte{}) {
		req.Sum = hex.EncodeToString(s.Sum[:]) // the module goes only if the server asks
	}
	// The server reads the request and the module (asked for, when the
	// request names it by its sum and the server does not keep it), and
	// acknowledges, at once: one that does not within ackTimeout is hung
	// (awaitAck).
	ackBy := time.Now().Add(ackTimeout)
	_ = uc.SetWriteDeadline(ackBy)
	if err := c.writeJSON(frameRequest, req); err != nil {
		hungPeer(uc, err)
		return nil, false, nil
	}
	if req.Sum == "" {
		if err := c.write(frameModule, s.Module); err != nil {
			hungPeer(uc, err)
			return nil, false, nil
		}
	}
	// The server enforces the limits (the output cap too: the Capture
	// here only keeps what it sends); the Supervisor's timeout is a
	// backstop should the server not answer.
	backstop := time.Duration(0)
	if lim.Timeout > 0 {
		backstop = lim.Timeout + 5*time.Second
	}
	sup := &job.Supervisor{Limits: job.Limits{Timeout: backstop, Output: lim.Output, Memory: lim.Memory}, Begin: start}
	out := job.NewCapture(lim.Output, s.Streams, nil)
	sup.Capture = out
	stdout, stderr := out.Stdout, out.Stderr

	// Stdin, pulled by the server: one read of at most the bytes asked
	// for at a time. A read that blocks is left behind when the run ends,
	// as in process.
	wants := make(chan int, 4)
	defer close(wants)
	go func() {
		buf := make([]byte, chunk)
		eof := false
		for n := range wants {
			if eof || s.Streams.Stdin == nil {
				_ = c.write(frameEOF, nil)
				continue
			}
			k, err := s.Streams.Stdin.Read(buf[:min(n, len(buf))])
			if k > 0 {
				if c.write(frameStdin, buf[:k]) != nil {
					return
				}
				continue
			}
			if err != nil {
				eof = true
				_ = c.write(frameEOF, nil)
				continue
			}
			_ = c.write(frameStdin, nil) // an empty read, passed on as one
		}
	}()

	type end struct {
		reply workerReply
		err   error
	}
	began := make(chan struct{})
	startedCh := began
	done := make(chan end, 1)
	go func() {
		for {
			kind, b, err := c.read(maxControl)
			if err != nil {
				done <- end{err: err}
				return
			}
			switch kind {
			case frameSend: // the server does not have the module
				if err := c.write(frameModule, s.Module); err != nil {
					done <- end{err: err}
					return
				}
			case frameAck:
				if began != nil {
					close(began)
					began = nil
				}
			case frameStdout:
				_, _ = stdout.Write(b)
			case frameStderr:
				_, _ = stderr.Write(b)
			case frameWant:
				if len(b) == 4 {
					select {
					case wants <- int(binary.BigEndian.Uint32(b)):
					default: // never more than one is due
					}
				}
			case frameReply:
				var r workerReply
				err := json.Unmarshal(b, &r)
				done <- end{reply: r, err: err}
				return
			default:
				done <- end{err: fmt.Errorf("unexpected frame %q", kind)}
				return
			}
		}
	}()
	started := func() bool {
		select {
		case <-startedCh:
			return true
		default:
			return false
		}
	}
	if !awaitAck(ctx, uc, ackBy, startedCh, done) {
		return nil, false, nil
	}
	_ = uc.SetWriteDeadline(time.Time{})

	sup.Wait = func() (job.Status, error) {
		fin := <-done
		if fin.err != nil {
			if !started() {
				return job.Status{}, errNotBegan
			}
			if errors.Is(fin.err, io.EOF) {
				fin.err = errors.New("the connection ended before the run did")
			}
			return job.Status{}, fmt.Errorf("wasm server: %w", fin.err)
		}
		if r := fin.reply.Result; r != nil {
			return job.Status{Reason: r.Reason, Code: r.ExitCode, Detail: r.Detail, Truncated: r.Truncated}, nil
		}
		if cl, ok := classes[fin.reply.Class]; ok {
			return job.Status{}, fmt.Errorf("%s (in the wasm server): %w", fin.reply.Error, cl)
		}
		return job.Status{}, fmt.Errorf("wasm server: %s", fin.reply.Error)
	}
	// A cancel is passed on, and the server's reply awaited 2 s at most;
	// the backstop, or a server that does not answer the cancel, ends the
	// connection.
	sup.Kill = func(why job.Reason) {
		if why == job.Timeout {
			_ = uc.Close()
			return
		}
		_ = c.write(frameCancel, []byte(context.Cause(ctx).Error()))
	}
	sup.KillGrace = 2 * time.Second
	sup.Abandon = func(job.Result) { _ = uc.Close() }
	res, err := sup.Run(ctx)
	if errors.Is(err, errNotBegan) {
		return nil, false, nil
	}
	if err == nil && sup.StopReason() == job.Timeout {
		res.Detail = "stopped after " + lim.Timeout.String() + " (the wasm server did not answer)"
	}
	return res, true, err
}

// errNotBegan: the connection ended before the server started the run.
var errNotBegan = errors.New("wasm server: the run did not begin")
