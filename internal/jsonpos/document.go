package jsonpos

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Document is a parsed text as encoding/json decodes it into an any
// (numbers as json.Number), with the position of every value by its JSON
// pointer (RFC 6901), so that a problem found in the value can be placed
// at a line and column.
type Document struct {
	// Value is the decoded text.
	Value any
	data  []byte
	pos   map[string]int // pointer → byte offset of the value (of the name, for a member)
}

// Decode reads data, one JSON value nested at most maxDepth levels deep.
// Besides a syntax error or too deep a nesting (see ParseDepth), a member
// named twice in one object and a number past what a float64 holds are
// refused: nothing ccrun reads means anything by either. The error is an
// *Error; for those two, Pointer names the member or the number.
func Decode(data []byte, maxDepth int) (*Document, error) {
	root, err := ParseDepth(data, maxDepth)
	if err != nil {
		return nil, err
	}
	d := &Document{data: data, pos: map[string]int{}}
	v, err := d.walk(root, "")
	if err != nil {
		return nil, err
	}
	d.Value = v
	return d, nil
}

func (d *Document) walk(v *Value, ptr string) (any, error) {
	if _, ok := d.pos[ptr]; !ok {
		d.pos[ptr] = v.Start
	}
	switch v.Kind {
	case Object:
		obj := make(map[string]any, len(v.Members))
		for _, m := range v.Members {
			child := ptr + "/" + EscapePointer(m.Name)
			if _, dup := obj[m.Name]; dup {
				e := errorAt(d.data, m.At, fmt.Sprintf("duplicate field %s", strconv.QuoteToASCII(m.Name)))
				e.Pointer = child
				return nil, e
			}
			d.pos[child] = m.At
			mv, err := d.walk(m.Value, child)
			if err != nil {
				return nil, err
			}
			obj[m.Name] = mv
		}
		return obj, nil
	case Array:
		arr := make([]any, 0, len(v.Elems))
		for i, el := range v.Elems {
			ev, err := d.walk(el, ptr+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			arr = append(arr, ev)
		}
		return arr, nil
	case Number:
		if f, err := v.Token.(json.Number).Float64(); err != nil || math.IsInf(f, 0) {
			raw := string(v.Raw)
			if len(raw) > 40 {
				raw = raw[:37] + "…"
			}
			e := errorAt(d.data, v.Start, fmt.Sprintf("number %s: out of range (past what a float64 holds)", raw))
			e.Pointer = ptr
			return nil, e
		}
	}
	return v.Token, nil
}

// Has reports whether the document has a value at ptr.
func (d *Document) Has(ptr string) bool {
	_, ok := d.pos[ptr]
	return ok
}

// Offset is the byte offset of the value at ptr (of the member's name for
// a member), or of the nearest enclosing value that is there.
func (d *Document) Offset(ptr string) int {
	for p := ptr; ; {
		if off, ok := d.pos[p]; ok {
			return off
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return 0
		}
		p = p[:i]
	}
}

// Position is LineColumn of Offset(ptr).
func (d *Document) Position(ptr string) (line, col int) {
	return LineColumn(d.data, d.Offset(ptr))
}

// Place writes a problem found in a JSON text as every message of ccrun
// says one: "file:line:col: /pointer: msg", leaving out the file when ""
// (then "line:col: …"), the position when line is 0, the pointer when "".
func Place(file string, line, col int, ptr, msg string) string {
	var b strings.Builder
	b.WriteString(file)
	if line > 0 {
		if file != "" {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(line) + ":" + strconv.Itoa(col))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if ptr != "" {
		b.WriteString(ptr + ": ")
	}
	b.WriteString(msg)
	return b.String()
}

// EscapePointer escapes one JSON pointer reference token (RFC 6901).
func EscapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// UnescapePointer undoes EscapePointer.
func UnescapePointer(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}
