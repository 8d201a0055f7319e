//go:build linux

package confine

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

	if _, _, ok := fromServer(p, abi); ok {
		t.Fatal("a server answered before one was started")
	}
	// the socket is there before the server listens on it: ask until it
	// answers
	var fd, rules int
	waitFor(t, func() bool {
		var err error
		fd, rules, err = askServer(sock, p, abi)
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
	fd, rules, ok := fromServer(p, abi)
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
	b, _ := json.Marshal(request{ABI: abi, Exe: exeID{Ino: 1}, Policy: p})
	c.Write(append(b, '\n'))
	var rep reply
	if err := json.NewDecoder(c).Decode(&rep); err != nil || !strings.Contains(rep.Error, "another ccrun") {
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
