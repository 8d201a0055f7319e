package wasm

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/ccrun/ccrun/runtime/job"
)

// The warm server: a per-user background process that keeps compiled
// modules in memory and runs guests for the clients of one user, so that
// a short-lived process (one `ccrun exec`) does not pay for compiling (or
// loading from the disk cache) the module again.
//
// The server only runs what a client sends: the module's bytes (never a
// path), its arguments, environment, mounts (absolute host paths) and
// limits. The gate stays in the client. The server accepts connections
// from its own uid only (SO_PEERCRED), on a socket in a directory only the
// user can enter; a client checks the server's uid the same way.
//
// # Protocol
//
// One connection is one run. Every message is a frame: a kind byte, a
// 4-byte big-endian length, then that many bytes.
//
//	client → server: 'Q' request (JSON), 'M' module bytes, then any of
//	                 'I' stdin bytes, 'Z' end of stdin, 'X' cancel (the cause)
//	server → client: 'A' the run starts, '1' stdout bytes, '2' stderr bytes, 'W' want stdin
//	                 (4-byte count), then 'R' the reply (JSON), last
//
// A client that sees the connection end before 'A' knows the guest did not
// run, and may run it elsewhere. Stdin is pulled: the server asks for at most the bytes the guest reads,
// so its reading of the connection never waits for the guest, and a
// cancel, or the client going away, stops the run at once.

// Environment variables of the server process: ServerEnv=1 marks it (its
// main calls ServeDefault); the others say where it listens, which disk
// cache it uses and after how long without a run it exits.
const (
	ServerEnv       = "CCRUN_WASM_SERVE"
	serverSocketEnv = "CCRUN_WASM_SERVE_SOCKET"
	serverCacheEnv  = "CCRUN_WASM_SERVE_CACHE"
	serverIdleEnv   = "CCRUN_WASM_SERVE_IDLE"
)

// DefaultIdle is how long a server started by ServeDefault waits without a
// run before it exits.
const DefaultIdle = 10 * time.Minute

// ErrUnsafeSocket: the server's socket directory is not a directory that
// only this user can enter, or the peer at the other end of the socket is
// another user.
var ErrUnsafeSocket = errdefs.ErrPermissionDenied.WithMessage("unsafe wasm server socket")

const (
	frameRequest = 'Q'
	frameModule  = 'M'
	frameStdin   = 'I'
	frameEOF     = 'Z'
	frameCancel  = 'X'
	frameStdout  = '1'
	frameStderr  = '2'
	frameWant    = 'W'
	frameReply   = 'R'
	frameAck     = 'A' // the server starts the run: before it, a client may fall back

	maxFrame    = 1 << 30 // a module is one frame
	maxControl  = 1 << 20 // a request or reply
	chunk       = 32 << 10
	dialTimeout = 200 * time.Millisecond
)

// IsServer reports whether this process was started as a warm server (by
// a client's auto-start). Its main should then call ServeDefault first
// thing:
//
//	if wasm.IsServer() {
//		os.Exit(wasm.ServeDefault())
//	}
func IsServer() bool { return os.Getenv(ServerEnv) == "1" }

// DefaultSocket returns where the warm server of this user listens:
// $XDG_RUNTIME_DIR/ccrun/wasm.sock when XDG_RUNTIME_DIR is an absolute
// path, else os.TempDir()/ccrun-UID/wasm.sock.
func DefaultSocket() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "ccrun", "wasm.sock")
	}
	return filepath.Join(os.TempDir(), "ccrun-"+strconv.Itoa(os.Getuid()), "wasm.sock")
}

// checkSocketDir refuses a directory that is a symbolic link, is not a
// directory, is not owned by this user, or that others may enter (any
// permission bit for group or others).
func checkSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("wasm server: socket dir: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("wasm server: socket dir %s is not a plain directory: %w", dir, ErrUnsafeSocket)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("wasm server: socket dir %s is not yours: %w", dir, ErrUnsafeSocket)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("wasm server: socket dir %s is open to others (%v): %w", dir, fi.Mode().Perm(), ErrUnsafeSocket)
	}
	return nil
}

