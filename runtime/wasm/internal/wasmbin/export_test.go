package wasmbin

// What the tests (package wasmbin_test: they assemble their modules with
// wasmtest, which is built on AppendSleb) use of this package's insides.

// PackGap is packGap.
const PackGap = packGap

// DataCount returns how many segments bin's data section holds.
func DataCount(bin []byte) int {
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

// OnlyMemorySections reports whether bin holds no sections but custom,
// import, memory, export and data ones, none declaring more items than it
// has bytes.
func OnlyMemorySections(bin []byte) bool {
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
