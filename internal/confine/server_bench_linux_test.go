package confine

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkServerRoundTrip: one ruleset from a running confinement
// server (the workspace tier's, as a one-call ccrun asks for it).
func BenchmarkServerRoundTrip(b *testing.B) {
	needLandlockB(b)
	b.Setenv(ServerEnv, "")
	b.Setenv("XDG_RUNTIME_DIR", b.TempDir())
	b.Setenv(ServerIdleEnv, "30s")
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ServerExe = exe
	defer func() { ServerExe = "" }()
	home, _ := os.UserHomeDir()
	p := WorkspaceUnbound(home, b.TempDir(), b.TempDir())
	abi, _ := Available()
	fromServer(p, abi) // starts it
	sock := ServerSocket()
	for i := 0; ; i++ {
		fd, _, err := askServer(sock, p, abi)
		if err == nil {
			unix.Close(fd)
			break
		}
		if i == 1000 {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for b.Loop() {
		fd, _, err := askServer(sock, p, abi)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}
