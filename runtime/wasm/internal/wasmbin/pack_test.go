package wasmbin_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ccrun/ccrun/runtime/wasm/internal/asm"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"
)

// memoryAfterInit instantiates bin without running anything (no start
// function) in wazero's interpreter, with WASI and env.memory (one page,
// every byte 0xAA) to import, and returns the bytes of its exported memory
// "memory".
// err is wazero's when compiling or instantiating fails.
func memoryAfterInit(t testing.TB, bin []byte) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	fill := bytes.Repeat([]byte{0xaa}, 65536)
	env := asm.Cat([]byte("\x00asm\x01\x00\x00\x00"),
		asm.Section(5, asm.Vec([]byte{0, 1})),
		asm.Section(7, asm.Vec(asm.Cat(asm.Str("memory"), []byte{2, 0}))),
		asm.Section(11, asm.Vec(asm.Cat([]byte{0}, asm.OpI32Const(0), asm.OpEnd(), asm.Uleb(uint64(len(fill))), fill))))
	if _, err := rt.InstantiateWithConfig(ctx, env, wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatalf("env module: %v", err)
	}
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.CompileModule(ctx, bin)
	if err != nil {
		return nil, err
	}
	m, err := rt.InstantiateModule(ctx, mod, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, err
	}
	mem := m.ExportedMemory("memory")
	if mem == nil {
		return nil, nil
	}
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		t.Fatal("memory read")
	}
	return bytes.Clone(b), nil
}

// segment is an active segment of memory 0 at offset off.
func segment(off int64, data string) []byte {
	return asm.Cat([]byte{0}, asm.OpI32Const(off), asm.OpEnd(), asm.Str(data))
}

// dataModule is a module with a memory of pages pages (defined and
// exported; imported from env.memory when pages < 0), the extra sections
// given (id and body, placed before the data section), and a data section
// of segs.
func dataModule(pages int, extra [][2][]byte, segs ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	if pages < 0 {
		out = append(out, asm.Section(2, asm.Vec(asm.Cat(asm.Str("env"), asm.Str("memory"), []byte{2, 0}, asm.Uleb(1))))...)
	} else {
		out = append(out, asm.Section(5, asm.Vec(asm.Cat([]byte{0}, asm.Uleb(uint64(pages)))))...)
	}
	out = append(out, asm.Section(7, asm.Vec(asm.Cat(asm.Str("memory"), []byte{2, 0})))...)
	for _, x := range extra {
		out = append(out, asm.Section(x[0][0], x[1])...)
	}
	return append(out, asm.Section(11, asm.Vec(segs...))...)
}

// samePacked checks that Pack rewrote bin into want segments and that
// the memory a guest starts with, or wazero's refusal, is the same.
func samePacked(t *testing.T, bin []byte, want int) {
	t.Helper()
	packed := wasmbin.Pack(bin)
	if got := wasmbin.DataCount(packed); got != want {
		t.Fatalf("%d segments after packing, want %d (before: %d)", got, want, wasmbin.DataCount(bin))
	}
	m1, err1 := memoryAfterInit(t, bin)
	m2, err2 := memoryAfterInit(t, packed)
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("original: %v; packed: %v", err1, err2)
	}
	if !bytes.Equal(m1, m2) {
		t.Fatalf("the packed module starts with another memory")
	}
}

func TestPackDataGoGuests(t *testing.T) {
	for _, name := range []string{"hello", "escape", "probe"} {
		t.Run(name, func(t *testing.T) {
			bin := guests[name]
			if n := wasmbin.DataCount(bin); n < 1000 {
				t.Fatalf("only %d data segments: not the Go linker's layout this test is about", n)
			}
			samePacked(t, bin, 1)
			if m, err := memoryAfterInit(t, wasmbin.Pack(bin)); err != nil || len(m) == 0 {
				t.Fatalf("the packed module: %v, %d bytes of memory", err, len(m))
			}
		})
	}
}

func TestPackDataJoins(t *testing.T) {
	for _, tc := range []struct {
		name string
		segs [][]byte
		want int
	}{
		{"adjacent", [][]byte{segment(0, "ab"), segment(2, "cd")}, 1},
		{"out of order", [][]byte{segment(100, "late"), segment(10, "early"), segment(50, "mid")}, 1},
		{"gap of packGap", [][]byte{segment(0, "a"), segment(1+wasmbin.PackGap, "b")}, 1},
		{"gap past packGap", [][]byte{segment(0, "a"), segment(2+wasmbin.PackGap, "b"), segment(3+wasmbin.PackGap, "c")}, 2},
		{"empty segments", [][]byte{segment(5, ""), segment(5, "x"), segment(9, "")}, 1},
		{"negative offset is high memory", [][]byte{segment(0, "a"), segment(-1, "z")}, 2},
		{"last segment out of bounds", [][]byte{segment(65000, "a"), segment(65535, "zz")}, 1},
		{"empty segment past the end", [][]byte{segment(65530, "a"), segment(65537, "")}, 1},
		{"empty segment far past the end", [][]byte{segment(0, "a"), segment(1<<20, "")}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) { samePacked(t, dataModule(1, nil, tc.segs...), tc.want) })
	}
}

