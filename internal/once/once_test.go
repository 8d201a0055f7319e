package once

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/cbuild"
	"github.com/ccrun/ccrun/internal/ctr"
)

// TestBuiltFromSource: the embedded programs are what `make once` builds
// (where the compilers are installed; CI installs them): once from
// src/once.c, and internal/ctr's holder from its hold/hold.c.
func TestBuiltFromSource(t *testing.T) {
	out := cbuild.Make(t, "../..", "once", "ONCE_OUT", "HOLD_OUT")
	for _, arch := range Arches() {
		name := "once_" + arch + ".bin"
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := ELF(arch); !bytes.Equal(got, want) {
			t.Errorf("%s (%d bytes) differs from what src/once.c builds to (%d bytes): run make once", name, len(got), len(want))
		}
		want, err = os.ReadFile(filepath.Join(out, "hold_"+arch+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		if got := ctr.Holder(arch); !bytes.Equal(got, want) {
			t.Errorf("internal/ctr's hold_%s.bin (%d bytes) differs from what hold/hold.c builds to (%d bytes): run make once", arch, len(got), len(want))
		}
	}
}

// TestELF: once is, for each architecture, a static executable of that
// machine, of one segment that is not writable, with no interpreter, small
// enough for a ConfigMap many times over; none for another architecture.
func TestELF(t *testing.T) {
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		code := ELF(arch)
		f, err := elf.NewFile(bytes.NewReader(code))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		var loads int
		for _, p := range f.Progs {
			switch p.Type {
			case elf.PT_LOAD:
				loads++
				if p.Flags&elf.PF_W != 0 {
					t.Errorf("%s: a writable segment", arch)
				}
			case elf.PT_INTERP, elf.PT_DYNAMIC:
				t.Errorf("%s: a %s segment: not static", arch, p.Type)
			}
		}
		if f.Machine != machine || f.Type != elf.ET_EXEC || loads != 1 || len(code) > 8<<10 {
			t.Errorf("%s: machine %s, type %s, %d loaded segments, %d bytes", arch, f.Machine, f.Type, loads, len(code))
		}
	}
	for _, arch := range []string{"", "386", "riscv64", "x86_64", "aarch64"} {
		if ELF(arch) != nil {
			t.Errorf("a once for %q", arch)
		}
	}
}

// qemu names the user-mode emulator of arch (Debian's qemu-user-static),
// and its binfmt_misc entry.
var qemu = map[string]string{"amd64": "qemu-x86_64", "arm64": "qemu-aarch64"}

// runner returns how this host runs a program of arch: directly (nil),
// when it is the host's own or binfmt_misc hands it to an emulator, or
// through qemu-user-static. It skips where neither can, unless
// CCRUN_REQUIRE_ARM64=1 (CI sets up both).
func runner(t *testing.T, arch string) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("once is a Linux program")
	}
	if arch == runtime.GOARCH {
		return nil
	}
	if b, err := os.ReadFile("/proc/sys/fs/binfmt_misc/" + qemu[arch]); err == nil && bytes.HasPrefix(b, []byte("enabled\n")) {
		return nil
	}
	if path, err := exec.LookPath(qemu[arch] + "-static"); err == nil {
		return []string{path}
	}
	if os.Getenv("CCRUN_REQUIRE_ARM64") == "1" {
		t.Fatalf("CCRUN_REQUIRE_ARM64=1: no way to run %s programs here (apt-get install qemu-user-static binfmt-support)", arch)
	}
	t.Skipf("%s programs do not run here (apt-get install qemu-user-static)", arch)
	return nil
}

// eachArch runs f as a subtest for each architecture once is built for.
func eachArch(t *testing.T, f func(t *testing.T, arch string)) {
	for _, arch := range Arches() {
		t.Run(arch, func(t *testing.T) { f(t, arch) })
	}
}

// pipeConn is a Conn to a once run on this host: its stdin a pipe, its
// end once's exit.
type pipeConn struct {
	in             *io.PipeWriter
	stdout, stderr Sink
	done           chan struct{}
	err            error
}

