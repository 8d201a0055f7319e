package wasmbin

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
)

// packGap is the widest run of zeros Pack writes to join two data
// segments: a wider gap starts a new segment.
const packGap = 4096

// Pack returns bin with its active data segments joined into as few
// as it can, or bin itself when it cannot show that the guest starts with
// the same memory either way.
//
// Go's linker writes its data as one segment per run of non-zero bytes
// (27,695 of them in a hello world); wazero evaluates each segment's offset
// expression at every instantiation, which costs more than copying the
// bytes. Joined, the segments write the same bytes, plus the zeros of the
// gaps between them into a memory that is still all zeros.
//
// That holds when, and Pack rewrites only when: the module defines its
// memory (a memory it imports may hold data in the gaps), every segment is
// active on memory 0 at an i32.const offset, no two segments overlap (so
// the order they are written in does not matter), and there is no data
// count section (without one, no code can name a segment: memory.init and
// data.drop need it).
// Anything else, including a module it cannot parse, is returned as it
// came, for wazero to run or reject. An out-of-bounds segment still fails
// instantiation: the last byte of the last segment is the last byte
// written either way.
func Pack(bin []byte) []byte {
	if len(bin) < 8 {
		return bin
	}
	r := reader{b: bin, off: 8}
	var imports []byte
	dataStart, dataEnd := -1, -1
	for r.off < len(bin) {
		start := r.off
		id := r.byte()
		size := r.u32()
		payload := r.bytes(int(size))
		if r.bad {
			return bin
		}
		switch id {
		case 2:
			imports = payload
		case 11:
			if dataStart >= 0 {
				return bin
			}
			dataStart, dataEnd = start, r.off
		case 12:
			return bin
		}
	}
	if dataStart < 0 || importsMemory(imports) {
		return bin
	}

	d := reader{b: bin[:dataEnd], off: dataStart}
	d.byte()
	d.u32()
	n := d.u32()
	if d.bad || int64(n) > int64(dataEnd-d.off)/5 { // a segment takes 5 bytes at least
		return bin
	}
	type seg struct {
		off  uint64
		init []byte
	}
	segs := make([]seg, 0, n)
	for range n {
		if d.u32() != 0 || d.byte() != 0x41 { // active, memory 0; i32.const
			return bin
		}
		off := uint64(uint32(d.s32()))
		if d.byte() != 0x0b { // end of the offset expression
			return bin
		}
		init := d.bytes(int(d.u32()))
		if d.bad {
			return bin
		}
		segs = append(segs, seg{off, init})
	}
	if d.off != dataEnd {
		return bin
	}
	// Disjoint segments write the same bytes in any order.
	slices.SortStableFunc(segs, func(a, b seg) int { return cmp.Compare(a.off, b.off) })
	for i := 1; i < len(segs); i++ {
		if segs[i].off < segs[i-1].off+uint64(len(segs[i-1].init)) {
			return bin
		}
	}

	// Join segments less than packGap apart into runs.
	type run struct {
		off, end    uint64
		first, last int // segs[first:last]
	}
	var runs []run
	for i, s := range segs {
		if k := len(runs) - 1; k >= 0 && s.off-runs[k].end <= packGap {
			runs[k].end = s.off + uint64(len(s.init))
			runs[k].last = i + 1
			continue
		}
		runs = append(runs, run{s.off, s.off + uint64(len(s.init)), i, i + 1})
	}
	if len(runs) == len(segs) || runs[len(runs)-1].end > math.MaxUint32 {
		return bin
	}

	// Write the section again, straight into the new module.
	var head [2 * binary.MaxVarintLen64]byte
	body := len(binary.AppendUvarint(head[:0], uint64(len(runs))))
	for _, r := range runs {
		body += 3 + len(AppendSleb(head[:0], int64(int32(uint32(r.off))))) +
			len(binary.AppendUvarint(head[:0], r.end-r.off)) + int(r.end-r.off)
	}
	if body > math.MaxUint32 {
		return bin
	}
	out := make([]byte, 0, len(bin)-(dataEnd-dataStart)+body+2*binary.MaxVarintLen64)
	out = append(out, bin[:dataStart]...)
	out = append(out, 11)
	out = binary.AppendUvarint(out, uint64(body))
	out = binary.AppendUvarint(out, uint64(len(runs)))
	for _, r := range runs {
		out = append(out, 0, 0x41)
		out = AppendSleb(out, int64(int32(uint32(r.off))))
		out = append(out, 0x0b)
		out = binary.AppendUvarint(out, r.end-r.off)
		at := len(out)
		out = out[:at+int(r.end-r.off)] // zeros: out was never written here
		for _, s := range segs[r.first:r.last] {
			copy(out[at+int(s.off-r.off):], s.init)
		}
	}
	return append(out, bin[dataEnd:]...)
}

// importsMemory reports whether an import section imports a memory, or
// cannot be read (which Pack must treat the same).
func importsMemory(p []byte) bool {
	if p == nil {
		return false
	}
	r := reader{b: p}
	n := r.u32()
	for i := uint32(0); i < n && !r.bad; i++ {
		r.bytes(int(r.u32())) // module
		r.bytes(int(r.u32())) // name
		switch r.byte() {
		case 0x00: // function: type index
			r.u32()
		case 0x01: // table: reference type, limits
			r.byte()
			r.limits()
		case 0x03: // global: value type, mutability
			r.byte()
			r.byte()
		default: // 0x02 is a memory; anything else is unknown here
			return true
		}
	}
	return r.bad || r.off != len(p)
}

// reader reads the parts of a wasm binary Pack needs; any read past
// the end or any malformed number sets bad, after which reads return zero.
type reader struct {
	b   []byte
	off int
	bad bool
}

func (r *reader) byte() byte {
	if r.bad || r.off >= len(r.b) {
		r.bad = true
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n < 0 || n > len(r.b)-r.off {
		r.bad = true
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

// u32 reads an unsigned LEB128 number of at most 32 bits (5 bytes).
func (r *reader) u32() uint32 {
	var v uint64
	for i := 0; i < 5; i++ {
		c := r.byte()
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > math.MaxUint32 {
				r.bad = true
				return 0
			}
			return uint32(v)
		}
	}
	r.bad = true
	return 0
}

// s32 reads a signed LEB128 number of at most 32 bits (5 bytes).
func (r *reader) s32() int32 {
	var v int64
	for i := 0; i < 5; i++ {
		c := r.byte()
		v |= int64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if i == 4 && c&0x70 != 0 && c&0x70 != 0x70 { // bits past the 32nd must repeat the sign
				r.bad = true
				return 0
			}
			if shift := 7 * (i + 1); shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			if v < math.MinInt32 || v > math.MaxInt32 {
				r.bad = true
				return 0
			}
			return int32(v)
		}
	}
	r.bad = true
	return 0
}

func (r *reader) limits() {
	switch r.byte() {
	case 0x00:
		r.u32()
	case 0x01:
		r.u32()
		r.u32()
	default:
		r.bad = true
	}
}

// AppendSleb appends v as signed LEB128.
func AppendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
