package jsonpos

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCheckPlacesErrors: every syntax error is an *Error at the offending
// character, whatever precedes it (CRLF lines, multi-byte runes, a BOM).
func TestCheckPlacesErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		text      string
		line, col int
		msg       string // a part of the message
	}{
		{"stray comma", "{\n  \"a\": 1,\n}", 3, 1, "invalid character '}'"},
		{"CRLF lines", "{\r\n  \"a\": 1,\r\n  \"b\": x\r\n}", 3, 8, "invalid character 'x'"},
		{"multi-byte runes before the error", "{\"ключ\": \"значение\" x}", 1, 21, "invalid character 'x'"},
		{"emoji before the error", "[\"🙂🙂\", ]", 1, 8, "invalid character ']'"},
		{"truncated", "{\"a\": [1, 2", 1, 12, "unexpected end of JSON input"},
		{"empty", "", 1, 1, "unexpected end of JSON input"},
		{"only white space", "  \n ", 2, 2, "unexpected end of JSON input"},
		{"text after the value", "{}\n{}", 2, 1, "after top-level value"},
		{"a BOM", "\ufeff{}", 1, 1, "byte order mark"},
		{"a BOM before an error", "\ufeff{,}", 1, 1, "byte order mark"},
		{"invalid UTF-8 counts one column a byte", "[\"\xff\xfe\" x]", 1, 7, "invalid character 'x'"},
		{"too deep", strings.Repeat("[", 10001), 1, 10001, "exceeded max depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Check([]byte(tc.text))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check(%q) = %v, want an *Error", tc.text, err)
			}
			if e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("Check(%q) = %d:%d %q, want %d:%d %q", tc.text, e.Line, e.Column, e.Msg, tc.line, tc.col, tc.msg)
			}
			if want := fmt.Sprintf("%d:%d: ", tc.line, tc.col); !strings.HasPrefix(e.Error(), want) {
				t.Errorf("Error() = %q, want it to start with %q", e.Error(), want)
			}
			if _, perr := Parse([]byte(tc.text)); perr == nil || perr.Error() != err.Error() {
				t.Errorf("Parse: %v, want Check's %v", perr, err)
			}
		})
	}
}

// TestParseTree: every value's offsets and raw text, members in order
// (a repeated name kept), tokens as encoding/json gives them.
func TestParseTree(t *testing.T) {
	t.Parallel()
	text := "{\r\n \"ä\": [1.50, true, null],\n \"b\" : {\"c\": \"x\\u00e9\"}, \"ä\": -0}\n"
	v, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != Object || v.Start != 0 || v.End != len(text)-1 || len(v.Members) != 3 {
		t.Fatalf("top: %v [%d:%d] %d members", v.Kind, v.Start, v.End, len(v.Members))
	}
	m0, m1, m2 := v.Members[0], v.Members[1], v.Members[2]
	if m0.Name != "ä" || text[m0.At] != '"' || Position([]byte(text), m0.At) != "2:2" {
		t.Errorf("member 0: %q at %d (%s)", m0.Name, m0.At, Position([]byte(text), m0.At))
	}
	if got := string(m0.Value.Raw); got != "[1.50, true, null]" || m0.Value.Kind != Array || len(m0.Value.Elems) != 3 {
		t.Errorf("member 0's value: %q %v", got, m0.Value.Kind)
	}
	e := m0.Value.Elems
	if e[0].Kind != Number || e[0].Token != json.Number("1.50") || e[1].Token != true || e[2].Kind != Null || string(e[2].Raw) != "null" {
		t.Errorf("elements: %+v %+v %+v", e[0], e[1], e[2])
	}
	if s, ok := m1.Value.Members[0].Value.Text(); !ok || s != "xé" || string(m1.Value.Members[0].Value.Raw) != `"x\u00e9"` {
		t.Errorf("b.c: %q %v", s, ok)
	}
	if _, ok := m1.Value.Text(); ok {
		t.Error("an object's Text is ok")
	}
	if m2.Name != "ä" || string(m2.Value.Raw) != "-0" || Position([]byte(text), m2.Value.Start) != "3:31" {
		t.Errorf("member 2: %q %q at %s", m2.Name, m2.Value.Raw, Position([]byte(text), m2.Value.Start))
	}
	if v, err := Parse([]byte(" []")); err != nil || v.Kind != Array || v.Elems == nil || v.Start != 1 {
		t.Errorf("empty array: %+v, %v", v, err)
	}
}

