package wasm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/remote"
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
// server (the program's main must call ServeDefault when IsWarmServer) and
// waits up to a second for it. A server that does not acknowledge the
// run within 2 s is killed (the process at the other end of the socket,
// by the kernel's peer credentials) and the guest runs here: the next
// run starts a new one. The run in the server has the same confinement,
// limits, isolation (a fresh instance per run) and results as in
// process; cancelling ctx or the client going away stops it. Ignored with
// WithWorkerProcess. Default: off (a program that does not call
// ServeDefault when IsWarmServer, must not be started as one).
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
	c, err := remote.Dial(socket)
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
	uc, err := remote.Dial(c.socket)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrServerGone)
	}
	res, started, err := remote.RunOn(ctx, uc, remoteSpec(s, bin, name, lim), start)
	if !started && err == nil {
		err = fmt.Errorf("wasm server: the connection ended: %w", ErrServerGone)
	}
	return res, err
}

// ErrServerGone: the connection to the warm server ended before the run
// started (the guest did not run).
var ErrServerGone = remote.ErrServerGone

// resolveSpec reads the module (Path when Module is nil) and resolves the
// name and limits as Run does.
func resolveSpec(s Spec, memory int64) ([]byte, string, job.Limits, error) {
	bin := s.Module
	if bin == nil {
		b, err := readModule(s)
		if err != nil {
			return nil, "", job.Limits{}, err
		}
		bin = b
	}
	name, lim := nameAndLimits(s, memory)
	return bin, name, lim, nil
}

// readModule reads the module at s.Path (for a Spec without Module).
func readModule(s Spec) ([]byte, error) {
	if s.Path == "" {
		return nil, fmt.Errorf("wasm: no module and no path: %w", ErrInvalidSpec)
	}
	b, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, fmt.Errorf("wasm: read module: %w", err)
	}
	return b, nil
}

// nameAndLimits are s's argv[0] (Name, else the base name of Path, else
// "module.wasm") and its limits with their defaults, Memory's memory (the
// Executor's) when s sets none.
func nameAndLimits(s Spec, memory int64) (string, job.Limits) {
	name := s.Name
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
	return name, lim.WithDefaults()
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
	uc, err := remote.Dial(e.server)
	if err != nil && e.serverExe != "" && !errors.Is(err, ErrUnsafeSocket) {
		started := false
		e.startOnce.Do(func() { started = remote.StartServer(e.serverExe, e.server, e.cacheDir) == nil })
		if started {
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if uc, err = remote.Dial(e.server); err == nil {
					break
				}
			}
		}
	}
	if err != nil {
		return nil, false, nil
	}
	res, began, err := remote.RunOn(ctx, uc, remoteSpec(s, bin, name, lim), start)
	if !began && err == nil {
		return nil, false, nil
	}
	return res, true, err
}
