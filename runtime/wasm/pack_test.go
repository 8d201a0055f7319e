package wasm

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
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
	env := cat([]byte("\x00asm\x01\x00\x00\x00"),
		section(5, vec([]byte{0, 1})),
		section(7, vec(cat(str("memory"), []byte{2, 0}))),
		section(11, vec(cat([]byte{0}, opI32Const(0), opEnd(), uleb(uint64(len(fill))), fill))))
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

// dataCount returns how many segments bin's data section holds.
func dataCount(t testing.TB, bin []byte) int {
	t.Helper()
	r := reader{b: bin, off: 8}
	for r.off < len(bin) {
		id := r.byte()
		p := r.bytes(int(r.u32()))
		if id == 11 {
			d := reader{b: p}
			return int(d.u32())
		}
	}
	return 0
}

// segment is an active segment of memory 0 at offset off.
func segment(off int64, data string) []byte {
	return cat([]byte{0}, opI32Const(off), opEnd(), str(data))
}

// dataModule is a module with a memory of pages pages (defined and
// exported; imported from env.memory when pages < 0), the extra sections
// given (id and body, placed before the data section), and a data section
// of segs.
func dataModule(pages int, extra [][2][]byte, segs ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	if pages < 0 {
		out = append(out, section(2, vec(cat(str("env"), str("memory"), []byte{2, 0}, uleb(1))))...)
	} else {
		out = append(out, section(5, vec(cat([]byte{0}, uleb(uint64(pages)))))...)
	}
	out = append(out, section(7, vec(cat(str("memory"), []byte{2, 0})))...)
	for _, x := range extra {
		out = append(out, section(x[0][0], x[1])...)
	}
	return append(out, section(11, vec(segs...))...)
}

// samePacked checks that packData rewrote bin into want segments and that
// the memory a guest starts with, or wazero's refusal, is the same.
func samePacked(t *testing.T, bin []byte, want int) {
	t.Helper()
	packed := packData(bin)
	if got := dataCount(t, packed); got != want {
		t.Fatalf("%d segments after packing, want %d (before: %d)", got, want, dataCount(t, bin))
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
			if n := dataCount(t, bin); n < 1000 {
				t.Fatalf("only %d data segments: not the Go linker's layout this test is about", n)
			}
			samePacked(t, bin, 1)
			if m, err := memoryAfterInit(t, packData(bin)); err != nil || len(m) == 0 {
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
		{"gap of packGap", [][]byte{segment(0, "a"), segment(1+packGap, "b")}, 1},
		{"gap past packGap", [][]byte{segment(0, "a"), segment(2+packGap, "b"), segment(3+packGap, "c")}, 2},
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
		{"data count section: code may name segments", dataModule(1, [][2][]byte{{{12}, uleb(2)}}, two...)},
		{"passive segment", dataModule(1, nil, segment(0, "ab"), cat([]byte{1}, str("cd")))},
		{"explicit memory index", dataModule(1, nil, segment(0, "ab"), cat([]byte{2, 0}, opI32Const(4), opEnd(), str("cd")))},
		{"offset from a global", dataModule(1, nil, segment(0, "ab"), cat([]byte{0, 0x23, 0}, opEnd(), str("cd")))},
		{"one segment", dataModule(1, nil, segment(0, "abcd"))},
		{"segments far apart", dataModule(1, nil, segment(0, "a"), segment(10*packGap, "b"))},
		{"two data sections", append(dataModule(1, nil, two...), section(11, vec(two...))...)},
		{"truncated", dataModule(1, nil, two...)[:40]},
		{"not wasm", []byte("#!/bin/sh\necho hi\n")},
		{"empty", nil},
		{"segment count too large", append(dataModule(1, nil), section(11, cat(uleb(1<<30), segment(0, "a")))...)},
		{"padded offset with stray high bits", dataModule(1, nil, segment(0, "a"), cat([]byte{0, 0x41, 0x84, 0x80, 0x80, 0x80, 0x10}, opEnd(), str("b")))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := packData(tc.bin); !bytes.Equal(got, tc.bin) {
				t.Fatalf("rewritten:\n%x\nwant unchanged:\n%x", got, tc.bin)
			}
		})
	}
}

