package wasm

import (
	"context"
	"encoding/binary"
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

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
)

// ServerOptInEnv is the environment variable that turns the warm server
// on or off: CCRUN_WASM_SERVER=1 opts a library user in (ServerFromEnv);
// CCRUN_WASM_SERVER=0 opts the ccrun CLI, where it is on by default, out.
const ServerOptInEnv = "CCRUN_WASM_SERVER"

// WithServer makes Run send each guest to the warm server listening at
// socket (DefaultSocket when ""; the CLI uses ProjectSocket), which keeps
// compiled modules in memory across processes. When no server answers
// (no socket, a stale one, a socket directory others can enter, a server
// of another uid, a dial that takes over 200 ms, a server busy with
// another run or retiring), Run runs the guest in this process as without
// this option; when exe is not "" it first starts exe, detached, as the
// server (the program's main must call ServeDefault when IsServer) and
// waits up to a second for it. A server that does not acknowledge the
// run within 2 s is killed (the process at the other end of the socket,
// by the kernel's peer credentials) and the guest runs here: the next
// run starts a new one. The run in the server has the same confinement,
// limits, isolation (a fresh instance per run) and results as in
// process; cancelling ctx or the client going away stops it. Ignored with
// WithWorkerProcess. Default: off (a program that does not call
// ServeHelper, or ServeDefault when IsServer, must not be started as one).
func WithServer(socket, exe string) Option {
	return func(c *config) error {
		if socket == "" {
			socket = DefaultSocket()
		}
		c.server, c.serverExe = socket, exe
		return nil
	}
}

// ServerFromEnv returns the options that opt in to the warm server, with
// auto-start of this program (os.Executable) as the server, when the
// environment says CCRUN_WASM_SERVER=1; otherwise none.
func ServerFromEnv() []Option {
	if os.Getenv(ServerOptInEnv) != "1" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	return []Option{WithServer("", exe)}
}

// Client runs guests in a warm server. Build one with Dial. Unlike an
// Executor made WithServer, a Client does not fall back to running in
// process. It is safe for concurrent use; each Run is one connection.
type Client struct {
	socket string
	memory int64
}

// Dial checks that a server of this uid answers at socket (DefaultSocket
// when "") and returns a Client for it. Errors: ErrUnsafeSocket, or the
// dial's.
func Dial(socket string) (*Client, error) {
	if socket == "" {
		socket = DefaultSocket()
	}
	c, err := dialServer(socket)
	if err != nil {
		return nil, err
	}
	_ = c.Close()
	return &Client{socket: socket, memory: job.DefaultMemory}, nil
}

// Run runs s in the server, as Executor.Run does in process (a Spec with
// Path is read here: the server never reads a path). The memory default is
// job.DefaultMemory. A connection lost before the run started is an
// error wrapping ErrServerGone.
func (c *Client) Run(ctx context.Context, s Spec) (*job.Result, error) {
	start := time.Now()
	bin, name, lim, err := resolveSpec(s, c.memory)
	if err != nil {
		return nil, err
	}
	if err := wasmbin.Header(bin); err != nil {
		return nil, err
	}
	mounts, err := absMounts(s.Mounts, "")
	if err != nil {
		return nil, err
	}
	s.Mounts = mounts
	uc, err := dialServer(c.socket)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrServerGone)
	}
	res, started, err := runOn(ctx, uc, s, bin, name, lim, start)
	if !started && err == nil {
		err = fmt.Errorf("wasm server: the connection ended: %w", ErrServerGone)
	}
	return res, err
}

// ErrServerGone: the connection to the warm server ended before the run
// started (the guest did not run).
var ErrServerGone = errdefs.ErrUnavailable.WithMessage("wasm server gone")

// resolveSpec reads the module (Path when Module is nil) and resolves the
// name and limits as Run does.
func resolveSpec(s Spec, memory int64) ([]byte, string, job.Limits, error) {
	bin, name := s.Module, s.Name
	if bin == nil {
		if s.Path == "" {
			return nil, "", job.Limits{}, fmt.Errorf("wasm: no module and no path: %w", ErrInvalidSpec)
		}
		b, err := os.ReadFile(s.Path)
		if err != nil {
			return nil, "", job.Limits{}, fmt.Errorf("wasm: read module: %w", err)
		}
		bin = b
	}
	if name == "" {
		name = "module.wasm"
		if s.Path != "" {
			name = filepath.Base(s.Path)
		}
	}
	lim := s.Limits
	if lim.Memory == 0 {
		lim.Memory = memory
	}
	return bin, name, lim.WithDefaults(), nil
}

