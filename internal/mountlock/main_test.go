package mountlock_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// testCache is the compilation cache the @wasm executors of the engine
// tests share, in process, in workers and in the warm server: the guest is
// compiled once.
var testCache string

func TestMain(m *testing.M) {
	switch {
	case wasm.IsWorker():
		os.Exit(wasm.ServeWorker())
	case wasm.IsWarmServer():
		os.Exit(wasm.ServeDefault())
	case os.Getenv(mountlock.HoldEnv) != "":
		os.Exit(holdMain(os.Getenv(mountlock.HoldEnv)))
	}
	// Keep the tests' lock files out of the real state directory; the
	// workers and the server get it from their parent (mountlock.DirEnv).
	state, err := os.MkdirTemp("", "ccrun-mountlock-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", state)
	os.Setenv("CCRUN_WASM_SERVE_IDLE", "3s") // a warm server the tests started ends soon after
	testCache = filepath.Join(state, "wasm-cache")
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

// holdMain holds the lock of dir until stdin ends.
func holdMain(dir string) int {
	ms := []job.Mount{{Host: dir, Guest: "/m", Writable: true}}
	lk, res, err := mountlock.Begin(context.Background(), ms, job.Limits{}.WithDefaults(), time.Now())
	if lk == nil {
		fmt.Println("no lock:", res, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	lk.End(nil, nil)
	return 0
}
