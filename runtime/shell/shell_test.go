package shell

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/runtime/job"
)

// parse parses src the way the gate does (Bash dialect). The tests do not
// use permission.ParseCommand so as to stand on their own.
func parse(t testing.TB, src string) *syntax.File {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(src), "")
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return f
}

func newExecutor(t testing.TB, opts ...Option) *Executor {
	t.Helper()
	e, err := New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// runSrc runs src in dir (a fresh temporary directory when empty) and fails
// the test on an error.
func runSrc(t testing.TB, e *Executor, src string, s Spec) *job.Result {
	t.Helper()
	s.Script = parse(t, src)
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	res, err := e.Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run(%q): %v", src, err)
	}
	return res
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a run.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"true", 0},
		{"false", 1},
		{"exit 3", 3},
		{"/bin/true", 0},
		{"sh -c 'exit 5'", 5},
		{"ccrun-no-such-program-here", 127},
		{"sh -c 'kill -TERM $$'", 128 + int(syscall.SIGTERM)},
		{"sh -c 'exit 4'; true", 0},
		{"true; sh -c 'exit 4'", 4},
	} {
		t.Run(tc.src, func(t *testing.T) {
			t.Parallel()
			res := runSrc(t, e, tc.src, Spec{})
			if res.Reason != job.Exit || res.ExitCode != tc.want {
				t.Errorf("got %s %d, want exit %d (stderr %q)", res.Reason, res.ExitCode, tc.want, res.Stderr)
			}
		})
	}
}

func TestStreamedAndCaptured(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, src := range []string{
		"echo out; echo err >&2",                       // builtins
		"sh -c 'echo out; echo err >&2'",               // a program
		"echo out | cat; sh -c 'echo err' 1>&2",        // a pipeline, a redirection
		"x=$(sh -c 'echo out'); echo $x; echo err >&2", // a capture
	} {
		t.Run(src, func(t *testing.T) {
			t.Parallel()
			var out, errb syncBuffer
			res := runSrc(t, e, src, Spec{Streams: job.Streams{Stdout: &out, Stderr: &errb}})
			if !res.OK() {
				t.Fatalf("got %s %d, want exit 0; stderr %q", res.Reason, res.ExitCode, res.Stderr)
			}
			if got, want := string(res.Stdout), "out\n"; got != want {
				t.Errorf("captured stdout %q, want %q", got, want)
			}
			if got, want := string(res.Stderr), "err\n"; got != want {
				t.Errorf("captured stderr %q, want %q", got, want)
			}
			if got, want := out.String(), "out\n"; got != want {
				t.Errorf("streamed stdout %q, want %q", got, want)
			}
			if got, want := errb.String(), "err\n"; got != want {
				t.Errorf("streamed stderr %q, want %q", got, want)
			}
		})
	}
}