// absMounts makes the host paths absolute (the server's working directory
// is not ours) and checks them as Run does, against cacheDir too.
func absMounts(ms []job.Mount, cacheDir string) ([]job.Mount, error) {
	if err := checkOverlap(ms); err != nil {
		return nil, err
	}
	out := make([]job.Mount, len(ms))
	check := &Executor{cacheDir: cacheDir}
	for i, m := range ms {
		abs, err := filepath.Abs(m.Host)
		if err != nil {
			return nil, fmt.Errorf("wasm: mount %s: %v: %w", m, err, ErrInvalidSpec)
		}
		if err := check.checkMountHost(abs); err != nil {
			return nil, fmt.Errorf("wasm: mount %s: %w", m, err)
		}
		m.Host = abs
		out[i] = m
	}
	return out, nil
}

// dialServer connects to the server at socket, with a short timeout,
// after checking the socket's directory, and checks that the server is of
// this uid.
func dialServer(socket string) (*net.UnixConn, error) {
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

// runServer is Run through the warm server. ok is false when no server
// could take the run (the guest did not run): Run then runs it here.
func (e *Executor) runServer(ctx context.Context, s Spec, bin []byte, name string, lim job.Limits, start time.Time) (res *job.Result, ok bool, err error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, true, fmt.Errorf("wasm: run: %w", ErrClosed)
	}
	if bin == nil {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			return nil, true, fmt.Errorf("wasm: read module: %w", err)
		}
		bin = b
	}
	if err := wasmbin.Header(bin); err != nil {
		return nil, true, err
	}
	mounts, err := absMounts(s.Mounts, e.cacheDir)
	if err != nil {
		return nil, true, err
	}
	s.Mounts = mounts
	uc, err := dialServer(e.server)
	if err != nil && e.serverExe != "" && !errors.Is(err, ErrUnsafeSocket) {
		started := false
		e.startOnce.Do(func() { started = e.startServer() == nil })
		if started {
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if uc, err = dialServer(e.server); err == nil {
					break
				}
			}
		}
	}
	if err != nil {
		return nil, false, nil
	}
	res, began, err := runOn(ctx, uc, s, bin, name, lim, start)
	if !began && err == nil {
		return nil, false, nil
	}
	return res, true, err
}

// startServer starts e.serverExe as the server, detached (a session of its
// own, stdio on /dev/null, working directory /), with nothing of this
// process's environment but the idle time when set.
func (e *Executor) startServer() error {
	dir := filepath.Dir(e.server)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cmd := exec.Command(e.serverExe)
	cmd.Env = []string{ServerEnv + "=1", serverSocketEnv + "=" + e.server, serverCacheEnv + "=" + e.cacheDir}
	for _, k := range []string{serverIdleEnv, serverRunsEnv} {
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

// runOn runs one guest on the connection uc, which it closes. began says
// whether the server started the run; when it did not, the error is nil
// and the guest did not run.
func runOn(ctx context.Context, uc *net.UnixConn, s Spec, bin []byte, name string, lim job.Limits, start time.Time) (*job.Result, bool, error) {
	defer uc.Close()
	c := newConn(uc)
	req := serverRequest{Name: name, Args: s.Args, Env: s.Env, Mounts: s.Mounts,
		Timeout: int64(lim.Timeout), Memory: lim.Memory, Output: lim.Output,
		Deterministic: s.Deterministic, Stdin: s.Streams.Stdin != nil, Protocol: protocol}
	if req.Mounts == nil {
		req.Mounts = []job.Mount{}
	}
	// The server reads the request and the module, and acknowledges, at
	// once: one that does not within ackTimeout is hung (awaitAck).
	ackBy := time.Now().Add(ackTimeout)
	_ = uc.SetWriteDeadline(ackBy)
	if err := c.writeJSON(frameRequest, req); err != nil {
		hungPeer(uc, err)
		return nil, false, nil
	}
	if err := c.write(frameModule, bin); err != nil {
		hungPeer(uc, err)
		return nil, false, nil
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
