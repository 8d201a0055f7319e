//go:build linux

package confine

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestServer: the first Prepare with no server builds its own ruleset and
// starts one; the next gets the server's, which confines as its own would
// (a secret deep in the project hidden, the README read), and is rebuilt
// when the project changes; a request from another executable is refused;
// the server exits once idle, leaving nothing behind.
func TestServer(t *testing.T) {
	w := newWorld(t)
	mkdir(t, w.project+"/sub/deeper")
	write(t, w.project+"/sub/deeper/.env", canary+" deep\n")
	t.Setenv(ServerEnv, "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv(ServerIdleEnv, "3s")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ServerExe = exe
	defer func() { ServerExe = "" }()
	sock := ServerSocket()
	p := ReadOnly(w.home, w.project)
	abi, _ := Available()

	if _, _, _, ok := fromServer(p, abi); ok {
		t.Fatal("a server answered before one was started")
	}
	// the socket is there before the server listens on it: ask until it
	// answers
	var fd, rules int
	waitFor(t, func() bool {
		var err error
		fd, rules, _, err = askServer(sock, p, abi)
		return err == nil
	}, "the server to answer")
	if rules == 0 {
		t.Fatalf("a ruleset of no rule from the server")
	}
	rs := &Ruleset{abi: abi, rules: rules, ruleset: os.NewFile(uintptr(fd), "landlock-ruleset"), withSeccomp: hasSeccomp}
	defer rs.Close()
	if out, errOut, code := w.sh(t, rs, "cat README"); code != 0 || out != "hello project\nsecond line\n" {
		t.Errorf("README through the server's ruleset: exit %d %q %q", code, out, errOut)
	}
	for _, f := range []string{"sub/deeper/.env", ".env", "$HOME/notes.txt"} {
		if out, _, code := w.sh(t, rs, "cat "+f); code == 0 || strings.Contains(out, canary) || strings.Contains(out, "plain notes") {
			t.Errorf("%s through the server's ruleset: exit %d %q", f, code, out)
		}
	}

	// A secret made since: the server's kept ruleset is rebuilt.
	mkdir(t, w.project+"/sub/.gnupg")
	write(t, w.project+"/sub/.gnupg/secring", canary+"\n")
	fd, rules, _, ok := fromServer(p, abi)
	if !ok {
		t.Fatal("no ruleset from the server the second time")
	}
	rs2 := &Ruleset{abi: abi, rules: rules, ruleset: os.NewFile(uintptr(fd), "landlock-ruleset"), withSeccomp: hasSeccomp}
	defer rs2.Close()
	if out, _, code := w.sh(t, rs2, "cat sub/.gnupg/secring"); code == 0 || strings.Contains(out, canary) {
		t.Errorf("a secret made since the server built: exit %d %q", code, out)
	}

	// Another executable is not served.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeRequest(request{ABI: abi, Exe: exeID{Ino: 1}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	c.Write(b)
	if rep, err := decodeReply(c, nil); err != nil || !strings.Contains(rep.Error, "another ccrun") {
		t.Errorf("a request of another executable: %+v %v", rep, err)
	}
	c.Close()

	// Idle, it ends, and takes its socket with it.
	waitFor(t, func() bool { _, err := os.Stat(sock); return os.IsNotExist(err) }, "the idle server to end")
	if _, err := os.Stat(filepath.Dir(sock)); err != nil {
		t.Errorf("socket directory: %v", err)
	}
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("waited 15 s for %s", what)
}

// TestWire: a request and a reply read back as they were sent; a frame
// cut short, with a field too many or a count past its end is refused,
// and so is a path that holds a NUL.
func TestWire(t *testing.T) {
	p := Policy{Hide: []string{"/etc/shadow", "/home/u/.ssh"}, Read: []string{"/dev/null"}, Private: []string{"/home/u"},
		Search: []string{"/home/u/p"}, Writable: []string{"/home/u/p", "/tmp/x"}, Protect: []string{"/home/u/p/.git/config"},
		Mask: []string{"/home/u/p/.env"}, HideProcesses: true, Network: true}
	q := request{ABI: 7, Exe: exeID{Dev: 1, Ino: 2, Size: 3, Mtime: -4}, Policy: p}
	b, err := encodeRequest(q)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := readFrame(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRequest(frame)
	if err != nil || got.ABI != q.ABI || got.Exe != q.Exe || !got.Policy.Equal(p) {
		t.Errorf("request: got %+v, %v; want %+v", got, err, q)
	}
	for _, bad := range [][]byte{frame[:len(frame)-1], append(frame[:len(frame):len(frame)], "1\x00"...), []byte("7\x00")} {
		if _, err := decodeRequest(bad); err == nil {
			t.Errorf("decodeRequest(%q): no error", bad)
		}
	}
	huge := []byte("7\x001\x002\x003\x004\x0099999\x00/a\x00")
	if _, err := decodeRequest(huge); err == nil {
		t.Errorf("a list longer than the frame: no error")
	}
	q.Policy.Hide = []string{"/a\x00/b"}
	if _, err := encodeRequest(q); err == nil {
		t.Errorf("a path holding a NUL was encoded")
	}
	rep := reply{ABI: 7, Rules: 250, Where: place{1, 2, 3}, Error: "no", AuditOff: true}
	enc := encodeReply(rep)
	// the reply's first bytes come with its fd, the rest from the socket
	if got, err := decodeReply(strings.NewReader(string(enc[5:])), enc[:5]); err != nil || got != rep {
		t.Errorf("reply: got %+v, %v; want %+v", got, err, rep)
	}
}

// TestAuditWord: the server vouches that audit is disabled only as the
// kernel said so when it last asked, and not once that word is old; it
// never vouches where it cannot ask (a client then asks itself).
func TestAuditWord(t *testing.T) {
	abi, err := Available()
	if err != nil || abi < 7 {
		t.Skip("no Landlock denial records here")
	}
	var w auditWord
	if w.off() {
		t.Fatal("vouched before asking")
	}
	w.refresh(abi)
	waitFor(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return !w.busy && !w.at.IsZero() }, "the audit state read")
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		t.Skip(err)
	}
	on, err := auditEnabled(fd)
	unix.Close(fd)
	if want := err == nil && on == 0; w.off() != want {
		t.Errorf("off %v; the kernel says enabled=%d (%v)", w.off(), on, err)
	}
	w.mu.Lock()
	w.at = time.Now().Add(-auditWordFor - time.Second)
	w.mu.Unlock()
	if w.off() {
		t.Error("an old word vouched for")
	}
}
