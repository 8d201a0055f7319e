package capabilities

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// document is a parsed JSON text with the position of every value, so that
// errors can say line and column.
type document struct {
	file  string
	data  []byte
	value any            // as encoding/json decodes it, numbers as json.Number
	pos   map[string]int // JSON pointer → byte offset of the value (of the key, for members)
}

// parseDocument decodes data. A syntax error, a duplicate member name or
// trailing text is returned as a *FieldError with line and column.
func parseDocument(file string, data []byte) (*document, *FieldError) {
	d := &document{file: file, data: data, pos: map[string]int{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := d.walk(dec, "")
	if err == nil {
		off := d.skipSpace(int(dec.InputOffset()))
		if _, terr := dec.Token(); terr != io.EOF {
			err = &syntaxError{off: off, msg: "text after the end of the JSON value"}
		}
	}
	if err != nil {
		var se *syntaxError
		var je *json.SyntaxError
		if errors.As(err, &se) {
			return nil, d.errorAt(se.off, se.ptr, se.msg)
		}
		// A Decoder's offsets are not always the document's: ask
		// Unmarshal, which checks the whole text first, where it failed.
		if uerr := json.Unmarshal(data, new(any)); uerr != nil {
			err = uerr
		}
		switch {
		case errors.As(err, &je):
			off := int(je.Offset)
			if off > 0 && off <= len(data) && je.Error() != "unexpected end of JSON input" {
				off-- // Offset counts the offending byte; point at it
			}
			return nil, d.errorAt(off, "", "malformed JSON: "+je.Error())
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, d.errorAt(len(data), "", "malformed JSON: unexpected end of file")
		default:
			return nil, d.errorAt(int(dec.InputOffset()), "", "malformed JSON: "+err.Error())
		}
	}
	d.value = v
	return d, nil
}

type syntaxError struct {
	off int
	ptr string
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// maxDepth bounds the nesting of a document, so that a hostile one cannot
// exhaust the stack: no manifest or tool input needs more.
const maxDepth = 200

// walk reads one value, recording its position under ptr.
func (d *document) walk(dec *json.Decoder, ptr string) (any, error) {
	return d.walkDepth(dec, ptr, 0)
}

func (d *document) walkDepth(dec *json.Decoder, ptr string, depth int) (any, error) {
	start := d.skipSpace(int(dec.InputOffset()))
	if depth > maxDepth {
		return nil, &syntaxError{off: start, ptr: ptr, msg: fmt.Sprintf("nested more than %d levels deep", maxDepth)}
	}
	if _, ok := d.pos[ptr]; !ok {
		d.pos[ptr] = start
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		for dec.More() {
			keyOff := d.skipSpace(int(dec.InputOffset()))
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, ok := kt.(string)
			if !ok {
				return nil, &syntaxError{off: keyOff, ptr: ptr, msg: "malformed JSON: object key is not a string"}
			}
			child := ptr + "/" + escapePointer(key)
			if _, dup := obj[key]; dup {
				return nil, &syntaxError{off: keyOff, ptr: child, msg: fmt.Sprintf("duplicate field %s", strconv.QuoteToASCII(key))}
			}
			d.pos[child] = keyOff
			v, err := d.walkDepth(dec, child, depth+1)
			if err != nil {
				return nil, err
			}
			obj[key] = v
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return obj, nil
	case json.Delim('['):
		arr := []any{}
		for i := 0; dec.More(); i++ {
			v, err := d.walkDepth(dec, ptr+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return arr, nil
	}
	return tok, nil
}

// skipSpace returns the offset of the first byte at or after off that is
// not white space or a separator (',' or ':'): where the next token starts.
func (d *document) skipSpace(off int) int {
	for off < len(d.data) {
		switch d.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// errorAt makes a FieldError at byte offset off.
func (d *document) errorAt(off int, ptr, msg string) *FieldError {
	line, col := lineCol(d.data, off)
	return &FieldError{File: d.file, Pointer: ptr, Line: line, Column: col, Message: msg}
}

// errorFor makes a FieldError for the value at ptr, placed at the nearest
// position known (the pointer's own, else its parent's).
func (d *document) errorFor(ptr, msg string, class error) *FieldError {
	fe := &FieldError{File: d.file, Pointer: ptr, Message: msg, Err: class}
	for p := ptr; ; {
		if off, ok := d.pos[p]; ok {
			fe.Line, fe.Column = lineCol(d.data, off)
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

// lineCol turns a byte offset into a 1-based line and column (in runes).
func lineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
