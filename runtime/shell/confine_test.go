//go:build linux

package shell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/confine"
	"github.com/ccrun/ccrun/runtime/job"
)

// These tests run confined commands through the executor with no Guard:
// the kernel layer on its own.

const confineCanary = "CANARY-5e1b2d"

// confineWorld is a fake home with a key, a project (a git repository)
// with a symlink to that home, and a place outside where nothing may
// appear.
type confineWorld struct {
	home, project, outside string
}

func newConfineWorld(t *testing.T) confineWorld {
	t.Helper()
	if _, err := ConfineAvailable(); err != nil {
		if os.Getenv("CCRUN_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("landlock required: %v", err)
		}
		t.Skipf("no landlock: %v", err)
	}
	base := t.TempDir()
	w := confineWorld{filepath.Join(base, "home"), filepath.Join(base, "project"), filepath.Join(base, "outside")}
	for _, d := range []string{w.home + "/.ssh", w.project + "/src", w.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		w.home + "/.ssh/id_rsa":   confineCanary + " key\n",
		w.home + "/.bash_history": confineCanary + " history\n",
		w.project + "/README.md":  "# demo\nread me\n",
		w.project + "/src/a.txt":  "alpha needle\n",
		w.project + "/src/b.txt":  "beta\n",
		w.project + "/keys.txt":   w.home + "/.ssh/id_rsa\n",
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(w.home, w.project+"/home"); err != nil {
		t.Fatal(err)
	}
	gitIn(t, w.project, "init", "-q")
	gitIn(t, w.project, "add", "README.md", "src")
	gitIn(t, w.project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "initial import")
	return w
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out)
	}
}

