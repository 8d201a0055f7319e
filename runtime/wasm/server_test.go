package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/asm"
	"github.com/ccrun/ccrun/runtime/wasm/internal/remote"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// testServer serves with the shared Executor on a socket of its own
// (wasmtest.Serve), after configure has set up the Server.
func testServer(t *testing.T, configure ...func(*Server)) (string, *Server) {
	t.Helper()
	srv, err := NewServer(shared, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range configure {
		f(srv)
	}
	return wasmtest.Serve(t, srv.Serve), srv
}

// stutter reads one byte, then nothing (0, nil), in turn.
type stutter struct {
	r    io.Reader
	mute bool
}

func (s *stutter) Read(p []byte) (int, error) {
	s.mute = !s.mute
	if s.mute || len(p) == 0 {
		return 0, nil
	}
	return s.r.Read(p[:1])
}

// serverExecutor is an Executor that runs its guests in the server at sock.
func serverExecutor(t *testing.T, sock string) *Executor {
	t.Helper()
	e, err := New(context.Background(), WithCacheDir(sharedCache), WithServer(sock, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// TestServerParity: a run through the server, by an Executor made
// WithServer and by a Client, ends exactly as the same run in process.
func TestServerParity(t *testing.T) {
	t.Parallel()
	sock, srv := testServer(t)
	viaExec := serverExecutor(t, sock)
	client, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	trap := asm.Module(false, []string{"explode"}, [][]byte{asm.OpUnreachable}, map[string]int{"_start": 0}, nil)
	tests := []struct {
		name  string
		spec  func() Spec // a fresh one per run: stdin is consumed
		class error
	}{
		{"hello", func() Spec { return Spec{Module: guests["hello"]} }, nil},
		{"args", func() Spec { return probe("args", "x", "y z") }, nil},
		{"env", func() Spec { s := probe("env"); s.Env = []string{"A=1", "B=two"}; return s }, nil},
		{"exit code", func() Spec { return probe("exit", "3") }, nil},
		{"stdin, bytes", func() Spec {
			s := probe("cat")
			s.Streams.Stdin = strings.NewReader("some input\nand more\n")
			return s
		}, nil},
		{"stdin, a pipe", func() Spec {
			s := probe("cat")
			pr, pw := io.Pipe()
			go func() {
				for i := range 100 {
					fmt.Fprintf(pw, "line %d\n", i)
				}
				pw.Close()
			}()
			s.Streams.Stdin = pr
			return s
		}, nil},
		{"stdin, empty reads", func() Spec {
			s := probe("cat")
			s.Streams.Stdin = &stutter{r: strings.NewReader("a\nb\nc\n")}
			return s
		}, nil},
		{"deterministic clock", func() Spec { s := probe("clock"); s.Deterministic = true; return s }, nil},
		{"deterministic rand", func() Spec { s := probe("rand"); s.Deterministic = true; return s }, nil},
		{"trap", func() Spec { return Spec{Module: trap, Name: "trap"} }, nil},
		{"not wasm", func() Spec { return Spec{Module: []byte("#!/bin/sh\n")} }, ErrNotWasm},
		{"missing start", func() Spec { return Spec{Module: []byte("\x00asm\x01\x00\x00\x00")} }, ErrMissingStart},
		{"empty argument", func() Spec { return probe("args", "") }, ErrInvalidSpec},
		{"bad env", func() Spec { s := probe("env"); s.Env = []string{"NOEQUALS"}; return s }, ErrInvalidSpec},
		{"mount not a dir", func() Spec {
			s := probe("ls")
			s.Mounts = []job.Mount{{Host: "/nonexistent-ccrun", Guest: "/x"}}
			return s
		}, ErrInvalidSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, wantErr := shared.Run(context.Background(), tc.spec())
			for name, run := range map[string]func(context.Context, Spec) (*job.Result, error){
				"executor": viaExec.Run, "client": client.Run,
			} {
				var streamed bytes.Buffer
				s := tc.spec()
				s.Streams.Stdout = &streamed
				got, err := run(context.Background(), s)
				if tc.class != nil {
					if !errors.Is(err, tc.class) || !errors.Is(wantErr, tc.class) {
						t.Errorf("%s: err = %v (in process: %v), want %v", name, err, wantErr, tc.class)
					}
					continue
				}
				if err != nil || wantErr != nil {
					t.Fatalf("%s: err = %v (in process: %v)", name, err, wantErr)
				}
				if got.Reason != want.Reason || got.ExitCode != want.ExitCode || got.Detail != want.Detail ||
					got.Truncated != want.Truncated || !bytes.Equal(got.Stdout, want.Stdout) || !bytes.Equal(got.Stderr, want.Stderr) {
					t.Errorf("%s: got %s %d %q out %q err %q; in process %s %d %q out %q err %q", name,
						got.Reason, got.ExitCode, got.Detail, got.Stdout, got.Stderr,
						want.Reason, want.ExitCode, want.Detail, want.Stdout, want.Stderr)
				}
				if !bytes.Equal(streamed.Bytes(), got.Stdout) {
					t.Errorf("%s: streamed %q, kept %q", name, streamed.Bytes(), got.Stdout)
				}
			}
		})
	}
	t.Cleanup(func() {
		// Every run above but the refused specs reached the server (the
		// executor did not quietly fall back).
		if remote.Served(srv) == 0 {
			t.Error("the server ran nothing")
		}
	})
}

// TestServerLimits: timeout (computing, sleeping, blocked on stdin),
// output cap and memory cap through the server.
// limitCase is a run a limit stops: how it ends.
type limitCase struct {
	name   string
	spec   Spec
	reason job.Reason
	code   int
}

// limitCases are the guests a limit stops, each in its way.
func limitCases() []limitCase {
	return []limitCase{
		{"infinite loop", probe("forever"), job.Timeout, job.TimeoutExit},
		{"sleeping", probe("sleep"), job.Timeout, job.TimeoutExit},
		{"flood", probe("flood"), job.OutputCap, job.KilledExitCode},
		{"memory bomb", probe("bomb"), job.Memory, job.KilledExitCode},
	}
}

func TestServerLimits(t *testing.T) {
	t.Parallel()
	sock, srv := testServer(t)
	client, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	tests := append(limitCases(), limitCase{"blocked on stdin", Spec{Module: guests["probe"], Args: []string{"cat"},
		Streams: job.Streams{Stdin: blockingReader{make(chan struct{})}}}, job.Timeout, job.TimeoutExit})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.spec
			s.Limits = job.Limits{Timeout: 20 * time.Second, Output: 64 << 10, Memory: 64 << 20}
			if tc.reason == job.Timeout {
				s.Limits.Timeout = time.Second
			}
			res, err := client.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason || res.ExitCode != tc.code {
				t.Errorf("got %s %d (%s), want %s %d", res.Reason, res.ExitCode, res.Detail, tc.reason, tc.code)
			}
			if len(res.Stdout) > 64<<10 {
				t.Errorf("kept %d bytes of stdout, over the cap", len(res.Stdout))
			}
			if tc.reason == job.OutputCap && !res.Truncated {
				t.Error("not marked truncated")
			}
		})
	}
	t.Cleanup(func() {
		if n := remote.Served(srv); n != int64(len(tests)) {
			t.Errorf("the server ran %d guests, want %d", n, len(tests))
		}
	})
}

