package capabilities

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ccrun/ccrun/internal/jsonpos"
)

// document is a parsed JSON text with the position of every value, so that
// errors can say line and column.
type document struct {
	file  string
	data  []byte
	value any            // as encoding/json decodes it, numbers as json.Number
	pos   map[string]int // JSON pointer → byte offset of the value (of the key, for members)
}

// parseDocument decodes data. A syntax error, nesting past maxDepth or a
// duplicate member name is returned as a *FieldError with line and column.
func parseDocument(file string, data []byte) (*document, *FieldError) {
	d := &document{file: file, data: data, pos: map[string]int{}}
	root, err := jsonpos.ParseDepth(data, maxDepth)
	var je *jsonpos.Error
	if errors.As(err, &je) {
		return nil, d.errorAt(je.Offset, "", "malformed JSON: "+je.Msg)
	}
	if err != nil {
		return nil, d.errorAt(0, "", "malformed JSON: "+err.Error())
	}
	v, fe := d.walk(root, "")
	if fe != nil {
		return nil, fe
	}
	d.value = v
	return d, nil
}

// maxDepth bounds the nesting of a document, so that a hostile one cannot
// exhaust the stack: no manifest or tool input needs more.
const maxDepth = 200

// walk turns v into what encoding/json would decode (numbers as
// json.Number), recording where each value is under its JSON pointer.
func (d *document) walk(v *jsonpos.Value, ptr string) (any, *FieldError) {
	if _, ok := d.pos[ptr]; !ok {
		d.pos[ptr] = v.Start
	}
	switch v.Kind {
	case jsonpos.Object:
		obj := make(map[string]any, len(v.Members))
		for _, m := range v.Members {
			child := ptr + "/" + escapePointer(m.Name)
			if _, dup := obj[m.Name]; dup {
				return nil, d.errorAt(m.At, child, fmt.Sprintf("duplicate field %s", strconv.QuoteToASCII(m.Name)))
			}
			d.pos[child] = m.At
			mv, fe := d.walk(m.Value, child)
			if fe != nil {
				return nil, fe
			}
			obj[m.Name] = mv
		}
		return obj, nil
	case jsonpos.Array:
		arr := make([]any, 0, len(v.Elems))
		for i, e := range v.Elems {
			ev, fe := d.walk(e, ptr+"/"+strconv.Itoa(i))
			if fe != nil {
				return nil, fe
			}
			arr = append(arr, ev)
		}
		return arr, nil
	}
	return v.Token, nil
}

// errorAt makes a FieldError at byte offset off.
func (d *document) errorAt(off int, ptr, msg string) *FieldError {
	line, col := jsonpos.LineColumn(d.data, off)
	return &FieldError{File: d.file, Pointer: ptr, Line: line, Column: col, Message: msg}
}

// errorFor makes a FieldError for the value at ptr, placed at the nearest
// position known (the pointer's own, else its parent's).
func (d *document) errorFor(ptr, msg string, class error) *FieldError {
	fe := &FieldError{File: d.file, Pointer: ptr, Message: msg, Err: class}
	for p := ptr; ; {
		if off, ok := d.pos[p]; ok {
			fe.Line, fe.Column = jsonpos.LineColumn(d.data, off)
			break
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return fe
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
