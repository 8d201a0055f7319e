package docker

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// sh runs script with the test image's busybox shell.
func sh(script string) []string { return []string{"/bin/busybox", "sh", "-c", script} }

func run(t *testing.T, e *Executor, s Spec) *job.Result {
	t.Helper()
	if s.Image == "" {
		s.Image = testImage
	}
	if s.Limits.Timeout == 0 {
		s.Limits.Timeout = 30 * time.Second // "it did not hang", not a speed check
	}
	res, err := e.Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run(%q): %v", s.Cmd, err)
	}
	return res
}

// TestHardened runs hostile programs that must each be held by one of the
// defaults.
func TestHardened(t *testing.T) {
	e := executor(t)
	for _, tc := range []struct {
		name   string
		script string
		want   string // stdout, exactly
		code   int
	}{
		{"only loopback", "ls /sys/class/net", "lo\n", 0},
		{"no route out", "wget -q -T 3 -O- http://1.1.1.1/ >/dev/null 2>&1 || echo refused", "refused\n", 0},
		{"no route to the host's bridge", "wget -q -T 3 -O- http://172.17.0.1/ >/dev/null 2>&1 || echo refused", "refused\n", 0},
		{"root filesystem read-only", "touch /x 2>/dev/null || echo ro", "ro\n", 0},
		{"bin read-only", "cp /bin/busybox /bin/other 2>/dev/null || echo ro", "ro\n", 0},
		{"non-root", "id -u; id -g", strings.ReplaceAll(e.user, ":", "\n") + "\n", 0},
		{"no effective capabilities", "grep CapEff /proc/self/status", "CapEff:\t0000000000000000\n", 0},
		{"no permitted capabilities", "grep CapPrm /proc/self/status", "CapPrm:\t0000000000000000\n", 0},
		{"no bounding capabilities", "grep CapBnd /proc/self/status", "CapBnd:\t0000000000000000\n", 0},
		{"no new privileges", "grep NoNewPrivs /proc/self/status", "NoNewPrivs:\t1\n", 0},
		{"seccomp filter on", "grep '^Seccomp:' /proc/self/status", "Seccomp:\t2\n", 0},
		{"init is pid 1", "cat /proc/1/comm", "docker-init\n", 0},
		{"tmp writable", "echo hi > /tmp/x && cat /tmp/x", "hi\n", 0},
		{"tmp capped", "head -c 70m /dev/zero > /tmp/big 2>/dev/null || echo full", "full\n", 0},
		{"exit code kept", "echo out; exit 3", "out\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, e, Spec{Cmd: sh(tc.script)})
			if res.Reason != job.Exit || res.ExitCode != tc.code {
				t.Fatalf("ended %s %d, want exit %d; stderr %q", res.Reason, res.ExitCode, tc.code, res.Stderr)
			}
			if got := string(res.Stdout); got != tc.want {
				t.Errorf("stdout %q, want %q (stderr %q)", got, tc.want, res.Stderr)
			}
		})
	}
}

func TestStreams(t *testing.T) {
	e := executor(t)
	t.Run("demultiplexed", func(t *testing.T) {
		t.Parallel()
		res := run(t, e, Spec{Cmd: sh("echo out; echo err >&2")})
		if string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
			t.Errorf("stdout %q stderr %q, want \"out\\n\" \"err\\n\"", res.Stdout, res.Stderr)
		}
	})
	t.Run("no output missed at exit", func(t *testing.T) {
		t.Parallel()
		const n = 1 << 20
		res := run(t, e, Spec{Cmd: sh("head -c 1048576 /dev/zero | tr '\\0' x; echo done >&2")})
		if len(res.Stdout) != n || res.Truncated || string(res.Stderr) != "done\n" {
			t.Errorf("kept %d bytes of stdout (truncated %v), stderr %q; want %d, false, \"done\\n\"", len(res.Stdout), res.Truncated, res.Stderr, n)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		t.Parallel()
		in := strings.Repeat("line\n", 10000)
		res := run(t, e, Spec{Cmd: []string{"/bin/busybox", "cat"}, Streams: job.Streams{Stdin: strings.NewReader(in)}})
		if string(res.Stdout) != in {
			t.Errorf("stdout has %d bytes, want the %d of stdin", len(res.Stdout), len(in))
		}
	})
	t.Run("no stdin is empty", func(t *testing.T) {
		t.Parallel()
		res := run(t, e, Spec{Cmd: []string{"/bin/busybox", "wc", "-c"}})
		if got := strings.TrimSpace(string(res.Stdout)); got != "0" {
			t.Errorf("wc -c of stdin = %q, want 0", got)
		}
	})
	t.Run("env and dir", func(t *testing.T) {
		t.Parallel()
		res := run(t, e, Spec{Cmd: sh(`echo "$GREETING"; pwd`), Env: []string{"GREETING=hello"}, Dir: "/tmp"})
		if got, want := string(res.Stdout), "hello\n/tmp\n"; got != want {
			t.Errorf("stdout %q, want %q", got, want)
		}
	})
}

