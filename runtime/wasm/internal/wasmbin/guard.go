package wasmbin

import (
	"encoding/binary"
	"fmt"
)

// Limits Guard puts on a module before wazero reads it.
const (
	// MaxLocals is the most locals one function may declare (V8's limit).
	MaxLocals = 50_000
	// TableBudget is the most elements all of a module's tables may hold
	// together (8 bytes of host memory each, outside the memory limit).
	TableBudget = 1 << 22
)

// Guard checks a module before wazero decodes it, for what wazero would
// turn into host memory before any limit applies, and returns the module
// to compile: bin, or bin with its tables given a maximum.
//
// wazero sizes its allocations by the counts a module declares: a 30-byte
// module declaring four billion locals, or an export section declaring a
// billion exports, makes the decoder allocate tens of gigabytes at once,
// and the Go runtime ends the whole process ("out of memory", which no
// recover catches). And a table grows on the host, outside the memory
// limit: table.grow by four billion elements does the same at run time.
// So Guard refuses (ErrInvalidModule) a module whose declared counts and
// lengths do not fit in the bytes that follow them, a function with more
// than MaxLocals locals, a section or construct it does not know (which
// wazero v1.12 would refuse as well), and tables whose minimums add up to
// more than TableBudget elements; it gives every table a maximum such that
// all of them together never hold more than TableBudget (table.grow past
// it fails, as the specification allows any grow to).
func Guard(bin []byte) ([]byte, error) {
	g := reader{b: bin, off: 8}
	tableStart, tableEnd := -1, -1
	var tables []table
	var seen [14]bool
	for g.off < len(bin) {
		secStart := g.off
		id := g.byte()
		size := g.u32()
		p := g.bytes(int(size))
		if g.bad {
			return nil, fmt.Errorf("wasm: section %d runs past the end of the module: %w", id, ErrTruncated)
		}
		if int(id) < len(seen) && id != 0 {
			if seen[id] {
				return nil, fmt.Errorf("wasm: section %d twice: %w", id, ErrInvalidModule)
			}
			seen[id] = true
		}
		s := guardReader{reader: reader{b: p}, section: id}
		switch id {
		case 0:
			s.custom()
		case 1:
			s.vec(s.funcType)
		case 2:
			s.vec(s.importEntry)
		case 3: // function type indexes
			s.vec(func() { s.u32() })
		case 8, 12: // start function; data count
			s.u32()
		case 4:
			tableStart, tableEnd = secStart, g.off
			s.vec(func() {
				t := table{ref: s.byte()}
				t.min, t.max, t.hasMax = s.limits()
				if t.ref != 0x70 && t.ref != 0x6f {
					s.reject("table of reference type 0x%x", t.ref)
				}
				tables = append(tables, t)
			})
		case 5:
			s.vec(func() { s.limits() })
		case 6:
			s.vec(func() { s.valType(); s.byte(); s.constExpr() })
		case 7:
			s.vec(func() { s.name(); s.byte(); s.u32() })
		case 9:
			s.vec(s.element)
		case 10:
			s.vec(s.code)
		case 11:
			s.vec(s.data)
		case 13:
			s.vec(func() { s.byte(); s.u32() })
		default:
			return nil, fmt.Errorf("wasm: unknown section %d: %w", id, ErrInvalidModule)
		}
		if s.err == nil && s.off != len(p) && !s.bad {
			s.reject("%d bytes left over", len(p)-s.off)
		}
		if s.bad && s.err == nil {
			s.reject("a count or length runs past the end of the section")
		}
		if s.err != nil {
			return nil, fmt.Errorf("wasm: %s: %w", s.err, ErrInvalidModule)
		}
	}
	if len(tables) == 0 {
		return bin, nil
	}
	return capTables(bin, tableStart, tableEnd, tables)
}

type table struct {
	ref      byte
	min, max uint32
	hasMax   bool
}

// capTables writes the table section of bin again with maximums that keep
// the tables within TableBudget elements together.
func capTables(bin []byte, start, end int, tables []table) ([]byte, error) {
	var mins uint64
	for _, t := range tables {
		mins += uint64(t.min)
	}
	if mins > TableBudget {
		return nil, fmt.Errorf("wasm: tables of %d elements at start, over the limit of %d: %w", mins, TableBudget, ErrInvalidModule)
	}
	spare := (TableBudget - mins) / uint64(len(tables))
	body := binary.AppendUvarint(nil, uint64(len(tables)))
	for _, t := range tables {
		limit := uint64(t.min) + spare
		if t.hasMax && uint64(t.max) < limit {
			limit = uint64(t.max)
		}
		body = append(body, t.ref, 0x01)
		body = binary.AppendUvarint(body, uint64(t.min))
		body = binary.AppendUvarint(body, limit)
	}
	out := make([]byte, 0, len(bin)+len(body))
	out = append(out, bin[:start]...)
	out = append(out, 4)
	out = binary.AppendUvarint(out, uint64(len(body)))
	out = append(out, body...)
	return append(out, bin[end:]...), nil
}

// guardReader reads one section for Guard; the first problem sticks.
type guardReader struct {
	reader
	section byte
	err     error
}

func (r *guardReader) reject(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("section %d: "+format, append([]any{r.section}, args...)...)
	}
}

// ok reports whether reading may go on.
func (r *guardReader) ok() bool { return !r.bad && r.err == nil }

