//go:build linux

package confine

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestWorkspace: the workspace tier of a command a person approved. It
// builds, commits, writes its temporary directory; it writes nothing of
// the home, no protected path of the project (not by a write, a rename
// over or away, an unlink, a hard link, a new name in a protected
// directory), and reads no secret, in the project or the home.
func TestWorkspace(t *testing.T) {
	w := newWorld(t)
	git(t, w.project, "init", "-q")
	git(t, w.project, "add", "README")
	git(t, w.project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
	mkdir(t, w.project+"/.vscode")
	write(t, w.project+"/.vscode/settings.json", "{}\n")
	write(t, w.project+"/.envrc", "export X=1\n")
	mkdir(t, w.project+"/deploy/.aws")
	write(t, w.project+"/deploy/.aws/credentials", canary+" project aws\n")
	write(t, w.home+"/.bashrc", "# rc\n")
	mkdir(t, w.home+"/.config/ccrun")
	write(t, w.home+"/.config/ccrun/config.json", "{}\n")
	tmp := t.TempDir()
	rs := w.workspace(t, tmp)
	protected := map[string]string{}
	for _, f := range []string{".git/config", ".envrc", ".vscode/settings.json", "README"} {
		b, err := os.ReadFile(w.project + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		protected[f] = string(b)
	}

	// Controls: what builds and git do.
	for _, script := range []string{
		"mkdir -p build && echo obj > build/out.o && cat build/out.o",
		"echo new > made.txt && cat made.txt && rm made.txt",
		"echo x >> README && git add README && git -c user.name=t -c user.email=t@t commit -q -m second && git log --format=%s | head -1",
		"git checkout -q -b topic && git branch --show-current",
		"echo t > $TMPDIR/f && cat $TMPDIR/f",
		"chmod +x build/out.o && test -x build/out.o && echo exec",
		"mkdir -p node_modules/pkg && echo '{}' > node_modules/pkg/package.json && cat node_modules/pkg/package.json",
		"cat .envrc", // protected paths stay readable
	} {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir = w.project
		cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "TMPDIR=" + tmp}
		out, err := startWait(t, rs, cmd)
		if err != nil {
			t.Errorf("control %q: %v\n%s", script, err, out)
		}
	}

	for _, script := range []string{
		"echo evil >> $HOME/.bashrc",
		"mkdir -p $HOME/.ssh; echo key >> $HOME/.ssh/authorized_keys",
		"echo '{\"mode\":\"trust\"}' > $HOME/.config/ccrun/config.json",
		"echo '[core] fsmonitor = touch pwned' >> .git/config",
		"printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
		"echo 'export EVIL=1' > .envrc",
		"mv .envrc gone && echo 'export EVIL=1' > .envrc",
		"echo evil > x && mv x .git/config",
		"rm -f .git/config",
		"ln .git/config hard",
		"echo '{}' > .vscode/tasks.json",
		"rm -rf .vscode",
		"mv .git .git-away",
		"cat $HOME/.ssh/id_rsa",
		"cat deploy/.aws/credentials",
		"grep -r " + canary + " .",
		"cat /proc/1/environ",
		"echo x > " + w.outside + "/planted",
	} {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir = w.project
		cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "TMPDIR=" + tmp}
		out, _ := startWait(t, rs, cmd)
		if strings.Contains(out, canary) {
			t.Errorf("%q leaked: %s", script, out)
		}
	}
	for f, want := range protected {
		if f == "README" {
			continue // the control committed a change
		}
		if b, err := os.ReadFile(w.project + "/" + f); err != nil || string(b) != want {
			t.Errorf("%s changed: %q %v", f, b, err)
		}
	}
	for _, f := range []string{w.project + "/.git/hooks/pre-commit", w.project + "/.vscode/tasks.json", w.project + "/hard",
		w.project + "/gone", w.project + "/.git-away", w.outside + "/planted", w.home + "/.ssh/authorized_keys"} {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s was made", f)
		}
	}
	if b, _ := os.ReadFile(w.home + "/.bashrc"); string(b) != "# rc\n" {
		t.Errorf(".bashrc changed: %q", b)
	}
	if b, _ := os.ReadFile(w.home + "/.config/ccrun/config.json"); string(b) != "{}\n" {
		t.Errorf("ccrun's config changed: %q", b)
	}
}

// workspace is the prepared workspace policy of w's project, with its
// temporary directory tmp; closed when the test ends.
func (w world) workspace(t *testing.T, tmp string) *Ruleset {
	t.Helper()
	p, complete, err := Workspace(w.home, w.project, tmp)
	if err != nil || !complete {
		t.Fatal(complete, err)
	}
	rs, err := Prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	return rs
}

func startWait(t *testing.T, rs *Ruleset, cmd *exec.Cmd) (string, error) {
	t.Helper()
	var b strings.Builder
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := rs.Start(cmd); err != nil {
		return "", err
	}
	err := cmd.Wait()
	return b.String(), err
}

const wsUserEnv = "CCRUN_CONFINE_TEST_WSUSER"