// peerUID returns the uid of the process at the other end of c
// (peer_linux.go, peer_other.go).

// conn is one connection with framed, locked writes.
type conn struct {
	c  *net.UnixConn
	r  *bufio.Reader
	mu sync.Mutex
}

func newConn(c *net.UnixConn) *conn { return &conn{c: c, r: bufio.NewReaderSize(c, 64<<10)} }

func (c *conn) write(kind byte, payload []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.c.Write(h[:]); err != nil {
		return err
	}
	_, err := c.c.Write(payload)
	return err
}

func (c *conn) writeJSON(kind byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.write(kind, b)
}

// read returns the next frame; payloads over max are refused.
func (c *conn) read(max int) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if int64(n) > int64(max) {
		return 0, nil, fmt.Errorf("frame %q of %d bytes: too large", h[0], n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return 0, nil, err
	}
	return h[0], b, nil
}

// serverRequest is what a client asks for: a Spec without its module and
// streams, with its limits resolved.
type serverRequest struct {
	Name          string      `json:"name"`
	Args          []string    `json:"args"`
	Env           []string    `json:"env"`
	Mounts        []job.Mount `json:"mounts"`
	Timeout       int64       `json:"timeout_ns"`
	Memory        int64       `json:"memory"`
	Output        int64       `json:"output"`
	Deterministic bool        `json:"deterministic"`
	Stdin         bool        `json:"stdin"` // the client has a stdin to send
	Protocol      int         `json:"protocol"`
}

// protocol is the version of the frames and the request: a server closes,
// before acknowledging, a request of another version, and the client runs
// the guest in its own process.
const protocol = 1

// Server runs guests for clients of its own uid. Build one with NewServer;
// Serve may be called once. It is safe for concurrent use.
type Server struct {
	e    *Executor
	idle time.Duration

	// Stale, when set, is asked before every run; when it says true, the
	// Server takes no more runs (the connection is closed before the
	// acknowledgement, so the client runs the guest itself), lets the runs
	// going end, and Serve returns nil. ServeDefault sets it to notice
	// that its executable was replaced (ccrun upgraded): an old server
	// must not go on running guests with old code.
	Stale func() bool

	served atomic.Int64 // runs started, for tests

	mu     sync.Mutex
	active int
	last   time.Time
}

// NewServer returns a Server that runs guests with e (in process, with
// interrupt checks: e must not be made WithWorkerProcess or
// WithInterrupt(false)) and whose Serve returns after idle without a run
// (0: never). The Server does not close e.
func NewServer(e *Executor, idle time.Duration) (*Server, error) {
	if e.worker != "" || !e.interrupt || e.server != "" {
		return nil, fmt.Errorf("wasm server: the executor must run guests in process with interrupt checks: %w", ErrInvalidSpec)
	}
	return &Server{e: e, idle: idle, last: time.Now()}, nil
}

// Serve accepts connections on l until ctx is done, the idle time passes
// without a run, or l fails; each connection, from this uid only, is one
// run. It returns nil when it stopped for ctx or idleness. Runs still
// going when it returns are cancelled.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	if s.idle > 0 {
		go s.watchIdle(ctx, cancel)
	}
	uid := os.Getuid()
	stale := false
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || stale {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("wasm server: accept: %w", err)
		}
		if peer, err := peerUID(c); err != nil || peer != uid {
			_ = c.Close() // another user, or unknown: not served
			continue
		}
		if s.Stale != nil && s.Stale() {
			_ = c.Close()
			_ = l.Close() // no more runs; wait for those going on, below
			stale = true
			continue
		}
		s.mu.Lock()
		s.active++
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(ctx, newConn(c))
			_ = c.Close()
			s.mu.Lock()
			s.active--
			s.last = time.Now()
			s.mu.Unlock()
		}()
	}
}

