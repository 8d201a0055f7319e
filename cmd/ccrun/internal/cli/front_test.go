package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ccrun/ccrun/cmd/ccrun/internal/handoff"
	"github.com/ccrun/ccrun/internal/housekeep"
)

// The front (cmd/ccrun/front): `make build`'s bin/ccrun, which serves the
// gate and @shell and hands the rest to bin/ccrun-full beside it.

// wholePkg and frontPkg are the two main packages over this one.
const (
	wholePkg = "github.com/ccrun/ccrun/cmd/ccrun"
	frontPkg = "github.com/ccrun/ccrun/cmd/ccrun/front"
)

var (
	pairOnce            sync.Once
	pairFront, pairFull string
	pairErr             error
)

// builtPair builds the two mains as `make build` does, once per test
// binary: the front (cmd/ccrun/front) as DIR/ccrun and the whole ccrun
// (cmd/ccrun) as DIR/ccrun-full, both static.
func builtPair(tb testing.TB) (front, full string) {
	tb.Helper()
	pairOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ccrun-pair-")
		if err != nil {
			pairErr = err
			return
		}
		pairFront, pairFull = filepath.Join(dir, "ccrun"), filepath.Join(dir, handoff.FullName)
		for _, b := range [][]string{{"-o", pairFront, frontPkg}, {"-o", pairFull, wholePkg}} {
			cmd := goCommand([]string{"CGO_ENABLED=0"}, append([]string{"build"}, b...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				pairErr = &buildError{args: cmd.Args, out: out, err: err}
				return
			}
		}
	})
	if pairErr != nil {
		tb.Fatal(pairErr)
	}
	return pairFront, pairFull
}

type buildError struct {
	args []string
	out  []byte
	err  error
}

func (e *buildError) Error() string {
	return strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + string(e.out)
}

// frontEnv is an environment of its own for a run of either binary: its
// config, state, cache and sessions under dir.
func frontEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, asCCRun+"=") && !strings.HasPrefix(kv, "CCRUN_SESSION=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+filepath.Join(dir, "home"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"CCRUN_SESSION_DIR="+filepath.Join(dir, "sessions"), "CCRUN_WASM_SERVER=0")
}

type ran struct {
	code           int
	stdout, stderr string
}

func runBin(t *testing.T, bin, dir, stdin string, env []string, args ...string) ran {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return ran{code, out.String(), errb.String()}
}