// wsUserMain, as an ordinary user, confines a shell to the workspace of
// dir with dir/p protected, and runs a write of p and of q: the protected
// write must fail and the other land. It exits 0 when both did as they
// should.
func wsUserMain(dir string) int {
	rs, err := Prepare(Policy{Writable: []string{dir}, Protect: []string{dir + "/p"}, Network: true})
	if err != nil {
		os.Stderr.WriteString("prepare: " + err.Error() + "\n")
		return 2
	}
	defer rs.Close()
	cmd := exec.Command("/bin/sh", "-c", "echo evil > p; echo ok > q")
	cmd.Dir = dir
	var b strings.Builder
	cmd.Stderr = &b
	if err := rs.Start(cmd); err != nil {
		os.Stderr.WriteString("start: " + err.Error() + "\n")
		return 2
	}
	cmd.Wait()
	// and what the script opens itself, in the namespace too
	if f, err := rs.Open(dir+"/p", os.O_WRONLY|os.O_APPEND, 0); err == nil {
		f.WriteString("evil\n")
		f.Close()
	}
	f, err := rs.Open(dir+"/q", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		os.Stderr.WriteString("open q: " + err.Error() + "\n")
		return 1
	}
	f.WriteString("more\n")
	f.Close()
	p, _ := os.ReadFile(dir + "/p")
	q, _ := os.ReadFile(dir + "/q")
	if string(p) != "kept\n" || string(q) != "ok\nmore\n" {
		os.Stderr.WriteString("p " + string(p) + " q " + string(q) + " stderr " + b.String())
		return 1
	}
	return 0
}

// TestWorkspaceAsUser: the same protection for an ordinary user, whose
// mount namespace needs a user namespace of its own.
func TestWorkspaceAsUser(t *testing.T) {
	dir, bin := asUser(t, "ccrun-ws-user-")
	work := userWork(t, dir)
	cmd := exec.Command(bin)
	cmd.Env = []string{wsUserEnv + "=" + work, "TMPDIR=" + dir, "XDG_RUNTIME_DIR=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
}

// TestWorkspaceStartedInProtected: a program started with its working
// directory at or beneath a bound directory (.git, which is pinned;
// .git/hooks, protected) writes no protected path through it: a working
// directory taken before the binds would name the directory they cover.
func TestWorkspaceStartedInProtected(t *testing.T) {
	w := newWorld(t)
	git(t, w.project, "init", "-q")
	mkdir(t, w.project+"/.git/hooks/sub")
	rs := w.workspace(t, t.TempDir())
	config, err := os.ReadFile(w.project + "/.git/config")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, script string }{
		{".git", "echo '[core] fsmonitor = touch pwned' >> config"},
		{".git", "echo evil > hooks/pre-commit"},
		{".git/hooks", "echo evil > pre-commit"},
		{".git/hooks", "echo evil >> ../config"},
		{".git/hooks/sub", "echo evil > ../post-commit"},
		{".git/hooks/sub", "echo evil > x"},
	} {
		cmd := exec.Command("/bin/sh", "-c", c.script)
		cmd.Dir = w.project + "/" + c.dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
		if out, err := startWait(t, rs, cmd); err == nil {
			t.Errorf("in %s, %q: no failure: %s", c.dir, c.script, out)
		}
	}
	if b, _ := os.ReadFile(w.project + "/.git/config"); string(b) != string(config) {
		t.Errorf(".git/config changed: %q", b)
	}
	for _, f := range []string{".git/hooks/pre-commit", ".git/hooks/post-commit", ".git/hooks/sub/x"} {
		if _, err := os.Lstat(w.project + "/" + f); err == nil {
			t.Errorf("%s was made", f)
		}
	}
	// ordinary work in .git stays possible where nothing is protected
	cmd := exec.Command("/bin/sh", "-c", "echo x > scratch && rm scratch")
	cmd.Dir = w.project + "/.git"
	if out, err := startWait(t, rs, cmd); err != nil {
		t.Errorf("a new file in .git: %v %s", err, out)
	}
}

// TestWorkspaceScriptOpens: what a confined script opens itself (its
// redirections, through Ruleset.Open) writes no protected path either,
// though the opening thread is one of ccrun's: a write into .git/config,
// a new hook, an existing .envrc truncated, the same through an absolute
// symbolic link, all fail; the project, the temporary directory and
// /dev/null are written, and protected paths read.
func TestWorkspaceScriptOpens(t *testing.T) {
	w := newWorld(t)
	git(t, w.project, "init", "-q")
	write(t, w.project+"/.envrc", "export X=1\n")
	if err := os.Symlink(w.project+"/.git/config", w.project+"/cfglink"); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	rs := w.workspace(t, tmp)
	before := map[string]string{}
	for _, f := range []string{".git/config", ".envrc"} {
		b, err := os.ReadFile(w.project + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		before[f] = string(b)
	}
	for _, c := range []struct {
		path string
		flag int
	}{
		{w.project + "/.git/config", os.O_WRONLY | os.O_APPEND},
		{w.project + "/.git/hooks/pre-commit", os.O_WRONLY | os.O_CREATE | os.O_TRUNC},
		{w.project + "/.envrc", os.O_WRONLY | os.O_TRUNC},
		{w.project + "/cfglink", os.O_WRONLY | os.O_APPEND},
	} {
		if f, err := rs.Open(c.path, c.flag, 0o755); err == nil {
			f.WriteString("evil\n")
			f.Close()
			t.Errorf("%s opened for writing", c.path)
		}
	}
	for f, want := range before {
		if b, _ := os.ReadFile(w.project + "/" + f); string(b) != want {
			t.Errorf("%s changed: %q", f, b)
		}
	}
	if _, err := os.Lstat(w.project + "/.git/hooks/pre-commit"); err == nil {
		t.Error(".git/hooks/pre-commit was made")
	}
	for _, p := range []string{w.project + "/out.txt", tmp + "/f", "/dev/null"} {
		f, err := rs.Open(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			_, err = f.WriteString("ok\n")
			f.Close()
		}
		if err != nil {
			t.Errorf("write %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(w.project + "/out.txt"); string(b) != "ok\n" {
		t.Errorf("out.txt: %q", b)
	}
	if f, err := rs.Open(w.project+"/.git/config", os.O_RDONLY, 0); err != nil {
		t.Errorf("read .git/config: %v", err)
	} else {
		f.Close()
	}
}
