package docker

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ccrun/ccrun/runtime/job"
)

// testUID is the user the tests run a ccrun as when they run as root: one
// that is neither root nor 65534.
const testUID = 1000

// userChildEnv makes the test binary the non-root ccrun of
// TestCallerWrites: it names the project directory to mount.
const userChildEnv = "CCRUN_DOCKER_TEST_USER_CHILD"

// TestCallerUser: the default user is the caller's uid and gid, never
// root: 65534:65534 for a caller that is root, and taken from this
// process's effective ids by New.
func TestCallerUser(t *testing.T) {
	for _, tc := range []struct {
		uid, gid int
		want     string
	}{
		{0, 0, DefaultUser},
		{0, 1000, DefaultUser},
		{1000, 1000, "1000:1000"},
		{1000, 100, "1000:100"},
		{65534, 65534, "65534:65534"},
	} {
		if got := callerUser(tc.uid, tc.gid); got != tc.want {
			t.Errorf("callerUser(%d, %d) = %q, want %q", tc.uid, tc.gid, got, tc.want)
		}
	}
	e, err := New(context.Background(), withEngine(&fake{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := callerUser(os.Geteuid(), os.Getegid()); e.user != want || e.asRoot != (os.Geteuid() == 0) {
		t.Errorf("New: default user %q (root %v), want %q from the effective uid %d", e.user, e.asRoot, want, os.Geteuid())
	}
	e, err = New(context.Background(), withEngine(&fake{}), WithDefaultUser(1234, 5678))
	if err != nil || e.user != "1234:5678" || e.asRoot {
		t.Errorf("WithDefaultUser(1234, 5678): %v, user %q", err, e.user)
	}
	for _, ids := range [][2]int{{0, 0}, {0, 1000}, {-1, 0}, {1000, -1}} {
		if _, err := New(context.Background(), withEngine(&fake{}), WithDefaultUser(ids[0], ids[1])); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("WithDefaultUser(%d, %d) = %v, want ErrInvalidArgument (root is never a default)", ids[0], ids[1], err)
		}
	}
}

// TestPoolKeyUser: a pooled container made for one user never serves
// another: the user is part of the pool key.
func TestPoolKeyUser(t *testing.T) {
	lim := job.Limits{}.WithDefaults()
	prog := filepath.Join(t.TempDir(), "once") // the key names the bind sources by inode
	if err := os.WriteFile(prog, nil, 0o555); err != nil {
		t.Fatal(err)
	}
	key := func(user string) string {
		cfg, hc := poolConfig(Spec{Image: "i", User: user}, lim, prog, nil)
		k, err := poolKey("sha256:00", cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	seen := map[string]string{}
	for _, u := range []string{DefaultUser, "1000:1000", "1001:1001", "1000:1001", "0:0"} {
		k := key(u)
		if other, ok := seen[k]; ok {
			t.Errorf("users %s and %s share the pool key %s", u, other, k)
		}
		seen[k] = u
	}
}

// TestUnwritableNote: a writable mount the container's user may not
// write is named in the Result's Detail, and as root's default, with what
// to do.
func TestUnwritableNote(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	uid := os.Geteuid()
	other := strconv.Itoa(uid+1) + ":" + strconv.Itoa(uid+1)
	owner := strconv.Itoa(uid) + ":" + strconv.Itoa(os.Getegid())
	for _, tc := range []struct {
		name   string
		user   string
		asRoot bool
		host   string
		rw     bool
		want   string // a part of the note; "" for none
	}{
		{"the owner", owner, false, mine, true, ""},
		{"another user", other, false, mine, true, "is not writable by the container's user " + other},
		{"as root's default", DefaultUser, true, mine, true, "ccrun runs as root, so @docker runs as uid 65534"},
		{"open to all", DefaultUser, true, open, true, ""},
		{"read-only", other, false, mine, false, ""},
		{"a name", "app", false, mine, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec{User: tc.user, Mounts: []job.Mount{{Host: tc.host, Guest: "/w", Writable: tc.rw}}}
			got := unwritable(s, tc.asRoot)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("note %q, want one with %q", got, tc.want)
			}
			if tc.want != "" && !tc.asRoot && strings.Contains(got, "runs as root") {
				t.Errorf("note %q blames root for a user that is not root's default", got)
			}
		})
	}
}

// TestRootWriteRefused: as root, the container writes as 65534, so a
// writable mount of root's own directory (0755) is refused by the kernel,
// and the Result says why and what to do.
func TestRootWriteRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the default user of a caller that is root")
	}
	e := executor(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res := run(t, e, Spec{Cmd: sh("id -u; echo x > /w/f"), Mounts: []job.Mount{{Host: dir, Guest: "/w", Writable: true}}})
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "Permission denied") {
		t.Fatalf("exit %d, stderr %q: want the write refused", res.ExitCode, res.Stderr)
	}
	if got := string(res.Stdout); got != "65534\n" {
		t.Errorf("ran as uid %q, want 65534", got)
	}
	for _, want := range []string{"mount " + dir + " at /w is not writable by the container's user 65534:65534", "ccrun runs as root", "writable by uid 65534"} {
		if !strings.Contains(res.Detail, want) {
			t.Errorf("Detail %q, want it to say %q", res.Detail, want)
		}
	}
}

// TestDefaultUserWrites: an Executor whose default user is a caller's
// (here given, as root: TestCallerWrites runs a real non-root process)
// runs as it, still hardened, and what it writes into its own writable
// mount is its own on the host; cold and pooled.
func TestDefaultUserWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to hand a directory to another uid")
	}
	e := executor(t, WithDefaultUser(testUID, testUID))
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, testUID, testUID); err != nil {
		t.Fatal(err)
	}
	checkCallerRun(t, e, dir, testUID, testUID)
}