// TestServerCancel: cancelling the client's context stops the run in the
// server (internal/remote's test of the same name has the client going
// away, or not reading).
func TestServerCancel(t *testing.T) {
	t.Parallel()
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		sock, srv := testServer(t)
		e := serverExecutor(t, sock)
		// Compiled first: a run cancelled while waiting for the compiler
		// ends with ctx's error, in process as in the server.
		if _, err := e.Run(context.Background(), probe("exit", "0")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("the agent gave up")
		time.AfterFunc(300*time.Millisecond, func() { cancel(cause) })
		s := probe("forever")
		s.Limits.Timeout = time.Minute
		res, err := e.Run(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != job.Cancelled || res.ExitCode != job.KilledExitCode || res.Detail != cause.Error() {
			t.Errorf("got %s %d %q, want cancelled %d %q", res.Reason, res.ExitCode, res.Detail, job.KilledExitCode, cause)
		}
		if remote.Served(srv) != 2 {
			t.Errorf("served %d runs, want 2", remote.Served(srv))
		}
		wasmtest.Eventually(t, "stopped in the server", func() bool { return remote.Active(srv) == 0 })
	})
}

// TestServerConcurrent: many clients at once, each with its own instance.
func TestServerConcurrent(t *testing.T) {
	t.Parallel()
	sock, srv := testServer(t)
	e := serverExecutor(t, sock)
	var wg sync.WaitGroup
	const clients, runs = 8, 3
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range runs {
				arg := fmt.Sprintf("c%d-r%d", i, j)
				res, err := e.Run(context.Background(), probe("args", arg))
				if err != nil {
					t.Error(err)
					return
				}
				if want := "probe\nargs\n" + arg + "\n"; string(res.Stdout) != want {
					t.Errorf("stdout %q, want %q", res.Stdout, want)
				}
			}
		}()
	}
	wg.Wait()
	if n := remote.Served(srv); n != clients*runs {
		t.Errorf("served %d, want %d", n, clients*runs)
	}
}

