package wasm

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/ccrun/ccrun/runtime/job"
)

// header is the first 8 bytes of every module.
var header = []byte("\x00asm\x01\x00\x00\x00")

// startModule is a module whose _start (type () -> ()) has locals and
// body, with the sections extra (id and body) before the code section.
func startModule(extra [][2][]byte, locals, body []byte) []byte {
	out := cat(header, section(1, vec([]byte{0x60, 0, 0})), section(3, vec(uleb(0))))
	for _, x := range extra {
		if x[0][0] < 7 {
			out = append(out, section(x[0][0], x[1])...)
		}
	}
	out = append(out, section(7, vec(cat(str("_start"), []byte{0x00}, uleb(0))))...)
	for _, x := range extra {
		if x[0][0] >= 7 {
			out = append(out, section(x[0][0], x[1])...)
		}
	}
	code := cat(locals, body, opEnd())
	return append(out, section(10, vec(cat(uleb(uint64(len(code))), code)))...)
}

// allocated returns how many bytes f allocated on the Go heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestGuardRefuses: modules of a few bytes that declare counts or lengths
// wazero would allocate by (tens of gigabytes: the Go runtime ends the
// process, which no recover catches) are refused before wazero sees them,
// as invalid modules, without allocating.
func TestGuardRefuses(t *testing.T) {
	noLocals := vec()
	huge := uleb(0xfffffff0)
	for _, tc := range []struct {
		name string
		bin  []byte
	}{
		{"four billion locals", startModule(nil, cat(uleb(1), huge, []byte{0x7f}), nil)},
		{"locals over the limit", startModule(nil, cat(uleb(2), uleb(maxLocals), []byte{0x7f}, uleb(1), []byte{0x7e}), nil)},
		{"export count", cat(header, section(7, cat(huge, str("x"), []byte{0, 0})))},
		{"export name length", cat(header, section(7, cat(uleb(1), huge, []byte("x"))))},
		{"import module name length", cat(header, section(2, cat(uleb(1), huge)))},
		{"type parameter count", cat(header, section(1, cat(uleb(1), []byte{0x60}, huge)))},
		{"code entry size", cat(header, section(1, vec([]byte{0x60, 0, 0})), section(3, vec(uleb(0))), section(10, cat(uleb(1), huge, []byte{0, 0x0b})))},
		{"data segment length", cat(header, section(5, vec([]byte{0, 1})), section(11, cat(uleb(1), []byte{0}, opI32Const(0), opEnd(), huge, []byte("ab"))))},
		{"element vector count", cat(header, section(4, vec([]byte{0x70, 0, 1})), section(9, cat(uleb(1), []byte{0}, opI32Const(0), opEnd(), huge)))},
		{"function names count", startModule([][2][]byte{{{0}, cat(str("name"), []byte{1}, uleb(6), huge, []byte{0})}}, noLocals, nil)},
		{"local names count", startModule([][2][]byte{{{0}, cat(str("name"), []byte{2}, uleb(7), uleb(1), uleb(0), huge)}}, noLocals, nil)},
		{"tables over the budget", cat(header, section(4, vec(cat([]byte{0x70, 0}, uleb(tableBudget)), cat([]byte{0x70, 0}, uleb(1)))))},
		{"unknown section", cat(header, section(42, []byte{1, 2, 3}))},
		{"unknown constant opcode", cat(header, section(6, vec(cat([]byte{0x7f, 0}, []byte{0x20, 0}, opEnd()))))},
		{"bytes left in a section", cat(header, section(3, cat(vec(uleb(0)), []byte{9, 9})))},
		{"table section twice", cat(header, section(4, vec([]byte{0x70, 0, 1})), section(4, vec([]byte{0x70, 0, 1})))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = shared.Run(context.Background(), Spec{Module: tc.bin}) })
			if !errors.Is(err, ErrInvalidModule) {
				t.Errorf("err = %v, want ErrInvalidModule", err)
			}
			if n > 64<<20 {
				t.Errorf("%d MiB allocated to refuse %d bytes", n>>20, len(tc.bin))
			}
			t.Log(err)
		})
	}
}

// TestGuardTruncated: a module that ends inside a section is still
// ErrTruncated.
func TestGuardTruncated(t *testing.T) {
	bin := guests["hello"]
	for _, n := range []int{9, 100, len(bin) / 2, len(bin) - 1} {
		if _, err := shared.Run(context.Background(), Spec{Module: bin[:n]}); !errors.Is(err, ErrTruncated) {
			t.Errorf("%d of %d bytes: %v, want ErrTruncated", n, len(bin), err)
		}
	}
}