func (s *Server) watchIdle(ctx context.Context, stop func()) {
	t := time.NewTicker(min(s.idle/4+time.Millisecond, 10*time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			idle := s.active == 0 && time.Since(s.last) >= s.idle
			s.mu.Unlock()
			if idle {
				stop()
				return
			}
		}
	}
}

// handle runs the one guest of a connection.
func (s *Server) handle(ctx context.Context, c *conn) {
	_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Second)) // the request comes at once
	kind, b, err := c.read(maxControl)
	if err != nil || kind != frameRequest {
		return
	}
	var req serverRequest
	if err := json.Unmarshal(b, &req); err != nil {
		_ = c.writeJSON(frameReply, replyErr(fmt.Errorf("wasm server: request: %v: %w", err, ErrInvalidSpec)))
		return
	}
	if req.Protocol != protocol {
		return // another version of ccrun: it runs the guest itself
	}
	kind, mod, err := c.read(maxFrame)
	if err != nil || kind != frameModule {
		return
	}
	_ = c.c.SetReadDeadline(time.Time{})

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	in := &pullStdin{c: c, data: make(chan []byte, 1), ctx: runCtx}
	// Read the client's frames for as long as the run goes: stdin, the
	// end of it, a cancel; a broken connection cancels the run.
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			kind, b, err := c.read(chunk)
			if err != nil {
				cancel(errors.New("the client went away"))
				return
			}
			switch kind {
			case frameStdin, frameEOF:
				if kind == frameEOF {
					b = nil
				} else if b == nil {
					b = []byte{} // an empty read, not the end
				}
				select {
				case in.data <- b:
				case <-runCtx.Done():
					return
				}
			case frameCancel:
				cancel(errors.New(string(b)))
			default:
				cancel(fmt.Errorf("wasm server: unexpected frame %q", kind))
				return
			}
		}
	}()
	spec := Spec{
		Module: mod, Name: req.Name, Args: req.Args, Env: req.Env, Mounts: req.Mounts,
		Streams: job.Streams{
			Stdout: frameWriter{c, frameStdout},
			Stderr: frameWriter{c, frameStderr},
		},
		Limits:        job.Limits{Timeout: time.Duration(req.Timeout), Memory: req.Memory, Output: req.Output},
		Deterministic: req.Deterministic,
	}
	if req.Stdin {
		spec.Streams.Stdin = in
	}
	if err := c.write(frameAck, nil); err != nil {
		return
	}
	s.served.Add(1)
	// A client that stops reading must not hold a guest in a write past
	// its time: writes give up at the run's deadline, or at once when the
	// run is cancelled or the client goes away.
	var wmu sync.Mutex
	finished := false
	stopDeadline := context.AfterFunc(runCtx, func() {
		wmu.Lock()
		defer wmu.Unlock()
		if !finished {
			_ = c.c.SetWriteDeadline(time.Now())
		}
	})
	if req.Timeout > 0 {
		_ = c.c.SetWriteDeadline(time.Now().Add(time.Duration(req.Timeout) + time.Second))
	}
	res, err := s.e.Run(runCtx, spec)
	wmu.Lock()
	finished = true
	wmu.Unlock()
	stopDeadline()
	cancel(nil) // the reader stops handing stdin over
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	var reply workerReply
	if err != nil {
		reply = replyErr(err)
	} else {
		reply = workerReply{Result: res}
	}
	if err := c.writeJSON(frameReply, reply); err != nil {
		_ = c.c.Close() // the client does not read: done with it
		<-readerDone
		return
	}
	_ = c.c.CloseWrite()
	// Wait for the client to close (it has what it needs), but not for
	// ever.
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	<-readerDone
}

// frameWriter sends what the guest writes to the client. A failed send
// is not the guest's error: the run goes on (a cancel follows when the
// client is gone).
type frameWriter struct {
	c    *conn
	kind byte
}