// TestServerEscape: mounts are confined through the server as in process
// (a sample of the attacks, one of each kind).
func TestServerEscape(t *testing.T) {
	t.Parallel()
	sock, srv := testServer(t)
	s := newSandbox(t)
	s.exec = serverExecutor(t, sock)
	sample := map[string]bool{
		"dotdot read": true, "existing absolute symlink": true, "write through existing relative symlink": true,
		"new relative symlink out": true, "hard link from ro mount into rw mount, then write": true,
		"compilation cache through symlink": true, "write read-only file": true,
	}
	n := 0
	for _, tc := range escapes(s) {
		if !sample[tc.name] {
			continue
		}
		n++
		if got := s.run(t, tc.args...); len(got) < 7 || got[:7] != "BLOCKED" {
			t.Errorf("escape %q: got %q, want BLOCKED", tc.args, got)
		}
	}
	s.unchanged(t)
	if n != len(sample) || remote.Served(srv) != int64(n) {
		t.Errorf("%d attacks of %d, %d through the server", n, len(sample), remote.Served(srv))
	}
	// A mount of the compilation cache is refused before the server.
	_, err := s.exec.Run(context.Background(), Spec{Module: guests["probe"], Args: []string{"ls", "/c"},
		Mounts: []job.Mount{{Host: sharedCache, Guest: "/c"}}})
	if !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("mounting the cache: err = %v, want ErrInvalidSpec", err)
	}
}

