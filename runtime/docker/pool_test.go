package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/once"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// pooled lists the containers of the pool for key, idle or not.
func pooled(t *testing.T, e *Executor, key string) (idleIDs, busy []string) {
	t.Helper()
	list, err := e.eng.ContainerList(context.Background(), container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelPool+"="+key)),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if idle(c) {
			idleIDs = append(idleIDs, c.ID)
		} else {
			busy = append(busy, c.ID)
		}
	}
	return idleIDs, busy
}

// keyOf is the pool key of s, and the path of once's file.
func keyOf(t *testing.T, e *Executor, s Spec) (key, prog string) {
	t.Helper()
	if s.Image == "" {
		s.Image = testImage
	}
	if s.User == "" {
		s.User = e.user // as Run has it
	}
	img, err := e.eng.ImageInspect(context.Background(), s.Image)
	if err != nil {
		t.Fatal(err)
	}
	prog, err = e.onceFile()
	if err != nil {
		t.Skip("no warm-pool program here: ", err)
	}
	cfg, hc := poolConfig(s, s.Limits.WithDefaults(), prog, nil)
	key, err = poolKey(img.ID, cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return key, prog
}

// warm fills the pool of s and waits until an idle container waits in it.
func warm(t *testing.T, e *Executor, s Spec) string {
	t.Helper()
	if s.Image == "" {
		s.Image = testImage
	}
	if s.User == "" {
		s.User = e.user // as Run has it
	}
	key, prog := keyOf(t, e, s)
	e.bgWork.Wait() // a refill in flight would make a second idle container
	labels := e.labels()
	labels[LabelPool] = key
	cfg, hc := poolConfig(s, s.Limits.WithDefaults(), prog, labels)
	e.fill(context.Background(), key, cfg, hc)
	if idle, _ := pooled(t, e, key); len(idle) == 0 {
		t.Fatal("the refill left no idle container")
	}
	return key
}

// runWarm runs s pooled in a pool warmed first, and fails unless a pooled
// container served it. Not for concurrent use on one Executor.
func runWarm(t *testing.T, e *Executor, s Spec) *job.Result {
	t.Helper()
	s.Pool = true
	warm(t, e, s)
	before := e.pooledRuns.Load()
	res := run(t, e, s)
	if e.pooledRuns.Load() != before+1 {
		t.Fatal("the run did not use the warm pool")
	}
	return res
}

// TestOnceFile: once (tested in internal/once) for the engine's
// architecture, whatever ccrun's own, is written once, mode 0555, named
// by its architecture, and found again by its content; an engine of an
// architecture once is not built for has none (its pooled runs run
// cold).
func TestOnceFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ machine, arch string }{
		{"x86_64", "amd64"}, {"aarch64", "arm64"}, {"arm64", "arm64"}, {"s390x", ""}, {"", ""},
	} {
		e := &Executor{poolDir: dir}
		if err := withEngineArch(tc.machine)(e); err != nil {
			t.Fatal(err)
		}
		path, err := e.onceFile()
		if tc.arch == "" {
			var no errNoOnce
			if !errors.As(err, &no) {
				t.Errorf("%q: onceFile = %q, %v; want errNoOnce", tc.machine, path, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if again, err := e.onceFile(); err != nil || again != path {
			t.Fatalf("onceFile again = %q, %v; want %q", again, err, path)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o555 || !strings.HasPrefix(filepath.Base(path), "once-"+tc.arch+"-") {
			t.Fatalf("once's file %s: %v, %v; want mode 0555, named for %s", path, fi, err, tc.arch)
		}
		code := once.ELF(tc.arch)
		if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, code) {
			t.Fatalf("once's file holds %d bytes, %v; want once's %d", len(b), err, len(code))
		}
	}
}

func TestPool(t *testing.T) {
	dir := t.TempDir()
	first := executor(t, WithPoolDir(dir))
	marker := fmt.Sprintf("pool-%d-%s", os.Getpid(), randHex(4))
	s := Spec{Image: testImage, Cmd: sh(`echo "$MARK"`), Env: []string{"MARK=" + marker}, Pool: true}
	key, _ := keyOf(t, first, s)
	t.Cleanup(func() { first.DrainPool(context.Background()) })

	// Cold: nothing waits; the run leaves one idle, started container.
	if res := run(t, first, s); string(res.Stdout) != marker+"\n" {
		t.Fatalf("cold pooled run: stdout %q", res.Stdout)
	}
	if n := first.pooledRuns.Load(); n != 0 {
		t.Fatalf("%d pooled runs with an empty pool", n)
	}
	first.bgWork.Wait()
	idle1, busy := pooled(t, first, key)
	if len(idle1) != 1 || len(busy) != 0 {
		t.Fatalf("after the first run: idle %v, busy %v; want 1 idle, none busy", idle1, busy)
	}

	// The idle container holds none of the call's environment nor its
	// command: they come with the exec.
	ins, err := first.eng.ContainerInspect(context.Background(), idle1[0])
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(ins.Config.Env, func(v string) bool { return strings.Contains(v, marker) }) {
		t.Errorf("the idle container's environment holds the call's: %q", ins.Config.Env)
	}
	if got := append(append([]string(nil), ins.Config.Entrypoint...), ins.Config.Cmd...); !slices.Equal(got, []string{oncePath}) {
		t.Errorf("the idle container runs %q, want only once", got)
	}

	// A second Executor (another ccrun process, as far as the pool can
	// tell) claims it, runs in it, and leaves a fresh one.
	second := executor(t, WithPoolDir(dir))
	if res := run(t, second, s); string(res.Stdout) != marker+"\n" {
		t.Fatalf("warm run: stdout %q", res.Stdout)
	}
	if n := second.pooledRuns.Load(); n != 1 {
		t.Fatalf("the warm run was not pooled (%d pooled runs)", n)
	}
	second.bgWork.Wait()
	idle2, busy := pooled(t, second, key)
	if len(idle2) != 1 || len(busy) != 0 || idle2[0] == idle1[0] {
		t.Fatalf("after the warm run: idle %v (was %v), busy %v; want 1 fresh idle, none busy", idle2, idle1, busy)
	}

	// GC leaves the idle container; DrainPool removes it. Garbage lists it
	// only with pool.
	if listed, err := second.Garbage(context.Background(), false); err != nil || contains(listed, idle2[0]) {
		t.Fatalf("Garbage(pool false) = %v, %v; want the idle pool container not listed", listed, err)
	}
	if listed, err := second.Garbage(context.Background(), true); err != nil || !contains(listed, idle2[0]) {
		t.Fatalf("Garbage(pool true) = %v, %v; want %s listed", listed, err, idle2[0])
	}
	if removed, err := second.GC(context.Background()); err != nil || contains(removed, idle2[0]) {
		t.Fatalf("GC = %v, %v; want the idle pool container kept", removed, err)
	}
	if removed, err := second.DrainPool(context.Background()); err != nil || !contains(removed, idle2[0]) {
		t.Fatalf("DrainPool = %v, %v; want %s removed", removed, err, idle2[0])
	}
	if idle, busy := pooled(t, second, key); len(idle)+len(busy) != 0 {
		t.Errorf("after DrainPool: idle %v, busy %v", idle, busy)
	}
}

// TestPoolRun: what the program sees and gives back through once, or
// through an exec (a call with environment, or a program without a path).
func TestPoolRun(t *testing.T) {
	e := executor(t)
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	// byOnce runs s warm and fails unless once served it (viaOnce) or an
	// exec did.
	byOnce := func(t *testing.T, s Spec, viaOnce bool) *job.Result {
		t.Helper()
		return servedByOnce(t, e, viaOnce, func() *job.Result { return runWarm(t, e, s) })
	}
	t.Run("output, exit code, env, dir", func(t *testing.T) {
		res := byOnce(t, Spec{Cmd: sh(`echo "$GREETING"; pwd; echo err >&2; exit 3`), Env: []string{"GREETING=hello"}, Dir: "/tmp"}, true)
		if res.Reason != job.Exit || res.ExitCode != 3 {
			t.Errorf("ended %s %d, want exit 3", res.Reason, res.ExitCode)
		}
		if got, want := string(res.Stdout), "hello\n/tmp\n"; got != want {
			t.Errorf("stdout %q, want %q", got, want)
		}
		if string(res.Stderr) != "err\n" {
			t.Errorf("stderr %q, want \"err\\n\"", res.Stderr)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		in := strings.Repeat("line\n", 10000)
		res := runWarm(t, e, Spec{Cmd: []string{"/bin/busybox", "cat"}, Streams: job.Streams{Stdin: strings.NewReader(in)}})
		if string(res.Stdout) != in {
			t.Errorf("stdout has %d bytes, want the %d of stdin", len(res.Stdout), len(in))
		}
	})
	t.Run("no stdin is empty", func(t *testing.T) {
		res := runWarm(t, e, Spec{Cmd: []string{"/bin/busybox", "wc", "-c"}})
		if got := strings.TrimSpace(string(res.Stdout)); got != "0" {
			t.Errorf("wc -c of stdin = %q, want 0", got)
		}
	})
	t.Run("no output missed at exit", func(t *testing.T) {
		const n = 1 << 20
		res := runWarm(t, e, Spec{Cmd: sh("head -c 1048576 /dev/zero | tr '\\0' x; echo done >&2")})
		if len(res.Stdout) != n || res.Truncated || string(res.Stderr) != "done\n" {
			t.Errorf("kept %d bytes of stdout (truncated %v), stderr %q; want %d, false, \"done\\n\"", len(res.Stdout), res.Truncated, res.Stderr, n)
		}
	})
	t.Run("program not found", func(t *testing.T) {
		cold := run(t, e, Spec{Cmd: []string{"/nonexistent"}})
		warm := byOnce(t, Spec{Cmd: []string{"/nonexistent"}}, true)
		if cold.ExitCode != 127 || warm.ExitCode != 127 || len(warm.Stdout) != 0 || !strings.Contains(string(warm.Stderr), "/nonexistent: no such file or directory") {
			t.Errorf("cold exit %d, pooled exit %d (stdout %q, stderr %q); want 127 both, the reason on stderr", cold.ExitCode, warm.ExitCode, warm.Stdout, warm.Stderr)
		}
	})
	t.Run("program not executable", func(t *testing.T) {
		warm := byOnce(t, Spec{Cmd: []string{"/tmp"}}, true)
		if warm.ExitCode != 127 || !strings.Contains(string(warm.Stderr), "/tmp: permission denied") {
			t.Errorf("exit %d, stderr %q; want 127, the reason", warm.ExitCode, warm.Stderr)
		}
	})
	t.Run("exit 127 of its own", func(t *testing.T) {
		warm := byOnce(t, Spec{Cmd: sh("exit 127")}, true)
		if warm.ExitCode != 127 || len(warm.Stderr) != 0 {
			t.Errorf("exit %d, stderr %q; want 127 and nothing of ccrun's", warm.ExitCode, warm.Stderr)
		}
	})
	t.Run("both streams whole at exit", func(t *testing.T) {
		res := byOnce(t, Spec{Cmd: sh("head -c 2097152 /dev/zero | tr '\\0' x; head -c 65536 /dev/zero | tr '\\0' y >&2")}, true)
		if len(res.Stdout) != 2<<20 || len(res.Stderr) != 64<<10 || strings.Trim(string(res.Stdout), "x") != "" || strings.Trim(string(res.Stderr), "y") != "" {
			t.Errorf("stdout %d bytes, stderr %d bytes; want 2 MiB of x, 64 KiB of y", len(res.Stdout), len(res.Stderr))
		}
	})
	t.Run("stdin unread", func(t *testing.T) {
		res := byOnce(t, Spec{Cmd: []string{"/bin/busybox", "true"}, Streams: job.Streams{Stdin: strings.NewReader(strings.Repeat("x", 1<<20))}}, true)
		if res.Reason != job.Exit || res.ExitCode != 0 {
			t.Errorf("ended %s %d, want exit 0", res.Reason, res.ExitCode)
		}
	})
	t.Run("a process left behind holds nothing", func(t *testing.T) {
		begin := time.Now()
		res := byOnce(t, Spec{Cmd: sh("(sleep 5; echo late) & echo now")}, true)
		if string(res.Stdout) != "now\n" || time.Since(begin) > 4*time.Second {
			t.Errorf("stdout %q after %s; want only the program's, at its exit", res.Stdout, time.Since(begin))
		}
	})
	t.Run("a program without a path", func(t *testing.T) {
		res := byOnce(t, Spec{Cmd: []string{"busybox", "echo", "found"}}, true)
		if string(res.Stdout) != "found\n" {
			t.Errorf("stdout %q, want found: once searches PATH", res.Stdout)
		}
	})
	t.Run("environment as an exec has it", func(t *testing.T) {
		// The image's PATH replaced, HOSTNAME kept, one added; the same
		// through once as through an exec (a bare name makes an exec).
		s := Spec{Cmd: sh(`echo "$PATH"; echo "${HOSTNAME:+set}"; echo "$A"; echo "${B-unset}"`), Env: []string{"PATH=/x:/bin", "A=b c"}}
		viaOnce := byOnce(t, s, true)
		s.Env = append(s.Env, "B")
		viaExec := byOnce(t, s, false)
		want := "/x:/bin\nset\nb c\nunset\n"
		if string(viaOnce.Stdout) != want || string(viaExec.Stdout) != want {
			t.Errorf("through once %q, through an exec %q; want %q", viaOnce.Stdout, viaExec.Stdout, want)
		}
	})
	t.Run("single use", func(t *testing.T) {
		s := Spec{Cmd: sh("cat /tmp/mark 2>/dev/null || echo clean; echo used > /tmp/mark; hostname")}
		one := runWarm(t, e, s)
		two := runWarm(t, e, s)
		f1, f2 := strings.Fields(string(one.Stdout)), strings.Fields(string(two.Stdout))
		if len(f1) != 2 || len(f2) != 2 || f1[0] != "clean" || f2[0] != "clean" {
			t.Fatalf("stdout %q then %q: want each run to find a clean /tmp", one.Stdout, two.Stdout)
		}
		if f1[1] == f2[1] {
			t.Errorf("both runs in container %s", f1[1])
		}
	})
}

// TestPoolHardened: a pooled run is held exactly as a cold one.
func TestPoolHardened(t *testing.T) {
	e := executor(t)
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	script := strings.Join([]string{
		"ls /sys/class/net",
		"wget -q -T 3 -O- http://1.1.1.1/ >/dev/null 2>&1 || echo no network",
		"touch /x 2>/dev/null || echo root read-only",
		"id -u; id -g",
		"grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status",
		"cat /proc/1/comm",
		"echo hi > /tmp/x && cat /tmp/x",
		"head -c 70m /dev/zero > /tmp/big 2>/dev/null || echo tmp full",
		"cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null",
	}, "; ")
	want := "lo\nno network\nroot read-only\n65534\n65534\n" +
		"CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n" +
		"docker-init\nhi\ntmp full\n268435456\n"
	cold := run(t, e, Spec{Cmd: sh(script)})
	warm := runWarm(t, e, Spec{Cmd: sh(script)})
	if string(cold.Stdout) != want {
		t.Errorf("cold run sees:\n%s\nwant:\n%s", cold.Stdout, want)
	}
	if string(warm.Stdout) != string(cold.Stdout) {
		t.Errorf("pooled run sees:\n%s\ncold run sees:\n%s", warm.Stdout, cold.Stdout)
	}
	// The pids limit counts once and its stdin copier too: two more than
	// the call's, cold (once runs it too) and pooled.
	pids := sh("cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null")
	pc, pw := run(t, e, Spec{Cmd: pids, Limits: job.Limits{Pids: 40}}), runWarm(t, e, Spec{Cmd: pids, Limits: job.Limits{Pids: 40}})
	if string(pc.Stdout) != "42\n" || string(pw.Stdout) != "42\n" {
		t.Errorf("pids.max %q cold, %q pooled; want 42 both", pc.Stdout, pw.Stdout)
	}
}

// TestPoolKills: a pooled run killed for time, output or cancellation
// leaves no container behind but the fresh idle one, and an out-of-memory
// kill is reported as such.
func TestPoolKills(t *testing.T) {
	e := executor(t)
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	left := func(t *testing.T, key string) {
		t.Helper()
		e.bgWork.Wait()
		if idle, busy := pooled(t, e, key); len(busy) != 0 || len(idle) > 1 {
			t.Errorf("left idle %v, busy %v; want at most the fresh idle one", idle, busy)
		}
	}
	t.Run("timeout", func(t *testing.T) {
		s := Spec{Cmd: sh("echo started; sleep 60"), Limits: job.Limits{Timeout: time.Second}}
		res := runWarm(t, e, s)
		if res.Reason != job.Timeout || res.ExitCode != job.TimeoutExit {
			t.Fatalf("ended %s %d, want %s %d", res.Reason, res.ExitCode, job.Timeout, job.TimeoutExit)
		}
		if string(res.Stdout) != "started\n" {
			t.Errorf("stdout %q, want the output before the kill", res.Stdout)
		}
		key, _ := keyOf(t, e, s)
		left(t, key)
	})
	t.Run("output flood", func(t *testing.T) {
		const limit = 64 << 10
		s := Spec{Cmd: []string{"/bin/busybox", "yes"}, Limits: job.Limits{Output: limit}}
		res := runWarm(t, e, s)
		if res.Reason != job.OutputCap || len(res.Stdout) != limit || !res.Truncated {
			t.Fatalf("ended %s, kept %d bytes (truncated %v); want %s, %d", res.Reason, len(res.Stdout), res.Truncated, job.OutputCap, limit)
		}
		key, _ := keyOf(t, e, s)
		left(t, key)
	})
	t.Run("cancel", func(t *testing.T) {
		s := Spec{Image: testImage, Cmd: sh("sleep 60"), Pool: true}
		key := warm(t, e, s)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		res, err := e.Run(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != job.Cancelled {
			t.Errorf("ended %s, want %s", res.Reason, job.Cancelled)
		}
		if e.pooledRuns.Load() == 0 {
			t.Error("not pooled")
		}
		left(t, key)
	})
	t.Run("memory bomb", func(t *testing.T) {
		s := Spec{
			Cmd:    []string{"/bin/busybox", "dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"},
			Limits: job.Limits{Memory: 32 << 20},
		}
		res := runWarm(t, e, s)
		if res.Reason != job.Memory || res.Detail == "" {
			t.Fatalf("ended %s %d (%q), want %s; stderr %q", res.Reason, res.ExitCode, res.Detail, job.Memory, res.Stderr)
		}
		key, _ := keyOf(t, e, s)
		left(t, key)
	})
	t.Run("killed, not for memory", func(t *testing.T) {
		res := runWarm(t, e, Spec{Cmd: sh("kill -9 $$")})
		if res.Reason != job.Exit || res.ExitCode != job.KilledExitCode {
			t.Fatalf("ended %s %d, want exit %d", res.Reason, res.ExitCode, job.KilledExitCode)
		}
	})
}

// TestPoolHammer: concurrent runs of one pooled Spec each run exactly once
// in a container of their own.
func TestPoolHammer(t *testing.T) {
	e := executor(t)
	t.Parallel()
	marker := fmt.Sprintf("hammer-%d-%s", os.Getpid(), randHex(4))
	s := Spec{Image: testImage, Cmd: sh("echo " + marker + " $(hostname)"), Pool: true}
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	key := warm(t, e, s)
	const n = 8
	var wg sync.WaitGroup
	hosts := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Run(context.Background(), s)
			if err != nil {
				t.Error(err)
				return
			}
			f := strings.Fields(string(res.Stdout))
			if len(f) != 2 || f[0] != marker {
				t.Errorf("stdout %q", res.Stdout)
				return
			}
			hosts[i] = f[1]
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, h := range hosts {
		if h != "" && seen[h] {
			t.Errorf("two runs shared container %s", h)
		}
		seen[h] = true
	}
	if e.pooledRuns.Load() == 0 {
		t.Error("no run used the warm pool")
	}
	e.bgWork.Wait()
	if _, busy := pooled(t, e, key); len(busy) != 0 {
		t.Errorf("%d pooled containers left besides the idle ones", len(busy))
	}
}

// TestPoolStale: a used container whose ccrun exited before removing it,
// and a refill left half-made (created, never started), are removed by
// the next refill of their pool; neither is ever claimed.
func TestPoolStale(t *testing.T) {
	e := executor(t)
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	s := Spec{Image: testImage, Cmd: sh("echo ok"), Pool: true}
	key, prog := keyOf(t, e, s)
	gone := owner{pid: 1 << 30, start: "1"} // no such process
	labels := e.labels()
	labels[LabelPool], labels[LabelPID], labels[LabelStart] = key, "1073741824", "1"
	ctx := context.Background()
	cfg, hc := poolConfig(s, s.Limits.WithDefaults(), prog, labels)
	half, err := e.create(ctx, cfg, hc, "ccrun-pool-"+randHex(6))
	if err != nil {
		t.Fatal(err)
	}
	cfg, hc = poolConfig(s, s.Limits.WithDefaults(), prog, labels)
	used, err := e.create(ctx, cfg, hc, claimedName(gone))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.eng.ContainerStart(ctx, used, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := run(t, e, s); string(res.Stdout) != "ok\n" || e.pooledRuns.Load() != 0 {
		t.Fatalf("stdout %q, pooled runs %d; want a cold run (nothing idle)", res.Stdout, e.pooledRuns.Load())
	}
	e.bgWork.Wait()
	idle, busy := pooled(t, e, key)
	if len(idle) != 1 || len(busy) != 0 {
		t.Errorf("after the refill: idle %v, busy %v; want 1 idle, the stale ones (%.12s, %.12s) gone", idle, busy, half, used)
	}
}

// waitFor polls cond until it holds, failing after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPoolDetached: with WithDetachedRefill, a process of its own (here
// the test binary again, dispatched by TestMain) refills the pool and
// removes the used container; this process waits for neither.
func TestPoolDetached(t *testing.T) {
	t.Setenv(refillEnv, "1") // inherited by the refiller
	e := executor(t, WithDetachedRefill(os.Args[0]))
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	s := Spec{Image: testImage, Cmd: sh("hostname"), Pool: true}
	key, _ := keyOf(t, e, s)
	me := strconv.Itoa(os.Getpid())
	idleOne := func() (string, bool) {
		list, err := e.poolList(context.Background(), key, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || !idle(list[0]) {
			return "", false
		}
		return list[0].ID, true
	}

	run(t, e, s) // cold: nothing waits; a refiller is started
	var first string
	waitFor(t, "no idle container from the detached refiller", func() bool {
		var ok bool
		first, ok = idleOne()
		return ok
	})
	ins, err := e.eng.ContainerInspect(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Config.Labels[LabelPID] == me {
		t.Error("the idle container was made by this process, not by the refiller")
	}
	res := run(t, e, s)
	if e.pooledRuns.Load() != 1 || !strings.HasPrefix(first, strings.TrimSpace(string(res.Stdout))) {
		t.Fatalf("pooled runs %d, ran in %q; want 1, in %.12s", e.pooledRuns.Load(), res.Stdout, first)
	}
	waitFor(t, "the used container not removed, or no fresh idle one", func() bool {
		id, ok := idleOne()
		return ok && id != first
	})
}

// TestRefillRefuses: the refiller makes nothing but a hardened pooled
// container of the key it is given.
func TestRefillRefuses(t *testing.T) {
	e := executor(t)
	s := Spec{Image: testImage, Pool: true}
	key, prog := keyOf(t, e, s)
	for _, tc := range []struct {
		name  string
		tweak func(*container.Config, *container.HostConfig)
	}{
		{"privileged", func(_ *container.Config, h *container.HostConfig) { h.Privileged = true }},
		{"capability added", func(_ *container.Config, h *container.HostConfig) { h.CapAdd = []string{"SYS_ADMIN"} }},
		{"root writable", func(_ *container.Config, h *container.HostConfig) { h.ReadonlyRootfs = false }},
		{"seccomp off", func(_ *container.Config, h *container.HostConfig) {
			h.SecurityOpt = append(h.SecurityOpt, "seccomp=unconfined")
		}},
		{"a program of the image", func(c *container.Config, _ *container.HostConfig) { c.Entrypoint = []string{"/bin/busybox"} }},
		{"environment baked in", func(c *container.Config, _ *container.HostConfig) { c.Env = []string{"TOKEN=x"} }},
		{"another key", func(_ *container.Config, h *container.HostConfig) { h.Memory, h.MemorySwap = 1<<30, 1<<30 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, hc := poolConfig(s, s.Limits.WithDefaults(), prog, nil)
			tc.tweak(cfg, hc)
			if err := e.checkRefill(context.Background(), refillRequest{Key: key, Config: cfg, Host: hc}); err == nil {
				t.Error("accepted")
			}
		})
	}
	cfg, hc := poolConfig(s, s.Limits.WithDefaults(), prog, nil)
	b, _ := json.Marshal(refillRequest{Key: key, Config: cfg, Host: hc})
	var r refillRequest
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if err := e.checkRefill(context.Background(), r); err != nil {
		t.Errorf("the request of a pooled run, through JSON, refused: %v", err)
	}
}

// TestPoolMountReplaced: a bind source replaced at the same path is never
// served from an idle container that binds the old one.
func TestPoolMountReplaced(t *testing.T) {
	e := executor(t)
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	dir := filepath.Join(t.TempDir(), "in")
	write := func(text string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old\n")
	s := Spec{Image: testImage, Cmd: sh("cat /in/f"), Mounts: []job.Mount{{Host: dir, Guest: "/in"}}, Pool: true}
	warm(t, e, s)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	write("new\n")
	if res := run(t, e, s); string(res.Stdout) != "new\n" {
		t.Errorf("stdout %q, want the new directory's \"new\\n\"", res.Stdout)
	}
}

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}

// TestPoolClaimUnfinished: an idle container whose claimer was killed
// after writing its claim marker and before its rename was done (used,
// still under its idle name) is never claimed again, nor taken for the
// pool's idle container: the next refill removes it, then its marker.
func TestPoolClaimUnfinished(t *testing.T) {
	e := executor(t)
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	s := Spec{Image: testImage, Cmd: sh("echo ok"), Pool: true}
	key, used := startIdle(t, e, s)
	if err := os.MkdirAll(filepath.Dir(e.marker(used)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.marker(used), []byte("1073741824 1\n"), 0o600); err != nil { // no such process
		t.Fatal(err)
	}
	if res := run(t, e, s); string(res.Stdout) != "ok\n" || e.pooledRuns.Load() != 0 {
		t.Fatalf("stdout %q, pooled runs %d; want a cold run (the marked container not claimed)", res.Stdout, e.pooledRuns.Load())
	}
	e.bgWork.Wait()
	idle, busy := pooled(t, e, key)
	if len(idle) != 1 || idle[0] == used || len(busy) != 0 {
		t.Errorf("after the refill: idle %v, busy %v; want 1 fresh idle one, %.12s gone", idle, busy, used)
	}
	if _, err := os.Stat(e.marker(used)); !os.IsNotExist(err) {
		t.Errorf("the claim marker of the removed container is left: %v", err)
	}
	// The fresh one is claimed, and leaves no marker once removed.
	if res := run(t, e, s); string(res.Stdout) != "ok\n" || e.pooledRuns.Load() != 1 {
		t.Fatalf("stdout %q, pooled runs %d; want a pooled run", res.Stdout, e.pooledRuns.Load())
	}
	e.bgWork.Wait()
	if ents, _ := os.ReadDir(filepath.Dir(e.marker(used))); len(ents) != 0 {
		t.Errorf("claim markers left after a pooled run: %v", ents)
	}
}

// TestPoolDrainInUse: DrainPool passes by a pooled container that a live
// run has claimed (its claim marker names this process), and removes it
// once the claim is gone.
func TestPoolDrainInUse(t *testing.T) {
	e := executor(t)
	ctx := context.Background()
	_, id := startIdle(t, e, Spec{Image: testImage, Cmd: sh("echo ok"), Pool: true})
	if !e.mark(id) || e.mark(id) {
		t.Fatal("mark: want the first to write the marker, the second to find it")
	}
	if removed, err := e.DrainPool(ctx); err != nil || contains(removed, id) {
		t.Fatalf("DrainPool = %v, %v; want %.12s, in use, kept", removed, err, id)
	}
	if garbage, err := e.Garbage(ctx, true); err != nil || contains(garbage, id) {
		t.Fatalf("Garbage = %v, %v; want %.12s, in use, left out", garbage, err, id)
	}
	// Nor does the DrainPool of a ccrun with another pool directory.
	other := executor(t)
	if removed, err := other.DrainPool(ctx); err != nil || contains(removed, id) {
		t.Fatalf("another pool directory's DrainPool = %v, %v; want %.12s, in use, kept", removed, err, id)
	}
	e.unmark(id)
	if removed, err := e.DrainPool(ctx); err != nil || !contains(removed, id) {
		t.Fatalf("DrainPool = %v, %v; want %.12s removed", removed, err, id)
	}
}

// startIdle creates and starts an idle container of s's pool, as a refill
// of this process does, removed when the test ends; it returns the pool's
// key and the container's id.
func startIdle(t *testing.T, e *Executor, s Spec) (key, id string) {
	t.Helper()
	key, prog := keyOf(t, e, s)
	labels := e.labels()
	labels[LabelPool] = key
	ctx := context.Background()
	cfg, hc := poolConfig(s, s.Limits.WithDefaults(), prog, labels)
	id, err := e.create(ctx, cfg, hc, "ccrun-pool-"+randHex(6))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.remove(ctx, id) })
	if err := e.eng.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	return key, id
}
