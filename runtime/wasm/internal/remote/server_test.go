package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/usersock"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// The tests of the protocol, and of whom a Server serves. The runs
// themselves, through a Server with runtime/wasm's Executor, are
// runtime/wasm's tests (server_test.go there).

// stub is the Runner of these tests: it runs no module, but ends as
// runtime/wasm's Executor ends the probe guest with the same argument.
// "flood" writes to stdout until its timeout, "forever" runs until its run
// is stopped, "trap" traps, anything else exits 0 at once.
func stub(ctx context.Context, s Spec) (*job.Result, error) {
	arg := ""
	if len(s.Args) > 0 {
		arg = s.Args[0]
	}
	switch arg {
	case "flood":
		tctx, cancel := context.WithTimeout(ctx, s.Limits.Timeout)
		defer cancel()
		line := bytes.Repeat([]byte("y"), 4095)
		for tctx.Err() == nil {
			_, _ = s.Streams.Stdout.Write(append(line, '\n'))
		}
		return job.Stopped(job.Timeout, s.Limits, "", true), nil
	case "forever":
		<-ctx.Done()
		return job.Stopped(job.Cancelled, s.Limits, context.Cause(ctx).Error(), true), nil
	case "trap":
		return &job.Result{Reason: job.Exit, ExitCode: TrapExit, Detail: "trap: unreachable in function explode"}, nil
	}
	return &job.Result{Reason: job.Exit}, nil
}

// testServer serves with stub on a socket of its own.
func testServer(t *testing.T) (string, *Server) {
	t.Helper()
	srv := NewServer(stub, 0, false)
	return wasmtest.Serve(t, srv.Serve), srv
}

// rawRun sends req and the module mod to the server at sock, as a client
// does, and returns the connection, for the test to go on by hand.
func rawRun(t *testing.T, sock string, req serverRequest, mod []byte) (*net.UnixConn, *conn) {
	t.Helper()
	uc, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	c := newConn(uc)
	if err := c.writeJSON(frameRequest, req); err != nil {
		t.Fatal(err)
	}
	_ = c.write(frameModule, mod) // a server that refuses req may have closed already
	return uc, c
}

// module is what these tests send as the module: stub runs none.
var module = []byte("\x00asm\x01\x00\x00\x00")

// TestServerCancel: the client going away, or not reading, stops the run
// in the server (runtime/wasm's test of the same name cancels a run
// through its context).
func TestServerCancel(t *testing.T) {
	t.Parallel()
	t.Run("client not reading", func(t *testing.T) {
		t.Parallel()
		sock, srv := testServer(t)
		rawRun(t, sock, serverRequest{Name: "probe", Args: []string{"flood"}, Timeout: int64(time.Second), Output: -1, Protocol: protocol}, module)
		wasmtest.Eventually(t, "running", func() bool { return Served(srv) == 1 })
		wasmtest.Eventually(t, "stopped in the server", func() bool { return Active(srv) == 0 })
	})
	t.Run("client gone", func(t *testing.T) {
		t.Parallel()
		sock, srv := testServer(t)
		uc, c := rawRun(t, sock, serverRequest{Name: "probe", Args: []string{"forever"}, Timeout: int64(time.Minute), Protocol: protocol}, module)
		if kind, _, err := c.read(maxControl); err != nil || kind != frameAck {
			t.Fatalf("first frame %q, %v; want the ack", kind, err)
		}
		wasmtest.Eventually(t, "running", func() bool { return Active(srv) == 1 })
		uc.Close()
		wasmtest.Eventually(t, "stopped in the server", func() bool { return Active(srv) == 0 })
	})
}

// TestServerProtocol: a request of another protocol version is closed
// before the acknowledgement, so that its client runs the guest itself.
func TestServerProtocol(t *testing.T) {
	t.Parallel()
	sock, srv := testServer(t)
	_, c := rawRun(t, sock, serverRequest{Name: "hello", Mounts: []job.Mount{}, Protocol: protocol + 1}, module)
	if kind, _, err := c.read(maxControl); err == nil {
		t.Fatalf("got a %q frame, want the connection closed", kind)
	}
	if Served(srv) != 0 {
		t.Error("the run was served")
	}
	// The same request of this version runs.
	uc, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	res, began, err := RunOn(context.Background(), uc, Spec{Module: module, Name: "hello", Limits: job.Limits{}.WithDefaults()}, time.Now())
	if err != nil || !began || !res.OK() || Served(srv) != 1 {
		t.Errorf("run: %v %v %+v, served %d", err, began, res, Served(srv))
	}
}