// TestServerFallback: with no server to answer, an Executor made
// WithServer runs the guest in process; Dial says why.
func TestServerFallback(t *testing.T) {
	t.Parallel()
	hello := func(t *testing.T, e *Executor) {
		t.Helper()
		done := make(chan struct{})
		var res *job.Result
		var err error
		go func() { res, err = e.Run(context.Background(), Spec{Module: guests["hello"]}); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the run hangs")
		}
		if err != nil || !res.OK() || string(res.Stdout) != "hello, world\n" {
			t.Fatalf("run: %v %+v", err, res)
		}
	}
	t.Run("no socket", func(t *testing.T) {
		t.Parallel()
		sock := filepath.Join(t.TempDir(), "none.sock")
		hello(t, serverExecutor(t, sock))
		if _, err := Dial(sock); err == nil {
			t.Error("Dial: no error")
		}
	})
	t.Run("stale socket", func(t *testing.T) {
		t.Parallel()
		sock, l := wasmtest.ListenShort(t)
		l.SetUnlinkOnClose(false)
		l.Close()
		if _, err := os.Lstat(sock); err != nil {
			t.Fatal(err)
		}
		hello(t, serverExecutor(t, sock))
		if _, err := Dial(sock); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("Dial: %v, want ECONNREFUSED", err)
		}
	})
	t.Run("socket dir open to others", func(t *testing.T) {
		t.Parallel()
		sock, srv := testServer(t)
		if err := os.Chmod(filepath.Dir(sock), 0o755); err != nil {
			t.Fatal(err)
		}
		hello(t, serverExecutor(t, sock))
		if remote.Served(srv) != 0 {
			t.Error("the server was used through an unsafe directory")
		}
		if _, err := Dial(sock); !errors.Is(err, ErrUnsafeSocket) {
			t.Errorf("Dial: %v, want ErrUnsafeSocket", err)
		}
	})
	t.Run("socket dir a symlink", func(t *testing.T) {
		t.Parallel()
		sock, srv := testServer(t)
		link := filepath.Join(t.TempDir(), "l")
		if err := os.Symlink(filepath.Dir(sock), link); err != nil {
			t.Fatal(err)
		}
		hello(t, serverExecutor(t, filepath.Join(link, "wasm.sock")))
		if remote.Served(srv) != 0 {
			t.Error("the server was used through a symlinked directory")
		}
	})
	t.Run("closed executor", func(t *testing.T) {
		t.Parallel()
		sock, _ := testServer(t)
		e := serverExecutor(t, sock)
		e.Close(context.Background())
		if _, err := e.Run(context.Background(), Spec{Module: guests["hello"]}); !errors.Is(err, ErrClosed) {
			t.Errorf("err = %v, want ErrClosed", err)
		}
	})
}