func TestLimits(t *testing.T) {
	e := executor(t)
	t.Run("fork bomb contained", func(t *testing.T) {
		t.Parallel()
		res := run(t, e, Spec{
			Cmd:    sh("bomb() { bomb | bomb & }; bomb; sleep 5; echo survived"),
			Limits: job.Limits{Pids: 32, Timeout: 20 * time.Second},
		})
		t.Logf("fork bomb ended %s %d", res.Reason, res.ExitCode)
		// The host survives and a next run works.
		if res := run(t, e, Spec{Cmd: sh("echo ok")}); string(res.Stdout) != "ok\n" {
			t.Errorf("run after the fork bomb: stdout %q", res.Stdout)
		}
	})
	t.Run("memory bomb", func(t *testing.T) {
		t.Parallel()
		res := run(t, e, Spec{
			Cmd:    []string{"/bin/busybox", "dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"},
			Limits: job.Limits{Memory: 32 << 20},
		})
		if res.Reason != job.Memory {
			t.Fatalf("ended %s %d, want %s; stderr %q", res.Reason, res.ExitCode, job.Memory, res.Stderr)
		}
		if res.Detail == "" {
			t.Error("no Detail for an out-of-memory kill")
		}
	})
	t.Run("output flood capped", func(t *testing.T) {
		t.Parallel()
		const limit = 64 << 10
		res := run(t, e, Spec{Cmd: []string{"/bin/busybox", "yes"}, Limits: job.Limits{Output: limit}})
		if res.Reason != job.OutputCap {
			t.Fatalf("ended %s %d, want %s", res.Reason, res.ExitCode, job.OutputCap)
		}
		if len(res.Stdout) != limit || !res.Truncated {
			t.Errorf("kept %d bytes (truncated %v), want %d (true)", len(res.Stdout), res.Truncated, limit)
		}
	})
	t.Run("timeout kills", func(t *testing.T) {
		t.Parallel()
		res := run(t, e, Spec{Cmd: sh("echo started; sleep 60"), Limits: job.Limits{Timeout: time.Second}})
		if res.Reason != job.Timeout || res.ExitCode != job.TimeoutExit {
			t.Fatalf("ended %s %d, want %s %d", res.Reason, res.ExitCode, job.Timeout, job.TimeoutExit)
		}
		if string(res.Stdout) != "started\n" {
			t.Errorf("stdout %q, want the output before the kill", res.Stdout)
		}
	})
}

// ours lists the containers this test process owns.
func ours(t *testing.T, e *Executor, pid int) []container.Summary {
	t.Helper()
	list, err := e.eng.ContainerList(context.Background(), container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelPID+"="+strconv.Itoa(pid)), filters.Arg("label", LabelOwned+"=1")),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestCancelRemoves is not parallel: it checks that this process owns no
// container once Run returned.
func TestCancelRemoves(t *testing.T) {
	e := executor(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(time.Second)
		cancel()
	}()
	res, err := e.Run(ctx, Spec{Image: testImage, Cmd: sh("sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != job.Cancelled {
		t.Errorf("ended %s, want %s", res.Reason, job.Cancelled)
	}
	if left := ours(t, e, os.Getpid()); len(left) != 0 {
		t.Errorf("%d containers left after a cancelled run: %v", len(left), left[0].Names)
	}
}

const childEnv = "CCRUN_DOCKER_TEST_CHILD"

// gcStarted is what the child's program prints once it runs.
const gcStarted = "ccrun-gc-child-runs"

// TestGCChild is the ccrun that TestGCAfterKill kills: it starts a long
// run whose program says on the child's stdout that it runs.
func TestGCChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the child of TestGCAfterKill")
	}
	e, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.Run(context.Background(), Spec{Image: testImage, Cmd: sh("echo " + gcStarted + "; sleep 300"),
		Streams: job.Streams{Stdout: os.Stdout}})
}