// TestLineColumn: offsets past the end and before the start are clamped;
// columns count runes.
func TestLineColumn(t *testing.T) {
	t.Parallel()
	data := []byte("ab\r\nçd\n")
	for _, tc := range []struct{ off, line, col int }{
		{-5, 1, 1}, {0, 1, 1}, {2, 1, 3}, {4, 2, 1}, {6, 2, 2}, {7, 2, 3}, {8, 3, 1}, {1000, 3, 1},
	} {
		if line, col := LineColumn(data, tc.off); line != tc.line || col != tc.col {
			t.Errorf("LineColumn(%d) = %d:%d, want %d:%d", tc.off, line, col, tc.line, tc.col)
		}
	}
	if got := Position(nil, 3); got != "1:1" {
		t.Errorf("Position(nil, 3) = %s", got)
	}
	if got := Skip([]byte(" ,: x"), 0); got != 4 {
		t.Errorf("Skip = %d, want 4", got)
	}
	if got := Skip([]byte("ab"), 10); got != 2 {
		t.Errorf("Skip past the end = %d, want 2", got)
	}
}

// TestHugeText: a text of some megabytes parses, and an error at its end
// is placed on its last line.
func TestHugeText(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("{\n")
	const n = 100000
	for i := range n {
		fmt.Fprintf(&b, "  \"key-%06d\": [\"ünïcödé\", %d, {\"nested\": true}],\n", i, i)
	}
	good := b.String() + "  \"last\": null\n}\n"
	v, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Members) != n+1 || Position([]byte(good), v.Members[n].At) != fmt.Sprintf("%d:3", n+2) {
		t.Errorf("%d members, the last at %s", len(v.Members), Position([]byte(good), v.Members[n].At))
	}
	bad := b.String() + "}\n" // a trailing comma
	var e *Error
	if err := Check([]byte(bad)); !errors.As(err, &e) || e.Line != n+2 || e.Column != 1 {
		t.Errorf("Check of a %d-byte text: %v, want an error at %d:1", len(bad), err, n+2)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a": [1, "b", {"c": null}]}`, "\ufeff{}", "[", `{"a":1,}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		var e *Error
		switch {
		case err == nil && !json.Valid(data):
			t.Fatalf("Parse accepted what encoding/json refuses: %q", data)
		case err != nil && !errors.As(err, &e):
			t.Fatalf("Parse: %v is not an *Error", err)
		case err != nil && (e.Offset < 0 || e.Offset > len(data)):
			t.Fatalf("error offset %d out of [0, %d]", e.Offset, len(data))
		case err == nil:
			var walk func(*Value)
			walk = func(v *Value) {
				if v.Start < 0 || v.End > len(data) || v.Start >= v.End || !json.Valid(v.Raw) {
					t.Fatalf("value [%d:%d] %q of %q", v.Start, v.End, v.Raw, data)
				}
				for _, m := range v.Members {
					if data[m.At] != '"' {
						t.Fatalf("member %q at %d of %q", m.Name, m.At, data)
					}
					walk(m.Value)
				}
				for _, e := range v.Elems {
					walk(e)
				}
			}
			walk(v)
		}
	})
}

// TestParseDepth: a value nested past the limit is an *Error at its first
// character, before encoding/json's own limit is met.
func TestParseDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		max  int
		col  int // 0: no error
	}{
		{`[[1]]`, 2, 0},
		{`[[1]]`, 1, 3},
		{`[[1]]`, 0, 2},
		{`{"a": {"b": "]]]"}}`, 2, 0},
		{`{"a": {"b": "]]]"}}`, 1, 8},
		{`{"a": {"b": "[[["}}`, 0, 2},
		{`["\"[", [2]]`, 2, 0},
		{`["\"[", [2]]`, 1, 10},
		{strings.Repeat("[", 300) + strings.Repeat("]", 300), 200, 202},
		{strings.Repeat("[", 1<<20), 200, 202},
		{strings.Repeat("[", 1<<20), MaxDepth + 5, MaxDepth + 2},
	} {
		_, err := ParseDepth([]byte(tc.text), tc.max)
		var e *Error
		switch {
		case tc.col == 0 && err != nil:
			t.Errorf("ParseDepth(%.40q, %d): %v", tc.text, tc.max, err)
		case tc.col != 0 && (!errors.As(err, &e) || e.Column != tc.col || !strings.Contains(e.Msg, "nested more than")):
			t.Errorf("ParseDepth(%.40q, %d): %v, want nested too deep at 1:%d", tc.text, tc.max, err, tc.col)
		}
	}
}