func (c *pipeConn) Write(p []byte) (int, error) { return c.in.Write(p) }
func (c *pipeConn) Abort(err error)             { c.in.CloseWithError(err) }
func (c *pipeConn) SetOutput(w, e io.Writer)    { c.stdout.Set(w); c.stderr.Set(e) }
func (c *pipeConn) Done() <-chan struct{}       { return c.done }
func (c *pipeConn) Err() error                  { return c.err }

// localConn runs the once of arch on this host (under emulation for
// another architecture: see runner) as an engine's sessions would see it.
func localConn(t *testing.T, arch string, env []string) (*pipeConn, *exec.Cmd) {
	t.Helper()
	prefix := runner(t, arch)
	path := filepath.Join(t.TempDir(), "once")
	if err := os.WriteFile(path, ELF(arch), 0o555); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	c := &pipeConn{in: pw, done: make(chan struct{})}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	for try := 1; ; try++ {
		argv := append(append([]string(nil), prefix...), path)
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = r, &c.stdout, &c.stderr
		err = cmd.Start()
		// ETXTBSY: a process another test forked meanwhile holds the
		// file open for writing until it execs (golang.org/issue/22315).
		if !errors.Is(err, syscall.ETXTBSY) || try == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	go func() { _, _ = io.Copy(w, pr); w.Close() }()
	go func() {
		c.err = cmd.Wait()
		pr.CloseWithError(io.EOF)
		close(c.done)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.done })
	return c, cmd
}

// TestOnce runs once on this host through the same handshake, frames and
// marks as an engine's call: exit codes, stdin (more than
// one frame), stdout and stderr apart, signals, a program not found, the
// environment its own.
func TestOnce(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 5*chunk/16+3)
	noexec := t.TempDir() // holds prog, not executable
	if err := os.WriteFile(filepath.Join(noexec, "prog"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		argv, env      []string
		stdin          string // "": none
		code, signal   int
		errno          syscall.Errno // why it could not be executed
		stdout, stderr string
	}{
		{name: "exit 0", argv: []string{"/bin/true"}},
		{name: "exit 3", argv: []string{"/bin/sh", "-c", "exit 3"}, code: 3},
		{name: "streams apart", argv: []string{"/bin/sh", "-c", "echo out; echo err >&2"}, stdout: "out\n", stderr: "err\n"},
		{name: "stdin in frames", argv: []string{"/bin/cat"}, stdin: big, stdout: big},
		{name: "no stdin is EOF", argv: []string{"/bin/cat"}},
		{name: "stdin unread", argv: []string{"/bin/true"}, stdin: big},
		{name: "arguments kept", argv: []string{"/bin/echo", "a b", "", "c"}, stdout: "a b  c\n"},
		{name: "environment its own", argv: []string{"/usr/bin/env"}, stdout: "A=b\n"},
		{name: "environment added", argv: []string{"/usr/bin/env"}, env: []string{"C=d e", "E="}, stdout: "C=d e\nE=\nA=b\n"},
		{name: "environment replaced", argv: []string{"/usr/bin/env"}, env: []string{"A=x"}, stdout: "A=x\n"},
		{name: "a longer name is another", argv: []string{"/usr/bin/env"}, env: []string{"AB=c"}, stdout: "AB=c\nA=b\n"},
		{name: "a shorter name is another", argv: []string{"/usr/bin/env"}, env: []string{"=x", "Ab=c"}, stdout: "=x\nAb=c\nA=b\n"},
		{name: "found in the default PATH", argv: []string{"echo", "hi"}, stdout: "hi\n"},
		{name: "found in its PATH", argv: []string{"true"}, env: []string{"PATH=/nonexistent::/etc/passwd:/bin"}},
		{name: "not in PATH", argv: []string{"no-such-program"}, env: []string{"PATH=/bin:/usr/bin"}, code: 127, errno: syscall.ENOENT},
		{name: "in PATH, not executable", argv: []string{"prog"}, env: []string{"PATH=/nonexistent:" + noexec + ":/bin"}, code: 127, errno: syscall.EACCES},
		{name: "a PATH too long to try", argv: []string{"true"}, env: []string{"PATH=" + strings.Repeat("x", 40000) + ":/bin"}},
		{name: "a name too long to try", argv: []string{strings.Repeat("y", 70000)}, env: []string{"PATH=/bin"}, code: 127, errno: syscall.ENOENT},
		{name: "killed", argv: []string{"/bin/sh", "-c", "kill -9 $$"}, code: 137, signal: 9},
		{name: "not found", argv: []string{"/nonexistent"}, code: 127, errno: syscall.ENOENT},
		{name: "not executable", argv: []string{"/etc/passwd"}, code: 127, errno: syscall.EACCES},
		{name: "exits 127 itself", argv: []string{"/bin/sh", "-c", "exit 127"}, code: 127},
	}
	eachArch(t, func(t *testing.T, arch string) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				c, cmd := localConn(t, arch, []string{"A=b"})
				var stdout, stderr bytes.Buffer
				nonce := []byte(newNonce())
				om, em := newMarks(&stdout, nonce), newMarks(&stderr, nonce)
				c.stdout.Set(om)
				c.stderr.Set(em)
				if err := handshake(c, tc.argv, tc.env, nonce, om, em, time.Minute); err != nil {
					t.Fatal(err)
				}
				stop := make(chan struct{})
				var stdin io.Reader
				if tc.stdin != "" {
					stdin = strings.NewReader(tc.stdin)
				}
				go func() { _ = sendStdin(c, stdin, stop) }()
				// once stays until released, with both trailers written
				select {
				case <-c.done:
					t.Fatalf("once ended before its release (exit %d); stdout %.40q stderr %q", cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
				case <-time.After(50 * time.Millisecond):
				}
				release(c, c.done, nonce, om, em, stop)
				<-c.done
				om.flush()
				em.flush()
				ws, ok := em.trailer()
				if _, whole := om.trailer(); !ok || !whole {
					t.Fatalf("trailers on stderr %v, on stdout %v; stderr %q", ok, whole, stderr.String())
				}
				code, sig := WaitStatus(ws)
				if code != tc.code || sig != tc.signal {
					t.Errorf("exit %d signal %d; want %d, %d", code, sig, tc.code, tc.signal)
				}
				if errno, _ := ExecErrno(ws); errno != tc.errno {
					t.Errorf("execve's errno %v, want %v", errno, tc.errno)
				}
				if msg := ExecMessage(tc.argv[0], ws); (tc.errno != 0) != strings.Contains(msg, tc.argv[0]) {
					t.Errorf("ExecMessage %q", msg)
				}
				if got := cmd.ProcessState.ExitCode(); got != tc.code {
					t.Errorf("once exited %d, want the program's %d", got, tc.code)
				}
				if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
					t.Errorf("stdout %.40q (%d bytes), stderr %q; want %.40q (%d bytes), %q", stdout.String(), stdout.Len(), stderr.String(), tc.stdout, len(tc.stdout), tc.stderr)
				}
			})
		}
	})
}