// TestGCAfterKill is not parallel: GC sweeps every container of the host,
// and a parallel GC would take the child's container from under it.
func TestGCAfterKill(t *testing.T) {
	e := executor(t)
	child := exec.Command(os.Args[0], "-test.run=^TestGCChild$")
	child.Env = append(os.Environ(), childEnv+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	// Killed only once its program runs: killed before, while the
	// container starts, the child would leave a container that ends by
	// itself (its once has no request) and that the engine removes.
	runs := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == gcStarted {
				runs <- true
				break
			}
		}
		close(runs)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-runs:
		if !ok {
			t.Fatal("the child ended before its program ran")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the child's program did not start in 30 s")
	}
	left := ours(t, e, child.Process.Pid)
	if len(left) != 1 || left[0].State != "running" {
		t.Fatalf("the child's container is not running: %v", left)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if still := ours(t, e, child.Process.Pid); len(still) != 1 {
		t.Fatalf("after SIGKILL: %d containers of the child, want the 1 left behind", len(still))
	}
	// Garbage lists it, and removes nothing.
	listed, err := e.Garbage(context.Background(), false)
	if err != nil || !contains(listed, left[0].ID) {
		t.Fatalf("Garbage = %v, %v; want the child's %s listed", listed, err, left[0].ID)
	}
	if still := ours(t, e, child.Process.Pid); len(still) != 1 {
		t.Fatalf("after Garbage: %d containers of the child, want the 1 still there", len(still))
	}
	removed, err := e.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, id := range removed {
		found = found || id == left[0].ID
	}
	if !found {
		t.Errorf("GC removed %v, not the child's %s", removed, left[0].ID)
	}
	if still := ours(t, e, child.Process.Pid); len(still) != 0 {
		t.Errorf("after GC: %d containers of the child left", len(still))
	}
}

func TestGCKeepsLiveOwners(t *testing.T) {
	e := executor(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.Run(ctx, Spec{Image: testImage, Cmd: sh("sleep 60")})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && len(running(t, e)) == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	removed, err := e.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range removed {
		for _, c := range running(t, e) {
			if c.ID == id {
				t.Errorf("GC removed %s, a container of this live process", id)
			}
		}
	}
	if len(running(t, e)) == 0 {
		t.Error("the live run's container is gone after GC")
	}
	cancel()
	<-done
}

func running(t *testing.T, e *Executor) []container.Summary {
	var out []container.Summary
	for _, c := range ours(t, e, os.Getpid()) {
		if c.State == "running" && strings.Contains(c.Command, "sleep 60") {
			out = append(out, c)
		}
	}
	return out
}

func TestMounts(t *testing.T) {
	e := executor(t)
	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "in.txt"), []byte("visible\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	rw := t.TempDir()
	if err := os.Chmod(rw, 0o777); err != nil { // the container writes as 65534
		t.Fatal(err)
	}
	t.Run("read-only visible, not writable", func(t *testing.T) {
		t.Parallel()
		res := run(t, e, Spec{
			Cmd:    sh("cat /in/in.txt; touch /in/new 2>/dev/null || echo ro"),
			Mounts: []job.Mount{{Host: ro, Guest: "/in"}},
		})
		if got, want := string(res.Stdout), "visible\nro\n"; got != want {
			t.Errorf("stdout %q, want %q", got, want)
		}
		if _, err := os.Stat(filepath.Join(ro, "new")); err == nil {
			t.Error("a file was created through a read-only mount")
		}
	})
	t.Run("writable", func(t *testing.T) {
		t.Parallel()
		run(t, e, Spec{
			Cmd:    sh("echo written > /out/new"),
			Mounts: []job.Mount{{Host: rw, Guest: "/out", Writable: true}},
		})
		b, err := os.ReadFile(filepath.Join(rw, "new"))
		if err != nil || string(b) != "written\n" {
			t.Errorf("host sees %q, %v; want \"written\\n\"", b, err)
		}
	})
}

// TestMissingImage: with no registry, a missing image is a clear
// ErrNotFound, quickly (the pull is bounded), not a hang.
func TestMissingImage(t *testing.T) {
	e := executor(t, WithPullTimeout(20*time.Second))
	for _, pull := range []PullPolicy{PullMissing, PullNever, PullAlways} {
		t.Run(string(pull), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := e.Run(ctx, Spec{Image: "ccrun-test:no-such-image", Pull: pull})
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Run = %v, %v; want ErrNotFound", res, err)
			}
			if ctx.Err() != nil {
				t.Fatalf("Run hung until the test's deadline: %v", err)
			}
			t.Log(err)
		})
	}
}

