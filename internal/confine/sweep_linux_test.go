package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSweepGitShapes: what git would read as configuration or code by
// the tree's shape, not by a row's name, is planted by a workspace
// command where no bind was (a gitfile, a repository under another name,
// a nested .git/commondir) and swept after it: git on the host then runs
// nothing. What was there before the run (the binds' paths, given as
// keep) stays, and so does ordinary work (objects, refs, HEAD of the new
// repository, a file named config elsewhere).
func TestSweepGitShapes(t *testing.T) {
	w := newWorld(t)
	git(t, w.project, "init", "-q")
	mkdir(t, w.project+"/wt")
	write(t, w.project+"/wt/.git", "gitdir: "+w.project+"/.git\n") // the user's own worktree-like gitfile
	_, implants, complete, err := findRows(w.project, searchLimit)
	if err != nil || !complete {
		t.Fatal(err, complete)
	}
	if !slices.Contains(implants, w.project+"/wt/.git") {
		t.Errorf("a gitfile that exists is not protected (bound read-only): %q", implants)
	}
	rs := w.workspace(t, t.TempDir())
	plant := `set -e
mkdir -p evil/objects evil/refs evil/hooks other/sub
echo 'ref: refs/heads/main' > evil/HEAD
printf '[core]\n\tfsmonitor = touch ` + w.outside + `/pwned\n' > evil/config
echo evil > evil/hooks/post-checkout
echo 'gitdir: ../evil' > other/.git
mkdir -p nested/.git && echo ../../evil > nested/.git/commondir
echo 'gitdir: ../evil' > other/sub/.GIT
ln -s ../evil other/sub/.git 2>/dev/null || true
echo ordinary > src-config; mkdir build; echo x > build/config`
	cmd := exec.Command("/bin/sh", "-c", plant)
	cmd.Dir = w.project
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	if out, err := startWait(t, rs, cmd); err != nil {
		t.Fatalf("plant: %v %s", err, out)
	}
	removed, complete, err := Sweep(w.project, implants)
	if err != nil || !complete {
		t.Fatalf("Sweep: %v, complete %v", err, complete)
	}
	t.Logf("removed %q", removed)
	for _, want := range []string{"evil/config", "evil/hooks", "other/.git", "nested/.git/commondir", "other/sub/.GIT", "other/sub/.git"} {
		if !slices.Contains(removed, want) {
			t.Errorf("%s not removed", want)
		}
		if _, err := os.Lstat(filepath.Join(w.project, want)); err == nil {
			t.Errorf("%s is still there", want)
		}
	}
	for _, keep := range []string{"wt/.git", ".git/config", "evil/HEAD", "evil/objects", "src-config", "build/config"} {
		if _, err := os.Lstat(filepath.Join(w.project, keep)); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	for _, dir := range []string{"evil", "other", "nested", "other/sub"} {
		st := exec.Command("git", "-c", "safe.directory=*", "status")
		st.Dir = filepath.Join(w.project, dir)
		st.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.home, "GIT_CONFIG_NOSYSTEM=1"}
		st.Run()
	}
	if _, err := os.Stat(w.outside + "/pwned"); err == nil {
		t.Error("git status on the host ran the planted fsmonitor")
	}
	if ents, _ := os.ReadDir(w.project); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), ".ccrun-swept-") }) {
		t.Error("a swept directory was left under its temporary name")
	}
}

// TestSweepGoesOn: a directory the sweep cannot open (swapped for a link
// since it was listed, here: unreadable) stops the walk of that
// directory only: what it found elsewhere is removed, and the error says
// where it could not look.
func TestSweepGoesOn(t *testing.T) {
	w := newWorld(t)
	mkdir(t, w.project+"/a/b")
	write(t, w.project+"/.envrc", "planted\n")
	write(t, w.project+"/a/b/.envrc", "planted\n")
	if err := os.Symlink(w.project+"/a", w.project+"/link"); err != nil {
		t.Fatal(err)
	}
	queueHook = func(rel string) {
		if rel == "a" { // listed as a directory; a link by the time it is opened
			os.Rename(w.project+"/a", w.project+"/a.real")
			os.Symlink("a.real", w.project+"/a")
		}
	}
	defer func() { queueHook = nil }()
	removed, _, err := Sweep(w.project, nil)
	if err == nil || !strings.Contains(err.Error(), "changed while it was searched") {
		t.Errorf("Sweep's error: %v", err)
	}
	if !slices.Contains(removed, ".envrc") {
		t.Errorf("removed %q: want .envrc", removed)
	}
	if _, err := os.Lstat(w.project + "/.envrc"); err == nil {
		t.Error(".envrc is still there")
	}
	if _, err := os.Lstat(w.project + "/a.real/b/.envrc"); err != nil {
		t.Error("the sweep followed the link it found in the swapped directory's place")
	}
}

// TestHideCase: the planner's names meet the directory's. Where a
// directory folds case, the entry listed as .SSH is the hidden .ssh:
// simulated here, on a case-sensitive file system, by a second name of
// the hidden file's own inode in its directory (what a folding
// directory's lookup of the other spelling returns), for a name and for
// a glob row. On the case-sensitive file system itself, two real paths
// that differ in case stay two: a distinct KEY.TXT beside a hidden
// key.txt is read, and a distinct PROJ beside a revealed proj in a
// private directory stays hidden.
func TestHideCase(t *testing.T) {
	needLandlock(t)
	base := t.TempDir()
	home, priv := base+"/home", base+"/priv"
	mkdir(t, home+"/.ssh")
	mkdir(t, priv+"/proj")
	mkdir(t, priv+"/PROJ")
	write(t, home+"/.ssh/id_rsa", canary+" ssh\n")
	write(t, home+"/key.txt", canary+" key\n")
	write(t, home+"/KEY.TXT", "another file\n")
	write(t, home+"/id_ed25519", canary+" glob\n")
	write(t, priv+"/proj/ok", "revealed\n")
	write(t, priv+"/PROJ/secret", canary+" priv\n")
	for old, alias := range map[string]string{"key.txt": "Key.Txt", "id_ed25519": "ID_ED25519"} {
		if err := os.Link(home+"/"+old, home+"/"+alias); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := Prepare(Policy{Hide: []string{home + "/.ssh", home + "/key.txt", home + "/id_*"}, Private: []string{priv}, Search: []string{priv + "/proj"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for file, readable := range map[string]bool{
		home + "/.ssh/id_rsa": false, home + "/key.txt": false, home + "/Key.Txt": false,
		home + "/id_ed25519": false, home + "/ID_ED25519": false,
		home + "/KEY.TXT": true, priv + "/proj/ok": true, priv + "/PROJ/secret": false,
	} {
		cmd := exec.Command("/bin/cat", file)
		out, err := startWait(t, rs, cmd)
		if got := err == nil; got != readable {
			t.Errorf("cat %s: %v %q, want readable %v", file, err, out, readable)
		}
	}
}
