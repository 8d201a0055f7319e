package wasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// Guests built from testdata/wasm by TestMain with GOOS=wasip1 GOARCH=wasm.
var guests map[string][]byte

// shared is an Executor most tests share: sharing is what the package
// promises to be safe, and it keeps compiled modules warm.
var shared *Executor

// sharedCache is the disk cache of shared; other Executors of the tests use
// it too, so that each guest is compiled once per test binary.
var sharedCache string

func TestMain(m *testing.M) {
	if IsWorker() {
		os.Exit(ServeWorker())
	}
	if IsWarmServer() {
		os.Exit(ServeDefault())
	}
	if c := os.Getenv(oneShotTestEnv); c != "" {
		os.Exit(oneShotMain(c))
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if guests, err = wasmtest.BuildGuests("hello", "escape", "probe"); err != nil {
		fmt.Fprintln(os.Stderr, "build guests:", err)
		return 1
	}
	cache, err := os.MkdirTemp("", "ccrun-wasm-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(cache)
	ctx := context.Background()
	sharedCache, err = filepath.EvalSymlinks(cache)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	shared, err = New(ctx, WithCacheDir(sharedCache))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer shared.Close(ctx)
	return m.Run()
}
