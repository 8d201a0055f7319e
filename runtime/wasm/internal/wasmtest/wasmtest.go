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
	"strings"
	"sync"
	"time"
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

// WASIProbe builds internal/rootfs/testdata/wasiprobe, the guest that
// calls the WASI functions internal/rootfs wraps, and returns its bytes.
func WASIProbe() ([]byte, error) {
	dir, err := os.MkdirTemp("", "ccrun-wasiprobe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	out := filepath.Join(dir, "wasiprobe.wasm")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "rootfs", "testdata", "wasiprobe")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("wasiprobe: %v\n%s", err, b)
	}
	return os.ReadFile(out)
}

// WASIProbeMTime is the modification time WASIProbeTree gives the file t.
var WASIProbeMTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// WASIProbeTree lays out, in the directories first and second (made
// here), the two mounts wasiprobe expects as preopens 3 and 4, and beside
// first a file outside, which first's link esc leads to.
func WASIProbeTree(first, second string) error {
	outside := filepath.Join(filepath.Dir(first), "outside")
	for _, err := range []error{
		os.Mkdir(first, 0o755),
		os.Mkdir(second, 0o755),
		os.WriteFile(filepath.Join(first, "f"), []byte("hello"), 0o644),
		os.Symlink("target-name", filepath.Join(first, "l")),
		os.Symlink("nowhere", filepath.Join(first, "dang")),
		os.Mkdir(filepath.Join(first, "d"), 0o755),
		os.WriteFile(filepath.Join(first, "d", "in"), nil, 0o644),
		os.WriteFile(filepath.Join(first, "t"), nil, 0o644),
		os.Chtimes(filepath.Join(first, "t"), WASIProbeMTime, WASIProbeMTime),
		os.Symlink("t", filepath.Join(first, "lt")),
		os.WriteFile(outside, nil, 0o644),
		os.Chtimes(outside, WASIProbeMTime, WASIProbeMTime),
		os.Symlink(filepath.Join("..", "outside"), filepath.Join(first, "esc")),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// WASIProbeAnswers are wasiprobe's answers by case: its lines, each a
// case's name, a space and what the calls answered.
func WASIProbeAnswers(stdout []byte) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
	}
	return got
}
