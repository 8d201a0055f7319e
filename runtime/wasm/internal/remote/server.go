package remote

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ccrun/ccrun/internal/usersock"
	"github.com/ccrun/ccrun/runtime/job"
)

// The warm server: a background process of one user (and, as the CLI
// starts it, one project: ProjectSocket) that keeps compiled modules in
// memory and runs guests for its clients, so that a short-lived process
// (one `ccrun exec`) does not pay for compiling (or loading from the disk
// cache) the module again.
//
// A server started by a client (ServeDefault) runs one guest at a time,
// without interrupt checks, as a one-shot process does (WithOneShot): at
// full speed, and a limit that stops a guest ends the server once it has
// replied. It retires (takes no more runs, frees its socket for a new
// server, ends when its run has) after DefaultRuns runs, after
// DefaultMaxAge, after any run that did not end in a clean exit (a trap,
// a limit, a cancel, an error), when its executable was replaced, and it
// exits after DefaultIdle without a run.
//
// The server only runs what a client sends: the module's bytes (never a
// path), or the name of bytes it was sent before (their SHA-256, which
// the server computed), its arguments, environment, mounts (absolute host
// paths) and limits. The gate stays in the client. The server accepts connections
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
// A request that names the module's SHA-256 (sum) is sent without the
// module: the server that keeps a module of that sum (it computed the sum
// of the bytes it was sent, and keeps the last few) runs it; otherwise it
// asks for it with 'S', and the client sends 'M'. A module sent under a
// sum that is not its own is refused: what runs is what the client's gate
// was shown.
//
// A client that sees the connection end before 'A' knows the guest did not
// run, and may run it elsewhere. A server counts a run, and retires when
// the run calls for it, before it sends 'R': a client that has the reply
// finds the server free for its next run, or its socket gone.
// Stdin is pulled: the server asks for at most the bytes the guest reads,
// so its reading of the connection never waits for the guest, and a
// cancel, or the client going away, stops the run at once.

// Environment variables of the server process: ServerEnv=1 marks it (its
// main calls ServeDefault); the others say where it listens, which disk
// cache it uses, after how long without a run it exits and after how many
// runs it retires.
const (
	ServerEnv       = "CCRUN_WASM_SERVE"
	serverSocketEnv = "CCRUN_WASM_SERVE_SOCKET"
	serverCacheEnv  = "CCRUN_WASM_SERVE_CACHE"
	ServerIdleEnv   = "CCRUN_WASM_SERVE_IDLE"
	ServerRunsEnv   = "CCRUN_WASM_SERVE_RUNS"
)

// The bounds of a server started by ServeDefault.
const (
	// DefaultIdle is how long it waits without a run before it exits.
	DefaultIdle = 5 * time.Minute
	// DefaultRuns is how many runs it takes before it retires: whatever
	// a run could have left in the process lasts at most that many more.
	DefaultRuns = 200
	// DefaultMaxAge is how long after its start it retires, however
	// busy (a run going on then ends first, within its own timeout).
	DefaultMaxAge = time.Hour
)

// ErrUnsafeSocket: the server's socket directory is not a directory that
// only this user can enter, or the peer at the other end of the socket is
// another user.
var ErrUnsafeSocket = usersock.ErrUnsafe

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
	frameSend    = 'S' // the server has no module of the request's sum: send it

	maxFrame    = 1 << 30 // a module is one frame
	maxControl  = 1 << 20 // a request or reply
	chunk       = 32 << 10
	dialTimeout = 200 * time.Millisecond
)

// IsWarmServer reports whether this process was started as a warm server (by
// a client's auto-start: StartServer), whose main then calls ServeDefault
// first thing (runtime/wasm.IsWarmServer).
func IsWarmServer() bool { return os.Getenv(ServerEnv) == "1" }

// DefaultSocket returns where the warm server of this user listens:
// $XDG_RUNTIME_DIR/ccrun/wasm.sock when XDG_RUNTIME_DIR is an absolute
// path, else os.TempDir()/ccrun-UID/wasm.sock.
func DefaultSocket() string { return filepath.Join(SocketDir(), "wasm.sock") }

// SocketDir is the directory of this user's warm-server sockets:
// $XDG_RUNTIME_DIR/ccrun when XDG_RUNTIME_DIR is an absolute path, else
// os.TempDir()/ccrun-UID.
func SocketDir() string { return usersock.Dir() }

// ProjectSocket returns the socket of the warm server of this user for
// the project at dir (made absolute): wasm-HASH.sock in SocketDir, HASH
// the first 16 hex digits of the SHA-256 of the path. One server per
// project keeps what one project's guests could leave in a server away
// from another project's runs.
func ProjectSocket(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(SocketDir(), "wasm-"+hex.EncodeToString(sum[:8])+".sock")
}

