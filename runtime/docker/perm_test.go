package docker

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ccrun/ccrun/internal/ctr"
)

const permChildEnv = "CCRUN_DOCKER_TEST_PERM_CHILD"

// TestSocketPermission: a user the engine's socket does not admit gets
// ctr.ErrRefused (of class ErrUnavailable), through the real client (the errno under
// client.IsErrConnectionFailed). Run as root, it re-executes a copy of the
// test binary as nobody (65534), which is not in the docker group.
func TestSocketPermission(t *testing.T) {
	if os.Getenv(permChildEnv) != "" {
		_, err := New(context.Background())
		if !errors.Is(err, ctr.ErrRefused) || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "docker group") {
			t.Fatalf("New as uid %d = %v, want ctr.ErrRefused, of class ErrUnavailable, naming the docker group", os.Getuid(), err)
		}
		t.Log(err)
		return
	}
	sock, dir := childSetup(t)
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm()&0o006 != 0 {
		t.Skipf("socket %s missing or open to others", sock)
	}
	bin := filepath.Join(dir, "docker.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestSocketPermission$", "-test.v")
	cmd.Env = append(os.Environ(), permChildEnv+"=1", "HOME="+dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	t.Logf("child as nobody:\n%s", out)
	if !strings.Contains(string(out), "--- PASS: TestSocketPermission") {
		t.Fatalf("child did not pass:\n%s", out)
	}
}

// childSetup skips a test that runs a child as another user unless an
// engine answers on a unix socket and this process is root, and returns
// the engine's socket and a temporary directory others may enter.
func childSetup(t *testing.T) (sock, dir string) {
	t.Helper()
	if skipReason != "" {
		t.Skip("no docker engine: " + skipReason)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a child as another user")
	}
	host := os.Getenv("DOCKER_HOST")
	if host != "" && !strings.HasPrefix(host, "unix://") {
		t.Skip("DOCKER_HOST is not a unix socket")
	}
	sock = strings.TrimPrefix(host, "unix://")
	if sock == "" {
		sock = "/var/run/docker.sock"
	}
	dir = t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return sock, dir
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