// frontCases are runs the front serves (served) and runs it hands to the
// whole ccrun (the rest).
var frontCases = []struct {
	name   string
	served bool
	stdin  string
	args   []string
}{
	{"version", true, "", []string{"version"}},
	{"version json", true, "", []string{"version", "--json"}},
	{"key", true, "", []string{"key", "git status --short"}},
	{"key compound json", true, "", []string{"key", "--json", "make test && make lint"}},
	{"check deny", true, "", []string{"check", "--shell", "rm -rf /"}},
	{"check json", true, "", []string{"check", "--json", "--shell", "ls -la"}},
	{"check session allow", true, "", []string{"check", "--json", "--session-allow", "run_command:git", "--shell", "git push"}},
	{"exec echo", true, "", []string{"exec", "--shell", "echo hi"}},
	{"exec asks, nobody to ask", true, "", []string{"exec", "--shell", "rm -rf build"}},
	{"exec approve once", true, "", []string{"exec", "--approve", "once", "--shell", "echo $((1+2)) > out.txt; cat out.txt"}},
	{"exec project grant refused", true, "", []string{"exec", "--approve", "project", "--shell", "touch x"}},
	{"exec exit code", true, "", []string{"exec", "--approve", "once", "--shell", "exit 3"}},
	{"exec stdin", true, "from stdin\n", []string{"exec", "--approve", "once", "--shell", "cat"}},
	{"exec env", true, "", []string{"exec", "--approve", "once", "--env", "A=1", "--shell", "echo $A"}},
	{"exec timeout", true, "", []string{"exec", "--approve", "once", "--timeout", "200ms", "--shell", "sleep 5"}},
	{"exec deny rule", true, "", []string{"exec", "--approve", "once", "--deny", "run_command:echo", "--shell", "echo no"}},
	{"exec plan mode", true, "", []string{"exec", "--mode", "plan", "--shell", "touch y"}},
	{"exec flag=value", true, "", []string{"--project-dir=.", "exec", "--shell=echo eq"}},
	{"exec project dir", true, "", []string{"--project-dir", ".", "exec", "--shell", "pwd"}},
	{"exec trust digest", true, "", []string{"--trust-digest", "sha256:00", "exec", "--shell", "echo td"}},
	{"exec shell value like a flag", true, "", []string{"exec", "--approve", "once", "--shell", "--version"}},
	{"exec empty command", true, "", []string{"exec", "--shell", " "}},
	{"exec shell and wasm", false, "", []string{"exec", "--shell", "true", "--wasm", "x.wasm"}},
	{"exec engine", false, "", []string{"exec", "--engine", "nonsense", "--shell", "true"}},
	{"exec after dash", false, "", []string{"exec", "--", "--shell", "true"}},
	{"exec unknown flag", false, "", []string{"exec", "--bogus", "--shell", "true"}},
	{"exec help", false, "", []string{"exec", "--help"}},
	{"exec docker bad image", false, "", []string{"exec", "--docker", "Not An Image", "--", "true"}},
	{"exec capability", false, "", []string{"exec", "no-such-capability"}},
	{"help", false, "", []string{"--help"}},
	{"help exec", false, "", []string{"help", "exec"}},
	{"root flag first", false, "", []string{"--bogus", "exec", "--shell", "true"}},
	{"exec capability and shell", true, "", []string{"exec", "name", "--shell", "true"}},
	{"check wasm", false, "", []string{"check", "--wasm", "x.wasm"}},
	{"no command", false, "", nil},
	{"unknown command", false, "", []string{"frobnicate"}},
	{"gc dry run", false, "", []string{"gc", "--dry-run", "--json"}},
	{"allowlist", false, "", []string{"allowlist", "list"}},
	{"helper argument", false, "", []string{housekeep.RefillArg}},
}

// TestFront: the front and the whole ccrun say and do the same, run for
// run (exit code, stdout, stderr); the front serves what it says it
// serves (it does so with the whole ccrun gone), and hands the rest on.
func TestFront(t *testing.T) {
	front, full := builtPair(t)
	alone := filepath.Join(t.TempDir(), "ccrun") // a front without the whole ccrun beside it
	data, err := os.ReadFile(front)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range frontCases {
		t.Run(tc.name, func(t *testing.T) {
			var got [3]ran
			for i, bin := range []string{front, full, alone} {
				dir := t.TempDir()
				proj := filepath.Join(dir, "project")
				if err := os.Mkdir(proj, 0o755); err != nil {
					t.Fatal(err)
				}
				got[i] = runBin(t, bin, proj, tc.stdin, frontEnv(dir), tc.args...)
				got[i].stderr = strings.ReplaceAll(got[i].stderr, dir, "DIR")
				got[i].stdout = strings.ReplaceAll(got[i].stdout, dir, "DIR")
			}
			if got[0] != got[1] {
				t.Errorf("front and whole ccrun differ:\nfront: %+v\nwhole: %+v", got[0], got[1])
			}
			switch {
			case tc.served && got[2] != got[1]:
				t.Errorf("served by the front alone, it differs:\nalone: %+v\nwhole: %+v", got[2], got[1])
			case !tc.served && (got[2].code != exitInternal || !strings.Contains(got[2].stderr, "ccrun-full beside it, which is missing")):
				t.Errorf("not served: the front alone should say the whole ccrun is missing, got %+v", got[2])
			}
		})
	}
}

// TestFrontMissingOrBad: the whole ccrun beside the front is not an
// executable file: the front says so, exits 125, and runs nothing.
func TestFrontMissingOrBad(t *testing.T) {
	front, _ := builtPair(t)
	data, err := os.ReadFile(front)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"not executable", func(p string) error { return os.WriteFile(p, []byte("#!/bin/sh\ntouch ran\n"), 0o644) }, "not an executable file"},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }, "not an executable file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "ccrun")
			if err := os.WriteFile(bin, data, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(filepath.Join(dir, handoff.FullName)); err != nil {
				t.Fatal(err)
			}
			r := runBin(t, bin, dir, "", frontEnv(dir), "demo")
			if r.code != exitInternal || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("got %+v, want exit %d and %q", r, exitInternal, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Error("the file beside the front ran")
			}
		})
	}
}

