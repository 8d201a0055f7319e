// Package wasmtest holds what the tests of runtime/wasm and of its
// internal packages share: the Go guests of testdata/wasm, built for
// wasip1, and helpers of their own (the hand-made modules are asm's). It
// is for tests only.
package wasmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// BuildGuests builds testdata/wasm/NAME for each name, in parallel, with
// GOOS=wasip1 GOARCH=wasm, and returns each module's bytes by name.
func BuildGuests(names ...string) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "ccrun-wasm-guests-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "testdata", "wasm")
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := filepath.Join(dir, name+".wasm")
			cmd := exec.Command("go", "build", "-o", out, ".")
			cmd.Dir = filepath.Join(src, name)
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("%s: %v\n%s", name, err, b)
				return
			}
			errs[i] = nil
		}()
	}
	wg.Wait()
	guests := map[string][]byte{}
	for i, name := range names {
		if errs[i] != nil {
			return nil, errs[i]
		}
		b, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
		if err != nil {
			return nil, err
		}
		guests[name] = b
	}
	return guests, nil
}

// Allocated returns how many bytes f allocated on the Go heap.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
