// Package asm is a tiny assembler of WebAssembly modules, for the tests
// of runtime/wasm and its internal packages: the hand-made modules of the
// error and limit tests. It is for tests only.
package asm

import "github.com/ccrun/ccrun/runtime/wasm/internal/wasmbin"

// Header is the first 8 bytes of every module.
var Header = []byte("\x00asm\x01\x00\x00\x00")

// Uleb is n as unsigned LEB128.
func Uleb(n uint64) []byte {
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

// Sleb is n as signed LEB128.
func Sleb(n int64) []byte { return wasmbin.AppendSleb(nil, n) }

// Str is s with its length before it: a name.
func Str(s string) []byte { return append(Uleb(uint64(len(s))), s...) }

// Vec is items with their count before them.
func Vec(items ...[]byte) []byte {
	b := Uleb(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

// Section is the section id holding body.
func Section(id byte, body []byte) []byte {
	return append(append([]byte{id}, Uleb(uint64(len(body)))...), body...)
}

// Cat joins parts.
func Cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// Module assembles a module whose functions all have type () -> (), except
// that it may import WASI's proc_exit (i32) -> () as function 0. bodies are
// the code of the defined functions (without locals and end), names their
// names, exports maps an export name to a function index, and memory, when
// not nil, is {min, max} pages (max < 0: none).
func Module(procExit bool, names []string, bodies [][]byte, exports map[string]int, memory []int64) []byte {
	types := Vec([]byte{0x60, 0, 0}, []byte{0x60, 1, 0x7f, 0})
	out := Cat([]byte("\x00asm\x01\x00\x00\x00"), Section(1, types))
	nimp := 0
	if procExit {
		out = append(out, Section(2, Vec(Cat(Str("wasi_snapshot_preview1"), Str("proc_exit"), []byte{0x00}, Uleb(1))))...)
		nimp = 1
	}
	funcs := make([][]byte, len(bodies))
	for i := range bodies {
		funcs[i] = Uleb(0)
	}
	out = append(out, Section(3, Vec(funcs...))...)
	if memory != nil {
		lim := Cat([]byte{0}, Uleb(uint64(memory[0])))
		if memory[1] >= 0 {
			lim = Cat([]byte{1}, Uleb(uint64(memory[0])), Uleb(uint64(memory[1])))
		}
		out = append(out, Section(5, Vec(lim))...)
	}
	var exps [][]byte
	for name, idx := range exports {
		exps = append(exps, Cat(Str(name), []byte{0x00}, Uleb(uint64(idx))))
	}
	if memory != nil {
		exps = append(exps, Cat(Str("memory"), []byte{0x02}, Uleb(0)))
	}
	out = append(out, Section(7, Vec(exps...))...)
	codes := make([][]byte, len(bodies))
	for i, b := range bodies {
		body := Cat([]byte{0}, b, []byte{0x0b})
		codes[i] = append(Uleb(uint64(len(body))), body...)
	}
	out = append(out, Section(10, Vec(codes...))...)
	var nm [][]byte
	for i, n := range names {
		nm = append(nm, Cat(Uleb(uint64(nimp+i)), Str(n)))
	}
	sub := Vec(nm...)
	out = append(out, Section(0, Cat(Str("name"), []byte{1}, Uleb(uint64(len(sub))), sub))...)
	return out
}

// StartModule is a module whose _start (type () -> ()) has locals and
// body, with the sections extra (id and body) before the code section.
func StartModule(extra [][2][]byte, locals, body []byte) []byte {
	out := Cat(Header, Section(1, Vec([]byte{0x60, 0, 0})), Section(3, Vec(Uleb(0))))
	for _, x := range extra {
		if x[0][0] < 7 {
			out = append(out, Section(x[0][0], x[1])...)
		}
	}
	out = append(out, Section(7, Vec(Cat(Str("_start"), []byte{0x00}, Uleb(0))))...)
	for _, x := range extra {
		if x[0][0] >= 7 {
			out = append(out, Section(x[0][0], x[1])...)
		}
	}
	code := Cat(locals, body, OpEnd())
	return append(out, Section(10, Vec(Cat(Uleb(uint64(len(code))), code)))...)
}

// Opcodes: an instruction's bytes.
var (
	OpUnreachable = []byte{0x00}
	OpDrop        = []byte{0x1a}
)

// OpCall is call i.
func OpCall(i int) []byte { return Cat([]byte{0x10}, Uleb(uint64(i))) }

// OpI32Const is i32.const n.
func OpI32Const(n int64) []byte { return Cat([]byte{0x41}, Sleb(n)) }

// OpI32Load is i32.load at offset off (alignment 4).
func OpI32Load(off int) []byte { return Cat([]byte{0x28, 2}, Uleb(uint64(off))) }

// OpMemoryGrow is memory.grow of memory 0.
func OpMemoryGrow() []byte { return []byte{0x40, 0} }

// OpIf is if with no result.
func OpIf() []byte { return []byte{0x04, 0x40} }

// OpEnd is end.
func OpEnd() []byte { return []byte{0x0b} }

// OpI32Eq is i32.eq.
func OpI32Eq() []byte { return []byte{0x46} }