// TestTableGrowBomb: a guest growing a table by four billion elements (on
// the host: outside the memory limit) gets -1, the failure the
// specification allows any table.grow, and the host lives; a grow within
// the budget works.
func TestTableGrowBomb(t *testing.T) {
	t.Parallel()
	grow := func(by int64, want int64) []byte {
		// ref.null func; i32.const by; table.grow 0; i32.const want;
		// i32.ne; if unreachable end
		body := cat([]byte{0xd0, 0x70}, opI32Const(by), []byte{0xfc, 0x0f, 0x00}, opI32Const(want), []byte{0x47}, opIf(), opUnreachable, opEnd())
		return startModule([][2][]byte{{{4}, vec([]byte{0x70, 0x00, 0x00})}}, vec(), body)
	}
	for _, tc := range []struct {
		name   string
		by     int64
		result int64 // what table.grow must return
	}{
		{"four billion", -16, -1},
		{"past the budget", tableBudget + 1, -1},
		{"within the budget", 1000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := shared.Run(context.Background(), Spec{Module: grow(tc.by, tc.result)})
			if err != nil || res.Reason != job.Exit || res.ExitCode != 0 {
				t.Fatalf("got %v %+v, want table.grow to return %d and the guest to exit 0", err, res, tc.result)
			}
		})
	}
}

// TestGuardKeepsModules: the Go guests pass the guard, and the guarded
// module (its tables given a maximum) starts with the same memory.
func TestGuardKeepsModules(t *testing.T) {
	for _, name := range []string{"hello", "escape", "probe"} {
		bin := guests[name]
		g, err := guard(bin)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m1, err1 := memoryAfterInit(t, bin)
		m2, err2 := memoryAfterInit(t, g)
		if err1 != nil || err2 != nil || !bytes.Equal(m1, m2) {
			t.Errorf("%s: %v / %v, or another memory", name, err1, err2)
		}
	}
}

// FuzzGuard: guard does not panic, and a module it lets through does not
// make wazero allocate much more than the module's size.
func FuzzGuard(f *testing.F) {
	for _, seed := range [][]byte{
		startModule(nil, cat(uleb(1), uleb(3), []byte{0x7f}), nil),
		cat(header, section(7, cat(uleb(1), str("x"), []byte{0, 0}))),
		cat(header, section(4, vec([]byte{0x70, 0, 1})), section(9, cat(uleb(1), []byte{0}, opI32Const(0), opEnd(), vec(uleb(0))))),
		startModule([][2][]byte{{{0}, cat(str("name"), []byte{1}, uleb(4), uleb(1), uleb(0), str("f"))}}, vec(), nil),
	} {
		f.Add(seed[len(header):]) // the fuzzer varies what follows the header
	}
	f.Fuzz(func(t *testing.T, bin []byte) {
		g, err := guard(append(append([]byte(nil), header...), bin...))
		if err != nil {
			return
		}
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer rt.Close(ctx)
		if n := allocated(func() { _, _ = rt.CompileModule(ctx, g) }); n > 64<<20+100*uint64(len(g)) {
			t.Fatalf("%d MiB allocated for a module of %d bytes", n>>20, len(g))
		}
	})
}

// BenchmarkGuard: the guard's walk of the Go hello module, paid once per
// process and module.
func BenchmarkGuard(b *testing.B) {
	bin := guests["hello"]
	b.SetBytes(int64(len(bin)))
	for b.Loop() {
		if _, err := guard(bin); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCompileBomb: a module built to compile slowly (a br_table of tens of
// thousands of targets: wazero's time grows faster than the table) ends the
// run as a timeout once the compilation has had its time, instead of
// holding the caller; the compilation goes on in the background, and the
// next run, with time to wait, gets the compiled module.
func TestCompileBomb(t *testing.T) {
	e, err := New(context.Background(), WithCacheDir(""))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	e.minCompile = 10 * time.Millisecond
	const targets = 60_000
	body := cat([]byte{0x02, 0x40}, opI32Const(0), []byte{0x0e}, uleb(targets), make([]byte, targets), []byte{0x00}, opEnd())
	bin := startModule(nil, vec(), body)
	t0 := time.Now()
	res, err := e.Run(context.Background(), Spec{Module: bin, Limits: job.Limits{Timeout: 10 * time.Millisecond}})
	if err != nil || res.Reason != job.Timeout || !strings.Contains(res.Detail, "compiling") {
		t.Fatalf("got %v %+v, want a timeout while compiling", err, res)
	}
	t.Logf("the run ended after %s", time.Since(t0))
	res, err = e.Run(context.Background(), Spec{Module: bin})
	if err != nil || !res.OK() {
		t.Fatalf("the next run: %v %+v", err, res)
	}
	t.Logf("compiled %s after the first run began", time.Since(t0))
}