// TestStreamedAsItArrives checks that output reaches the caller while the
// program still runs, not only at the end.
func TestStreamedAsItArrives(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	r, w := osPipe(t)
	done := make(chan *job.Result, 1)
	script := parse(t, `echo first; sh -c 'while [ ! -e seen ]; do sleep 0.01; done; echo second'`)
	go func() {
		// The program waits for the test to have seen its first line.
		res, err := e.Run(context.Background(), Spec{Script: script, Dir: dir, Streams: job.Streams{Stdout: w}, Limits: job.Limits{Timeout: time.Minute}})
		if err != nil {
			res = &job.Result{Detail: err.Error()}
		}
		done <- res
	}()
	br := bufio.NewReader(r)
	if got, err := br.ReadString('\n'); got != "first\n" {
		t.Fatalf("first line %q (%v), want %q", got, err, "first\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "seen"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := br.ReadString('\n'); got != "second\n" {
		t.Fatalf("second line %q (%v), want %q", got, err, "second\n")
	}
	res := <-done
	if !res.OK() || string(res.Stdout) != "first\nsecond\n" {
		t.Errorf("got %s %d %q %s", res.Reason, res.ExitCode, res.Stdout, res.Detail)
	}
}

func osPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// readPids waits until file holds n pids, one a line, and returns them.
func readPids(t *testing.T, file string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(file)
		fields := strings.Fields(string(b))
		if len(fields) >= n && strings.HasSuffix(string(b), "\n") {
			var pids []int
			for _, f := range fields {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("pid file %q: %v", b, err)
				}
				pids = append(pids, pid)
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s: got %q, want %d pids", file, b, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertGone fails for each pid that still names a process.
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		t.Errorf("pid %d outlived the run (kill 0: %v): %s", pid, err, stat)
		_ = syscall.Kill(pid, syscall.SIGKILL) // do not leave it behind
	}
}

// survivors returns the pids of the live processes whose environment holds
// tag (given to a run through Spec.Env): after Run, there must be none. (A
// zombie shows no environment; assertGone covers those.)
func survivors(tag string) []int {
	var out []int
	names, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || !bytes.Contains(b, []byte(tag+"\x00")) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(n, "/")[2])
		if pid == os.Getpid() {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// tag returns a KEY=VALUE unique to the test, for Spec.Env and survivors.
func tag(t *testing.T) string {
	return "CCRUN_TEST_TAG=" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + strconv.Itoa(os.Getpid())
}

// TestNothingOutlivesRun runs scripts that leave processes behind in every
// way the executor knows of, ended in every way, and then looks through
// all of /proc for anything of theirs.
func TestNothingOutlivesRun(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, tc := range []struct {
		name string
		src  string
		lim  job.Limits
	}{
		{"fork loop, timeout", "while true; do sh -c 'sleep 1000 & sleep 1000 &'; done", job.Limits{Timeout: time.Second}},
		{"background loop, exit", "for i in 1 2 3 4 5 6 7 8; do sleep 1000 & done; sh -c 'sleep 1000 &'", job.Limits{}},
		{"pipeline, timeout", "yes | sh -c 'sleep 1000 & cat' | cat > /dev/null", job.Limits{Timeout: time.Second}},
		{"flood, output cap", "sh -c 'sleep 1000 & yes'", job.Limits{Output: 4096}},
		{"daemons, exit", "setsid -f sleep 1000; sh -c 'setsid sleep 1000 &'; (sleep 1000 &)", job.Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg := tag(t)
			res := runSrc(t, e, tc.src, Spec{Env: []string{tg}, Limits: tc.lim})
			if left := survivors(tg); len(left) > 0 {
				t.Errorf("%d processes outlived the run (%s): %v", len(left), res.Reason, left)
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// treeScript starts, in the background, the shapes of descendants a run
// must not leave behind, and has each write its pid to file pids:
//   - a program started by the script itself (`... &`);
//   - a grandchild left by a program that has exited (an orphan);
//   - a grandchild that left the process group with setsid, under a parent
//     that is still alive;
//   - a grandchild under a parent that waits for it.
//
// Then it waits until the pids are written and, in the foreground, sleeps.
const treeScript = `
sh -c 'echo $$ >> pids; exec sleep 1000' &
sh -c 'sleep 1000 & echo $! >> pids'
sh -c 'setsid sleep 1000 & echo $! >> pids; wait' &
sh -c 'sleep 1000 & echo $! >> pids; wait' &
while [ "$(cat pids | wc -l)" -lt 4 ]; do sleep 0.01; done
echo ready
sleep 1000
`

func TestTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	res := runSrc(t, e, treeScript, Spec{Dir: dir, Limits: job.Limits{Timeout: 5 * time.Second}})
	if res.Reason != job.Timeout || res.ExitCode != job.TimeoutExit {
		t.Errorf("got %s %d, want timeout %d", res.Reason, res.ExitCode, job.TimeoutExit)
	}
	if string(res.Stdout) != "ready\n" {
		t.Fatalf("the children did not start in time: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	assertGone(t, readPids(t, filepath.Join(dir, "pids"), 4))
}

func TestCancelKillsTree(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the script says its children are up (or give up, and
		// let the timeout below end the run and the test fail).
		for range 3000 {
			if b, _ := os.ReadFile(filepath.Join(dir, "ready")); len(b) > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	script := strings.Replace(treeScript, "echo ready", "echo ready > ready", 1)
	res, err := e.Run(ctx, Spec{Script: parse(t, script), Dir: dir, Limits: job.Limits{Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != job.Cancelled || res.ExitCode != job.KilledExitCode {
		t.Errorf("got %s %d, want cancelled %d", res.Reason, res.ExitCode, job.KilledExitCode)
	}
	assertGone(t, readPids(t, filepath.Join(dir, "pids"), 4))
}

// TestLeftoversKilledAtExit: when the script ends by itself, what it left
// running in the background is killed, and Run does not wait for it even
// though it holds the output pipes.
func TestLeftoversKilledAtExit(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	res := runSrc(t, e, `
sh -c 'sleep 1000 & echo $! >> pids'
sh -c 'echo $$ >> pids; exec sleep 1000' &
while [ "$(cat pids | wc -l)" -lt 2 ]; do sleep 0.01; done
echo done
sleep 1000 &
`, Spec{Dir: dir})
	if !res.OK() || string(res.Stdout) != "done\n" {
		t.Errorf("got %s %d %q %q, want exit 0 and done", res.Reason, res.ExitCode, res.Stdout, res.Stderr)
	}
	if !strings.Contains(res.Detail, "leftover") {
		t.Errorf("detail %q, want a word on the leftovers", res.Detail)
	}
	assertGone(t, readPids(t, filepath.Join(dir, "pids"), 2))
}

// TestDaemonKilled: a daemon (double fork into a new session, its parent
// gone before the run ends) is found by the run's marker and killed.
func TestDaemonKilled(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid(1)")
	}
	e := newExecutor(t)
	dir := t.TempDir()
	res := runSrc(t, e, `
setsid -f sh -c 'echo $$ >> pids; exec sleep 1000'
sh -c 'setsid sh -c "sleep 1000 & echo \$! >> pids" &'
while [ "$(cat pids | wc -l)" -lt 2 ]; do sleep 0.01; done
`, Spec{Dir: dir})
	if !res.OK() {
		t.Errorf("got %s %d %q", res.Reason, res.ExitCode, res.Stderr)
	}
	assertGone(t, readPids(t, filepath.Join(dir, "pids"), 2))
}

// TestCaptureWithLeftover: $(...) of a program that leaves a child holding
// the pipe ends after the wait delay instead of hanging.
func TestCaptureWithLeftover(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithWaitDelay(100*time.Millisecond))
	dir := t.TempDir()
	res := runSrc(t, e, `x=$(sh -c 'sleep 1000 & echo $! >> pids; echo hi'); echo "got $x"`, Spec{Dir: dir})
	if !res.OK() || string(res.Stdout) != "got hi\n" {
		t.Errorf("got %s %d %q %q", res.Reason, res.ExitCode, res.Stdout, res.Stderr)
	}
	assertGone(t, readPids(t, filepath.Join(dir, "pids"), 1))
}

func TestOutputFlood(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, tc := range []struct {
		name, src string
		stderr    bool
	}{
		{"program", "yes", false},
		{"program stderr", "yes >&2", true},
		{"builtin loop", "while true; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done", false},
		{"grandchild", "sh -c 'yes' & wait", false},
		{"stops the script", "for i in $(seq 1 200000); do echo line $i; done; touch finished", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			const limit = 64 << 10
			var streamed syncBuffer
			res := runSrc(t, e, tc.src, Spec{Dir: dir, Limits: job.Limits{Output: limit}, Streams: job.Streams{Stdout: &streamed, Stderr: &streamed}})
			if res.Reason != job.OutputCap || !res.Truncated || res.ExitCode != job.KilledExitCode {
				t.Errorf("got %s %d truncated=%v, want output cap", res.Reason, res.ExitCode, res.Truncated)
			}
			got := res.Stdout
			if tc.stderr {
				got = res.Stderr
			}
			if len(got) != limit {
				t.Errorf("captured %d bytes, want %d", len(got), limit)
			}
			if n := len(streamed.String()); n > 2*limit {
				t.Errorf("streamed %d bytes, want at most %d", n, 2*limit)
			}
			if _, err := os.Stat(filepath.Join(dir, "finished")); err == nil {
				t.Errorf("the script ran to completion")
			}
		})
	}
}

func TestEnvironment(t *testing.T) {
	base := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/home/someone",
		"LC_ALL=C",
		"FOO_TOKEN=secret-token",
		"AWS_SECRET_ACCESS_KEY=secret-aws",
		"GITHUB_TOKEN=secret-gh",
		"DB_PASSWORD=secret-pw",
		"LD_PRELOAD=/nonexistent/secret-preload.so",
		"BASH_ENV=/nonexistent/secret-bash-env",
		"IFS=x",
		"NPM_CONFIG_CACHE=/tmp/npm",
	}
	for _, tc := range []struct {
		name     string
		pass     []string
		extra    []string
		want     []string // lines of env that must be there
		wantNone []string // substrings that must not
	}{
		{
			name:     "default",
			want:     []string{"HOME=/home/someone", "LC_ALL=C"},
			wantNone: []string{"secret", "IFS=", "NPM_CONFIG"},
		},
		{
			name:     "passed by name",
			pass:     []string{"FOO_TOKEN", "NPM_CONFIG_*"},
			want:     []string{"FOO_TOKEN=secret-token", "NPM_CONFIG_CACHE=/tmp/npm"},
			wantNone: []string{"secret-aws", "secret-gh", "secret-pw", "secret-preload", "secret-bash-env"},
		},
		{
			name:     "given explicitly",
			extra:    []string{"CAP_TOKEN=explicit"},
			want:     []string{"CAP_TOKEN=explicit"},
			wantNone: []string{"secret"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newExecutor(t, WithBaseEnv(base), WithEnvPass(tc.pass...))
			// env(1) shows what a program gets; the builtin shows what the
			// interpreter itself sees.
			res := runSrc(t, e, `env; echo "builtin:${FOO_TOKEN-}:${AWS_SECRET_ACCESS_KEY-}:${LD_PRELOAD-}"`, Spec{Env: tc.extra})
			if !res.OK() {
				t.Fatalf("got %s %d %q", res.Reason, res.ExitCode, res.Stderr)
			}
			out := string(res.Stdout)
			lines := strings.Split(out, "\n")
			for _, w := range tc.want {
				found := false
				for _, l := range lines {
					found = found || l == w
				}
				if !found {
					t.Errorf("missing %q in\n%s", w, out)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(out, w) {
					t.Errorf("%q visible to the tool:\n%s", w, out)
				}
			}
		})
	}
}

// TestNoPath: without a PATH in the base environment, a program is not
// looked up in the working directory.
func TestNoPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ls"), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := runSrc(t, newExecutor(t, WithBaseEnv(nil)), `ls; echo "$PATH"`, Spec{Dir: dir})
	if got, want := string(res.Stdout), "ls\n"+DefaultPath+"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestEnvironmentFromParent uses the real process environment (the default
// base), so it cannot run in parallel.
func TestEnvironmentFromParent(t *testing.T) {
	t.Setenv("CCRUN_TEST_TOKEN", "parent-secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "parent-aws")
	t.Setenv("LD_PRELOAD", "")
	t.Setenv("BASH_ENV", "/nonexistent/parent-bash-env")
	res := runSrc(t, newExecutor(t), "env", Spec{})
	for _, s := range []string{"parent-secret", "parent-aws", "LD_PRELOAD", "parent-bash-env"} {
		if strings.Contains(string(res.Stdout), s) {
			t.Errorf("%q visible to the tool", s)
		}
	}
	res = runSrc(t, newExecutor(t, WithEnvPass("CCRUN_TEST_TOKEN")), "env", Spec{})
	if !strings.Contains(string(res.Stdout), "CCRUN_TEST_TOKEN=parent-secret\n") {
		t.Errorf("passed by name but not visible:\n%s", res.Stdout)
	}
}

func TestFilterEnv(t *testing.T) {
	t.Parallel()
	env := []string{
		"PATH=/bin", "HOME=/h", "LANG=C", "LC_CTYPE=C", "TERM=xterm", "USER=u",
		"PWD=/elsewhere", "OLDPWD=/x", "SSH_AUTH_SOCK=/s", "GH_TOKEN=t", "AWS_REGION=r",
		"MY_API_KEY=k", "LD_LIBRARY_PATH=/l", "DYLD_INSERT_LIBRARIES=/d", "ENV=/e",
		"PYTHONPATH=/p", "NODE_OPTIONS=--x", "GIT_SSH_COMMAND=x", "PROMPT_COMMAND=x",
		"CDPATH=/c", "GLOBIGNORE=*", "SHELLOPTS=x", "BASHOPTS=x", "PS4=x",
		"noequals", "=novalue", "XDG_CONFIG_HOME=/c", "XDG_RUNTIME_DIR=/run/user/0",
	}
	for _, tc := range []struct {
		name string
		pass []string
		want []string
	}{
		{"default", nil, []string{"PATH=/bin", "HOME=/h", "LANG=C", "LC_CTYPE=C", "TERM=xterm", "USER=u", "XDG_CONFIG_HOME=/c"}},
		{"by name", []string{"GH_TOKEN", "LD_*"}, []string{"PATH=/bin", "HOME=/h", "LANG=C", "LC_CTYPE=C", "TERM=xterm", "USER=u", "GH_TOKEN=t", "LD_LIBRARY_PATH=/l", "XDG_CONFIG_HOME=/c"}},
		{"prefix is not substring", []string{"TOKEN*"}, []string{"PATH=/bin", "HOME=/h", "LANG=C", "LC_CTYPE=C", "TERM=xterm", "USER=u", "XDG_CONFIG_HOME=/c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := FilterEnv(env, tc.pass)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("FilterEnv(%v)\n got %q\nwant %q", tc.pass, got, tc.want)
			}
		})
	}
}

func TestWorkingDirectory(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "here"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runSrc(t, e, `pwd; /bin/pwd; echo $PWD; cat here; echo`, Spec{Dir: dir})
	if got, want := string(res.Stdout), strings.Repeat(dir+"\n", 3)+"x\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	t.Run("reader", func(t *testing.T) {
		t.Parallel()
		res := runSrc(t, e, `read first; echo "builtin:$first"; cat`, Spec{Streams: job.Streams{Stdin: strings.NewReader("one\ntwo\n")}})
		if got, want := string(res.Stdout), "builtin:one\ntwo\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("file", func(t *testing.T) {
		t.Parallel()
		f, err := os.CreateTemp(t.TempDir(), "in")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.WriteString("from a file\n")
		f.Seek(0, 0)
		res := runSrc(t, e, `cat`, Spec{Streams: job.Streams{Stdin: f}})
		if got, want := string(res.Stdout), "from a file\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		res := runSrc(t, e, `cat; echo "[$?]"`, Spec{})
		if got, want := string(res.Stdout), "[0]\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

func TestArgs(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	// "-e" as $1 is a parameter, not the errexit option.
	res := runSrc(t, e, `false; echo "$#:$1:$2"`, Spec{Args: []string{"-e", "two words"}})
	if got, want := string(res.Stdout), "2:-e:two words\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRunsTheParseTree: the executor runs the tree it is given, never the
// text. Two witnesses: a tree changed after parsing runs as changed, and a
// text that sh -c (dash here) reads differently runs as the gate parsed it.
func TestRunsTheParseTree(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)

	f := parse(t, "echo keyed")
	call := f.Stmts[0].Cmd.(*syntax.CallExpr)
	call.Args[1].Parts[0].(*syntax.Lit).Value = "from-the-tree"
	res, err := e.Run(context.Background(), Spec{Script: f, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Stdout), "from-the-tree\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	const src = `printf '%s\n' $'a\tb'`
	res = runSrc(t, e, src, Spec{})
	if got, want := string(res.Stdout), "a\tb\n"; got != want {
		t.Errorf("executor: got %q, want %q", got, want)
	}
	if out, err := exec.Command("sh", "-c", src).Output(); err == nil && string(out) == string(res.Stdout) {
		t.Logf("sh -c reads %q the same way here (%q): no witness on this host", src, out)
	}
}

// TestNoControllingTerminal: a program that wants to prompt on /dev/tty
// fails at once rather than waiting, stopped, for the timeout.
func TestNoControllingTerminal(t *testing.T) {
	t.Parallel()
	res := runSrc(t, newExecutor(t), `sh -c 'exec 3</dev/tty' 2>/dev/null; echo $?`, Spec{Limits: job.Limits{Timeout: time.Minute}})
	if res.Reason != job.Exit || string(res.Stdout) == "0\n" {
		t.Errorf("got %s %q, want /dev/tty to fail to open", res.Reason, res.Stdout)
	}
}

// TestInterpreterFatal: a fatal error of the interpreter that the script
// caused is a result, not an error of Run.
func TestInterpreterFatal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := runSrc(t, newExecutor(t), `mkdir gone; cd gone; rmdir ../gone; pwd -P; echo not reached`, Spec{Dir: dir})
	if res.Reason != job.Exit || res.ExitCode != 2 || res.Detail == "" || len(res.Stdout) > 0 {
		t.Errorf("got %s %d %q %q, want exit 2 with a detail", res.Reason, res.ExitCode, res.Detail, res.Stdout)
	}
}

func TestExecBuiltin(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res := runSrc(t, e, `exec sh -c 'echo replaced; exit 7'; echo not reached`, Spec{})
	if res.ExitCode != 7 || string(res.Stdout) != "replaced\n" {
		t.Errorf("got %s %d %q", res.Reason, res.ExitCode, res.Stdout)
	}
}

func TestScriptWithoutShebang(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool"), []byte("echo from-script $1\nexit 9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := runSrc(t, e, `./tool arg`, Spec{Dir: dir})
	if res.ExitCode != 9 || string(res.Stdout) != "from-script arg\n" {
		t.Errorf("got %s %d %q %q", res.Reason, res.ExitCode, res.Stdout, res.Stderr)
	}
}

func TestInvalidSpec(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	script := parse(t, "true")
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"nil script", Spec{Dir: dir}},
		{"no dir", Spec{Script: script}},
		{"relative dir", Spec{Script: script, Dir: "."}},
		{"missing dir", Spec{Script: script, Dir: filepath.Join(dir, "missing")}},
		{"dir is a file", Spec{Script: script, Dir: file}},
		{"env without =", Spec{Script: script, Dir: dir, Env: []string{"FOO"}}},
		{"env without name", Spec{Script: script, Dir: dir, Env: []string{"=x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := e.Run(context.Background(), tc.spec)
			if !errors.Is(err, ErrInvalidSpec) || res != nil {
				t.Errorf("got %v, %v; want ErrInvalidSpec", res, err)
			}
		})
	}
}

func TestInvalidOption(t *testing.T) {
	t.Parallel()
	for _, o := range []Option{WithEnvPass(""), WithWaitDelay(0), WithDrainGrace(-1)} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("got %v, want ErrInvalidOption", err)
		}
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	res, err := newExecutor(t).Run(ctx, Spec{Script: parse(t, "touch ran"), Dir: dir})
	if err != nil || res.Reason != job.Cancelled {
		t.Fatalf("got %v, %v; want cancelled", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Errorf("the script ran")
	}
}

// TestConcurrentRuns: runs that end in different ways at the same time do
// not disturb each other.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	run := func(src string, lim job.Limits) *job.Result {
		f, err := syntax.NewParser().Parse(strings.NewReader(src), "")
		if err != nil {
			t.Errorf("parse %q: %v", src, err)
			return &job.Result{}
		}
		res, err := e.Run(context.Background(), Spec{Script: f, Dir: dir, Limits: lim})
		if err != nil {
			t.Errorf("Run(%q): %v", src, err)
			return &job.Result{}
		}
		return res
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			switch i % 3 {
			case 0:
				res := run(fmt.Sprintf("sh -c 'sleep 0.05; echo %d'; sh -c 'exit %d'", i, i), job.Limits{})
				if res.Reason != job.Exit || res.ExitCode != i || string(res.Stdout) != fmt.Sprintf("%d\n", i) {
					t.Errorf("run %d: got %s %d %q", i, res.Reason, res.ExitCode, res.Stdout)
				}
			case 1:
				res := run("sh -c 'sleep 1000 & sleep 1000'", job.Limits{Timeout: 200 * time.Millisecond})
				if res.Reason != job.Timeout {
					t.Errorf("run %d: got %s, want timeout", i, res.Reason)
				}
			case 2:
				res := run("sh -c 'sleep 1000 &'; yes", job.Limits{Output: 1 << 10})
				if res.Reason != job.OutputCap {
					t.Errorf("run %d: got %s, want output cap", i, res.Reason)
				}
			}
		})
	}
	wg.Wait()
}

// TestBeforeStart: WithBeforeStart's function runs, and is waited for,
// before each program the script starts, including one a builtin or a
// command substitution starts, and never for a script of builtins.
func TestBeforeStart(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	for _, tc := range []struct {
		src   string
		calls int
	}{
		{"true; echo hi; x=1; : $x", 0},
		{"touch a; touch b", 2},
		{"echo $(touch a)", 1},
		{"command touch a", 1},
		{"exec touch a", 1},
		{"f() { touch a; }; f; f", 2},
	} {
		dir := t.TempDir()
		calls := 0
		hook := func() {
			calls++
			// the program has not started: nothing it makes exists yet
			if _, err := os.Stat(filepath.Join(dir, "b")); calls == 1 && err == nil {
				t.Errorf("%q: the hook ran after a program", tc.src)
			}
		}
		res, err := e.Run(WithBeforeStart(context.Background(), hook), Spec{Script: parse(t, tc.src), Dir: dir})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%q: %v, %+v", tc.src, err, res)
		}
		if calls != tc.calls {
			t.Errorf("%q: the hook ran %d times, want %d", tc.src, calls, tc.calls)
		}
	}
}
