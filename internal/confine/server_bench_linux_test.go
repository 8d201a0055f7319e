package confine

import (
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchRuntimeDir is the runtime directory of BenchmarkServerRoundTrip's
// server, the same for every run in the process.
var benchRuntimeDir = func() func(b *testing.B) string {
	var once sync.Once
	var dir string
	return func(b *testing.B) string {
		once.Do(func() {
			var err error
			if dir, err = os.MkdirTemp("", "ccrun-bench-"); err != nil {
				b.Fatal(err)
			}
		})
		return dir
	}
}()

// BenchmarkServerRoundTrip: one ruleset from a running confinement
// server (the workspace tier's, as a one-call ccrun asks for it).
func BenchmarkServerRoundTrip(b *testing.B) {
	needLandlockB(b)
	b.Setenv(ServerEnv, "")
	b.Setenv("XDG_RUNTIME_DIR", benchRuntimeDir(b)) // one server a process: startServer starts one
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
		fd, _, _, err := askServer(sock, p, abi)
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
		fd, _, _, err := askServer(sock, p, abi)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}
