package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/asm"
)

func run(t *testing.T, s Spec) *job.Result {
	t.Helper()
	res, err := shared.Run(context.Background(), s)
	if err != nil {
		t.Fatalf("run %q: %v", s.Args, err)
	}
	return res
}

func probe(args ...string) Spec {
	return Spec{Module: guests["probe"], Name: "probe", Args: args}
}

func TestHello(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	res := run(t, Spec{Module: guests["hello"], Streams: job.Streams{Stdout: &out}})
	if !res.OK() || string(res.Stdout) != "hello, world\n" || out.String() != "hello, world\n" {
		t.Errorf("got %+v, streamed %q", res, out.String())
	}
}

func TestNothingFromTheHost(t *testing.T) {
	t.Setenv("CCRUN_WASM_LEAK", "leaked") // must not reach the guest
	res := run(t, probe("env"))
	if got := string(res.Stdout); got != "" {
		t.Errorf("env with no Spec.Env = %q, want empty", got)
	}
	res = run(t, Spec{Module: guests["probe"], Name: "probe", Args: []string{"env"}, Env: []string{"A=1", "B=x=y"}})
	if got, want := string(res.Stdout), "A=1\nB=x=y\n"; got != want {
		t.Errorf("env = %q, want %q", got, want)
	}
	res = run(t, probe("args", "a b", "--c"))
	if got, want := string(res.Stdout), "probe\nargs\na b\n--c\n"; got != want {
		t.Errorf("args = %q, want %q", got, want)
	}
	res = run(t, probe("ls", "/"))
	if res.ExitCode == 0 && strings.TrimSpace(string(res.Stdout)) != "" {
		t.Errorf("ls / with no mounts listed %q", res.Stdout)
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 1, 7, 255} {
		res := run(t, probe("exit", itoa(code)))
		if res.Reason != job.Exit || res.ExitCode != code {
			t.Errorf("exit %d: got %s %d", code, res.Reason, res.ExitCode)
		}
	}
	res := run(t, Spec{Module: asm.Module(true, []string{"start"}, [][]byte{asm.Cat(asm.OpI32Const(42), asm.OpCall(0))}, map[string]int{"_start": 1}, nil)})
	if res.Reason != job.Exit || res.ExitCode != 42 {
		t.Errorf("proc_exit(42): got %s %d", res.Reason, res.ExitCode)
	}
}

func itoa(n int) string { return fmtInt(n) }

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestBadModules(t *testing.T) {
	t.Parallel()
	hello := guests["hello"]
	tests := []struct {
		name string
		bin  []byte
		want error
	}{
		{"empty", []byte{}, ErrTruncated},
		{"shell script", []byte("#!/bin/sh\necho hi\n"), ErrNotWasm},
		{"elf", []byte("\x7fELF\x02\x01\x01\x00"), ErrNotWasm},
		{"half a magic number", []byte("\x00as"), ErrTruncated},
		{"magic only", []byte("\x00asm"), ErrTruncated},
		{"component", []byte("\x00asm\x0d\x00\x01\x00"), ErrNotWasm},
		{"truncated", hello[:len(hello)/2], ErrTruncated},
		{"truncated section header", hello[:9], ErrTruncated},
		{"no _start", []byte("\x00asm\x01\x00\x00\x00"), ErrMissingStart},
		{"garbage section", []byte("\x00asm\x01\x00\x00\x00\x63\x01\x00"), ErrInvalidModule},
		{"unknown import", asm.Cat([]byte("\x00asm\x01\x00\x00\x00"),
			asm.Section(1, asm.Vec([]byte{0x60, 0, 0})),
			asm.Section(2, asm.Vec(asm.Cat(asm.Str("env"), asm.Str("nope"), []byte{0}, asm.Uleb(0)))),
			asm.Section(7, asm.Vec(asm.Cat(asm.Str("_start"), []byte{0}, asm.Uleb(0))))), ErrInvalidModule},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := shared.Run(context.Background(), Spec{Module: tc.bin})
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v (result %+v), want %v", err, res, tc.want)
			}
		})
	}
	if _, err := shared.Run(context.Background(), Spec{Path: "/nonexistent/x.wasm"}); err == nil {
		t.Error("missing file: no error")
	}
	if _, err := shared.Run(context.Background(), Spec{}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("no module: err = %v, want ErrInvalidSpec", err)
	}
}

func TestTraps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		bin    []byte
		detail []string
	}{
		{"unreachable", asm.Module(false, []string{"_start", "explode"},
			[][]byte{asm.OpCall(1), asm.OpUnreachable}, map[string]int{"_start": 0}, nil),
			[]string{"unreachable", "explode"}},
		{"out of bounds", asm.Module(false, []string{"_start", "peek"},
			[][]byte{asm.OpCall(1), asm.Cat(asm.OpI32Const(1<<20), asm.OpI32Load(0), asm.OpDrop)}, map[string]int{"_start": 0}, []int64{1, 1}),
			[]string{"out of bounds memory access", "peek"}},
		{"endless recursion", asm.Module(false, []string{"_start", "again"},
			[][]byte{asm.OpCall(1), asm.OpCall(1)}, map[string]int{"_start": 0}, nil),
			[]string{"stack overflow", "_start"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, Spec{Module: tc.bin})
			if res.Reason != job.Exit || res.ExitCode != TrapExit {
				t.Errorf("got %s %d, want exit %d", res.Reason, res.ExitCode, TrapExit)
			}
			for _, w := range tc.detail {
				if !strings.Contains(res.Detail, w) {
					t.Errorf("detail %q does not name %q", res.Detail, w)
				}
			}
		})
	}
}

