// Package jsonpos reads a JSON text keeping where each value is, so that a
// problem in it can be placed at a line and column: ccrun's settings
// files, the project allowlist, session files and capability manifests
// all read their JSON here.
//
// The text is checked by encoding/json first, so that every syntax error
// is found, and placed, by one well-tested scanner; only well-formed text
// is then walked (with encoding/json's Decoder) into a tree of Values.
// Columns count characters (runes), not bytes, from 1. A text that starts
// with a byte order mark is refused: JSON is UTF-8 without one (RFC 8259
// §8.1), and encoding/json would refuse it with a less helpful message.
//
// Everything here is safe for concurrent use.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a JSON value.
type Kind uint8

// The kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Object
	Array
)

var kindNames = [...]string{"null", "boolean", "number", "string", "object", "array"}

// String is the kind's JSON name: null, boolean, number, string, object
// or array.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Value is one value of a parsed text and where it is.
type Value struct {
	Kind Kind
	// Start and End are the byte offsets of the value's text: Raw is
	// data[Start:End], as written (not a copy).
	Start, End int
	Raw        []byte
	// Token is a scalar's value as encoding/json's Decoder gives it with
	// UseNumber: nil, a bool, a json.Number or a string. Nil for an
	// object or an array.
	Token json.Token
	// Members are an object's members, in order; a repeated name is kept
	// (what it means is the caller's to say).
	Members []Member
	// Elems are an array's elements, in order.
	Elems []*Value
}

// Member is one member of an object.
type Member struct {
	// Name is the member's name, unquoted.
	Name string
	// At is the byte offset of the name's opening quote.
	At int
	// Value is the member's value.
	Value *Value
}

// Text returns v's value when it is a string: the string and true.
func (v *Value) Text() (string, bool) {
	s, ok := v.Token.(string)
	return s, ok && v.Kind == String
}

// Error is a syntax error placed in the text. Line and Column are 1-based
// (Column in characters); Offset is the byte offset of the offending byte,
// or the length of the text when it ended too soon.
type Error struct {
	Offset, Line, Column int
	Msg                  string // encoding/json's description, or this package's
	// Pointer is the JSON pointer of the member or value at fault, when
	// the text is well-formed but Decode refuses it; "" otherwise.
	Pointer string
}

// Error is the message placed as Place places it.
func (e *Error) Error() string { return Place("", e.Line, e.Column, e.Pointer, e.Msg) }

// errorAt makes an *Error at byte offset off of data.
func errorAt(data []byte, off int, msg string) *Error {
	off = clamp(data, off)
	line, col := LineColumn(data, off)
	return &Error{Offset: off, Line: line, Column: col, Msg: msg}
}

var bom = []byte("\xef\xbb\xbf")

// Check returns nil when data is one well-formed JSON value (white space
// around it allowed), else an *Error at the first problem.
func Check(data []byte) error {
	if bytes.HasPrefix(data, bom) {
		return errorAt(data, 0, "a byte order mark (U+FEFF) at the start: JSON is UTF-8 without one; save the file without it")
	}
	if json.Valid(data) {
		return nil
	}
	var raw json.RawMessage
	err := json.Unmarshal(data, &raw)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return errorAt(data, len(data), "malformed JSON") // Valid and Unmarshal disagree: cannot happen
	}
	off := int(se.Offset)
	if se.Error() == "unexpected end of JSON input" {
		off = len(data)
	} else if off > 0 {
		off-- // Offset counts the offending byte: point at it
	}
	return errorAt(data, off, se.Error())
}

// MaxDepth is how deep Parse lets values nest: encoding/json's own limit.
const MaxDepth = 10000

// Parse reads data, one JSON value, into a tree. A syntax error is an
// *Error, and so is nesting deeper than MaxDepth.
func Parse(data []byte) (*Value, error) { return ParseDepth(data, MaxDepth) }

// ParseDepth is Parse with values nested at most max levels deep (the top
// value is at level 0; max at most MaxDepth): a deeper one is an *Error
// "nested more than max levels deep" at its first character, found before
// the text is decoded.
func ParseDepth(data []byte, max int) (*Value, error) {
	max = min(max, MaxDepth)
	err := Check(data)
	var e *Error
	if err == nil || errors.As(err, &e) && strings.Contains(e.Msg, "exceeded max depth") {
		if off, deep := tooDeep(data, max); deep {
			return nil, errorAt(data, off, fmt.Sprintf("nested more than %d levels deep", max))
		}
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{data: data, dec: dec}
	v, err := w.value()
	if err != nil { // well-formed text: the Decoder cannot fail on it
		return nil, errorAt(data, int(dec.InputOffset()), err.Error())
	}
	return v, nil
}

type walker struct {
	data []byte
	dec  *json.Decoder
}

// value reads the value that starts at the Decoder's offset.
func (w *walker) value() (*Value, error) {
	start := Skip(w.data, int(w.dec.InputOffset()))
	tok, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	v := &Value{Start: start}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			v.Kind = Object
			for w.dec.More() {
				at := Skip(w.data, int(w.dec.InputOffset()))
				name, err := w.dec.Token()
				if err != nil {
					return nil, err
				}
				mv, err := w.value()
				if err != nil {
					return nil, err
				}
				v.Members = append(v.Members, Member{Name: name.(string), At: at, Value: mv})
			}
		} else {
			v.Kind = Array
			v.Elems = []*Value{}
			for w.dec.More() {
				ev, err := w.value()
				if err != nil {
					return nil, err
				}
				v.Elems = append(v.Elems, ev)
			}
		}
		if _, err := w.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case nil:
		v.Kind = Null
	case bool:
		v.Kind, v.Token = Bool, t
	case json.Number:
		v.Kind, v.Token = Number, t
	case string:
		v.Kind, v.Token = String, t
	}
	v.End = int(w.dec.InputOffset())
	v.Raw = w.data[v.Start:v.End]
	return v, nil
}

// tooDeep returns the offset of the first value of data nested deeper
// than max levels (enclosed by more than max arrays and objects), if any.
// It reads only brackets and strings, so it is meant for text Check found
// well-formed but for its depth.
func tooDeep(data []byte, max int) (off int, deep bool) {
	open, inString, escaped := 0, false, false
	for i, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n', ',', ':':
			continue
		case ']', '}':
			open--
			continue
		}
		if open > max { // a value (or a name) starts here, or goes on
			return i, true
		}
		switch c {
		case '[', '{':
			open++
		case '"':
			inString = true
		}
	}
	return 0, false
}

// Skip returns the offset of the first byte at or after off that is not
// JSON white space nor a separator (',' or ':'): where the next token
// starts. It never returns more than len(data).
func Skip(data []byte, off int) int {
	for off = clamp(data, off); off < len(data); off++ {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
		default:
			return off
		}
	}
	return off
}

// LineColumn turns byte offset off of data into a 1-based line and column,
// the column in characters (an invalid UTF-8 byte counts as one). An
// offset past the end is the end; a negative one is the start. Lines end
// at '\n', so a CRLF text counts as its lines.
func LineColumn(data []byte, off int) (line, col int) {
	before := data[:clamp(data, off)]
	line = 1 + bytes.Count(before, []byte{'\n'})
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + utf8.RuneCount(before[start:])
}

// Position is LineColumn as "line:column", for messages that say
// file:line:column.
func Position(data []byte, off int) string {
	line, col := LineColumn(data, off)
	return fmt.Sprintf("%d:%d", line, col)
}

func clamp(data []byte, off int) int {
	return max(0, min(off, len(data)))
}