// TestServerStale: once Stale says so (its executable was replaced), the
// server takes no new run (the client runs it itself), lets the run going
// on end as it would have, and stops.
func TestServerStale(t *testing.T) {
	t.Parallel()
	var stale atomic.Bool
	sock, srv := testServer(t, func(s *Server) { s.Stale = stale.Load })
	e := serverExecutor(t, sock)
	pr, pw := io.Pipe()
	first := make(chan *job.Result, 1)
	go func() {
		res, err := e.Run(context.Background(), Spec{Module: guests["probe"], Args: []string{"cat"}, Streams: job.Streams{Stdin: pr}})
		if err != nil {
			t.Errorf("the run going on: %v", err)
		}
		first <- res
	}()
	wasmtest.Eventually(t, "running in the server", func() bool { return remote.Served(srv) == 1 })
	stale.Store(true)
	res, err := e.Run(context.Background(), Spec{Module: guests["hello"]})
	if err != nil || !res.OK() || string(res.Stdout) != "hello, world\n" {
		t.Fatalf("a run after the server went stale: %v %+v", err, res)
	}
	if n := remote.Served(srv); n != 1 {
		t.Errorf("the stale server took %d runs, want only the first", n)
	}
	if _, err := pw.Write([]byte("still here")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if res := <-first; res == nil || !res.OK() || string(res.Stdout) != "still here" {
		t.Errorf("the run going on: %+v", res)
	}
	wasmtest.Eventually(t, "stopped", func() bool { _, err := Dial(sock); return err != nil })
}

// TestServerProcess: the real thing. An Executor made WithServer with the
// test binary as the server starts it detached; the server runs guests,
// keeps a second server off, exits on SIGTERM and after its idle time.
func TestServerProcess(t *testing.T) {
	t.Setenv(remote.ServerIdleEnv, "2s")
	dir, err := os.MkdirTemp("", "ccrun-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "run", "wasm.sock") // the server makes run/
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A module that exits 42 at once: the server compiles it in no time,
	// even under the race detector.
	exit42 := asm.Module(true, []string{"start"}, [][]byte{asm.Cat(asm.OpI32Const(42), asm.OpCall(0))}, map[string]int{"_start": 1}, nil)
	check := func(res *job.Result, err error) {
		t.Helper()
		if err != nil || res.Reason != job.Exit || res.ExitCode != 42 {
			t.Fatalf("run: %v %+v", err, res)
		}
	}
	start := func() {
		e, err := New(context.Background(), WithCacheDir(sharedCache), WithServer(sock, exe))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(context.Background()) })
		check(e.Run(context.Background(), Spec{Module: exit42}))
	}
	start()
	var client *Client
	wasmtest.Eventually(t, "serving", func() bool { client, err = Dial(sock); return err == nil })
	fi, err := os.Stat(filepath.Dir(sock))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket dir: %v %v, want 0700", fi.Mode(), err)
	}
	check(client.Run(context.Background(), Spec{Module: exit42}))
	// A second server does not start while the first holds the lock.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ListenAndServe(ctx, sock, sharedCache, 0); err != nil || ctx.Err() != nil {
		t.Fatalf("second server: %v, %v; want nil at once", err, ctx.Err())
	}
	if _, err := Dial(sock); err != nil {
		t.Fatalf("the first server went away: %v", err)
	}
	// SIGTERM ends it, socket removed.
	b, err := os.ReadFile(sock + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid == os.Getpid() {
		t.Fatalf("lock file %q: %v", b, err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	gone := func() bool { _, err := os.Lstat(sock); return errors.Is(err, os.ErrNotExist) }
	wasmtest.Eventually(t, "gone after SIGTERM", gone)
	// Started again, it leaves after 2s idle.
	start()
	wasmtest.Eventually(t, "serving again", func() bool { _, err := Dial(sock); return err == nil })
	wasmtest.Eventually(t, "gone after its idle time", gone)
}

// BenchmarkServerHello: one run of the Go hello module through a warm
// server (socket, framing, a fresh instance), next to BenchmarkHello's in
// process figure.
func BenchmarkServerHello(b *testing.B) {
	sock, l := wasmtest.ListenShort(b)
	srv, err := NewServer(shared, 0)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	defer func() { cancel(); <-done }()
	client, err := Dial(sock)
	if err != nil {
		b.Fatal(err)
	}
	s := Spec{Module: guests["hello"]}
	if _, err := client.Run(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := client.Run(context.Background(), s)
		if err != nil || !res.OK() {
			b.Fatal(err, res)
		}
	}
}

// hangTestEnv names a socket the test binary, started with it, listens on
// and accepts connections at without ever answering: a hung server.
const hangTestEnv = "CCRUN_WASM_TEST_HANG"

func init() {
	if sock := os.Getenv(hangTestEnv); sock != "" {
		l, err := net.Listen("unix", sock)
		if err != nil {
			os.Exit(1)
		}
		held := make(chan net.Conn, 64) // held open, never read
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(1)
			}
			select {
			case held <- c:
			default: // more than a test opens: still never answered
			}
		}
	}
}

