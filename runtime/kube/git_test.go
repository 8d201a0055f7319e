package kube

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/gittest"
	"github.com/ccrun/ccrun/runtime/job"
)

// TestApplyGitPlants: the copy-back of a pod's tree in which the program
// made each of gittest's plants (the project's own .git/commondir, a
// gitfile, a nested repository's commondir, a new nested repository, a
// git directory under another name, a bare repository's config,
// .gitmodules) leaves git's configuration and shapes on the host as they
// were, names what it did not write, and git status there runs nothing;
// the ordinary write beside them lands. (The copy-back without a
// cluster: the pod's tree is a copy of the host's, changed as the
// program would, and archived as the copy container's tar would.)
func TestApplyGitPlants(t *testing.T) {
	t.Parallel()
	for i, p := range gittest.New(t).Plants() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			tr := gittest.New(t)
			p := tr.Plants()[i]
			before := tr.State(t)
			m := job.Mount{Host: tr.Dir, Guest: "/w", Writable: true}
			sent := map[string]bool{}
			if err := archive(&bytes.Buffer{}, tr.Dir, 1<<30, 65534, 65534, sent); err != nil {
				t.Fatal(err)
			}
			pod := filepath.Join(t.TempDir(), "pod")
			if out, err := exec.Command("cp", "-a", tr.Dir, pod).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v: %s", err, out)
			}
			gittest.Make(t, pod, append(append([]gittest.Step(nil), p.Steps...), gittest.Ordinary))
			var back bytes.Buffer
			if err := archive(&back, pod, 1<<30, 65534, 65534, map[string]bool{}); err != nil {
				t.Fatal(err)
			}
			ms := &mountSet{}
			if err := ms.apply(mountCopy{m: m, root: tr.Dir, sent: sent}, bytes.NewReader(back.Bytes())); err != nil {
				t.Fatal(err)
			}
			t.Logf("note: %s", ms.note())
			if b, err := os.ReadFile(filepath.Join(tr.Dir, gittest.Ordinary.Path)); err != nil || string(b) != gittest.Ordinary.Data {
				t.Errorf("ordinary.txt on the host = %q, %v", b, err)
			}
			if !strings.Contains(ms.note(), "protected paths left as they were") {
				t.Errorf("note %q names nothing left as it was", ms.note())
			}
			if d := gittest.Diff(before, tr.State(t)); d != "" {
				t.Errorf("git's configuration and shapes changed on the host:\n%s\nnote: %s", d, ms.note())
			}
			if ran, out := tr.Ran(p); ran {
				t.Errorf("git status on the host ran the planted program:\n%s", out)
			}
		})
	}
}

// TestApplyGitHistory: what the program changed in a repository's
// history comes back (HEAD, a new branch, packed-refs), and a directory
// that is almost a repository comes back whole.
func TestApplyGitHistory(t *testing.T) {
	t.Parallel()
	tr := gittest.New(t)
	sent := map[string]bool{}
	if err := archive(&bytes.Buffer{}, tr.Dir, 1<<30, 65534, 65534, sent); err != nil {
		t.Fatal(err)
	}
	pod := filepath.Join(t.TempDir(), "pod")
	if out, err := exec.Command("cp", "-a", tr.Dir, pod).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	steps := []gittest.Step{
		{Path: ".git/HEAD", Data: "ref: refs/heads/other\n"},
		{Path: ".git/refs/heads/new", Data: "0000000000000000000000000000000000000000\n"},
		{Path: ".git/packed-refs", Data: "# pack-refs with: peeled\n"},
		{Path: "almost", Dir: true},
		{Path: "almost/HEAD", Data: "ref: refs/heads/main\n"},
		{Path: "almost/objects", Dir: true},
		{Path: "almost/config", Data: "[core]\n"},
	}
	gittest.Make(t, pod, steps)
	var back bytes.Buffer
	if err := archive(&back, pod, 1<<30, 65534, 65534, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	ms := &mountSet{}
	m := job.Mount{Host: tr.Dir, Guest: "/w", Writable: true}
	if err := ms.apply(mountCopy{m: m, root: tr.Dir, sent: sent}, bytes.NewReader(back.Bytes())); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		st, err := os.Lstat(filepath.Join(tr.Dir, filepath.FromSlash(s.Path)))
		if err != nil || st.IsDir() != s.Dir {
			t.Errorf("%s: not copied back: %v", s.Path, err)
		} else if !s.Dir {
			if b, _ := os.ReadFile(filepath.Join(tr.Dir, filepath.FromSlash(s.Path))); string(b) != s.Data {
				t.Errorf("%s = %q on the host, want %q", s.Path, b, s.Data)
			}
		}
	}
	if ms.note() != "" {
		t.Errorf("note %q, want none", ms.note())
	}
}
