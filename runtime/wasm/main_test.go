package wasm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Guests built from testdata/wasm by TestMain with GOOS=wasip1 GOARCH=wasm.
var guests = map[string][]byte{}

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
	if IsServer() {
		os.Exit(ServeDefault())
	}
	if sock := os.Getenv(peerTestEnv); sock != "" {
		os.Exit(peerMain(sock))
	}
	if c := os.Getenv(oneShotTestEnv); c != "" {
		os.Exit(oneShotMain(c))
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ccrun-wasm-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := buildGuests(dir, "hello", "escape", "probe"); err != nil {
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

// buildGuests builds testdata/wasm/NAME for each name, in parallel.
func buildGuests(dir string, names ...string) error {
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "wasm")
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
	for i, name := range names {
		if errs[i] != nil {
			return errs[i]
		}
		b, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
		if err != nil {
			return err
		}
		guests[name] = b
	}
	return nil
}

// A tiny assembler for the hand-made modules of the error tests.

func uleb(n uint64) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sleb(n int64) []byte { return appendSleb(nil, n) }

func str(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func vec(items ...[]byte) []byte {
	b := uleb(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func section(id byte, body []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// module assembles a module whose functions all have type () -> (), except
// that it may import WASI's proc_exit (i32) -> () as function 0. bodies are
// the code of the defined functions (without locals and end), names their
// names, exports maps an export name to a function index, and memory, when
// not nil, is {min, max} pages (max < 0: none).
func module(procExit bool, names []string, bodies [][]byte, exports map[string]int, memory []int64) []byte {
	types := vec([]byte{0x60, 0, 0}, []byte{0x60, 1, 0x7f, 0})
	out := cat([]byte("\x00asm\x01\x00\x00\x00"), section(1, types))
	nimp := 0
	if procExit {
		out = append(out, section(2, vec(cat(str("wasi_snapshot_preview1"), str("proc_exit"), []byte{0x00}, uleb(1))))...)
		nimp = 1
	}
	funcs := make([][]byte, len(bodies))
	for i := range bodies {
		funcs[i] = uleb(0)
	}
	out = append(out, section(3, vec(funcs...))...)
	if memory != nil {
		lim := cat([]byte{0}, uleb(uint64(memory[0])))
		if memory[1] >= 0 {
			lim = cat([]byte{1}, uleb(uint64(memory[0])), uleb(uint64(memory[1])))
		}
		out = append(out, section(5, vec(lim))...)
	}
	var exps [][]byte
	for name, idx := range exports {
		exps = append(exps, cat(str(name), []byte{0x00}, uleb(uint64(idx))))
	}
	if memory != nil {
		exps = append(exps, cat(str("memory"), []byte{0x02}, uleb(0)))
	}
	out = append(out, section(7, vec(exps...))...)
	codes := make([][]byte, len(bodies))
	for i, b := range bodies {
		body := cat([]byte{0}, b, []byte{0x0b})
		codes[i] = append(uleb(uint64(len(body))), body...)
	}
	out = append(out, section(10, vec(codes...))...)
	var nm [][]byte
	for i, n := range names {
		nm = append(nm, cat(uleb(uint64(nimp+i)), str(n)))
	}
	sub := vec(nm...)
	out = append(out, section(0, cat(str("name"), []byte{1}, uleb(uint64(len(sub))), sub))...)
	return out
}

// Opcodes used above.
var (
	opUnreachable = []byte{0x00}
	opDrop        = []byte{0x1a}
)

func opCall(i int) []byte       { return cat([]byte{0x10}, uleb(uint64(i))) }
func opI32Const(n int64) []byte { return cat([]byte{0x41}, sleb(n)) }
func opI32Load(off int) []byte  { return cat([]byte{0x28, 2}, uleb(uint64(off))) }
func opMemoryGrow() []byte      { return []byte{0x40, 0} }
func opIf() []byte              { return []byte{0x04, 0x40} }
func opEnd() []byte             { return []byte{0x0b} }
func opI32Eq() []byte           { return []byte{0x46} }