// checkCallerRun runs, as e's default user uid:gid, a hardened container
// that writes into dir (owned by uid, mode 0755) mounted writable, and a
// pooled one; it fails unless both ran as uid:gid without privileges and
// the file is uid's on the host.
func checkCallerRun(t *testing.T, e *Executor, dir string, uid, gid int) {
	t.Helper()
	ids := strconv.Itoa(uid) + "\n" + strconv.Itoa(gid) + "\n"
	res := run(t, e, Spec{
		Cmd:    sh("id -u; id -g; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status; touch /x 2>/dev/null || echo ro; echo made > /w/made"),
		Mounts: []job.Mount{{Host: dir, Guest: "/w", Writable: true}},
	})
	want := ids + "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\nro\n"
	if res.ExitCode != 0 || string(res.Stdout) != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0, %q", res.ExitCode, res.Stdout, res.Stderr, want)
	}
	if res.Detail != "" {
		t.Errorf("Detail %q: want none for a mount its user may write", res.Detail)
	}
	fi, err := os.Stat(filepath.Join(dir, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("the file the container made is %d:%d on the host, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
	if _, err := e.onceFile(); err != nil {
		return // no warm pool here
	}
	res = runWarm(t, e, Spec{Cmd: sh("id -u; id -g")})
	if string(res.Stdout) != ids {
		t.Errorf("pooled: ran as %q, want %q", res.Stdout, ids)
	}
}

// TestPoolPerUser: two Executors of one pool directory and engine whose
// default users differ never serve each other's warm containers.
func TestPoolPerUser(t *testing.T) {
	if _, err := (&Executor{poolDir: t.TempDir()}).onceFile(); err != nil {
		t.Skip("no warm pool here: ", err)
	}
	dir := t.TempDir()
	a := executor(t, WithPoolDir(dir), WithDefaultUser(testUID, testUID))
	b := executor(t, WithPoolDir(dir), WithDefaultUser(testUID+1, testUID+1))
	s := Spec{Cmd: sh("id -u"), Pool: true}
	key := warm(t, a, s)
	before := b.pooledRuns.Load()
	res := run(t, b, s)
	b.bgWork.Wait()
	if b.pooledRuns.Load() != before {
		t.Error("a warm container made for one user served another")
	}
	if got, want := string(res.Stdout), strconv.Itoa(testUID+1)+"\n"; got != want {
		t.Errorf("ran as %q, want %q", got, want)
	}
	if idle, _ := pooled(t, a, key); len(idle) != 1 {
		t.Errorf("the first user's pool holds %d idle containers, want its 1 untouched", len(idle))
	}
	if _, err := a.DrainPool(context.Background()); err != nil {
		t.Error(err)
	}
	if _, err := b.DrainPool(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestCallerWrites runs the engine in a real process of a user that is
// not root (setpriv --reuid --regid --clear-groups, as a user's shell
// would be), reaching the engine through a socket of its own that this
// test forwards to the real one (nothing of the host's socket changes):
// its default user is its own, taken from its ids, and its own project
// directory (0755, not open to others) mounted writable is written, the
// file its own on the host.
func TestCallerWrites(t *testing.T) {
	if dir := os.Getenv(userChildEnv); dir != "" {
		if os.Geteuid() == 0 {
			t.Fatal("the child runs as root")
		}
		e := executor(t)
		if want := strconv.Itoa(os.Geteuid()) + ":" + strconv.Itoa(os.Getegid()); e.user != want {
			t.Fatalf("default user %q, want the caller's %s", e.user, want)
		}
		checkCallerRun(t, e, dir, os.Geteuid(), os.Getegid())
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv (util-linux)")
	}
	sock, base := childSetup(t)
	home := filepath.Join(base, "home")
	project := filepath.Join(base, "project")
	for _, d := range []string{home, project} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, testUID, testUID); err != nil {
			t.Fatal(err)
		}
	}
	proxy := filepath.Join(home, "docker.sock")
	forward(t, proxy, sock)
	if err := os.Chown(proxy, testUID, testUID); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "docker.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	uid := strconv.Itoa(testUID)
	cmd := exec.Command(setpriv, "--reuid="+uid, "--regid="+uid, "--clear-groups", "--",
		bin, "-test.run=^TestCallerWrites$", "-test.v", "-test.count=1")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home,
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"DOCKER_HOST=unix://" + proxy, userChildEnv + "=" + project}
	cmd.Dir = home
	out, err := cmd.CombinedOutput()
	t.Logf("child as uid %d:\n%s", testUID, out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCallerWrites") {
		t.Fatalf("child as uid %d: %v", testUID, err)
	}
	fi, err := os.Stat(filepath.Join(project, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != testUID || st.Gid != testUID {
		t.Errorf("the file is %d:%d on the host, want %d:%d", st.Uid, st.Gid, testUID, testUID)
	}
}

// forward serves a unix socket at path that passes each connection,
// bytes as they are both ways (attach streams included), to the socket at
// to, until the test ends.
func forward(t *testing.T, path, to string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				d, err := net.Dial("unix", to)
				if err != nil {
					return
				}
				defer d.Close()
				done := make(chan struct{})
				go func() {
					_, _ = io.Copy(d, c)
					_ = d.(*net.UnixConn).CloseWrite()
					close(done)
				}()
				_, _ = io.Copy(c, d)
				_ = c.(*net.UnixConn).CloseWrite()
				<-done
			}()
		}
	}()
}