func TestBadSpec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Spec{
		"env without =":    {Env: []string{"NOPE"}},
		"empty env key":    {Env: []string{"=x"}},
		"empty argument":   {Args: []string{""}},
		"relative guest":   {Mounts: []job.Mount{{Host: dir, Guest: "data"}}},
		"missing host dir": {Mounts: []job.Mount{{Host: dir + "/nope", Guest: "/data"}}},
		"twice":            {Mounts: []job.Mount{{Host: dir, Guest: "/d"}, {Host: dir, Guest: "/d/"}}},
		"ro inside rw":     {Mounts: []job.Mount{{Host: dir + "/sub", Guest: "/ro"}, {Host: dir, Guest: "/rw", Writable: true}}},
		"ro same as rw":    {Mounts: []job.Mount{{Host: dir, Guest: "/ro"}, {Host: dir, Guest: "/rw", Writable: true}}},
	} {
		s.Module = guests["probe"]
		if _, err := shared.Run(context.Background(), s); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%s: err = %v, want ErrInvalidSpec", name, err)
		}
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	t.Run("go bomb", func(t *testing.T) {
		t.Parallel()
		s := probe("bomb")
		s.Limits.Memory = 64 << 20
		res := run(t, s)
		if res.Reason != job.Memory {
			t.Errorf("got %s %d %q, want memory", res.Reason, res.ExitCode, res.Stderr)
		}
	})
	t.Run("larger declared maximum still capped", func(t *testing.T) {
		t.Parallel()
		// memory 1..65536 pages; grow by 8192 pages (512 MiB); unreachable if it failed.
		body := asm.Cat(asm.OpI32Const(8192), asm.OpMemoryGrow(), asm.OpI32Const(-1), asm.OpI32Eq(), asm.OpIf(), asm.OpUnreachable, asm.OpEnd())
		bin := asm.Module(false, []string{"_start"}, [][]byte{body}, map[string]int{"_start": 0}, []int64{1, 65536})
		res := run(t, Spec{Module: bin})
		if res.Reason != job.Memory {
			t.Errorf("got %s %d %q, want memory", res.Reason, res.ExitCode, res.Detail)
		}
		s := Spec{Module: bin, Limits: job.Limits{Memory: 1 << 30}}
		if res := run(t, s); !res.OK() {
			t.Errorf("with a 1 GiB limit: got %s %d %q, want ok", res.Reason, res.ExitCode, res.Detail)
		}
	})
	t.Run("initial memory over the limit", func(t *testing.T) {
		t.Parallel()
		bin := asm.Module(false, []string{"_start"}, [][]byte{nil}, map[string]int{"_start": 0}, []int64{8192, -1})
		if res := run(t, Spec{Module: bin}); res.Reason != job.Memory {
			t.Errorf("got %s %d %q, want memory", res.Reason, res.ExitCode, res.Detail)
		}
	})
}

// blockingReader never returns until closed.
type blockingReader struct{ done chan struct{} }

func (b blockingReader) Read([]byte) (int, error) { <-b.done; return 0, io.EOF }