// TestFrontDecidesOnce: one function decides what the front serves
// (handoff.Serves, from the front's earliest init): for every shape of
// argv, the front runs the command itself — one Go runtime starts —
// exactly when Serves says so, and hands it to ccrun-full otherwise — a
// second runtime, ccrun-full's, started from the front's early init. A
// root flag before the command goes the same way as any (an
// entry point before Go's, once, handed --project-dir . exec --shell x
// over where Serves serves it).
func TestFrontDecidesOnce(t *testing.T) {
	front, _ := builtPair(t)
	digest := "sha256:" + strings.Repeat("0", 64)
	for _, args := range [][]string{
		{"--project-dir", ".", "exec", "--shell", "x"},
		{"--project-dir=.", "exec", "--shell", "x"},
		{"--project-dir", ".", "--trust-digest", digest, "check", "--json", "--shell", "ls"},
		{"--trust-digest", digest, "version"},
		{"version"},
		{"version", "--json"},
		{"key", "git status"},
		{"exec", "--shell", "true"},
		{"exec", "--shell=true"},
		{"exec", "--approve", "once", "--env", "A=1", "--shell", "true"},
		{"exec", "--mode", "plan", "--shell", "true"},
		{"check", "--json", "--shell", "ls"},
		{"exec", "--shell", "--wasm"}, // the value of --shell
		{"exec", "name", "--shell", "true"},
		{"--project-dir", ".", "exec", "--shell", "true", "--wasm", "x.wasm"},
		{"--project-dir", "."},
		{"--project-dir", ".", "capability", "list"},
		{"exec", "--shell", "true", "--wasm", "x.wasm"},
		{"exec", "--", "--shell", "x"},
		{"exec", "--env", "--shell"},
		{"exec", "--shell", "true", "-h"},
		{"exec", "--help"},
		{"version", "-h"},
		{"version", "--mode", "plan"},
		{"check", "--wasm", "x.wasm"},
		{"capability", "list"},
		{"allowlist", "list"},
		{"frobnicate"},
		{"--bogus", "version"},
		{"-h"},
		{"help", "exec"},
		{},
	} {
		dir := t.TempDir()
		env := append(frontEnv(dir), "GODEBUG=inittrace=1")
		r := runBin(t, front, dir, "", env, args...)
		// Served: the front's runtime, and early's init returns (its
		// line is written once it has). Handed over: early's init execs
		// ccrun-full, which starts a runtime of its own.
		runtimes, early := 2, 0
		if handoff.Serves(args) {
			runtimes, early = 1, 1
		}
		if n := strings.Count(r.stderr, "init runtime @"); n != runtimes {
			t.Errorf("%q: Serves says %v, and %d Go runtimes started, want %d", args, handoff.Serves(args), n, runtimes)
		}
		if n := strings.Count(r.stderr, "init github.com/ccrun/ccrun/cmd/ccrun/internal/handoff/early @"); n != early {
			t.Errorf("%q: Serves says %v, and the front's early init returned %d times, want %d", args, handoff.Serves(args), n, early)
		}
	}
}

// TestFrontServedFlags holds package handoff's list of what the front
// serves to the CLI's own commands: each flag it names is the command's
// (its own or the root's), and takes a value exactly when handoff says so.
// A flag handoff reads wrongly would shift every argument after it.
func TestFrontServedFlags(t *testing.T) {
	if handoff.ExitInternal != exitInternal {
		t.Errorf("handoff.ExitInternal = %d, want exitInternal %d", handoff.ExitInternal, exitInternal)
	}
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
	root := a.command()
	for name, flags := range handoff.Served() {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Name() != name {
			t.Errorf("handoff serves %q, which the CLI does not have (%v)", name, err)
			continue
		}
		c.InitDefaultHelpFlag()
		for flag, takes := range flags {
			f := c.Flags().Lookup(flag)
			if f == nil {
				f = c.InheritedFlags().Lookup(flag)
			}
			switch {
			case f == nil:
				t.Errorf("handoff serves %s --%s, which the command does not have", name, flag)
			case takes != (f.NoOptDefVal == ""):
				t.Errorf("handoff reads %s --%s as taking a value: %v; the CLI: %v", name, flag, takes, f.NoOptDefVal == "")
			}
		}
	}
}