// TestOnceBadRequest: a request once cannot serve ends it (126), running
// nothing.
func TestOnceBadRequest(t *testing.T) {
	eachArch(t, func(t *testing.T, arch string) {
		for name, req := range map[string][]byte{
			"too short":             {3, 0, 0, 0, 'a', 'b', 'c'},
			"too large":             {0, 0, 0x20, 0},
			"no program":            append([]byte{16, 0, 0, 0}, make([]byte, 16)...),
			"cut short":             {40, 0, 0, 0, 'a'},
			"argc 0":                append(append([]byte{22, 0, 0, 0}, make([]byte, 16)...), 0, 0, 0, 0, 'x', 0),
			"argc past the strings": append(append([]byte{22, 0, 0, 0}, make([]byte, 16)...), 2, 0, 0, 0, 'x', 0),
		} {
			t.Run(name, func(t *testing.T) {
				c, cmd := localConn(t, arch, nil)
				go func() { _, _ = c.in.Write(req); _ = c.in.Close() }()
				<-c.done
				if got := cmd.ProcessState.ExitCode(); got != 126 {
					t.Errorf("exit %d, want 126", got)
				}
			})
		}
	})
}

// TestMarks: the marks are found and taken out whatever the writes cut
// them into; the rest passes on, in order, and a stream without its
// trailer loses nothing.
func TestMarks(t *testing.T) {
	nonce := []byte("0123456789abcdef")
	ack := append(append([]byte(nil), nonce...), 0xff, 0xff, 0xff, 0xff)
	end := append(append([]byte(nil), nonce...), 0x00, 0x03, 0x00, 0x00) // exit 3
	stream := string(ack) + "before 0123 01234567" + string(end) + "after"
	for _, size := range []int{1, 2, 3, 7, 19, 20, 21, len(stream)} {
		var out bytes.Buffer
		m := newMarks(&out, nonce)
		for i := 0; i < len(stream); i += size {
			if _, err := m.Write([]byte(stream[i:min(i+size, len(stream))])); err != nil {
				t.Fatal(err)
			}
		}
		m.flush()
		ws, ok := m.trailer()
		if code, _ := WaitStatus(ws); !ok || code != 3 {
			t.Errorf("writes of %d: trailer %v, exit %d; want exit 3", size, ok, code)
		}
		select {
		case <-m.acked:
		default:
			t.Errorf("writes of %d: no ack", size)
		}
		if got := out.String(); got != "before 0123 01234567after" {
			t.Errorf("writes of %d: passed %q", size, got)
		}
	}
	var out bytes.Buffer
	m := newMarks(&out, nonce)
	_, _ = m.Write([]byte("no trailer, ends like 0123456789"))
	m.flush()
	if _, ok := m.trailer(); ok || out.String() != "no trailer, ends like 0123456789" {
		t.Errorf("without a trailer: %v, passed %q", ok, out.String())
	}
}