func TestTimeout(t *testing.T) {
	t.Parallel()
	stdin := blockingReader{make(chan struct{})}
	t.Cleanup(func() { close(stdin.done) })
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	for name, s := range map[string]Spec{
		"infinite loop":     probe("forever"),
		"sleeping":          probe("sleep"),
		"blocked on stdin":  {Module: guests["probe"], Args: []string{"cat"}, Streams: job.Streams{Stdin: stdin}},
		"blocked on a pipe": {Module: guests["probe"], Args: []string{"cat"}, Streams: job.Streams{Stdin: pr}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s.Limits.Timeout = 300 * time.Millisecond
			done := make(chan *job.Result, 1)
			go func() { done <- run(t, s) }()
			select {
			case res := <-done:
				if res.Reason != job.Timeout || res.ExitCode != job.TimeoutExit {
					t.Errorf("got %s %d, want timeout %d", res.Reason, res.ExitCode, job.TimeoutExit)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the timeout did not stop the guest")
			}
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := shared.Run(ctx, probe("sleep"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != job.Cancelled {
		t.Errorf("got %s, want cancelled", res.Reason)
	}
}

func TestOutputFlood(t *testing.T) {
	t.Parallel()
	s := probe("flood")
	s.Limits.Output = 64 << 10
	res := run(t, s)
	if res.Reason != job.OutputCap || !res.Truncated || len(res.Stdout) != 64<<10 {
		t.Errorf("got %s truncated=%v len=%d, want output cap at %d", res.Reason, res.Truncated, len(res.Stdout), 64<<10)
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("line\n", 10000)
	pr, pw := io.Pipe()
	go func() { io.WriteString(pw, in); pw.Close() }()
	for _, r := range []io.Reader{strings.NewReader(in), pr} {
		res := run(t, Spec{Module: guests["probe"], Args: []string{"cat"}, Streams: job.Streams{Stdin: r}})
		if !res.OK() || string(res.Stdout) != in {
			t.Errorf("cat: %s %d, %d bytes out, want %d", res.Reason, res.ExitCode, len(res.Stdout), len(in))
		}
	}
}

func TestClocksAndRandomness(t *testing.T) {
	t.Parallel()
	once := func(det bool, what string) string {
		s := probe(what)
		s.Deterministic = det
		return string(run(t, s).Stdout)
	}
	if a, b := once(true, "rand"), once(true, "rand"); a != b {
		t.Errorf("deterministic rand differs: %q %q", a, b)
	}
	if a, b := once(true, "clock"), once(true, "clock"); a != b {
		t.Errorf("deterministic clock differs: %q %q", a, b)
	}
	if a, b := once(false, "rand"), once(false, "rand"); a == b {
		t.Errorf("real rand repeats: %q", a)
	}
	now := time.Now().UnixNano()
	var got int64
	for _, c := range strings.TrimSpace(once(false, "clock")) {
		got = got*10 + int64(c-'0')
	}
	if d := got - now; d < -time.Hour.Nanoseconds() || d > time.Hour.Nanoseconds() {
		t.Errorf("real clock %d is far from the host's %d", got, now)
	}
}

// TestConcurrent runs many instances of the same modules at once (run it
// with -race).
func TestConcurrent(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := probe("args", fmtInt(i))
			if i%2 == 1 {
				s = Spec{Module: guests["hello"]}
			}
			res, err := shared.Run(context.Background(), s)
			if err != nil || !res.OK() {
				t.Errorf("run %d: %v %+v", i, err, res)
			}
		}()
	}
	wg.Wait()
}

func TestClosed(t *testing.T) {
	t.Parallel()
	e, err := New(context.Background(), WithCacheDir(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background(), Spec{Module: guests["hello"]}); !errors.Is(err, ErrClosed) {
		t.Errorf("err = %v, want ErrClosed", err)
	}
}

// TestPathChanged: a module given by path is compiled again when the file
// changes, although unchanged files are not even read again.
func TestPathChanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.wasm")
	if err := os.WriteFile(path, guests["hello"], 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(t, Spec{Path: path}); string(res.Stdout) != "hello, world\n" {
		t.Fatalf("hello: %q", res.Stdout)
	}
	if err := os.WriteFile(path, guests["probe"], 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(t, Spec{Path: path, Args: []string{"exit", "9"}}); res.ExitCode != 9 {
		t.Errorf("after rewrite: got %s %d, want exit 9 from the new module", res.Reason, res.ExitCode)
	}
}

// TestModuleBytesChanged: a caller that rewrites its Module slice in place
// between runs gets the new module, not the one compiled from the old bytes
// (the executor finds compiled modules by comparing bytes, never by the
// slice).
func TestModuleBytesChanged(t *testing.T) {
	t.Parallel()
	e, err := New(context.Background(), WithCacheDir(""))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	exit := func(code int64) []byte {
		return asm.Module(true, []string{"start"}, [][]byte{asm.Cat(asm.OpI32Const(code), asm.OpCall(0))}, map[string]int{"_start": 1}, nil)
	}
	bin := exit(21)
	for _, code := range []int64{21, 22, 21, 23} {
		copy(bin, exit(code)) // same length: one byte differs
		for range 2 {
			res, err := e.Run(context.Background(), Spec{Module: bin})
			if err != nil || res.ExitCode != int(code) {
				t.Fatalf("module exiting %d: got %v %+v", code, err, res)
			}
		}
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// TestOpenFileFlood: a guest opening a file without end gets an error once
// the run holds maxOpen files (every one a descriptor of this process),
// and they are all closed when the run ends.
func TestOpenFileFlood(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	res := run(t, Spec{Module: guests["probe"], Args: []string{"open", "100000", "/m/f"},
		Mounts: []job.Mount{{Host: dir, Guest: "/m"}}})
	t.Logf("the guest: %s", res.Stdout)
	var opened int
	var rest string
	if _, err := fmt.Sscanf(string(res.Stdout), "%d %s", &opened, &rest); err != nil || opened != maxOpen-1 || rest == "<nil>" {
		t.Errorf("the guest opened %q, want %d files (the mount's root is one more) and an error", res.Stdout, maxOpen-1)
	}
	if after := openFDs(t); after > before+8 {
		t.Errorf("%d descriptors open after the run, %d before", after, before)
	}
}