// checkSocketDir refuses a directory that is a symbolic link, is not a
// directory, is not owned by this user, or that others may enter (any
// permission bit for group or others).
func checkSocketDir(dir string) error {
	if err := usersock.CheckDir(dir); err != nil {
		return fmt.Errorf("wasm server: %w", err)
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
	// Sum is the module's SHA-256, hex: the module follows only when the
	// server asks for it (frameSend). Empty: the module follows at once.
	Sum string `json:"sum,omitempty"`
}

// protocol is the version of the frames and the request: a server closes,
// before acknowledging, a request of another version, and the client runs
// the guest in its own process.
const protocol = 2

// Server runs guests for clients of its own uid (runtime/wasm.Server).
// Build one with NewServer; Serve may be called once. It is safe for
// concurrent use.
type Server struct {
	run  Runner
	idle time.Duration

	// Stale, when set, is asked before every run; when it says true, the
	// Server takes no more runs (the connection is closed before the
	// acknowledgement, so the client runs the guest itself), lets the runs
	// going end, and Serve returns nil. ServeDefault sets it to notice
	// that its executable was replaced (ccrun upgraded): an old server
	// must not go on running guests with old code.
	Stale func() bool

	// MaxRuns, when over 0, is how many runs the Server takes before it
	// retires. MaxAge, when over 0, is how long after NewServer it
	// retires. Retiring on an abnormal end (RetireOnAbnormal) takes no
	// more runs after one that did not end in a clean exit of the guest:
	// a trap, a limit, a cancel or an error. A retired Server closes its
	// listener, calls Retired (when set), lets the run going on end, and
	// Serve returns nil; a run that retires it does so before its reply
	// goes out. Set them before Serve.
	MaxRuns          int
	MaxAge           time.Duration
	RetireOnAbnormal bool
	Retired          func()

	served atomic.Int64 // runs started, for tests (Served)

	serial bool // one run at a time: a one-shot Executor's
	born   time.Time

	mu       sync.Mutex
	mods     []keptModule // the modules last sent under a sum, newest last
	active   int          // connections
	running  int          // runs acknowledged and not yet replied to
	last     time.Time
	runs     int
	retiring bool
	l        *net.UnixListener
}

// NewServer returns a Server that runs guests with run and whose Serve
// returns after idle without a run (0: never). A oneShot Server, whose run
// has no interrupt checks (runtime/wasm.WithOneShot), runs guests one at a
// time (a connection that comes while one runs is closed before the
// acknowledgement, and its client runs the guest itself) and retires on an
// abnormal end (RetireOnAbnormal). runtime/wasm.NewServer says which
// Executors may serve.
func NewServer(run Runner, idle time.Duration, oneShot bool) *Server {
	now := time.Now()
	return &Server{run: run, idle: idle, last: now, born: now, serial: oneShot, RetireOnAbnormal: oneShot}
}

// Served returns how many runs s has started, and Active how many
// connections it holds: for tests (runtime/wasm's too, whose Server is
// this one; a method would be part of its API).
func Served(s *Server) int64 { return s.served.Load() }

// Active: see Served.
func Active(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// retire stops the Server taking runs (see MaxRuns); it is called with
// s.mu held.
func (s *Server) retire() {
	if s.retiring {
		return
	}
	s.retiring = true
	if s.l != nil {
		_ = s.l.Close()
	}
	if s.Retired != nil {
		s.Retired()
	}
}

// abnormal says whether a run did not end in a clean exit of its guest.
func abnormal(res *job.Result, err error) bool {
	return err != nil || res == nil || res.Reason != job.Exit || (res.ExitCode == TrapExit && res.Detail != "")
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
	s.mu.Lock()
	s.l = l
	retired := s.retiring
	s.mu.Unlock()
	if retired {
		_ = l.Close()
	}
	if s.idle > 0 || s.MaxAge > 0 {
		go s.watchIdle(ctx, cancel)
	}
	uid := os.Getuid()
	stale := false
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			s.mu.Lock()
			retired := s.retiring
			s.mu.Unlock()
			if ctx.Err() != nil || stale || retired {
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
			s.mu.Lock()
			s.retire() // no more runs; wait for those going on, below
			s.mu.Unlock()
			stale = true
			continue
		}
		s.mu.Lock()
		if s.retiring {
			s.mu.Unlock()
			_ = c.Close() // before the acknowledgement: the client runs it
			continue
		}
		s.active++
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			// done ends the connection's count once its reply is out (the
			// client may take a while to close: idleness need not wait
			// for it). The run itself was counted before the reply (ended).
			done := func() {
				once.Do(func() {
					s.mu.Lock()
					defer s.mu.Unlock()
					s.active--
					s.last = time.Now()
				})
			}
			s.handle(ctx, newConn(c), done)
			done()
			_ = c.Close()
		}()
	}
}

