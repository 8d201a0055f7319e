//go:build linux

package confine

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const canary = "CANARY-7f3a9c"

// world is a fake home with secrets, a project beside it and a place
// outside both where nothing may appear.
type world struct {
	home, project, outside string
}

func newWorld(t *testing.T) world {
	t.Helper()
	needLandlock(t)
	base := t.TempDir()
	w := world{home: filepath.Join(base, "home"), project: filepath.Join(base, "project"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{w.home + "/.ssh", w.home + "/.config/gcloud", w.home + "/awsreal", w.project + "/sub", w.outside} {
		mkdir(t, d)
	}
	write(t, w.home+"/.ssh/id_rsa", canary+" ssh\n")
	write(t, w.home+"/.config/gcloud/credentials.db", canary+" gcloud\n")
	write(t, w.home+"/.config/settings.ini", "colour=blue\n")
	write(t, w.home+"/server.pem", canary+" pem\n")
	write(t, w.home+"/awsreal/credentials", canary+" aws\n")
	if err := os.Symlink(w.home+"/awsreal", w.home+"/.aws"); err != nil {
		t.Fatal(err)
	}
	write(t, w.home+"/notes.txt", "plain notes\n")
	write(t, w.home+"/.gitconfig", "[user]\n\tname = Tess Ter\n")
	write(t, w.project+"/README", "hello project\nsecond line\n")
	write(t, w.project+"/sub/code.go", "package sub // findme\n")
	write(t, w.project+"/.env", canary+" dotenv\n")
	write(t, w.project+"/list.txt", w.home+"/.ssh/id_rsa\n")
	if err := os.Symlink(w.home, w.project+"/homelink"); err != nil {
		t.Fatal(err)
	}
	return w
}

func needLandlock(t *testing.T) {
	t.Helper()
	if _, err := Available(); err != nil {
		if os.Getenv("CCRUN_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("landlock required: %v", err)
		}
		t.Skipf("no landlock: %v", err)
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// asUser is where a test runs this test binary as uid 65534, which needs
// root (t is skipped otherwise, and without Landlock): a directory of its
// own, mode 0755, outside t.TempDir (whose parent is 0700), holding a copy
// of the binary at bin.
func asUser(t *testing.T, prefix string) (dir, bin string) {
	t.Helper()
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to become another user")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin = filepath.Join(dir, "confine.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// userWork makes dir/work, holding p ("kept\n"), and gives dir, it and p
// to uid 65534: the project of a test as that user.
func userWork(t *testing.T, dir string) string {
	t.Helper()
	work := dir + "/work"
	mkdir(t, work)
	write(t, work+"/p", "kept\n")
	for _, f := range []string{dir, work, work + "/p"} {
		os.Chown(f, 65534, 65534)
	}
	return work
}

// prep prepares the read-only policy of w.
func (w world) prep(t *testing.T, withSeccomp bool) *Ruleset {
	t.Helper()
	rs, err := prepare(ReadOnly(w.home, w.project), withSeccomp)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	t.Cleanup(func() { rs.Close() })
	return rs
}

// sh runs script with sh -c under rs in the project, with w.home as HOME.
func (w world) sh(t *testing.T, rs *Ruleset, script string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = w.project
	cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1"}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := rs.Start(cmd); err != nil {
		t.Fatalf("start %q: %v", script, err)
	}
	err := cmd.Wait()
	code = 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("wait %q: %v", script, err)
	}
	return o.String(), e.String(), code
}

func TestAvailable(t *testing.T) {
	needLandlock(t)
	abi, err := Available()
	if err != nil || abi < MinABI {
		t.Fatalf("Available() = %d, %v", abi, err)
	}
	t.Setenv(EnvVar, "off")
	if _, err := Available(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Available() with %s=off: %v, want ErrUnavailable", EnvVar, err)
	}
	if _, err := Prepare(Policy{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Prepare() with %s=off: %v, want ErrUnavailable", EnvVar, err)
	}
}

func TestInvalidPolicy(t *testing.T) {
	needLandlock(t)
	for _, p := range []Policy{{Hide: []string{"relative"}}, {Hide: []string{"/"}}, {Write: []string{"dev/null"}}, {Hide: []string{"/tmp/.."}}} {
		if _, err := Prepare(p); !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("Prepare(%+v) = %v, want ErrInvalidPolicy", p, err)
		}
	}
}

// TestEscapes runs what a misjudged "read-only" command could do: each must
// fail, and nothing may be written or leaked.
func TestEscapes(t *testing.T) {
	w := newWorld(t)
	git(t, w.project, "init", "-q")
	git(t, w.project, "config", "core.fsmonitor", "touch "+w.outside+"/fsmonitor")
	tru, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.home+"/.ssh/t", tru, 0o755); err != nil {
		t.Fatal(err)
	}
	rs := w.prep(t, true)
	pre := filepath.Join(w.outside, "existing")
	write(t, pre, "old\n")
	old := time.Unix(1_000_000_000, 0)
	if err := os.Chtimes(pre, old, old); err != nil {
		t.Fatal(err)
	}
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
			c.Write([]byte(canary + " from the network\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	// Each row must fail with EACCES ("Permission denied" on stderr), but
	// git status, which ignores its fsmonitor's failure, and curl, which
	// says "Couldn't connect" whatever the errno.
	for _, tt := range []struct{ name, script string }{
		{"find -exec touch", "find . -maxdepth 0 -exec touch " + w.outside + "/x \\;"},
		{"sort -o", "sort -o " + w.outside + "/sorted README"},
		{"sort -o over a project file", "sort -o README README"},
		{"redirection by the program", "echo x > " + w.outside + "/redir"},
		{"mkdir", "mkdir " + w.outside + "/d"},
		{"rm", "rm -f README"},
		{"mv", "mv README " + w.outside + "/moved"},
		{"ln", "ln README " + w.outside + "/hard"},
		{"truncate", "truncate -s 0 README"},
		{"touch existing (utimensat)", "touch " + pre},
		{"chmod", "chmod 777 README"},
		{"git status runs a planted fsmonitor", "git status --short"},
		{"cat the key", "cat $HOME/.ssh/id_rsa"},
		{"xargs cat of a list", "xargs cat < list.txt"},
		{"grep -R through a symlink to home", "grep -R CANARY ."},
		{"a symlinked hidden directory", "cat $HOME/.aws/credentials"},
		{"the symlink's target", "cat $HOME/awsreal/credentials"},
		{"a private key by suffix", "cat $HOME/server.pem"},
		{"a hidden directory under a partial one", "cat $HOME/.config/gcloud/credentials.db"},
		{"the project's .env", "cat .env"},
		{"a file elsewhere in the home", "cat $HOME/notes.txt"},
		{"settings elsewhere in the home", "cat $HOME/.config/settings.ini"},
		{"/etc/shadow", "cat /etc/shadow"},
		{"a raw device", "head -c 64 /dev/loop0 /dev/vda /dev/sda /dev/nvme0n1 /dev/mem"},
		{"exec from a hidden directory", "$HOME/.ssh/t"},
		{"tcp connect", fmt.Sprintf("curl -sS --max-time 5 http://127.0.0.1:%d/", port)},
		{"udp socket", `perl -e 'use Socket; socket(S, PF_INET, SOCK_DGRAM, 0) or die "udp: $!\n"; print "open\n"'`},
		{"unix socket", `perl -e 'use Socket; socket(S, PF_UNIX, SOCK_STREAM, 0) or die "unix: $!\n"; print "open\n"'`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := w.sh(t, rs, tt.script)
			if strings.Contains(out, canary) || strings.Contains(errOut, canary) {
				t.Errorf("%q leaked: stdout %q stderr %q", tt.script, out, errOut)
			}
			if strings.Contains(out, "open") {
				t.Errorf("%q opened a socket: %q", tt.script, out)
			}
			t.Logf("exit %d, stderr %q", code, errOut)
			quiet := strings.HasPrefix(tt.script, "curl")
			if !quiet && !strings.Contains(errOut, "Permission denied") {
				t.Errorf("%q: exit %d, stderr %q: want a Permission denied", tt.script, code, errOut)
			}
		})
	}
	select {
	case <-accepted:
		t.Error("the listener accepted a connection")
	default:
	}
	ents, _ := os.ReadDir(w.outside)
	for _, e := range ents {
		if e.Name() != "existing" {
			t.Errorf("%s was written outside", e.Name())
		}
	}
	if fi, err := os.Stat(pre); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("touch changed %s: %v %v", pre, fi.ModTime(), err)
	}
	if b, err := os.ReadFile(w.project + "/README"); err != nil || string(b) != "hello project\nsecond line\n" {
		t.Errorf("README changed: %q %v", b, err)
	}
	if fi, err := os.Stat(w.project + "/README"); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("README mode changed: %v %v", fi.Mode(), err)
	}
}

// TestLandlockAloneRefusesTCP proves the TCP refusal is Landlock's, without
// the seccomp filter.
func TestLandlockAloneRefusesTCP(t *testing.T) {
	w := newWorld(t)
	rs := w.prep(t, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	script := fmt.Sprintf(`perl -e 'use Socket; socket(S, PF_INET, SOCK_STREAM, 0) or die "socket: $!\n"; connect(S, sockaddr_in(%d, inet_aton("127.0.0.1"))) or die "connect: $!\n"; print "connected\n"'`, ln.Addr().(*net.TCPAddr).Port)
	out, errOut, code := w.sh(t, rs, script)
	if code == 0 || strings.Contains(out, "connected") || !strings.Contains(errOut, "connect: Permission denied") {
		t.Errorf("connect under landlock: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = w.sh(t, rs, `perl -e 'use Socket; socket(S, PF_INET, SOCK_STREAM, 0) or die "socket: $!\n"; bind(S, sockaddr_in(0, INADDR_ANY)) or die "bind: $!\n"; print "bound\n"'`)
	if code == 0 || !strings.Contains(errOut, "bind: Permission denied") {
		t.Errorf("bind under landlock: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	select {
	case <-accepted:
		t.Error("the listener accepted a connection")
	default:
	}
}

// TestSeccompRefusesSockets proves the socket refusal of the filter.
func TestSeccompRefusesSockets(t *testing.T) {
	if !Seccomp() {
		t.Skip("no seccomp filter on " + runtime.GOARCH)
	}
	w := newWorld(t)
	rs := w.prep(t, true)
	for _, fam := range []string{"PF_INET, SOCK_DGRAM", "PF_INET6, SOCK_DGRAM", "PF_UNIX, SOCK_STREAM", "PF_INET, SOCK_STREAM"} {
		out, errOut, code := w.sh(t, rs, `perl -e 'use Socket; socket(S, `+fam+`, 0) or die "socket: $!\n"; print "open\n"'`)
		if code == 0 || !strings.Contains(errOut, "socket: Permission denied") {
			t.Errorf("socket(%s): exit %d, stdout %q, stderr %q", fam, code, out, errOut)
		}
	}
	// socketpair stays: programs use it between their own processes
	out, errOut, code := w.sh(t, rs, `perl -e 'use Socket; socketpair(A, B, AF_UNIX, SOCK_STREAM, 0) or die "socketpair: $!\n"; print "pair\n"'`)
	if code != 0 || out != "pair\n" {
		t.Errorf("socketpair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestOrdinaryReadOnly runs everyday read-only commands confined: they work
// with their normal output.
func TestOrdinaryReadOnly(t *testing.T) {
	w := newWorld(t)
	git(t, w.project, "init", "-q")
	git(t, w.project, "add", "README", "sub")
	git(t, w.project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first commit")
	rs := w.prep(t, true)
	for _, tt := range []struct{ script, want string }{
		{"ls", "README\nhomelink\nlist.txt\nsub\n"},
		{"cat README", "hello project\nsecond line\n"},
		{"grep -r findme sub", "sub/code.go:package sub // findme\n"},
		{"find sub -name '*.go'", "sub/code.go\n"},
		{"wc -l README", "2 README\n"},
		{"head -n 1 README", "hello project\n"},
		{"git log --format=%s", "first commit\n"},
		{"git status --short", "?? .env\n?? homelink\n?? list.txt\n"},
		{"git config --global user.name", "Tess Ter\n"}, // ~/.gitconfig: Visible
		{"ls $HOME/.ssh", "id_rsa\n"},                   // names are listed (documented), contents are not readable
		{"echo to-null > /dev/null && echo ok", "ok\n"},
		{"head -c 4 /dev/zero | wc -c", "4\n"},
		{"ls / | grep -c .", ""},
	} {
		t.Run(tt.script, func(t *testing.T) {
			out, errOut, code := w.sh(t, rs, tt.script)
			if code != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if tt.want != "" && out != tt.want {
				t.Errorf("stdout %q, want %q (stderr %q)", out, tt.want, errOut)
			}
		})
	}
}

// TestProcEnviron: the environment of other processes cannot be read,
// neither through /proc nor ps: not ccrun's, not an unconfined child's.
// (Landlock's ptrace scoping alone lets /proc/PID/environ through on this
// kernel: HideProcesses does it.)
func TestProcEnviron(t *testing.T) {
	w := newWorld(t)
	other := exec.Command("/bin/sleep", "30")
	other.Env = []string{"OTHER_SECRET=" + canary}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	rs := w.prep(t, true)
	self, _ := os.ReadFile("/proc/self/environ")
	for _, script := range []string{
		fmt.Sprintf("cat /proc/%d/environ", other.Process.Pid),
		fmt.Sprintf("cat /proc/%d/task/*/environ", other.Process.Pid),
		fmt.Sprintf("cat /proc/%d/environ", os.Getpid()),
		fmt.Sprintf("cat /proc/%d/cmdline", os.Getpid()),
		"cat /proc/[0-9]*/environ",
		"ps axeww",
		fmt.Sprintf("head -c 100 /proc/%d/mem", other.Process.Pid),
	} {
		out, errOut, _ := w.sh(t, rs, script)
		if strings.Contains(out, canary) || strings.Contains(errOut, canary) {
			t.Errorf("%q printed another process's environment: %q", script, out)
		}
		if len(self) > 0 && strings.Contains(out, string(self[:min(len(self), 40)])) {
			t.Errorf("%q printed ccrun's environment: %q", script, out)
		}
	}
	// what stays: /proc's system files, and the links of /proc/self/fd
	out, errOut, code := w.sh(t, rs, "grep -c ^processor /proc/cpuinfo >/dev/null && ls /proc/self/fd | grep -c . >/dev/null && echo ok")
	if code != 0 || out != "ok\n" {
		t.Errorf("/proc/cpuinfo and /proc/self/fd: exit %d %q %q", code, out, errOut)
	}
	// the unconfined side can still read a confined program's environ
	// (the executor's sweep needs it)
	cmd := exec.Command("/bin/sleep", "5")
	cmd.Env = []string{"MARK=" + canary}
	if err := rs.Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Start returns once the execve has closed the helper's status pipe,
	// a moment before the kernel has set the new program's environment
	// up: read until it is there
	var b []byte
	var err error
	for i := 0; i < 500; i++ {
		if b, err = os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)); err != nil || bytes.Contains(b, []byte(canary)) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || !bytes.Contains(b, []byte(canary)) {
		t.Errorf("ccrun reading a confined program's environ: %q %v", b, err)
	}
}

// TestOnlyTheConfinedThread: after confined starts, every other goroutine
// of the process still writes files and starts unconfined programs, on any
// thread; and after Close too.
func TestOnlyTheConfinedThread(t *testing.T) {
	w := newWorld(t)
	rs := w.prep(t, true)
	if _, _, code := w.sh(t, rs, "touch "+w.outside+"/confined"); code == 0 {
		t.Fatal("the confined touch succeeded")
	}
	check := func(stage string) {
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread() // spread over many threads
				defer runtime.UnlockOSThread()
				p := filepath.Join(w.outside, fmt.Sprintf("%s-%d", stage, i))
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					errs <- err
					return
				}
				if err := exec.Command("/usr/bin/touch", p+".child").Run(); err != nil {
					errs <- fmt.Errorf("unconfined touch: %w", err)
				}
				if c, err := net.Dial("udp", "127.0.0.1:9"); err != nil {
					errs <- fmt.Errorf("unconfined udp: %w", err)
				} else {
					c.Close()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%s: %v", stage, err)
		}
	}
	check("open")
	rs.Close()
	check("closed")
	if err := rs.Start(exec.Command("/bin/true")); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

// TestLaterEntries documents a limit: an entry created in a partly granted
// directory after Prepare is not readable; one in a fully granted
// directory is.
func TestLaterEntries(t *testing.T) {
	w := newWorld(t)
	rs := w.prep(t, true)
	write(t, w.home+"/later.txt", "later\n")
	write(t, w.project+"/sub/later.txt", "later\n")
	if out, _, code := w.sh(t, rs, "cat $HOME/later.txt"); code == 0 {
		t.Errorf("an entry created later in a partly granted directory was read: %q", out)
	}
	if out, errOut, code := w.sh(t, rs, "cat sub/later.txt"); code != 0 || out != "later\n" {
		t.Errorf("an entry created later in a granted directory: exit %d %q %q", code, out, errOut)
	}
}

// TestConcurrentStarts hammers one Ruleset from many goroutines.
func TestConcurrentStarts(t *testing.T) {
	w := newWorld(t)
	rs := w.prep(t, true)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, errOut, code := w.sh(t, rs, fmt.Sprintf("head -n 1 README; touch %s/c%d", w.outside, i))
			if out != "hello project\n" || code == 0 {
				t.Errorf("run %d: exit %d %q %q", i, code, out, errOut)
			}
		}()
	}
	wg.Wait()
	if ents, _ := os.ReadDir(w.outside); len(ents) != 0 {
		t.Errorf("%d files written outside", len(ents))
	}
}

func TestReadOnlyPolicy(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("PATH", "/usr/bin:/home/u/.local/bin:/home/u")
	p := ReadOnly("/home/u", "/src/proj")
	for _, want := range []string{"/etc/shadow", "/etc/ssh/ssh_host_*_key", "/dev"} {
		if !slices.Contains(p.Hide, want) {
			t.Errorf("ReadOnly does not hide %s", want)
		}
	}
	for _, h := range p.Hide {
		if strings.HasPrefix(h, "/proc") || strings.HasPrefix(h, "/home/") || strings.HasPrefix(h, "/src/") {
			t.Errorf("ReadOnly hides %s by name (private or searched: hidden either way)", h)
		}
	}
	if want := []string{"/home", "/root", "/home/u"}; !slices.Equal(p.Private, want) {
		t.Errorf("Private %q, want %q", p.Private, want)
	}
	// the PATH directory in the home, not the home itself
	if want := []string{"/src/proj", "/home/u/.gitconfig", "/home/u/.config/git", "/home/u/.local/bin"}; !slices.Equal(p.Search, want) {
		t.Errorf("Search %q, want %q", p.Search, want)
	}
	if !p.HideProcesses {
		t.Error("ReadOnly does not hide /proc/PID")
	}
}

// TestReadOnlyPathLinks: a $PATH directory that leads into the home
// through a symbolic link, at its end or in a component on the way, is
// searched where it really is; one with no link is searched as written.
func TestReadOnlyPathLinks(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "")
	base := t.TempDir()
	home := filepath.Join(base, "home")
	mkdir(t, home+"/tools/bin")
	mkdir(t, home+"/.local/bin")
	if err := os.Symlink(home+"/tools/bin", base+"/bin"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home+"/tools", base+"/tools"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{base + "/bin", home + "/tools/bin"},
		{base + "/tools/bin", home + "/tools/bin"},
		{home + "/.local/bin", home + "/.local/bin"},
	} {
		t.Setenv("PATH", "/usr/bin:"+c.path)
		if p := ReadOnly(home, base+"/proj"); !slices.Contains(p.Search, c.want) {
			t.Errorf("PATH %s: Search %q, want %s in it", c.path, p.Search, c.want)
		}
	}
}

// TestHomeByOtherPaths: a home named through a symlink, or with glob
// characters in its name, is hidden where it really is.
func TestHomeByOtherPaths(t *testing.T) {
	needLandlock(t)
	base := t.TempDir()
	real := filepath.Join(base, "we[ir]d*home")
	mkdir(t, real+"/.ssh")
	write(t, real+"/.ssh/id_rsa", canary+"\n")
	write(t, real+"/id_rsa", canary+"\n")
	write(t, real+"/plain", "plain\n")
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, home := range []string{real, link} {
		rs, err := Prepare(ReadOnly(home))
		if err != nil {
			t.Fatal(err)
		}
		w := world{home: home, project: base}
		for _, script := range []string{"cat '" + real + "/.ssh/id_rsa'", "cat '" + link + "/.ssh/id_rsa'", "cat '" + real + "/id_rsa'"} {
			if out, _, code := w.sh(t, rs, script); code == 0 || strings.Contains(out, canary) {
				t.Errorf("home %s: %q: exit %d %q", home, script, code, out)
			}
		}
		if out, errOut, code := w.sh(t, rs, "cat '"+link+"/plain'"); code == 0 || !strings.Contains(errOut, "Permission denied") {
			t.Errorf("home %s: a file elsewhere in the home: exit %d %q %q", home, code, out, errOut)
		}
		rs.Close()
	}
}

// TestCacheFollowsChanges: a ruleset kept for the next Prepare is rebuilt
// when a partly granted directory changes, so that a secret created since
// is hidden and a file created since is readable.
func TestCacheFollowsChanges(t *testing.T) {
	w := newWorld(t)
	rs := w.prep(t, true)
	if out, _, code := w.sh(t, rs, "cat README"); code != 0 || out != "hello project\nsecond line\n" {
		t.Fatalf("README: %d %q", code, out)
	}
	rs.Close()
	write(t, w.project+"/later.txt", "later\n")
	mkdir(t, w.home+"/.gnupg")
	write(t, w.home+"/.gnupg/secring", canary+"\n")
	// in a directory the search granted whole: its stamp is kept too
	mkdir(t, w.project+"/sub/.gnupg")
	write(t, w.project+"/sub/.gnupg/secring", canary+"\n")
	rs = w.prep(t, true)
	if out, errOut, code := w.sh(t, rs, "cat later.txt"); code != 0 || out != "later\n" {
		t.Errorf("a file created since the last Prepare: %d %q %q", code, out, errOut)
	}
	for _, f := range []string{"$HOME/.gnupg/secring", "sub/.gnupg/secring"} {
		if out, _, code := w.sh(t, rs, "cat "+f); code == 0 || strings.Contains(out, canary) {
			t.Errorf("a secret created since the last Prepare: %s: %d %q", f, code, out)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out)
	}
}

// TestOpen: files opened through the Ruleset are decided by it.
func TestOpen(t *testing.T) {
	w := newWorld(t)
	rs := w.prep(t, true)
	for _, tt := range []struct {
		name string
		flag int
		ok   bool
	}{
		{w.project + "/README", os.O_RDONLY, true},
		{"/dev/null", os.O_WRONLY | os.O_CREATE | os.O_TRUNC, true},
		{w.home + "/.ssh/id_rsa", os.O_RDONLY, false},
		{w.project + "/README", os.O_WRONLY, false},
		{w.outside + "/new", os.O_WRONLY | os.O_CREATE, false},
	} {
		f, err := rs.Open(tt.name, tt.flag, 0o644)
		if f != nil {
			f.Close()
		}
		if (err == nil) != tt.ok {
			t.Errorf("Open(%s, %#x) = %v, want ok %v", tt.name, tt.flag, err, tt.ok)
		}
		if err != nil && !errors.Is(err, os.ErrPermission) {
			t.Errorf("Open(%s, %#x) = %v, want a permission error", tt.name, tt.flag, err)
		}
	}
	if f, err := os.OpenFile(w.outside+"/unconfined", os.O_WRONLY|os.O_CREATE, 0o644); err != nil {
		t.Errorf("an unconfined open after a confined one: %v", err)
	} else {
		f.Close()
	}
	rs.Close()
	if _, err := rs.Open(w.project+"/README", os.O_RDONLY, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Close: %v, want ErrClosed", err)
	}
}

// TestDangerousAtAnyDepth: the table's rows are hidden wherever they lie
// in the project (sub/.env, deploy/.aws/credentials), and the rest of the
// home is not read at all (~/src/other/.env), as the gate's table says.
func TestDangerousAtAnyDepth(t *testing.T) {
	w := newWorld(t)
	for _, d := range []string{"/src/other/.ssh", "/src/other/deploy/.aws"} {
		mkdir(t, w.home+d)
	}
	for _, d := range []string{"/a/b/c", "/deploy/.aws", "/sub/deeper", "/keys"} {
		mkdir(t, w.project+d)
	}
	for _, f := range []string{w.home + "/src/other/.env", w.home + "/src/other/.ssh/id_rsa", w.home + "/src/other/deploy/.aws/credentials",
		w.project + "/sub/.env", w.project + "/sub/deeper/.env.local", w.project + "/deploy/.aws/credentials", w.project + "/a/b/c/id_rsa",
		w.project + "/keys/server.pem"} {
		write(t, f, canary+" "+f+"\n")
	}
	write(t, w.project+"/a/b/c/plain.txt", "deep plain\n")
	mkdir(t, w.home+"/.config/git")
	write(t, w.home+"/.config/git/ignore", "*.swp\n")
	write(t, w.home+"/.config/git/credentials", canary+" git credentials\n")
	if err := os.Symlink("../sub/.env", w.project+"/a/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(w.project+"/keys", w.project+"/a/keylink"); err != nil {
		t.Fatal(err)
	}
	rs := w.prep(t, true)
	for _, script := range []string{
		"grep -r " + canary + " $HOME/src",
		"cat $HOME/src/other/.env",
		"grep -r " + canary + " .",
		"grep -R " + canary + " a",
		"cat sub/.env", "cat sub/deeper/.env.local", "cat deploy/.aws/credentials", "cat a/b/c/id_rsa", "cat keys/server.pem",
		"cat a/link", "cat a/keylink/server.pem",
		"cat $HOME/.config/git/credentials", // in a directory git reads, so visible: searched too
		"find . -type f -exec cat {} +",
	} {
		out, errOut, code := w.sh(t, rs, script)
		if strings.Contains(out, canary) || strings.Contains(errOut, canary) {
			t.Errorf("%q leaked (exit %d): %q %q", script, code, out, errOut)
		}
	}
	for script, want := range map[string]string{"cat a/b/c/plain.txt": "deep plain\n", "cat $HOME/.config/git/ignore": "*.swp\n"} {
		if out, errOut, code := w.sh(t, rs, script); code != 0 || out != want {
			t.Errorf("%q: exit %d %q %q, want %q", script, code, out, errOut, want)
		}
	}

	// Past the search's budget, what was not searched is not read.
	dropCache()
	defer func(n int) { searchLimit = n }(searchLimit)
	searchLimit = 8
	mkdir(t, w.project+"/z/y")
	write(t, w.project+"/z/y/unsearched.txt", "x\n")
	rs = w.prep(t, true)
	if out, errOut, code := w.sh(t, rs, "cat z/y/unsearched.txt"); code == 0 || !strings.Contains(errOut, "Permission denied") {
		t.Errorf("a file the search did not reach: exit %d %q %q", code, out, errOut)
	}
	if out, _, code := w.sh(t, rs, "cat README"); code != 0 || out != "hello project\nsecond line\n" {
		t.Errorf("README, listed before the budget ran out: exit %d %q", code, out)
	}
}
