package wasmbin_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/ccrun/ccrun/runtime/wasm/internal/asm"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// TestGuardKeepsModules: the Go guests pass the guard, and the guarded
// module (its tables given a maximum) starts with the same memory.
func TestGuardKeepsModules(t *testing.T) {
	for _, name := range []string{"hello", "escape", "probe"} {
		bin := guests[name]
		g, err := wasmbin.Guard(bin)
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

// FuzzGuard: Guard does not panic, and a module it lets through does not
// make wazero allocate much more than the module's size.
func FuzzGuard(f *testing.F) {
	for _, seed := range [][]byte{
		asm.StartModule(nil, asm.Cat(asm.Uleb(1), asm.Uleb(3), []byte{0x7f}), nil),
		asm.Cat(asm.Header, asm.Section(7, asm.Cat(asm.Uleb(1), asm.Str("x"), []byte{0, 0}))),
		asm.Cat(asm.Header, asm.Section(4, asm.Vec([]byte{0x70, 0, 1})), asm.Section(9, asm.Cat(asm.Uleb(1), []byte{0}, asm.OpI32Const(0), asm.OpEnd(), asm.Vec(asm.Uleb(0))))),
		asm.StartModule([][2][]byte{{{0}, asm.Cat(asm.Str("name"), []byte{1}, asm.Uleb(4), asm.Uleb(1), asm.Uleb(0), asm.Str("f"))}}, asm.Vec(), nil),
	} {
		f.Add(seed[len(asm.Header):]) // the fuzzer varies what follows the header
	}
	f.Fuzz(func(t *testing.T, bin []byte) {
		g, err := wasmbin.Guard(append(append([]byte(nil), asm.Header...), bin...))
		if err != nil {
			return
		}
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer rt.Close(ctx)
		if n := wasmtest.Allocated(func() { _, _ = rt.CompileModule(ctx, g) }); n > 64<<20+100*uint64(len(g)) {
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
		if _, err := wasmbin.Guard(bin); err != nil {
			b.Fatal(err)
		}
	}
}