// TestReplaced: the staleness ServeDefault uses notices a new file at the
// executable's path, a change to it, or its removal.
func TestReplaced(t *testing.T) {
	if stale := exeReplaced(); stale == nil || stale() {
		t.Fatal("this test binary: no check, or stale at once")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "ccrun")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		change func()
	}{
		{"new file renamed over it", func() {
			write(exe+".new", "v2")
			if err := os.Rename(exe+".new", exe); err != nil {
				t.Fatal(err)
			}
		}},
		{"written in place", func() { write(exe, "v1 and more") }},
		{"touched", func() {
			if err := os.Chtimes(exe, time.Now(), time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}},
		{"removed", func() { os.Remove(exe) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(exe, "v1")
			stale := replaced(exe)
			if stale == nil || stale() {
				t.Fatal("no check, or stale at once")
			}
			tc.change()
			if !stale() {
				t.Error("not noticed")
			}
		})
	}
	if replaced(filepath.Join(dir, "none")) != nil {
		t.Error("a check for a file that is not there")
	}
}

const peerTestEnv = "CCRUN_WASM_TEST_PEER"

// peerMain is the test binary run as another user: it tries the server at
// sock, raw and as a client, and prints what happened.
func peerMain(sock string) int {
	if _, err := Dial(sock); err == nil {
		fmt.Println("CLIENT-ACCEPTED")
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Println("DIAL-REFUSED", err)
		return 0
	}
	cc := newConn(c.(*net.UnixConn))
	_ = cc.writeJSON(frameRequest, serverRequest{Name: "x", Protocol: protocol})
	_ = cc.write(frameModule, []byte("\x00asm\x01\x00\x00\x00"))
	if kind, _, err := cc.read(maxControl); err == nil {
		fmt.Printf("SERVED %q\n", kind)
		return 0
	}
	fmt.Println("REFUSED")
	return 0
}

// TestServerOtherUser: a process of another uid cannot have the server run
// anything: not through a socket it may connect to (SO_PEERCRED), nor
// through one in the user's 0700 directory. Needs root (to switch uid).
func TestServerOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another uid")
	}
	t.Parallel()
	// The test binary, where uid 65534 may run it.
	bin, err := os.MkdirTemp("", "ccrun-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	peer := filepath.Join(bin, "peer")
	if err := os.WriteFile(peer, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, sock string) string {
		for try := 0; ; try++ {
			cmd := exec.Command(peer)
			cmd.Env = []string{peerTestEnv + "=" + sock}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			if errors.Is(err, syscall.ETXTBSY) && try < 50 {
				// a parallel test forked while the copy was still open
				// for writing in this process: its child holds it a moment
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatalf("peer: %v\n%s", err, out)
			}
			return string(out)
		}
	}
	t.Run("open socket, PEERCRED", func(t *testing.T) {
		sock, srv := testServer(t)
		if err := os.Chmod(filepath.Dir(sock), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(sock, 0o666); err != nil {
			t.Fatal(err)
		}
		out := run(t, sock)
		if !strings.Contains(out, "REFUSED") || strings.Contains(out, "SERVED") || strings.Contains(out, "CLIENT-ACCEPTED") {
			t.Errorf("another uid: %s", out)
		}
		if Served(srv) != 0 {
			t.Error("the server ran a guest for another uid")
		}
	})
	t.Run("private directory", func(t *testing.T) {
		sock, srv := testServer(t)
		out := run(t, sock)
		if !strings.Contains(out, "DIAL-REFUSED") {
			t.Errorf("another uid: %s", out)
		}
		if Served(srv) != 0 {
			t.Error("the server ran a guest for another uid")
		}
	})
}

// TestServerRetiresBeforeReply: a run that retires a serial Server (its
// last run, or a trap) has been counted and has retired the Server before
// its reply goes out, so that a client that has the reply and connects
// again (the next `ccrun exec`, at once) finds no socket, and starts a new
// server, rather than this one, which would close its connection before
// the acknowledgement (ErrServerGone for a Client; the guest run in the
// client's process for an Executor). Retired waits for the client to have
// the reply: had the reply gone out before the Server retired, the client
// has it then.
func TestServerRetiresBeforeReply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		runs int
		arg  string
	}{
		{"last run", 1, "exit"},
		{"trap", 0, "trap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(stub, 0, true)
			srv.MaxRuns = tc.runs
			replied := make(chan struct{})
			early := make(chan bool, 1)
			srv.Retired = func() { // called with srv.mu held
				if srv.running != 0 || srv.runs != 1 {
					t.Errorf("retired with %d runs going on and %d counted, want 0 and 1", srv.running, srv.runs)
				}
				select {
				case <-replied:
					early <- true
				case <-time.After(300 * time.Millisecond):
					early <- false
				}
			}
			sock := wasmtest.Serve(t, srv.Serve)
			uc, err := Dial(sock)
			if err != nil {
				t.Fatal(err)
			}
			res, began, err := RunOn(context.Background(), uc, Spec{Module: module, Name: "probe", Args: []string{tc.arg}, Limits: job.Limits{}.WithDefaults()}, time.Now())
			close(replied)
			if err != nil || !began || res == nil {
				t.Fatalf("run: %v %v %+v", err, began, res)
			}
			if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the socket when the client has the reply: %v, want it gone", err)
			}
			if uc, err := Dial(sock); err == nil {
				uc.Close()
				t.Error("a client that has the reply reaches the retired server")
			}
			if <-early {
				t.Error("the reply went out before the server retired")
			}
		})
	}
}