func (s *Server) watchIdle(ctx context.Context, stop func()) {
	every := 10 * time.Second
	for _, d := range []time.Duration{s.idle, s.MaxAge} {
		if d > 0 {
			every = min(every, d/4+time.Millisecond)
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			idle := s.idle > 0 && s.active == 0 && time.Since(s.last) >= s.idle
			if s.MaxAge > 0 && time.Since(s.born) >= s.MaxAge {
				s.retire() // the run going on, if any, ends first
			}
			s.mu.Unlock()
			if idle {
				stop()
				return
			}
		}
	}
}

// keptModules is how many modules a Server keeps by their sum.
const keptModules = 4

// keptModule is a module a client sent under its sum, which the Server
// computed.
type keptModule struct {
	sum [sha256.Size]byte
	bin []byte
}

// kept returns the module kept under sum, or nil.
func (s *Server) kept(sum [sha256.Size]byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.mods {
		if m.sum == sum {
			return m.bin
		}
	}
	return nil
}

// keep keeps bin under sum, its SHA-256, dropping the oldest beyond
// keptModules.
func (s *Server) keep(sum [sha256.Size]byte, bin []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.mods {
		if m.sum == sum {
			return
		}
	}
	s.mods = append(s.mods, keptModule{sum, bin})
	if len(s.mods) > keptModules {
		s.mods = slices.Delete(s.mods, 0, 1)
	}
}

// ended counts a run that Run has returned from (res and err are what it
// returned), and retires the Server when it was the last one it takes or
// did not end cleanly. handle calls it before the run's reply goes out:
// a client has its reply only once the Server is free for the next run
// or, retired, has closed (and unlinked) its socket and released its lock
// (Retired). So a client that connects again as soon as it has a reply
// (the next `ccrun exec`) is never turned away, before the
// acknowledgement, by a run that has ended (a serial Server's one run at
// a time) nor by a retirement that has not happened yet: it is served, or
// finds no socket and starts a new server.
func (s *Server) ended(res *job.Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	s.runs++
	s.last = time.Now()
	if (s.MaxRuns > 0 && s.runs >= s.MaxRuns) || (s.RetireOnAbnormal && abnormal(res, err)) {
		s.retire()
	}
}