// marked points c's streams at the marks of a new nonce, and returns
// them and what passes stdout's.
func marked(c *pipeConn) (nonce []byte, om, em *marks, stdout *bytes.Buffer) {
	nonce, stdout = []byte(newNonce()), &bytes.Buffer{}
	om, em = newMarks(stdout, nonce), newMarks(io.Discard, nonce)
	c.stdout.Set(om)
	c.stderr.Set(em)
	return nonce, om, em, stdout
}

// TestOnceUnterminated: a request whose last string has no NUL (ccrun
// always sends one) is read to its end and no further: the string ends
// with the request, and the program gets it whole.
func TestOnceUnterminated(t *testing.T) {
	eachArch(t, func(t *testing.T, arch string) {
		c, cmd := localConn(t, arch, nil)
		nonce, om, em, stdout := marked(c)
		req := request(nonce, []string{"/bin/echo", "unterminated"}, nil)
		req = req[:len(req)-1]                                 // no NUL after the last string
		binary.LittleEndian.PutUint32(req, uint32(len(req)-4)) // nor in n
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		<-om.acked
		<-em.acked
		if _, err := c.Write([]byte{'g'}); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		go func() { _ = sendStdin(c, nil, stop) }()
		release(c, c.done, nonce, om, em, stop)
		<-c.done
		if code := cmd.ProcessState.ExitCode(); code != 0 || stdout.String() != "unterminated\n" {
			t.Errorf("exit %d, stdout %q; want 0, %q", code, stdout.String(), "unterminated\n")
		}
	})
}

// TestOnceReleaseAmongLookalikes: the done token is found behind frames
// the program left unread that hold near-tokens (0xff and all of the
// nonce but its last byte, and 0xff twice), and once ends at it, not
// at its 10 s bound.
func TestOnceReleaseAmongLookalikes(t *testing.T) {
	eachArch(t, func(t *testing.T, arch string) {
		c, cmd := localConn(t, arch, nil)
		nonce, om, em, _ := marked(c)
		if err := handshake(c, []string{"/bin/sh", "-c", "exit 4"}, nil, nonce, om, em, time.Minute); err != nil {
			t.Fatal(err)
		}
		near := append(append([]byte{0xff, 0xff}, nonce[:nonceSize-1]...), 0xff)
		stop := make(chan struct{})
		begin := time.Now()
		go func() { _ = sendStdin(c, bytes.NewReader(bytes.Repeat(near, 4000)), stop) }()
		release(c, c.done, nonce, om, em, stop)
		<-c.done
		if code := cmd.ProcessState.ExitCode(); code != 4 || time.Since(begin) > 9*time.Second { // not its 10 s bound
			t.Errorf("once exited %d after %s; want 4, at its release", code, time.Since(begin))
		}
	})
}