// spec is a confined run of src in the project, HOME the fake home.
func (w confineWorld) spec(t testing.TB, src string) Spec {
	return Spec{
		Script:  parse(t, src),
		Dir:     w.project,
		Env:     []string{"HOME=" + w.home, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"},
		Confine: ReadOnlyConfinement(w.home, w.project),
	}
}

func (w confineWorld) run(t *testing.T, e *Executor, src string) *job.Result {
	t.Helper()
	res, err := e.Run(context.Background(), w.spec(t, src))
	if err != nil {
		t.Fatalf("Run(%q): %v", src, err)
	}
	return res
}

// TestConfineEscapes: what a misjudged read-only command could do fails,
// in the programs' own programs and in the script's redirections alike.
func TestConfineEscapes(t *testing.T) {
	w := newConfineWorld(t)
	gitIn(t, w.project, "config", "core.fsmonitor", "touch "+w.outside+"/fsmonitor")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	self, _ := os.ReadFile("/proc/self/environ") // ccrun's own, as /proc shows it
	e := newExecutor(t)

	for _, src := range []string{
		"find . -maxdepth 0 -exec touch " + w.outside + "/find \\;",
		"git status",
		"xargs cat < keys.txt",
		"cat keys.txt | xargs cat",
		"grep -R CANARY .",
		"sort -o " + w.outside + "/sorted README.md",
		"sort {-o" + w.outside + "/brace,README.md}",
		"echo x > " + w.outside + "/redirect",
		"echo x >> README.md",
		"cat < home/.ssh/id_rsa",
		"echo \"$(< home/.ssh/id_rsa)\"",
		". home/.bash_history",
		"cat ~/.s{s,{}}h/i{d,{}}_rsa",
		"cat \"$HOME/.bash_history\"",
		fmt.Sprintf("curl -sS --max-time 5 http://127.0.0.1:%d/", port),
		"cat /proc/$$/environ",
		"ps axeww",
		"/bin/kill -STOP $$",
	} {
		t.Run(src, func(t *testing.T) {
			res := w.run(t, e, src)
			all := string(res.Stdout) + string(res.Stderr)
			if strings.Contains(all, confineCanary) {
				t.Errorf("leaked: %q", all)
			}
			if len(self) > 0 && strings.Contains(all, string(self[:min(len(self), 40)])) {
				t.Errorf("printed ccrun's environment: %q", all)
			}
			// Each is refused by the kernel and says so, but curl ("Couldn't
			// connect") and ps (which skips the processes it cannot read).
			low := strings.ToLower(string(res.Stderr))
			if !strings.Contains(low, "permission denied") && !strings.Contains(low, "not permitted") &&
				!strings.HasPrefix(src, "curl") && !strings.HasPrefix(src, "ps ") {
				t.Errorf("exit %d, stderr %q: want a refusal", res.ExitCode, res.Stderr)
			}
			t.Logf("exit %d, stderr %q", res.ExitCode, res.Stderr)
		})
	}
	if ents, _ := os.ReadDir(w.outside); len(ents) != 0 {
		for _, e := range ents {
			t.Errorf("%s was written outside", e.Name())
		}
	}
	if b, _ := os.ReadFile(w.project + "/README.md"); string(b) != "# demo\nread me\n" {
		t.Errorf("README.md changed: %q", b)
	}
	select {
	case <-accepted:
		t.Error("the listener accepted a connection")
	default:
	}
}

// TestConfineOrdinary: the everyday read-only commands run confined with
// their normal output.
func TestConfineOrdinary(t *testing.T) {
	w := newConfineWorld(t)
	e := newExecutor(t)
	for _, tt := range []struct{ src, want string }{
		{"ls", "README.md\nhome\nkeys.txt\nsrc\n"},
		{"cat README.md", "# demo\nread me\n"},
		{"grep -r needle src", "src/a.txt:alpha needle\n"},
		{"find src -name '*.txt' | sort", "src/a.txt\nsrc/b.txt\n"},
		{"wc -l README.md", "2 README.md\n"},
		{"head -n 1 README.md", "# demo\n"},
		{"git log --format=%s", "initial import\n"},
		{"git status --short", "?? home\n?? keys.txt\n"},
		{"git diff --stat HEAD", ""},
		{"git show --stat --format=%s HEAD | head -n 1", "initial import\n"},
		{"ls -a ~", ".\n..\n.bash_history\n.ssh\n"},
		{"echo hidden >/dev/null; echo shown", "shown\n"},
		{"cat src/*.txt | sort", "alpha needle\nbeta\n"},
	} {
		t.Run(tt.src, func(t *testing.T) {
			res := w.run(t, e, tt.src)
			if !res.OK() {
				t.Fatalf("exit %d (%s), stdout %q, stderr %q", res.ExitCode, res.Detail, res.Stdout, res.Stderr)
			}
			if got := string(res.Stdout); got != tt.want {
				t.Errorf("stdout %q, want %q (stderr %q)", got, tt.want, res.Stderr)
			}
		})
	}
}

// TestConfineFailsClosed: where the kernel cannot confine, a run that asks
// for it runs nothing, builtins included, and says why.
func TestConfineFailsClosed(t *testing.T) {
	w := newConfineWorld(t)
	t.Setenv("CCRUN_LANDLOCK", "off")
	if _, err := ConfineAvailable(); !errors.Is(err, ErrConfineUnavailable) {
		t.Fatalf("ConfineAvailable with CCRUN_LANDLOCK=off: %v, want ErrConfineUnavailable", err)
	}
	e := newExecutor(t)
	var stderr syncBuffer
	s := w.spec(t, "echo ran; touch "+w.outside+"/x")
	s.Streams.Stderr = &stderr
	res, err := e.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != job.Refused || res.ExitCode != job.RefusedExit || len(res.Stdout) != 0 {
		t.Errorf("got %+v, want refused with exit %d and no output", res, job.RefusedExit)
	}
	if !strings.Contains(res.Detail, "CCRUN_LANDLOCK=off") || !strings.Contains(stderr.String(), "must run confined") {
		t.Errorf("detail %q, stderr %q: want the reason", res.Detail, stderr.String())
	}
	if _, err := os.Stat(w.outside + "/x"); err == nil {
		t.Error("the command ran")
	}
}

// TestConfineLeavesTheRestFree: the executor's unconfined runs, before,
// during and after confined ones, and the process itself, keep their
// rights.
func TestConfineLeavesTheRestFree(t *testing.T) {
	w := newConfineWorld(t)
	e := newExecutor(t)
	done := make(chan *job.Result)
	go func() {
		res, _ := e.Run(context.Background(), w.spec(t, "sleep 0.3; touch "+w.outside+"/confined"))
		done <- res
	}()
	for i := range 5 {
		p := fmt.Sprintf("%s/free-%d", w.outside, i)
		res := runSrc(t, e, "touch "+p+"; echo ok > "+p+".redirect", Spec{Dir: w.project})
		if !res.OK() {
			t.Fatalf("unconfined run %d: %+v", i, res)
		}
		if err := os.WriteFile(p+".process", []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res := <-done; res == nil || res.OK() {
		t.Errorf("the confined touch: %+v", res)
	}
	if _, err := os.Stat(w.outside + "/confined"); err == nil {
		t.Error("the confined run wrote")
	}
	if ents, _ := os.ReadDir(w.outside); len(ents) != 15 {
		t.Errorf("%d files written by unconfined runs and the process, want 15", len(ents))
	}
}

// Benchmarks: what confinement costs, side by side.
//
//	go test -run '^$' -bench Confine -benchtime 200x ./runtime/shell/
//
// GitStatus runs `git status` in a small repository, with and without
// confinement (each confined run makes its confined thread; the ruleset is
// built once and kept while the directories it lists do not change);
// TenPrograms runs ten
// /bin/true in one run, so (confined - plain)/10 past the per-run cost is
// the per-program cost.

func benchConfine(b *testing.B, src string, confined bool) {
	if _, err := ConfineAvailable(); err != nil && confined {
		b.Skip(err)
	}
	// outside /tmp, whose entries other processes change all the time
	// (each change makes the next run rebuild the ruleset)
	dir, err := os.MkdirTemp("/var/tmp", "confine-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	os.WriteFile(dir+"/f", []byte("x\n"), 0o644)
	home, _ := os.UserHomeDir()
	e := newExecutor(b)
	s := Spec{Script: parse(b, src), Dir: dir, Env: []string{"GIT_CONFIG_NOSYSTEM=1"}}
	if confined {
		s.Confine = ReadOnlyConfinement(home, dir)
	}
	ctx := context.Background()
	loop(b, func() {
		res, err := e.Run(ctx, s)
		if err != nil || !res.OK() {
			b.Fatalf("got %+v, %v", res, err)
		}
	})
}

func BenchmarkConfineGitStatusPlain(b *testing.B)    { benchConfine(b, "git status", false) }
func BenchmarkConfineGitStatusConfined(b *testing.B) { benchConfine(b, "git status", true) }

const tenTrue = "/bin/true; /bin/true; /bin/true; /bin/true; /bin/true; /bin/true; /bin/true; /bin/true; /bin/true; /bin/true"

func BenchmarkConfineTenProgramsPlain(b *testing.B)    { benchConfine(b, tenTrue, false) }
func BenchmarkConfineTenProgramsConfined(b *testing.B) { benchConfine(b, tenTrue, true) }
func BenchmarkConfineBinTruePlain(b *testing.B)        { benchConfine(b, "/bin/true", false) }
func BenchmarkConfineBinTrueConfined(b *testing.B)     { benchConfine(b, "/bin/true", true) }

// TestConfineWarm: a ruleset prepared ahead by Warm confines its run as
// the run's own would; one prepared for fields changed since is not used;
// a script of builtins only prepares none.
func TestConfineWarm(t *testing.T) {
	w := newConfineWorld(t)
	e := newExecutor(t)

	for src, want := range map[string]bool{
		"true": false, "echo x; test -n y && printf '%s' z": false, "x=1; y=$x": false,
		"git status": true, "echo x > f": true, "$cmd": true, "eval true": true,
		"echo $(ls)": true, "f() { :; }; f": true, "command -v git": true, ". ./x": true,
	} {
		if got := MayOpen(parse(t, src)); got != want {
			t.Errorf("MayOpen(%q) = %v, want %v", src, got, want)
		}
	}
	c := ReadOnlyConfinement(w.home, w.project)
	c.Warm(parse(t, "true"))
	if c.warm != nil {
		t.Error("Warm prepared a ruleset for a script of builtins only")
	}

	src := "cat README.md; cat home/.ssh/id_rsa; touch " + w.outside + "/x"
	s := w.spec(t, src)
	s.Confine.Warm(s.Script)
	warm := s.Confine.warm
	if warm == nil {
		t.Fatal("Warm prepared nothing")
	}
	res, err := e.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !warm.taken.Load() {
		t.Error("the run did not take the warm ruleset")
	}
	if !strings.Contains(string(res.Stdout), "read me") || strings.Contains(string(res.Stdout), confineCanary) {
		t.Errorf("stdout %q: want the README and not the key", res.Stdout)
	}
	if _, err := os.Stat(w.outside + "/x"); err == nil {
		t.Error("a warm-confined touch wrote outside")
	}

	// fields changed after Warm: the run builds from them, and hides the
	// file added
	s = w.spec(t, "cat README.md")
	s.Confine.Warm(s.Script)
	s.Confine.Hide = append(s.Confine.Hide, w.project+"/README.md")
	res, err = e.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Stdout), "read me") || res.ExitCode == 0 {
		t.Errorf("exit %d, stdout %q: README.md was hidden after Warm, and read", res.ExitCode, res.Stdout)
	}

	// a warm ruleset no run starts a program with is closed when the run ends
	s = w.spec(t, "ls")
	s.Confine.Warm(s.Script)
	s.Script = parse(t, "echo builtins only")
	if _, err := e.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if !s.Confine.warm.taken.Load() {
		t.Error("the untaken warm ruleset was not closed at the end of the run")
	}
}

// TestSealedConfinement: a script of builtins runs under it as it would
// unconfined, and a program or a file opened under it anyway (MayOpen is
// true for these) fails: nothing is granted.
func TestSealedConfinement(t *testing.T) {
	w := newConfineWorld(t)
	e := newExecutor(t)
	for _, tt := range []struct {
		src  string
		ok   bool
		want string
	}{
		{"true", true, ""},
		{"echo hi; x=1; test $x = 1 && printf '%s\n' ok", true, "hi\nok\n"},
		{"cat README.md", false, ""},
		{"echo x > /dev/null", false, ""},
		{"read line < README.md; echo \"$line\"", false, ""},
	} {
		t.Run(tt.src, func(t *testing.T) {
			if MayOpen(parse(t, tt.src)) == tt.ok {
				t.Fatalf("MayOpen(%q) = %v", tt.src, !tt.ok)
			}
			s := w.spec(t, tt.src)
			s.Confine = SealedConfinement()
			res, err := e.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() != tt.ok || string(res.Stdout) != tt.want {
				t.Errorf("exit %d (%s), stdout %q, stderr %q; want ok %v, stdout %q", res.ExitCode, res.Detail, res.Stdout, res.Stderr, tt.ok, tt.want)
			}
		})
	}
}

// TestConfinementHasEveryPolicyField: a Confinement carries each field of
// internal/confine's Policy, so that none is dropped on the way to the
// kernel (Search and Private once were), and Clone and Equal see them all.
func TestConfinementHasEveryPolicyField(t *testing.T) {
	pt := reflect.TypeOf(confine.Policy{})
	ct := reflect.TypeOf(Confinement{})
	full := confine.Policy{}
	for i := range pt.NumField() {
		f := pt.Field(i)
		if _, ok := ct.FieldByName(f.Name); !ok {
			t.Errorf("Confinement has no field %s", f.Name)
		}
		v := reflect.ValueOf(&full).Elem().Field(i)
		switch v.Kind() {
		case reflect.Slice:
			v.Set(reflect.ValueOf([]string{"/x"}))
		case reflect.Bool:
			v.SetBool(true)
		default:
			t.Fatalf("field %s of kind %s: extend this test", f.Name, v.Kind())
		}
		if (confine.Policy{}).Equal(full) {
			t.Errorf("Equal does not see %s", f.Name)
		}
	}
	c := &Confinement{}
	cv := reflect.ValueOf(c).Elem()
	for i := range pt.NumField() {
		cv.FieldByName(pt.Field(i).Name).Set(reflect.ValueOf(&full).Elem().Field(i))
	}
	if !c.policy().Equal(full) || !full.Clone().Equal(full) {
		t.Errorf("policy() or Clone drops a field: %+v", c.policy())
	}
}

// TestWorkspaceRedirections: a workspace script's own redirections (no
// Guard here: the kernel layer alone) write no protected path, whether
// named, relative to a directory it went into, or through a symbolic
// link; they write the project and the TMPDIR.
func TestWorkspaceRedirections(t *testing.T) {
	w := newConfineWorld(t)
	t.Setenv("TMPDIR", t.TempDir())
	if err := os.WriteFile(w.project+"/.envrc", []byte("export X=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(w.project+"/.git/config", w.project+"/cfg"); err != nil {
		t.Fatal(err)
	}
	config, _ := os.ReadFile(w.project + "/.git/config")
	c, _, err := WorkspaceConfinement(w.home, w.project, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := w.spec(t, `echo evil > .git/hooks/pre-commit; echo evil >> .git/config; echo evil > .envrc; echo evil >> cfg
cd .git && echo evil >> config; cd hooks && echo evil > post-commit; cd ../..
echo ok > out.txt; echo ok > "$TMPDIR/t"; cat out.txt "$TMPDIR/t"`)
	s.Confine = c
	res, err := newExecutor(t).Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "ok\nok\n" {
		t.Errorf("controls: %q (stderr %q)", res.Stdout, res.Stderr)
	}
	if b, _ := os.ReadFile(w.project + "/.git/config"); string(b) != string(config) {
		t.Errorf(".git/config changed: %q", b)
	}
	if b, _ := os.ReadFile(w.project + "/.envrc"); string(b) != "export X=1\n" {
		t.Errorf(".envrc changed: %q", b)
	}
	for _, f := range []string{".git/hooks/pre-commit", ".git/hooks/post-commit"} {
		if _, err := os.Lstat(w.project + "/" + f); err == nil {
			t.Errorf("%s was made", f)
		}
	}
}

// TestStdStreamsByName: a script's redirection to /dev/stderr (and its
// kin) writes the run's own stream, confined in the workspace tier (where
// /proc/self is hidden and the opening thread refuses magic links) and
// not: neither fails, and neither reaches ccrun's own stderr past the
// capture. A program's own `> /dev/stderr` works too.
func TestStdStreamsByName(t *testing.T) {
	w := newConfineWorld(t)
	t.Setenv("TMPDIR", t.TempDir())
	const src = `echo a > /dev/stderr; echo b > /dev/stdout; echo c >/dev/fd/2; echo e >>/proc/self/fd/2
{ echo d > /dev/stderr; } 2>&1; sh -c 'echo f > /dev/stderr'; read -r x </dev/stdin; echo "[$x]"`
	for _, confined := range []bool{false, true} {
		s := w.spec(t, src)
		s.Streams.Stdin = strings.NewReader("in\n")
		s.Confine = nil
		if confined {
			c, _, err := WorkspaceConfinement(w.home, w.project, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.Confine = c
		}
		res, err := newExecutor(t).Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || string(res.Stdout) != "b\nd\n[in]\n" || string(res.Stderr) != "a\nc\ne\nf\n" {
			t.Errorf("confined %v: exit %d, stdout %q, stderr %q (%s)", confined, res.ExitCode, res.Stdout, res.Stderr, res.Detail)
		}
	}
}

// TestSandboxRefusedSaid: what the sandbox refuses the script's own
// opens is said, one stderr line each ("ccrun: sandbox refused: write
// PATH") and in the run's detail: a write of a protected path (a
// read-only bind), a write outside the project (Landlock), a read of a
// secret (Landlock). A file that is only missing is not a refusal.
func TestSandboxRefusedSaid(t *testing.T) {
	w := newConfineWorld(t)
	t.Setenv("TMPDIR", t.TempDir())
	c, _, err := WorkspaceConfinement(w.home, w.project, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := w.spec(t, `echo evil >> .git/config; echo evil > "$HOME/.bashrc"; read -r x < "$HOME/.ssh/id_rsa"; cat < missing; echo done`)
	s.Confine = c
	res, err := newExecutor(t).Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"write " + w.project + "/.git/config", "write " + w.home + "/.bashrc", "read " + w.home + "/.ssh/id_rsa"} {
		if !strings.Contains(string(res.Stderr), "ccrun: sandbox refused: "+what+"\n") {
			t.Errorf("stderr %q: want %q said", res.Stderr, what)
		}
		if !strings.Contains(res.Detail, what) {
			t.Errorf("detail %q: want %q", res.Detail, what)
		}
	}
	if strings.Contains(res.Detail, "missing") {
		t.Errorf("detail %q: a missing file is no refusal", res.Detail)
	}
}

// TestWarmWorkspaceBinds: the workspace ruleset WarmWorkspace prepares
// before the search of the project holds no bind of its own: the run
// that takes it binds the protected paths the Confinement names then,
// the ones found after the ruleset started and the ones a search made
// again adds (a run that waited for the project's lock), for its programs
// and its own redirections alike.
func TestWarmWorkspaceBinds(t *testing.T) {
	w := newConfineWorld(t)
	t.Setenv("TMPDIR", t.TempDir())
	if err := os.WriteFile(w.project+"/.envrc", []byte("export X=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config, _ := os.ReadFile(w.project + "/.git/config")
	src := `echo evil >> .git/config; echo evil > .envrc; sh -c 'echo evil >> .git/config; echo evil > .envrc; echo evil > .vscode/settings.json'
echo ok > out.txt; cat out.txt`
	c, _, err := WarmWorkspace(w.home, w.project, nil, parse(t, src))
	if err != nil {
		t.Fatal(err)
	}
	// made after the search: found by the one the run makes again
	if err := os.MkdirAll(w.project+"/.vscode", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.project+"/.vscode/settings.json", []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err := c.replan()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Protect, w.project+"/.vscode") && !slices.Contains(p.Protect, w.project+"/.vscode/settings.json") {
		t.Fatalf("the search again does not protect .vscode: %q", p.Protect)
	}
	c.Protect, c.Mask = p.Protect, p.Mask
	s := w.spec(t, src)
	s.Confine = c
	res, err := newExecutor(t).Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "ok\n" {
		t.Errorf("control: %q (stderr %q)", res.Stdout, res.Stderr)
	}
	if b, _ := os.ReadFile(w.project + "/.git/config"); string(b) != string(config) {
		t.Errorf(".git/config changed: %q", b)
	}
	if b, _ := os.ReadFile(w.project + "/.envrc"); string(b) != "export X=1\n" {
		t.Errorf(".envrc changed: %q", b)
	}
	if b, _ := os.ReadFile(w.project + "/.vscode/settings.json"); string(b) != "{}\n" {
		t.Errorf(".vscode/settings.json, protected after the ruleset started, changed: %q", b)
	}
}

// TestWorkspaceTempInProject: a call's TMPDIR in the project (TMPDIR
// itself there) is removed after the sweep, not beside it: the sweep
// would see the tree change as it walks and fail the run.
func TestWorkspaceTempInProject(t *testing.T) {
	w := newConfineWorld(t)
	t.Setenv("TMPDIR", w.project+"/.tmp")
	if err := os.Mkdir(w.project+"/.tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		c, _, err := WorkspaceConfinement(w.home, w.project, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !c.tempSwept() {
			t.Fatalf("TMPDIR %s in the project %s: not taken for swept", c.Temp, c.Sweep)
		}
		// many names to remove, so that a removal beside the sweep would
		// still be under way as it walks
		s := w.spec(t, `mkdir "$TMPDIR/d" && cd "$TMPDIR/d" && touch $(seq 1 400) && echo t > "$TMPDIR/f" && cat "$TMPDIR/f"`)
		s.Confine = c
		res, err := newExecutor(t).Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || string(res.Stdout) != "t\n" {
			t.Fatalf("exit %d, stdout %q, detail %q", res.ExitCode, res.Stdout, res.Detail)
		}
		if _, err := os.Stat(c.Temp); !os.IsNotExist(err) {
			t.Fatalf("TMPDIR left: %v", err)
		}
	}
	if (&Confinement{Temp: "/tmp/..x/call-1", Sweep: "/tmp/..x"}).tempSwept() != true ||
		(&Confinement{Temp: "/tmp/ccrun-calls-0/call-1", Sweep: "/work/p"}).tempSwept() != false {
		t.Error("tempSwept misjudges a path")
	}
}
