package shell

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ccrun/ccrun/runtime/job"
)

// TestGuardSeesExpandedArgv: the Exec check gets the words as the program
// gets them — braces, globs, positional parameters and variables expanded —
// and a refusal stops the run before the program starts.
func TestGuardSeesExpandedArgv(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), nil, 0o644)
	canary := filepath.Join(dir, "canary")
	var mu sync.Mutex
	var seen [][]string
	g := &Guard{Exec: func(ctx context.Context, p Program) error {
		mu.Lock()
		seen = append(seen, p.Argv)
		mu.Unlock()
		if filepath.Base(p.Path) == "touch" {
			return errors.New("touch is not allowed here")
		}
		return nil
	}}
	res := runSrc(t, e, `x=nested; echo {-exec,{}} "$1" *.txt ${x}; touch `+canary+`; echo after`, Spec{Dir: dir, Args: []string{"one arg"}, Guard: g})
	if res.Reason != job.Refused || res.ExitCode != job.RefusedExit {
		t.Fatalf("reason %s exit %d, want refused %d", res.Reason, res.ExitCode, job.RefusedExit)
	}
	if !strings.Contains(res.Detail, "touch is not allowed") || !strings.Contains(string(res.Stderr), "ccrun: touch is not allowed") {
		t.Errorf("detail %q stderr %q: want the refusal", res.Detail, res.Stderr)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Error("the refused program ran")
	}
	if strings.Contains(string(res.Stdout), "after") {
		t.Error("the run went on after the refusal")
	}
	// echo is a builtin: only touch reached the handler.
	want := [][]string{{"touch", canary}}
	if !slices.EqualFunc(seen, want, slices.Equal) {
		t.Errorf("seen %q, want %q", seen, want)
	}
	// A program: the expanded words reach the check.
	seen = nil
	res = runSrc(t, e, `/bin/echo {-exec,{}} "$1" *.txt`, Spec{Dir: dir, Args: []string{"one arg"}, Guard: g})
	if !res.OK() {
		t.Fatalf("echo: %s %d %s", res.Reason, res.ExitCode, res.Stderr)
	}
	want = [][]string{{"/bin/echo", "-exec", "{}", "one arg", "a.txt"}}
	if !slices.EqualFunc(seen, want, slices.Equal) {
		t.Errorf("seen %q, want %q", seen, want)
	}
}

// TestGuardOpen: redirections and source go through the Open check with an
// absolute path, for reads and writes, and a refused write creates nothing.
func TestGuardOpen(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "lib.sh"), []byte("echo sourced\n"), 0o644)
	type opened struct {
		path  string
		write bool
	}
	var mu sync.Mutex
	var seen []opened
	g := &Guard{Open: func(ctx context.Context, path string, flag int) error {
		w := flag&(os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC) != 0
		mu.Lock()
		seen = append(seen, opened{path, w})
		mu.Unlock()
		if w && path != "/dev/null" {
			return errors.New("writes are refused")
		}
		return nil
	}}
	res := runSrc(t, e, `. ./lib.sh; echo x >/dev/null; f=out; echo x > "$f"`, Spec{Dir: dir, Guard: g})
	if res.Reason != job.Refused {
		t.Fatalf("reason %s, want refused (stderr %s)", res.Reason, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a refused redirection created its file")
	}
	want := []opened{{filepath.Join(dir, "lib.sh"), false}, {"/dev/null", true}, {filepath.Join(dir, "out"), true}}
	if !slices.Equal(seen, want) {
		t.Errorf("seen %v, want %v", seen, want)
	}
	if !strings.Contains(string(res.Stdout), "sourced") {
		t.Errorf("stdout %q: the sourced file did not run", res.Stdout)
	}
}

// TestGuardScriptWithoutShebang: a script the kernel refuses to run is run
// by a new interpreter, and its programs are checked too.
func TestGuardScriptWithoutShebang(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	os.WriteFile(filepath.Join(dir, "s"), []byte("touch "+canary+"\n"), 0o755)
	g := &Guard{Exec: func(ctx context.Context, p Program) error {
		if filepath.Base(p.Path) == "touch" {
			return errors.New("no touch")
		}
		return nil
	}}
	res := runSrc(t, e, `./s`, Spec{Dir: dir, Guard: g})
	if res.Reason != job.Refused {
		t.Fatalf("reason %s, want refused", res.Reason)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Error("the script's program ran")
	}
}