// TestServerBackToBack: a serial Server takes a run that comes as soon as
// the reply of the one before it is out: that run was counted before its
// reply went out. (TestServerRetiresBeforeReply holds the order; this is
// what a client sees of it.)
func TestServerBackToBack(t *testing.T) {
	t.Parallel()
	srv := NewServer(stub, 0, true)
	sock := wasmtest.Serve(t, srv.Serve)
	for i := range 200 {
		uc, err := Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		res, began, err := RunOn(context.Background(), uc, Spec{Module: module, Name: "probe", Limits: job.Limits{}.WithDefaults()}, time.Now())
		if err != nil || !began || !res.OK() {
			t.Fatalf("run %d: %v, began %v, %+v: want it taken", i, err, began, res)
		}
	}
}

// TestLockReplaced: a lock file that RemoveStaleSockets (`ccrun gc`)
// removed after a starting server opened it, and before that server
// locked it, is not the lock any more: that server, locking it, must not
// take itself for the owner (a second server, opening the path anew,
// locks another file; both would serve at the socket, each removing the
// other's). It opens the path again. Not parallel: it sets
// XDG_RUNTIME_DIR.
func TestLockReplaced(t *testing.T) {
	wasmtest.RuntimeDir(t)
	sock := ProjectSocket("/project")
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	path := sock + ".lock"
	// A starting server opens the lock file...
	opened, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	// ... `ccrun gc` locks it (nobody holds it), removes it, and lets go...
	if removed, err := RemoveStaleSockets(); err != nil || len(removed) != 1 {
		t.Fatalf("gc: %q, %v", removed, err)
	}
	// ... and another server starts: it holds the lock at the path.
	other, err := takeLock(path)
	if err != nil || other == nil {
		t.Fatalf("another server: %v %v, want the lock", other, err)
	}
	defer other.Close()
	// The first one locks the file it opened: not the lock.
	if held, err := usersock.LockHeld(opened, path); held || !errors.Is(err, usersock.ErrReplaced) {
		t.Errorf("the removed lock file: held %v (%v), want errReplaced", held, err)
	}
	// Opening again, it finds the lock held.
	if f, err := takeLock(path); f != nil || err != nil {
		t.Errorf("a second owner: %v %v, want none", f, err)
	}
	// gc leaves the held lock and its socket alone, and so does a gc
	// that opened the lock file before it was replaced.
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if removed, err := RemoveStaleSockets(); err != nil || len(removed) != 0 {
		t.Errorf("gc with the lock held: removed %q, %v", removed, err)
	}
	if held, err := usersock.LockHeld(opened, path); held || !errors.Is(err, usersock.ErrReplaced) {
		t.Errorf("the removed lock file, again: held %v (%v), want errReplaced", held, err)
	}
	for _, p := range []string{sock, path} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v, want it there", p, err)
		}
	}
}