// TestResolve: a local image resolves to its ID, under every pull policy
// but always (which must reach a registry, and there is none here); a
// missing one is ErrNotFound, whatever the policy; and a Spec naming the
// ID runs that image.
func TestResolve(t *testing.T) {
	e := executor(t, WithPullTimeout(20*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	img, err := e.eng.ImageInspect(ctx, testImage)
	if err != nil {
		t.Fatal(err)
	}
	for _, pull := range []PullPolicy{"", PullMissing, PullNever} {
		id, err := e.Resolve(ctx, testImage, pull)
		if err != nil || id != img.ID {
			t.Errorf("Resolve(%s) = %q, %v; want %s", pull, id, err, img.ID)
		}
	}
	for _, pull := range []PullPolicy{PullMissing, PullNever, PullAlways} {
		if id, err := e.Resolve(ctx, "ccrun-test:no-such-image", pull); !errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve(missing, %s) = %q, %v; want ErrNotFound", pull, id, err)
		}
	}
	if res := run(t, e, Spec{Image: img.ID, Cmd: sh("echo by id")}); string(res.Stdout) != "by id\n" {
		t.Errorf("run by ID: %+v", res)
	}
}

func TestUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	_, err := New(context.Background())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("New = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "unix:///nonexistent.sock") {
		t.Errorf("error does not name the address: %v", err)
	}
	t.Log(err)
}

// removedEarly is the real engine, except that a container's inspection
// finds it gone, as when the engine removed it (AutoRemove) before Run
// asked about its end.
type removedEarly struct{ engine }

func (removedEarly) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	return container.InspectResponse{}, errdefs.ErrNotFound
}

// TestOOMAfterRemoval: an out-of-memory kill is reported as such when the
// container is gone before Run inspects it (the engine's event says so),
// and a program that exits non-zero by itself is not reported as one.
func TestOOMAfterRemoval(t *testing.T) {
	real := executor(t)
	e := executor(t, withEngine(removedEarly{real.eng}))
	res := run(t, e, Spec{
		Cmd:    []string{"/bin/busybox", "dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"},
		Limits: job.Limits{Memory: 32 << 20},
	})
	if res.Reason != job.Memory {
		t.Fatalf("memory bomb ended %s %d, want %s; stderr %q", res.Reason, res.ExitCode, job.Memory, res.Stderr)
	}
	for _, script := range []string{"exit 3", "kill -9 $$"} {
		if res := run(t, e, Spec{Cmd: sh(script)}); res.Reason != job.Exit {
			t.Errorf("%q ended %s %d, want %s", script, res.Reason, res.ExitCode, job.Exit)
		}
	}
}

// TestColdOnce: a cold run is served by once (its exit status from the
// trailer, right after its output) unless the container binds a path
// writable: there the run ends with the container, so that a process the
// program left behind cannot write there after Run returns.
func TestColdOnce(t *testing.T) {
	e := executor(t)
	viaOnce := func(t *testing.T, s Spec, want bool) *job.Result {
		t.Helper()
		return servedByOnce(t, e, want, func() *job.Result { return run(t, e, s) })
	}
	t.Run("exit status", func(t *testing.T) {
		res := viaOnce(t, Spec{Cmd: sh("echo out; exit 3")}, true)
		if res.ExitCode != 3 || string(res.Stdout) != "out\n" {
			t.Errorf("exit %d, stdout %q; want 3, out", res.ExitCode, res.Stdout)
		}
	})
	t.Run("program not found", func(t *testing.T) {
		res := viaOnce(t, Spec{Cmd: []string{"/nonexistent"}}, true)
		if res.ExitCode != 127 || !strings.Contains(string(res.Stderr), "ccrun: exec /nonexistent: no such file or directory") {
			t.Errorf("exit %d, stderr %q; want 127, the reason", res.ExitCode, res.Stderr)
		}
	})
	t.Run("docker ps shows the program", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _, _ = e.Run(ctx, Spec{Image: testImage, Cmd: sh("sleep 60")}) }()
		defer func() { cancel(); <-done }()
		for deadline := time.Now().Add(30 * time.Second); len(running(t, e)) == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no running container shows sleep 60")
			}
		}
	})
	t.Run("a writable mount ends with the container", func(t *testing.T) {
		out := t.TempDir()
		if err := os.Chmod(out, 0o777); err != nil { // the container writes as 65534
			t.Fatal(err)
		}
		s := Spec{Cmd: sh("(sleep 1; echo late > /out/late) & echo now"), Mounts: []job.Mount{{Host: out, Guest: "/out", Writable: true}}}
		res := viaOnce(t, s, false)
		if string(res.Stdout) != "now\n" {
			t.Errorf("stdout %q, want now", res.Stdout)
		}
		time.Sleep(2 * time.Second)
		if _, err := os.Stat(filepath.Join(out, "late")); err == nil {
			t.Error("a process the program left wrote to the mount after Run returned")
		}
	})
}

// servedByOnce returns what f ran on e, and fails t unless once served it
// (want) or not.
func servedByOnce(t *testing.T, e *Executor, want bool, f func() *job.Result) *job.Result {
	t.Helper()
	before := e.onceRuns.Load()
	res := f()
	if got := e.onceRuns.Load() != before; got != want {
		t.Errorf("served by once: %v, want %v", got, want)
	}
	return res
}