// TestOnceAckAgain: an ack the session was not yet receiving is not the
// end of the call: once acks again until the go byte comes (a cold pod's
// sessions open just before the request is sent).
func TestOnceAckAgain(t *testing.T) {
	eachArch(t, func(t *testing.T, arch string) {
		c, cmd := localConn(t, arch, nil)
		nonce := []byte(newNonce())
		var stdout, stderr bytes.Buffer
		om, em := newMarks(&stdout, nonce), newMarks(&stderr, nonce)
		c.stderr.Set(em) // stdout's first acks go nowhere
		go func() {
			time.Sleep(250 * time.Millisecond)
			c.stdout.Set(om)
		}()
		if err := handshake(c, []string{"/bin/echo", "hi"}, nil, nonce, om, em, time.Minute); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		go func() { _ = sendStdin(c, nil, stop) }()
		release(c, c.done, nonce, om, em, stop)
		<-c.done
		om.flush()
		if code := cmd.ProcessState.ExitCode(); code != 0 || stdout.String() != "hi\n" {
			t.Errorf("exit %d, stdout %q; want 0, %q", code, stdout.String(), "hi\n")
		}
	})
}

// TestStart: a call through the package's entry point, as an engine makes
// it: stdin in, both streams apart and without once's marks, the exit
// status from the trailer; and a once that never acks is NotStarted.
func TestStart(t *testing.T) {
	eachArch(t, func(t *testing.T, arch string) {
		c, _ := localConn(t, arch, nil)
		var stdout, stderr bytes.Buffer
		call := Start(c, []string{"/bin/sh", "-c", "cat; echo err >&2; exit 3"}, nil, strings.NewReader("in\n"), &stdout, &stderr, time.Minute)
		if err := <-call.Ended(); err != nil {
			t.Fatal(err)
		}
		ws, whole := call.Result()
		if code, _ := WaitStatus(ws); code != 3 || !whole || stdout.String() != "in\n" || stderr.String() != "err\n" {
			t.Errorf("exit %d, whole %v, stdout %q, stderr %q; want 3, true, %q, %q", code, whole, stdout.String(), stderr.String(), "in\n", "err\n")
		}

		// Not once: a program that reads the request and says nothing.
		pr, pw := io.Pipe()
		mute := &pipeConn{in: pw, done: make(chan struct{})}
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		call = Start(mute, []string{"/bin/true"}, nil, nil, io.Discard, io.Discard, 100*time.Millisecond)
		go func() { <-time.After(200 * time.Millisecond); mute.err = io.ErrClosedPipe; close(mute.done) }()
		var ns NotStarted
		if err := <-call.Ended(); !errors.As(err, &ns) {
			t.Errorf("a program that never acks: %v, want NotStarted", err)
		}
	})
}

// TestCheck: a NUL byte in an argument or an environment entry, or a
// request past Max, is never sent (it would split a string of the
// request: a piece of an argument could become an environment entry), and
// Start refuses it as NotStarted, with nothing written.
func TestCheck(t *testing.T) {
	for name, tc := range map[string]struct{ argv, env []string }{
		"NUL in an argument":     {argv: []string{"/bin/sh", "-c", "true\x00LD_PRELOAD=/tmp/x.so"}},
		"NUL in the environment": {argv: []string{"/bin/true"}, env: []string{"A=b\x00LD_PRELOAD=/tmp/x.so"}},
		"past Max":               {argv: []string{"/bin/echo", strings.Repeat("x", Max)}},
	} {
		if err := Check(tc.argv, tc.env); err == nil {
			t.Errorf("%s: Check passed it", name)
		}
		pr, pw := io.Pipe()
		c := &pipeConn{in: pw, done: make(chan struct{})}
		wrote := make(chan int, 1)
		go func() { b, _ := io.ReadAll(pr); wrote <- len(b) }()
		call := Start(c, tc.argv, tc.env, nil, io.Discard, io.Discard, time.Minute)
		var ns NotStarted
		if err := <-call.Ended(); !errors.As(err, &ns) {
			t.Errorf("%s: Start: %v, want NotStarted", name, err)
		}
		pw.Close()
		if n := <-wrote; n != 0 {
			t.Errorf("%s: %d bytes sent to once", name, n)
		}
	}
	if err := Check([]string{"/bin/echo", "a b", ""}, []string{"A=b", "E="}); err != nil {
		t.Errorf("a good request: %v", err)
	}
}
