package wasm

import (
	"context"
	"fmt"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/remote"
)

// The warm server is internal/remote's (what it is, its bounds and its
// protocol are described there): what is here is what a program sees of
// it, and the Executor it serves with.

// ServerEnv is the environment variable that marks a server process:
// ServerEnv=1 (its main calls ServeDefault).
const ServerEnv = remote.ServerEnv

// The bounds of a server started by ServeDefault.
const (
	// DefaultIdle is how long it waits without a run before it exits.
	DefaultIdle = remote.DefaultIdle
	// DefaultRuns is how many runs it takes before it retires: whatever
	// a run could have left in the process lasts at most that many more.
	DefaultRuns = remote.DefaultRuns
	// DefaultMaxAge is how long after its start it retires, however
	// busy (a run going on then ends first, within its own timeout).
	DefaultMaxAge = remote.DefaultMaxAge
)

// ErrUnsafeSocket: the server's socket directory is not a directory that
// only this user can enter, or the peer at the other end of the socket is
// another user.
var ErrUnsafeSocket = remote.ErrUnsafeSocket

// IsWarmServer reports whether this process was started as a warm server (by
// a client's auto-start). Its main should then call ServeDefault first
// thing:
//
//	if wasm.IsWarmServer() {
//		os.Exit(wasm.ServeDefault())
//	}
func IsWarmServer() bool { return remote.IsWarmServer() }

// DefaultSocket returns where the warm server of this user listens:
// $XDG_RUNTIME_DIR/ccrun/wasm.sock when XDG_RUNTIME_DIR is an absolute
// path, else os.TempDir()/ccrun-UID/wasm.sock.
func DefaultSocket() string { return remote.DefaultSocket() }

// SocketDir is the directory of this user's warm-server sockets:
// $XDG_RUNTIME_DIR/ccrun when XDG_RUNTIME_DIR is an absolute path, else
// os.TempDir()/ccrun-UID.
func SocketDir() string { return remote.SocketDir() }

// ProjectSocket returns the socket of the warm server of this user for
// the project at dir (made absolute): wasm-HASH.sock in SocketDir, HASH
// the first 16 hex digits of the SHA-256 of the path. One server per
// project keeps what one project's guests could leave in a server away
// from another project's runs.
func ProjectSocket(dir string) string { return remote.ProjectSocket(dir) }

// Server runs guests for clients of its own uid. Build one with NewServer;
// Serve may be called once. It is safe for concurrent use.
//
// Serve(ctx, l) accepts connections on l until ctx is done, the idle time
// passes without a run, or l fails; each connection, from this uid only,
// is one run. It returns nil when it stopped for ctx or idleness. Runs
// still going when it returns are cancelled.
//
// Stale, when set, is asked before every run; when it says true, the
// Server takes no more runs (the connection is closed before the
// acknowledgement, so the client runs the guest itself), lets the runs
// going end, and Serve returns nil. MaxRuns, when over 0, is how many runs
// the Server takes before it retires; MaxAge, when over 0, how long after
// NewServer it retires; RetireOnAbnormal, whether it retires after a run
// that did not end in a clean exit of the guest (a trap, a limit, a cancel
// or an error). A retired Server closes its listener, calls Retired (when
// set), lets the run going on end, and Serve returns nil; a run that
// retires it does so before its reply goes out. Set them before Serve.
type Server = remote.Server

// NewServer returns a Server that runs guests with e, in process, and
// whose Serve returns after idle without a run (0: never). e must not be
// made WithWorkerProcess or WithServer, and runs either with interrupt
// checks (guests then run side by side) or WithOneShot, in a process that
// exists to serve (ServeDefault): guests then run one at a time (a
// connection that comes while one runs is closed before the
// acknowledgement, and its client runs the guest itself), and a limit
// that stops a guest retires the Server, whose process must end (the
// exit function of WithOneShot is the backstop). The Server does not
// close e.
func NewServer(e *Executor, idle time.Duration) (*Server, error) {
	if e.worker != "" || e.server != "" || (!e.interrupt && e.oneShot == nil) {
		return nil, fmt.Errorf("wasm server: the executor must run guests in process, with interrupt checks or one-shot: %w", ErrInvalidSpec)
	}
	return remote.NewServer(e.runRemote, idle, e.oneShot != nil), nil
}

// ListenAndServe serves on the socket at path (DefaultSocket when ""),
// with a disk cache in cacheDir (as WithCacheDir), until ctx is done or
// idle passes without a run. The socket's directory is created 0700 when
// missing and must be a directory only this user can enter. A lock file
// beside the socket (PATH.lock, holding the server's pid) keeps a second
// server off: when one holds it, ListenAndServe returns nil at once.
// Guests run with interrupt checks, side by side, with no bound on the
// runs (ServeDefault's server is the bounded, one-shot one).
func ListenAndServe(ctx context.Context, path string, cacheDir string, idle time.Duration) error {
	return remote.ListenAndServe(ctx, path, cacheDir, remote.ServeConfig{Idle: idle}, serveLocal)
}

// serveLocal makes the Executor a server runs its guests with (a
// remote.Local): the disk cache in cacheDir, and one-shot with the exit
// function oneShot when it is not nil, else with interrupt checks.
func serveLocal(ctx context.Context, cacheDir string, oneShot func(*job.Result)) (remote.Runner, func(), error) {
	opts := []Option{WithCacheDir(cacheDir)}
	if oneShot != nil {
		opts = append(opts, WithOneShot(oneShot))
	}
	e, err := New(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	return e.runRemote, func() { _ = e.Close(context.Background()) }, nil
}

// ServeDefault is the main of a server process started by a client: it
// serves on the socket, with the cache, idle time and number of runs its
// environment names (DefaultSocket, the default cache dir, DefaultIdle
// and DefaultRuns when unset), guests one at a time and one-shot (see
// NewServer), until it has been idle that long, retired (DefaultRuns,
// DefaultMaxAge, a run that did not end cleanly, a replaced executable)
// or gets SIGTERM or SIGINT, and returns the process's exit code.
func ServeDefault() int { return remote.ServeDefault(serveLocal) }

// RemoveStaleSockets removes, from this user's SocketDir, the socket and
// lock file of every warm server that is gone (killed: nothing holds its
// lock), and returns the sockets removed. A server that runs is left
// alone. It is what `ccrun gc` does for @wasm.
func RemoveStaleSockets() ([]string, error) { return remote.RemoveStaleSockets() }