func TestPackDataLeavesAlone(t *testing.T) {
	two := [][]byte{segment(0, "ab"), segment(4, "cd")}
	for _, tc := range []struct {
		name string
		bin  []byte
	}{
		{"overlapping segments: the later one wins", dataModule(1, nil, segment(0, "abcd"), segment(2, "XY"))},
		{"same offset twice", dataModule(1, nil, segment(8, "a"), segment(8, "b"))},
		{"imported memory: the gaps hold its bytes", dataModule(-1, nil, two...)},
		{"data count section: code may name segments", dataModule(1, [][2][]byte{{{12}, asm.Uleb(2)}}, two...)},
		{"passive segment", dataModule(1, nil, segment(0, "ab"), asm.Cat([]byte{1}, asm.Str("cd")))},
		{"explicit memory index", dataModule(1, nil, segment(0, "ab"), asm.Cat([]byte{2, 0}, asm.OpI32Const(4), asm.OpEnd(), asm.Str("cd")))},
		{"offset from a global", dataModule(1, nil, segment(0, "ab"), asm.Cat([]byte{0, 0x23, 0}, asm.OpEnd(), asm.Str("cd")))},
		{"one segment", dataModule(1, nil, segment(0, "abcd"))},
		{"segments far apart", dataModule(1, nil, segment(0, "a"), segment(10*wasmbin.PackGap, "b"))},
		{"two data sections", append(dataModule(1, nil, two...), asm.Section(11, asm.Vec(two...))...)},
		{"truncated", dataModule(1, nil, two...)[:40]},
		{"not wasm", []byte("#!/bin/sh\necho hi\n")},
		{"empty", nil},
		{"segment count too large", append(dataModule(1, nil), asm.Section(11, asm.Cat(asm.Uleb(1<<30), segment(0, "a")))...)},
		{"padded offset with stray high bits", dataModule(1, nil, segment(0, "a"), asm.Cat([]byte{0, 0x41, 0x84, 0x80, 0x80, 0x80, 0x10}, asm.OpEnd(), asm.Str("b")))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wasmbin.Pack(tc.bin); !bytes.Equal(got, tc.bin) {
				t.Fatalf("rewritten:\n%x\nwant unchanged:\n%x", got, tc.bin)
			}
		})
	}
}

// TestPackDataImportsOtherThanMemory: functions, tables and globals
// imported do not stop packing.
func TestPackDataImportsOtherThanMemory(t *testing.T) {
	imports := asm.Vec(
		asm.Cat(asm.Str("wasi_snapshot_preview1"), asm.Str("proc_exit"), []byte{0x00}, asm.Uleb(0)),
		asm.Cat(asm.Str("env"), asm.Str("table"), []byte{0x01, 0x70, 0x01}, asm.Uleb(1), asm.Uleb(2)),
		asm.Cat(asm.Str("env"), asm.Str("g"), []byte{0x03, 0x7f, 0x00}),
	)
	bin := asm.Cat([]byte("\x00asm\x01\x00\x00\x00"),
		asm.Section(1, asm.Vec([]byte{0x60, 1, 0x7f, 0})),
		asm.Section(2, imports),
		asm.Section(5, asm.Vec([]byte{0, 1})),
		asm.Section(11, asm.Vec(segment(0, "a"), segment(1, "b"))))
	if got := wasmbin.DataCount(wasmbin.Pack(bin)); got != 1 {
		t.Fatalf("%d segments, want 1", got)
	}
	// A memory among other imports still stops it.
	imports = asm.Vec(
		asm.Cat(asm.Str("wasi_snapshot_preview1"), asm.Str("proc_exit"), []byte{0x00}, asm.Uleb(0)),
		asm.Cat(asm.Str("env"), asm.Str("memory"), []byte{0x02, 0x00}, asm.Uleb(1)),
	)
	bin = asm.Cat([]byte("\x00asm\x01\x00\x00\x00"),
		asm.Section(1, asm.Vec([]byte{0x60, 1, 0x7f, 0})),
		asm.Section(2, imports),
		asm.Section(11, asm.Vec(segment(0, "a"), segment(1, "b"))))
	if got := wasmbin.Pack(bin); !bytes.Equal(got, bin) {
		t.Fatal("a module importing its memory was rewritten")
	}
}

// FuzzPackData: whatever the bytes, Pack does not panic, and when it
// rewrites a module, wazero accepts and instantiates the rewritten one
// exactly when it does the original, into the same memory.
func FuzzPackData(f *testing.F) {
	f.Add(dataModule(1, nil, segment(0, "ab"), segment(4, "cd")))
	f.Add(dataModule(1, nil, segment(100, "late"), segment(10, "early")))
	f.Add(dataModule(1, nil, segment(0, "abcd"), segment(2, "XY")))
	f.Add(dataModule(-1, nil, segment(0, "ab"), segment(4, "cd")))
	f.Add(dataModule(2, nil, segment(65530, "abcdefgh"), segment(65539, "x"), segment(131071, "yz")))
	f.Fuzz(func(t *testing.T, bin []byte) {
		packed := wasmbin.Pack(bin)
		if bytes.Equal(packed, bin) {
			return
		}
		if wasmbin.DataCount(packed) >= wasmbin.DataCount(bin) {
			t.Fatalf("rewritten without fewer segments")
		}
		if !wasmbin.OnlyMemorySections(bin) {
			return // wazero reads huge declared counts slowly: not what this fuzzes
		}
		m1, err1 := memoryAfterInit(t, bin)
		m2, err2 := memoryAfterInit(t, packed)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(m1, m2) {
			t.Fatalf("original %s / packed %s", describe(m1, err1), describe(m2, err2))
		}
	})
}

func describe(mem []byte, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("%d bytes of memory", len(mem))
}

// BenchmarkPackData: joining the Go hello module's data segments, paid once
// per process and module.
func BenchmarkPackData(b *testing.B) {
	bin := guests["hello"]
	b.SetBytes(int64(len(bin)))
	for b.Loop() {
		wasmbin.Pack(bin)
	}
}