// TestConcurrentStarters: servers started at once at the same socket (by
// clients that all found none), while `ccrun gc` runs, again and again:
// never two of them serve at a time, and the socket of the one that does
// answers, whatever gc does meanwhile. Not parallel: it sets
// XDG_RUNTIME_DIR.
func TestConcurrentStarters(t *testing.T) {
	wasmtest.RuntimeDir(t)
	sock := ProjectSocket("/project")
	var owners, most atomic.Int32
	local := func(context.Context, string, func(*job.Result)) (Runner, func(), error) {
		n := owners.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return stub, func() { owners.Add(-1) }, nil
	}
	for round := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for range 6 { // starters: each tries again while it is not the server
			wg.Go(func() {
				for ctx.Err() == nil {
					if err := ListenAndServe(ctx, sock, "", ServeConfig{}, local); err != nil && ctx.Err() == nil {
						errs <- err
						return
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
		for range 2 { // gc
			wg.Go(func() {
				for ctx.Err() == nil {
					_, _ = RemoveStaleSockets()
				}
			})
		}
		for deadline := time.Now().Add(30 * time.Second); owners.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		for i := range 20 {
			if n := owners.Load(); n != 1 {
				t.Errorf("round %d: %d servers", round, n)
				break
			}
			uc, err := Dial(sock)
			if err != nil {
				t.Errorf("round %d, dial %d: %v", round, i, err)
				break
			}
			uc.Close()
		}
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		if m := most.Load(); m > 1 {
			t.Errorf("round %d: %d servers at once", round, m)
		}
		if t.Failed() {
			return
		}
	}
}

// TestServerKeepsModule: a request that names its module's SHA-256 is sent
// without the module when the server keeps one of that sum, which it
// computed itself; the first time, the server asks for it. The runner gets
// the module and the sum. A module sent under a sum not its own is
// refused, and nothing runs; so is any request with a sum the server does
// not keep, until the module comes.
func TestServerKeepsModule(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []Spec
	srv := NewServer(func(ctx context.Context, s Spec) (*job.Result, error) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		return &job.Result{Reason: job.Exit}, nil
	}, 0, false)
	sock := wasmtest.Serve(t, srv.Serve)
	sum := sha256.Sum256(module)
	run := func(s Spec) {
		t.Helper()
		uc, err := Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		res, began, err := RunOn(context.Background(), uc, s, time.Now())
		if err != nil || !began || !res.OK() {
			t.Fatalf("run: %v %v %+v", err, began, res)
		}
	}
	// Asked for the module, then not: what the runner gets is the same.
	for range 2 {
		run(Spec{Module: module, Sum: sum, Name: "hello", Limits: job.Limits{}.WithDefaults()})
	}
	mu.Lock()
	if len(got) != 2 || !bytes.Equal(got[0].Module, module) || !bytes.Equal(got[1].Module, module) || got[0].Sum != sum || got[1].Sum != sum {
		t.Errorf("the runner got %d runs: %+v", len(got), got)
	}
	mu.Unlock()
	// By hand: the second request gets the ack at once, no ask.
	uc, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(uc)
	req := serverRequest{Name: "hello", Mounts: []job.Mount{}, Protocol: protocol, Sum: hex.EncodeToString(sum[:])}
	if err := c.writeJSON(frameRequest, req); err != nil {
		t.Fatal(err)
	}
	if kind, _, err := c.read(maxControl); err != nil || kind != frameAck {
		t.Fatalf("kept module: frame %q, %v; want the ack", kind, err)
	}
	uc.Close()
	// A module under a sum not its own: asked for, refused with a reply.
	other := sha256.Sum256([]byte("another module"))
	uc, err = Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	c = newConn(uc)
	req.Sum = hex.EncodeToString(other[:])
	if err := c.writeJSON(frameRequest, req); err != nil {
		t.Fatal(err)
	}
	if kind, _, err := c.read(maxControl); err != nil || kind != frameSend {
		t.Fatalf("unknown sum: frame %q, %v; want the ask", kind, err)
	}
	if err := c.write(frameModule, module); err != nil {
		t.Fatal(err)
	}
	kind, b, err := c.read(maxControl)
	if err != nil || kind != frameReply || !bytes.Contains(b, []byte("not the one of sha256")) {
		t.Fatalf("module under another sum: frame %q %s, %v; want the refusal", kind, b, err)
	}
	uc.Close()
	// A sum that is not one (not hex, too short): asked for, refused.
	for _, bad := range []string{"zz" + hex.EncodeToString(sum[1:]), hex.EncodeToString(sum[:16])} {
		uc, err = Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		c = newConn(uc)
		req.Sum = bad
		if err := c.writeJSON(frameRequest, req); err != nil {
			t.Fatal(err)
		}
		if kind, _, err := c.read(maxControl); err != nil || kind != frameSend {
			t.Fatalf("sum %q: frame %q, %v; want the ask", bad, kind, err)
		}
		if err := c.write(frameModule, module); err != nil {
			t.Fatal(err)
		}
		if kind, b, err := c.read(maxControl); err != nil || kind != frameReply || !bytes.Contains(b, []byte("not the one of sha256")) {
			t.Fatalf("sum %q: frame %q %s, %v; want the refusal", bad, kind, b, err)
		}
		uc.Close()
	}
	// The client's side: a Spec whose sum lies is refused with an error
	// of its class, and runs nowhere.
	uc, err = Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := RunOn(context.Background(), uc, Spec{Module: []byte("\x00asm\x01\x00\x00\x00\x00"), Sum: other, Name: "hello", Limits: job.Limits{}.WithDefaults()}, time.Now()); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("a lying sum: %v, want ErrInvalidSpec", err)
	}
	mu.Lock()
	if len(got) != 3 {
		t.Errorf("%d runs, want 3: a refused module ran", len(got))
	}
	mu.Unlock()
}