// TestPackDataImportsOtherThanMemory: functions, tables and globals
// imported do not stop packing.
func TestPackDataImportsOtherThanMemory(t *testing.T) {
	imports := vec(
		cat(str("wasi_snapshot_preview1"), str("proc_exit"), []byte{0x00}, uleb(0)),
		cat(str("env"), str("table"), []byte{0x01, 0x70, 0x01}, uleb(1), uleb(2)),
		cat(str("env"), str("g"), []byte{0x03, 0x7f, 0x00}),
	)
	bin := cat([]byte("\x00asm\x01\x00\x00\x00"),
		section(1, vec([]byte{0x60, 1, 0x7f, 0})),
		section(2, imports),
		section(5, vec([]byte{0, 1})),
		section(11, vec(segment(0, "a"), segment(1, "b"))))
	if got := dataCount(t, packData(bin)); got != 1 {
		t.Fatalf("%d segments, want 1", got)
	}
	// A memory among other imports still stops it.
	imports = vec(
		cat(str("wasi_snapshot_preview1"), str("proc_exit"), []byte{0x00}, uleb(0)),
		cat(str("env"), str("memory"), []byte{0x02, 0x00}, uleb(1)),
	)
	bin = cat([]byte("\x00asm\x01\x00\x00\x00"),
		section(1, vec([]byte{0x60, 1, 0x7f, 0})),
		section(2, imports),
		section(11, vec(segment(0, "a"), segment(1, "b"))))
	if got := packData(bin); !bytes.Equal(got, bin) {
		t.Fatal("a module importing its memory was rewritten")
	}
}

// FuzzPackData: whatever the bytes, packData does not panic, and when it
// rewrites a module, wazero accepts and instantiates the rewritten one
// exactly when it does the original, into the same memory.
func FuzzPackData(f *testing.F) {
	f.Add(dataModule(1, nil, segment(0, "ab"), segment(4, "cd")))
	f.Add(dataModule(1, nil, segment(100, "late"), segment(10, "early")))
	f.Add(dataModule(1, nil, segment(0, "abcd"), segment(2, "XY")))
	f.Add(dataModule(-1, nil, segment(0, "ab"), segment(4, "cd")))
	f.Add(dataModule(2, nil, segment(65530, "abcdefgh"), segment(65539, "x"), segment(131071, "yz")))
	f.Fuzz(func(t *testing.T, bin []byte) {
		packed := packData(bin)
		if bytes.Equal(packed, bin) {
			return
		}
		if dataCount(t, packed) >= dataCount(t, bin) {
			t.Fatalf("rewritten without fewer segments")
		}
		if !onlyMemorySections(bin) {
			return // wazero reads huge declared counts slowly: not what this fuzzes
		}
		m1, err1 := memoryAfterInit(t, bin)
		m2, err2 := memoryAfterInit(t, packed)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(m1, m2) {
			t.Fatalf("original %s / packed %s", describe(m1, err1), describe(m2, err2))
		}
	})
}

// onlyMemorySections reports whether bin holds no sections but custom,
// import, memory, export and data ones, none declaring more items than it
// has bytes.
func onlyMemorySections(bin []byte) bool {
	r := reader{b: bin, off: 8}
	for r.off < len(bin) && !r.bad {
		switch id := r.byte(); id {
		case 0, 2, 5, 7, 11, 12:
			p := r.bytes(int(r.u32()))
			if c := (&reader{b: p}); id != 0 && id != 12 && int(c.u32()) > len(p) {
				return false // a count no section of this size can hold
			}
		default:
			return false
		}
	}
	return true
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
		packData(bin)
	}
}