// TestFrontSymlinked: the front reached through a symbolic link hands over
// to the ccrun-full beside the file the link names, not to one planted
// beside the link.
func TestFrontSymlinked(t *testing.T) {
	front, _ := builtPair(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "ccrun")
	if err := os.Symlink(front, link); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, "planted")
	if err := os.WriteFile(filepath.Join(dir, handoff.FullName), []byte("#!/bin/sh\ntouch "+planted+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"frobnicate"}, {"exec", "--shell", "true", "--wasm", "x.wasm"}} {
		r := runBin(t, link, dir, "", frontEnv(dir), args...)
		if r.code != exitUsage {
			t.Errorf("%q through a link: %+v, want the whole ccrun's usage error (exit %d)", args, r, exitUsage)
		}
		if _, err := os.Stat(planted); err == nil {
			t.Fatalf("%q: the ccrun-full beside the link ran", args)
		}
	}
}

// TestScriptsFront runs the CLI's transcripts (TestScripts) through the
// front, the whole ccrun beside it: what a user of `make build` gets.
func TestScriptsFront(t *testing.T) {
	front, _ := builtPair(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(front)+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("CCRUN_SESSION_DIR", filepath.Join(env.WorkDir, ".sessions"))
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			return nil
		},
		RequireExplicitExec: true,
	})
}

// TestFrontCommands: given no engines (the front's Main), the CLI has
// exactly the commands handoff.Served names, and no completion command:
// the front's list comes from the one function that decides what it
// serves. Given them, it has every command.
func TestFrontCommands(t *testing.T) {
	names := func(e *Engines) []string {
		var out []string
		for _, c := range (&app{eng: e, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}).command().Commands() {
			out = append(out, c.Name())
		}
		slices.Sort(out)
		return out
	}
	var served []string
	for name := range handoff.Served() {
		served = append(served, name)
	}
	slices.Sort(served)
	if got := names(nil); !slices.Equal(got, served) {
		t.Errorf("the front's commands are %v, want handoff.Served's %v", got, served)
	}
	whole := names(testEngines)
	for _, want := range append(served, "gc", "mcp", "doctor", "demo", "capability", "completion") {
		if !slices.Contains(whole, want) {
			t.Errorf("the whole ccrun has no %s: %v", want, whole)
		}
	}
}

// TestFrontServesItsConfineServer: the confinement server the front starts
// for the rulesets of read-only commands is the front itself, so that it
// answers the front's next process. Handed to ccrun-full it answered no
// front ("another ccrun executable serves here"), and every confined
// command built its ruleset anew.
func TestFrontServesItsConfineServer(t *testing.T) {
	needKernelSandbox(t)
	if !handoff.Serves([]string{"confine-server", "/run/x.sock"}) {
		t.Fatal("handoff hands the confinement server to the whole ccrun")
	}
	front, _ := builtPair(t)
	dir := t.TempDir()
	runtimeDir := filepath.Join(dir, "run")
	if err := os.Mkdir(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(frontEnv(dir), "XDG_RUNTIME_DIR="+runtimeDir)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runBin(t, front, dir, "", env, "exec", "--shell", "cat f"); r.code != 0 {
		t.Fatalf("exec: %d %q", r.code, r.stderr)
	}
	t.Cleanup(func() { killServers(runtimeDir) })
	var exe string
	for deadline := time.Now().Add(20 * time.Second); exe == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		exe = serverExe(runtimeDir)
	}
	if exe != front {
		t.Fatalf("the confinement server runs %q, want the front %q", exe, front)
	}
}

// serverExe is the executable of a confinement server whose socket is in
// runtimeDir, or "".
func serverExe(runtimeDir string) string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "confine-server\x00"+filepath.Join(runtimeDir, "ccrun")) {
			continue
		}
		exe, err := os.Readlink(filepath.Join(filepath.Dir(p), "exe"))
		if err == nil {
			return exe
		}
	}
	return ""
}

// killServers ends the confinement servers of runtimeDir.
func killServers(runtimeDir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "confine-server\x00"+filepath.Join(runtimeDir, "ccrun")) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	}
}