// serverPID reads the pid in the lock file of the server at sock; 0 when
// there is none.
func serverPID(t *testing.T, sock string) int {
	t.Helper()
	b, err := os.ReadFile(sock + ".lock")
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// alive says whether the process pid runs (it is reaped by the Executor
// that started it).
func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// TestServerBounds: the server ServeDefault runs (the CLI's default, the
// test binary here) runs guests one-shot, at full speed, with the limits
// of a run in process, and retires: after a guest a limit stopped, after a
// trap, after CCRUN_WASM_SERVE_RUNS runs; a connection that comes while a
// run goes on is closed before the acknowledgement (its client runs the
// guest itself). Each retired server's process ends, and the next run
// starts a new one.
func TestServerBounds(t *testing.T) {
	t.Setenv(remote.ServerIdleEnv, "1m")
	t.Setenv(remote.ServerRunsEnv, "3")
	dir, err := os.MkdirTemp("", "ccrun-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "run", "wasm.sock")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exit42 := asm.Module(true, []string{"start"}, [][]byte{asm.Cat(asm.OpI32Const(42), asm.OpCall(0))}, map[string]int{"_start": 1}, nil)
	trap := asm.Module(false, []string{"explode"}, [][]byte{asm.OpUnreachable}, map[string]int{"_start": 0}, nil)
	e, err := New(context.Background(), WithCacheDir(sharedCache), WithServer(sock, exe))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid := serverPID(t, sock); alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		e.Close(context.Background())
	})
	// start runs exit42 through e, which starts a server when none
	// answers, and returns the server's pid. A server slower to start
	// than the second e waits for it leaves the run to e's process: start
	// tries again, and e may start another, which finds the lock held and
	// exits.
	start := func() int {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			res, err := e.Run(context.Background(), Spec{Module: exit42})
			if err != nil || res.ExitCode != 42 {
				t.Fatalf("run: %v %+v", err, res)
			}
			e.startOnce = sync.Once{} // each start may start one
			if _, err := Dial(sock); err == nil {
				return serverPID(t, sock)
			}
		}
		t.Fatal("no server after 30s")
		return 0
	}
	// retired checks that the socket of server pid is gone once a client
	// has the reply of the run that retired it: the next client starts a
	// new server rather than reach the old one, which would turn it away.
	// The socket may already be another server's: one that start started
	// again while the first was slow to come up and that found the lock
	// held then, but took it once the first released it (it names itself
	// in the lock file before it listens).
	retired := func(pid int, what string) {
		t.Helper()
		_, err := os.Lstat(sock)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			t.Errorf("%s: the socket: %v", what, err)
		case serverPID(t, sock) == pid:
			t.Errorf("%s: the socket of server %d is there when the client has the reply of its last run", what, pid)
		default:
			t.Logf("%s: server %d serves already (it was started again while %d was slow to start)", what, serverPID(t, sock), pid)
		}
	}
	gone := func(pid int) {
		t.Helper()
		wasmtest.Eventually(t, fmt.Sprintf("server %d gone", pid), func() bool { return !alive(pid) })
	}
	client := func() *Client {
		t.Helper()
		c, err := Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// The servers' disk cache first gets the probe guest, compiled as
	// they run it (without interrupt checks): a cold compilation, slow
	// under the race detector, may take a server longer than the client
	// waits for the reply of a run of 1 s (its backstop, 5 s past the
	// run's timeout), and the client would then end that run itself.
	pid := start()
	warm := probe("exit", "0")
	warm.Limits.Timeout = 2 * time.Minute
	if res, err := client().Run(context.Background(), warm); err != nil || !res.OK() {
		t.Fatalf("warming the cache: %v %+v", err, res)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	gone(pid)

	t.Run("limits", func(t *testing.T) {
		for _, tc := range append(limitCases(), limitCase{"trap", Spec{Module: trap}, job.Exit, TrapExit}) {
			pid := start()
			s := tc.spec
			s.Limits = job.Limits{Timeout: 20 * time.Second, Output: 64 << 10, Memory: 64 << 20}
			if tc.reason == job.Timeout {
				s.Limits.Timeout = time.Second
			}
			res, err := client().Run(context.Background(), s)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if res.Reason != tc.reason || res.ExitCode != tc.code {
				t.Errorf("%s: got %s %d (%s), want %s %d", tc.name, res.Reason, res.ExitCode, res.Detail, tc.reason, tc.code)
			}
			if strings.Contains(res.Detail, "did not answer") {
				t.Errorf("%s: stopped by the client (%s), not by the server", tc.name, res.Detail)
			}
			if len(res.Stdout) > 64<<10 {
				t.Errorf("%s: kept %d bytes of stdout, over the cap", tc.name, len(res.Stdout))
			}
			retired(pid, tc.name)
			gone(pid) // retired on the abnormal end
		}
	})
	t.Run("runs", func(t *testing.T) {
		// Each run comes as soon as the reply of the one before is out:
		// the server takes it (it counted the run before it replied).
		for range 3 {
			pid := start() // run 1
			c := client()
			for i := range 2 { // runs 2 and 3
				if res, err := c.Run(context.Background(), probe("exit", "0")); err != nil || !res.OK() {
					t.Fatalf("run %d: %v %+v", i+2, err, res)
				}
			}
			retired(pid, "the last run")
			gone(pid)
			if _, err := c.Run(context.Background(), probe("exit", "0")); !errors.Is(err, ErrServerGone) {
				t.Errorf("a run after the last: %v, want ErrServerGone", err)
			}
		}
	})
	t.Run("busy", func(t *testing.T) {
		pid := start()
		c := client()
		release := make(chan struct{})
		in := &readSignal{read: make(chan struct{}), r: blockingReader{release}}
		first := make(chan error, 1)
		go func() {
			s := probe("cat")
			s.Streams.Stdin = in
			_, err := c.Run(context.Background(), s)
			first <- err
		}()
		select {
		case <-in.read: // the guest runs, and reads its stdin
		case err := <-first:
			t.Fatalf("the first run ended before reading its stdin: %v", err)
		}
		// The second run while the first goes on: not taken.
		_, err := c.Run(context.Background(), probe("exit", "0"))
		if !errors.Is(err, ErrServerGone) {
			t.Errorf("a run while busy: %v, want ErrServerGone", err)
		}
		// Through an Executor it runs in process.
		if res, err := e.Run(context.Background(), probe("exit", "7")); err != nil || res.ExitCode != 7 {
			t.Errorf("fallback: %v %+v", err, res)
		}
		close(release)
		if err := <-first; err != nil {
			t.Errorf("the first run: %v", err)
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		gone(pid)
	})
}

// readSignal closes read at its first Read.
type readSignal struct {
	once sync.Once
	read chan struct{}
	r    io.Reader
}

func (r *readSignal) Read(p []byte) (int, error) {
	r.once.Do(func() { close(r.read) })
	return r.r.Read(p)
}

// TestServerHung: a server that accepts but never acknowledges is killed
// and the guest runs in process; no run waits for it longer than
// ackTimeout.
func TestServerHung(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "ccrun-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "wasm.sock")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), hangTestEnv+"="+sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	wasmtest.Eventually(t, "listening", func() bool { _, err := os.Stat(sock); return err == nil })
	e := serverExecutor(t, sock)
	res, err := e.Run(context.Background(), probe("exit", "5"))
	if err != nil || res.ExitCode != 5 {
		t.Fatalf("run: %v %+v, want exit 5 in process", err, res)
	}
	select {
	case err := <-waited:
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the hung server ended with %v, want SIGKILL", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the hung server still runs")
	}
}

// TestRemoveStaleSockets: what a killed server left (its socket and lock
// file, no process holding the lock) is removed; a live server's is not.
func TestRemoveStaleSockets(t *testing.T) {
	wasmtest.RuntimeDir(t)
	dead := ProjectSocket("/dead")
	if err := os.MkdirAll(filepath.Dir(dead), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dead, dead + ".lock"} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	live := ProjectSocket("/live")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ListenAndServe(ctx, live, "", 0) }()
	t.Cleanup(func() { cancel(); <-served })
	wasmtest.Eventually(t, "serving", func() bool { _, err := Dial(live); return err == nil })
	removed, err := RemoveStaleSockets()
	if err != nil || len(removed) != 1 || removed[0] != dead {
		t.Errorf("removed %q (%v), want only %q", removed, err, dead)
	}
	for _, p := range []string{dead, dead + ".lock"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it gone", p, err)
		}
	}
	if _, err := Dial(live); err != nil {
		t.Errorf("the live server: %v", err)
	}
}