// vec reads a count, refuses one larger than the bytes left (every item
// takes one at least), and reads that many items with item.
func (r *guardReader) vec(item func()) {
	n := r.u32()
	if !r.ok() {
		return
	}
	if int64(n) > int64(len(r.b)-r.off) {
		r.reject("%d items declared in %d bytes", n, len(r.b)-r.off)
		return
	}
	for i := uint32(0); i < n && r.ok(); i++ {
		item()
	}
}

// name reads a length-prefixed name, or any length-prefixed bytes.
func (r *guardReader) name() { r.bytes(int(r.u32())) }

func (r *guardReader) valType() {
	switch t := r.byte(); t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
	default:
		if r.ok() {
			r.reject("value type 0x%x", t)
		}
	}
}

func (r *guardReader) funcType() {
	if f := r.byte(); f != 0x60 && r.ok() {
		r.reject("type form 0x%x", f)
		return
	}
	r.vec(r.valType)
	r.vec(r.valType)
}

func (r *guardReader) importEntry() {
	r.name()
	r.name()
	switch k := r.byte(); k {
	case 0x00: // function
		r.u32()
	case 0x01: // table
		r.byte()
		r.limits()
	case 0x02: // memory
		r.limits()
	case 0x03: // global
		r.valType()
		r.byte()
	case 0x04: // tag
		r.byte()
		r.u32()
	default:
		if r.ok() {
			r.reject("import kind 0x%x", k)
		}
	}
}

// limits reads table or memory limits: min, and max when flagged (0x02
// and 0x03 are shared memories).
func (r *guardReader) limits() (min, max uint32, hasMax bool) {
	switch f := r.byte(); f {
	case 0x00, 0x02:
		return r.u32(), 0, false
	case 0x01, 0x03:
		return r.u32(), r.u32(), true
	default:
		if r.ok() {
			r.reject("limits flag 0x%x", f)
		}
		return 0, 0, false
	}
}

// constExpr reads a constant expression up to its end.
func (r *guardReader) constExpr() {
	for r.ok() {
		switch op := r.byte(); op {
		case 0x0b:
			return
		case 0x41: // i32.const
			r.s32()
		case 0x42: // i64.const
			r.s64()
		case 0x43: // f32.const
			r.bytes(4)
		case 0x44: // f64.const
			r.bytes(8)
		case 0x23, 0xd2: // global.get, ref.func
			r.u32()
		case 0xd0: // ref.null
			r.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		case 0xfd: // v128.const
			if r.u32() != 12 && r.ok() {
				r.reject("constant expression with vector opcode other than v128.const")
			}
			r.bytes(16)
		default:
			if r.ok() {
				r.reject("constant expression with opcode 0x%x", op)
			}
		}
	}
}

func (r *guardReader) element() {
	flags := r.u32()
	if flags > 7 {
		if r.ok() {
			r.reject("element segment flags %d", flags)
		}
		return
	}
	if flags&0b010 != 0 && flags&0b001 == 0 { // 2, 6: a table index
		r.u32()
	}
	if flags&0b001 == 0 { // 0, 2, 4, 6: an offset
		r.constExpr()
	}
	if flags&0b011 != 0 { // 1, 2, 3, 5, 6, 7: an element kind or a reference type
		r.byte()
	}
	if flags&0b100 == 0 {
		r.vec(func() { r.u32() })
	} else {
		r.vec(r.constExpr)
	}
}

func (r *guardReader) code() {
	size := r.u32()
	body := r.bytes(int(size))
	if !r.ok() {
		return
	}
	b := guardReader{reader: reader{b: body}, section: r.section}
	var locals uint64
	b.vec(func() {
		locals += uint64(b.u32())
		b.valType()
	})
	if b.ok() && locals > MaxLocals {
		b.reject("a function declares %d locals, over the limit of %d", locals, MaxLocals)
	}
	if b.bad && b.err == nil {
		b.reject("a function's locals run past its body")
	}
	r.err = b.err
}

func (r *guardReader) data() {
	switch flags := r.u32(); flags {
	case 0:
		r.constExpr()
	case 1:
	case 2:
		r.u32()
		r.constExpr()
	default:
		if r.ok() {
			r.reject("data segment flags %d", flags)
		}
		return
	}
	r.name() // the bytes: a length and as many bytes
}

// custom reads a custom section: its name, and for "name" the
// subsections wazero reads (module name, function names, local names),
// whose counts and lengths must fit.
func (r *guardReader) custom() {
	n := r.u32()
	name := r.bytes(int(n))
	if !r.ok() || string(name) != "name" {
		r.off = len(r.b)
		return
	}
	nameMap := func(s *guardReader) { s.vec(func() { s.u32(); s.name() }) }
	for r.off < len(r.b) && r.ok() {
		id := r.byte()
		sub := r.bytes(int(r.u32()))
		if !r.ok() {
			return
		}
		s := guardReader{reader: reader{b: sub}, section: r.section}
		switch id {
		case 0:
			s.name()
		case 1:
			nameMap(&s)
		case 2:
			s.vec(func() { s.u32(); nameMap(&s) })
		default:
			continue
		}
		// wazero reads these three subsections from the module, not
		// from their declared size: what they hold must fill it exactly.
		if (s.bad || s.off != len(sub)) && s.err == nil {
			s.reject("name subsection %d does not hold what its size says", id)
		}
		if s.err != nil {
			r.err = s.err
		}
	}
}

// s64 reads a signed LEB128 number of at most 64 bits (10 bytes).
func (r *reader) s64() int64 {
	var v int64
	for i := 0; i < 10; i++ {
		c := r.byte()
		v |= int64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if shift := 7 * (i + 1); shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
	r.bad = true
	return 0
}