// handle runs the one guest of a connection. It counts the run (ended)
// before the reply is written, and calls done once the reply is out.
func (s *Server) handle(ctx context.Context, c *conn, done func()) {
	_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Second)) // the request comes at once
	kind, b, err := c.read(maxControl)
	if err != nil || kind != frameRequest {
		return
	}
	var req serverRequest
	if jerr := json.Unmarshal(b, &req); jerr != nil {
		_ = c.writeJSON(frameReply, replyErr(fmt.Errorf("wasm server: request: %v: %w", jerr, ErrInvalidSpec)))
		return
	}
	if req.Protocol != protocol {
		return // another version of ccrun: it runs the guest itself
	}
	// The sum the request names, if any; a malformed one names no module
	// kept, and no module sent is of it.
	var named, sum [sha256.Size]byte
	valid := len(req.Sum) == hex.EncodedLen(sha256.Size)
	if valid {
		_, err := hex.Decode(named[:], []byte(req.Sum))
		valid = err == nil
	}
	var mod []byte
	if valid {
		if mod = s.kept(named); mod != nil {
			sum = named
		}
	}
	if mod == nil {
		if req.Sum != "" && c.write(frameSend, nil) != nil {
			return
		}
		kind, mod, err = c.read(maxFrame)
		if err != nil || kind != frameModule {
			return
		}
		if req.Sum != "" {
			sum = sha256.Sum256(mod)
			if !valid || sum != named {
				_ = c.writeJSON(frameReply, replyErr(fmt.Errorf("wasm server: the module sent is not the one of sha256 %.64s: %w", req.Sum, ErrInvalidSpec)))
				return
			}
			s.keep(sum, mod)
		}
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
		Module: mod, Sum: sum, Name: req.Name, Args: req.Args, Env: req.Env, Mounts: req.Mounts,
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
	// One run at a time in a serial Server: a connection that comes while
	// one goes on is closed before the acknowledgement (its client runs
	// the guest itself), and so is one that comes while it retires.
	s.mu.Lock()
	if s.retiring || (s.serial && s.running > 0) {
		s.mu.Unlock()
		return
	}
	s.running++
	s.mu.Unlock()
	if c.write(frameAck, nil) != nil {
		s.mu.Lock()
		s.running--
		s.mu.Unlock()
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
	res, err := s.run(runCtx, spec)
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
	s.ended(res, err) // before the reply: see ended
	werr := c.writeJSON(frameReply, reply)
	done()
	if werr != nil {
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

// Local makes the Runner a server runs its guests with, once it holds its
// socket: in runtime/wasm, an Executor with the disk cache in cacheDir,
// made WithOneShot(oneShot) when oneShot is not nil (and otherwise with
// interrupt checks). done releases it.
type Local func(ctx context.Context, cacheDir string, oneShot func(*job.Result)) (run Runner, done func(), err error)

// ServeConfig is how ListenAndServe serves: Idle as NewServer's; Stale as
// Server.Stale; OneShot: guests run one-shot, with this exit function
// (see Local), and the bounds of ServeDefault: Runs as Server.MaxRuns, Age
// as Server.MaxAge, and retiring on an abnormal end.
type ServeConfig struct {
	Idle    time.Duration
	Stale   func() bool
	OneShot func(*job.Result)
	Runs    int
	Age     time.Duration
}

// ListenAndServe serves on the socket at path (DefaultSocket when ""),
// with the Runner local makes for the disk cache in cacheDir, as cfg says
// (runtime/wasm.ListenAndServe). The socket's directory is created 0700
// when missing and must be a directory only this user can enter. A lock
// file beside the socket (PATH.lock, holding the server's pid) keeps a
// second server off: when one holds it, ListenAndServe returns nil at
// once.
func ListenAndServe(ctx context.Context, path string, cacheDir string, cfg ServeConfig, local Local) error {
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
	lock, err := takeLock(path + ".lock")
	if err != nil || lock == nil {
		return err // nil: another server has it
	}
	defer lock.Close()
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
	run, done, err := local(ctx, cacheDir, cfg.OneShot)
	if err != nil {
		return err
	}
	defer done()
	s := NewServer(run, cfg.Idle, cfg.OneShot != nil)
	s.Stale, s.MaxRuns, s.MaxAge = cfg.Stale, cfg.Runs, cfg.Age
	// Retired: the socket is gone (the listener unlinked it), so the lock
	// goes too, and the next client starts a new server at once while
	// this one ends its last run.
	s.Retired = func() { _ = lock.Close() }
	return s.Serve(ctx, l)
}

// takeLock is usersock.TakeLock, its errors the wasm server's.
func takeLock(path string) (*os.File, error) {
	f, err := usersock.TakeLock(path)
	if err != nil {
		return nil, fmt.Errorf("wasm server: %w", err)
	}
	return f, nil
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

// ServeDefault is the main of a server process started by a client
// (runtime/wasm.ServeDefault), serving with the Runner local makes: it
// serves on the socket, with the cache, idle time and number of runs its
// environment names, guests one at a time and one-shot, until it has been
// idle that long, retired or gets SIGTERM or SIGINT, and returns the
// process's exit code.
func ServeDefault(local Local) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cache, ok := os.LookupEnv(serverCacheEnv)
	if !ok {
		if d, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(d, "ccrun", "wasm")
		}
	}
	cfg := ServeConfig{Idle: DefaultIdle, Stale: exeReplaced(), Runs: DefaultRuns, Age: DefaultMaxAge,
		// A guest a limit stopped runs on in compiled code that nothing
		// can stop: the server retires on it (RetireOnAbnormal), and its
		// process ends once the reply is out; this ends it should that
		// take over OneShotGrace.
		OneShot: func(*job.Result) { os.Exit(3) }}
	if v := os.Getenv(ServerIdleEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wasm server:", ServerIdleEnv+":", err)
			return 2
		}
		cfg.Idle = d
	}
	if v := os.Getenv(ServerRunsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "wasm server:", ServerRunsEnv+":", v, "is not a positive number")
			return 2
		}
		cfg.Runs = n
	}
	if err := ListenAndServe(ctx, os.Getenv(serverSocketEnv), cache, cfg, local); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// RemoveStaleSockets removes, from this user's SocketDir, the socket and
// lock file of every warm server that is gone (killed: nothing holds its
// lock), and returns the sockets removed (runtime/wasm.RemoveStaleSockets).
func RemoveStaleSockets() ([]string, error) {
	dir := SocketDir()
	if err := checkSocketDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	locks, err := filepath.Glob(filepath.Join(dir, "wasm*.sock.lock"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, path := range locks {
		f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue // gone meanwhile, or not a plain file: not ours to judge
		}
		// Held, and still the file at path: no server holds it, and none
		// can take it (or listen at its socket) while this process does.
		// One another process removed meanwhile is not judged: a new
		// server may hold the file at path now.
		if held, _ := usersock.LockHeld(f, path); held {
			sock := strings.TrimSuffix(path, ".lock")
			if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			} else {
				removed = append(removed, sock)
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		_ = f.Close()
	}
	return removed, errors.Join(errs...)
}
