package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/asm"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// TestGuardRefuses: modules of a few bytes that declare counts or lengths
// wazero would allocate by (tens of gigabytes: the Go runtime ends the
// process, which no recover catches) are refused before wazero sees them,
// as invalid modules, without allocating.
func TestGuardRefuses(t *testing.T) {
	noLocals := asm.Vec()
	huge := asm.Uleb(0xfffffff0)
	for _, tc := range []struct {
		name string
		bin  []byte
	}{
		{"four billion locals", asm.StartModule(nil, asm.Cat(asm.Uleb(1), huge, []byte{0x7f}), nil)},
		{"locals over the limit", asm.StartModule(nil, asm.Cat(asm.Uleb(2), asm.Uleb(wasmbin.MaxLocals), []byte{0x7f}, asm.Uleb(1), []byte{0x7e}), nil)},
		{"export count", asm.Cat(asm.Header, asm.Section(7, asm.Cat(huge, asm.Str("x"), []byte{0, 0})))},
		{"export name length", asm.Cat(asm.Header, asm.Section(7, asm.Cat(asm.Uleb(1), huge, []byte("x"))))},
		{"import module name length", asm.Cat(asm.Header, asm.Section(2, asm.Cat(asm.Uleb(1), huge)))},
		{"type parameter count", asm.Cat(asm.Header, asm.Section(1, asm.Cat(asm.Uleb(1), []byte{0x60}, huge)))},
		{"code entry size", asm.Cat(asm.Header, asm.Section(1, asm.Vec([]byte{0x60, 0, 0})), asm.Section(3, asm.Vec(asm.Uleb(0))), asm.Section(10, asm.Cat(asm.Uleb(1), huge, []byte{0, 0x0b})))},
		{"data segment length", asm.Cat(asm.Header, asm.Section(5, asm.Vec([]byte{0, 1})), asm.Section(11, asm.Cat(asm.Uleb(1), []byte{0}, asm.OpI32Const(0), asm.OpEnd(), huge, []byte("ab"))))},
		{"element vector count", asm.Cat(asm.Header, asm.Section(4, asm.Vec([]byte{0x70, 0, 1})), asm.Section(9, asm.Cat(asm.Uleb(1), []byte{0}, asm.OpI32Const(0), asm.OpEnd(), huge)))},
		{"function names count", asm.StartModule([][2][]byte{{{0}, asm.Cat(asm.Str("name"), []byte{1}, asm.Uleb(6), huge, []byte{0})}}, noLocals, nil)},
		{"local names count", asm.StartModule([][2][]byte{{{0}, asm.Cat(asm.Str("name"), []byte{2}, asm.Uleb(7), asm.Uleb(1), asm.Uleb(0), huge)}}, noLocals, nil)},
		{"tables over the budget", asm.Cat(asm.Header, asm.Section(4, asm.Vec(asm.Cat([]byte{0x70, 0}, asm.Uleb(wasmbin.TableBudget)), asm.Cat([]byte{0x70, 0}, asm.Uleb(1)))))},
		{"unknown section", asm.Cat(asm.Header, asm.Section(42, []byte{1, 2, 3}))},
		{"unknown constant opcode", asm.Cat(asm.Header, asm.Section(6, asm.Vec(asm.Cat([]byte{0x7f, 0}, []byte{0x20, 0}, asm.OpEnd()))))},
		{"bytes left in a section", asm.Cat(asm.Header, asm.Section(3, asm.Cat(asm.Vec(asm.Uleb(0)), []byte{9, 9})))},
		{"table section twice", asm.Cat(asm.Header, asm.Section(4, asm.Vec([]byte{0x70, 0, 1})), asm.Section(4, asm.Vec([]byte{0x70, 0, 1})))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := wasmtest.Allocated(func() { _, err = shared.Run(context.Background(), Spec{Module: tc.bin}) })
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
		body := asm.Cat([]byte{0xd0, 0x70}, asm.OpI32Const(by), []byte{0xfc, 0x0f, 0x00}, asm.OpI32Const(want), []byte{0x47}, asm.OpIf(), asm.OpUnreachable, asm.OpEnd())
		return asm.StartModule([][2][]byte{{{4}, asm.Vec([]byte{0x70, 0x00, 0x00})}}, asm.Vec(), body)
	}
	for _, tc := range []struct {
		name   string
		by     int64
		result int64 // what table.grow must return
	}{
		{"four billion", -16, -1},
		{"past the budget", wasmbin.TableBudget + 1, -1},
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
	body := asm.Cat([]byte{0x02, 0x40}, asm.OpI32Const(0), []byte{0x0e}, asm.Uleb(targets), make([]byte, targets), []byte{0x00}, asm.OpEnd())
	bin := asm.StartModule(nil, asm.Vec(), body)
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