func (w frameWriter) Write(p []byte) (int, error) {
	for b := p; len(b) > 0; {
		n := min(len(b), chunk)
		if err := w.c.write(w.kind, b[:n]); err != nil {
			break
		}
		b = b[n:]
	}
	return len(p), nil
}

// pullStdin is the guest's stdin in the server: each Read asks the client
// for at most len(p) bytes and waits for them.
type pullStdin struct {
	c    *conn
	ctx  context.Context
	data chan []byte // nil slice: end of stdin
	left []byte
	eof  bool
}

func (p *pullStdin) Read(b []byte) (int, error) {
	if len(p.left) == 0 && !p.eof {
		var want [4]byte
		binary.BigEndian.PutUint32(want[:], uint32(min(len(b), chunk)))
		if err := p.c.write(frameWant, want[:]); err != nil {
			return 0, err
		}
		select {
		case d := <-p.data:
			if d == nil {
				p.eof = true
				break
			}
			if len(d) == 0 {
				return 0, nil // the client's stdin read nothing: so does the guest
			}
			p.left = d
		case <-p.ctx.Done():
			return 0, p.ctx.Err()
		}
	}
	if len(p.left) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.left)
	p.left = p.left[n:]
	return n, nil
}

// ListenAndServe serves on the socket at path (DefaultSocket when ""),
// with a disk cache in cacheDir (as WithCacheDir), until ctx is done or
// idle passes without a run. The socket's directory is created 0700 when
// missing and must be a directory only this user can enter. A lock file
// beside the socket (PATH.lock, holding the server's pid) keeps a second
// server off: when one holds it, ListenAndServe returns nil at once.
func ListenAndServe(ctx context.Context, path string, cacheDir string, idle time.Duration) error {
	return listenAndServe(ctx, path, cacheDir, idle, nil)
}

func listenAndServe(ctx context.Context, path string, cacheDir string, idle time.Duration, stale func() bool) error {
	if path == "" {
		path = DefaultSocket()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("wasm server: socket dir: %w", err)
	}
	if err := checkSocketDir(dir); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("wasm server: lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil // another server has it
		}
		return fmt.Errorf("wasm server: lock: %w", err)
	}
	_ = lock.Truncate(0)
	_, _ = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) // who serves, for a person
	// A socket left there is a stale one, of a server that died: this
	// one holds the lock.
	_ = os.Remove(path)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("wasm server: listen: %w", err)
	}
	l.SetUnlinkOnClose(true)
	defer l.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("wasm server: %w", err)
	}
	e, err := New(ctx, WithCacheDir(cacheDir))
	if err != nil {
		return err
	}
	defer e.Close(context.Background())
	s, err := NewServer(e, idle)
	if err != nil {
		return err
	}
	s.Stale = stale
	return s.Serve(ctx, l)
}

// exeReplaced returns a func that reports whether this process's
// executable is no longer the file it started from (see replaced), or nil
// when that cannot be known.
func exeReplaced() func() bool {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return replaced(exe)
}

// replaced returns a func that reports whether the file at path is no
// longer the one there now (another inode, size or modification time, or
// none), or nil when there is none now.
func replaced(path string) func() bool {
	was, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return func() bool {
		now, err := os.Stat(path)
		return err != nil || !os.SameFile(was, now) || !now.ModTime().Equal(was.ModTime()) || now.Size() != was.Size()
	}
}

// ServeDefault is the main of a server process started by a client: it
// serves on the socket, with the cache and idle time its environment
// names (DefaultSocket, the default cache dir and DefaultIdle when
// unset), until it has been idle that long or gets SIGTERM or SIGINT,
// and returns the process's exit code.
func ServeDefault() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cache, ok := os.LookupEnv(serverCacheEnv)
	if !ok {
		if d, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(d, "ccrun", "wasm")
		}
	}
	idle := DefaultIdle
	if v := os.Getenv(serverIdleEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wasm server:", serverIdleEnv+":", err)
			return 2
		}
		idle = d
	}
	if err := listenAndServe(ctx, os.Getenv(serverSocketEnv), cache, idle, exeReplaced()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
