package ccrun_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
)

// A run in a fresh repository leaves `git status` as it found it: the audit
// log is under .ccrun/, which ignores itself from its first byte.
func TestProjectLeftClean(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	if out, err := exec.Command(git, "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	rt, _, _ := newRuntime(t, ccrun.WithProjectDir(dir), ccrun.WithApprover(grant(ceiling.Once)))
	if _, err := rt.Exec(context.Background(), &ccrun.Call{Command: "make test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".ccrun", "audit.jsonl")); err != nil {
		t.Fatalf("no audit log: %v", err)
	}
	out, err := exec.Command(git, "-C", dir, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("git status after a run: %q, %v; want nothing", out, err)
	}
}

// Outside any project (no ccrun.json, no .git: the project is the current
// directory only because nothing else was found), ccrun writes nothing
// into the current directory: the audit log goes to the state directory.
// A project directory given by WithProjectDir keeps its own.
func TestNoProjectWritesNothingHere(t *testing.T) {
	// not parallel: it changes the working directory and XDG_STATE_HOME
	wd, _ := os.Getwd()
	here, state := t.TempDir(), t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	if err := os.Chdir(here); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(wd) })
	rt, err := ccrun.New(ccrun.WithApprover(grant(ceiling.Once)), withRecorder(newRecorder(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Exec(context.Background(), &ccrun.Call{Command: "make test"}); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	if ents, _ := os.ReadDir(here); len(ents) != 0 {
		t.Errorf("the current directory got %v, want nothing", ents)
	}
	if _, err := os.Stat(filepath.Join(state, "ccrun", "audit.jsonl")); err != nil {
		t.Errorf("no audit log in the state directory: %v", err)
	}
}
