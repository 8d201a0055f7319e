package inputschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestCompileRefuses: what the library would mishandle, or a meta-schema
// refuse, is refused when the schema is compiled, with a message that says
// where; nothing is loaded.
func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type": "object"}`))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type": "object"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat(`{"items": `, MaxDepth+1) + `{}` + strings.Repeat(`}`, MaxDepth+1)
	// anyOf of two references to the next level, 40 levels: 2^40 checks
	// of one value were the library let it.
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d": {"anyOf": [{"$ref": "#/$defs/d%d"}, {"$ref": "#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	fanOut := `{"$defs": {` + strings.Join(defs, ", ") + `, "d40": {"type": "string"}}, "$ref": "#/$defs/d0"}`
	tests := []struct{ name, schema, want string }{
		{"too large", `{"description": "` + strings.Repeat("a", MaxSize) + `"}`, "past the limit"},
		{"too deep", deep, "nested more than"},
		{"not JSON", `{"type": }`, "schema: 1:10"},
		{"ref to itself", `{"$ref": "#"}`, "$ref cycle"},
		{"ref loop", `{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`, "$ref cycle"},
		{"ref loop through allOf", `{"allOf": [{"$ref": "#"}]}`, "$ref cycle"},
		{"ref loop through not", `{"type": "object", "properties": {"a": {"not": {"$ref": "#/properties/a"}}}}`, "$ref cycle"},
		{"ref loop through an anchor", `{"$defs": {"a": {"$anchor": "x", "anyOf": [{"$ref": "#x"}]}}, "$ref": "#x"}`, "$ref cycle"},
		{"ref loop through if", `{"$defs": {"a": {"if": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}`, "$ref cycle"},
		{"exponential fan-out", fanOut, "too costly"},
		{"exponential through members", `{"type": "object", "allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]}`, "too costly"},
		{"file ref", `{"$ref": ` + quote("file://"+filepath.ToSlash(file)) + `}`, "not loaded"},
		{"remote ref", `{"properties": {"a": {"$ref": ` + quote(srv.URL+"/s.json") + `}}}`, "not loaded"},
		{"remote ref with pointer", `{"$ref": ` + quote(srv.URL+"/s.json#/properties") + `}`, "not loaded"},
		{"relative ref", `{"$ref": "s.json"}`, "not loaded"},
		{"other urn", `{"$ref": "urn:example:other"}`, "not loaded"},
		{"embedded resource", `{"$defs": {"x": {"$id": ` + quote(srv.URL+"/s.json") + `}}, "$ref": ` + quote(srv.URL+"/s.json") + `}`, "$id below the top"},
		{"dynamic ref", `{"$dynamicAnchor": "m", "items": {"$dynamicRef": "#m"}}`, "not supported"},
		{"keyword in another case", `{"type": "object", "Required": ["a"]}`, `did you mean "required"`},
		{"nested keyword in another case", `{"properties": {"a": {"MinLength": 1}}}`, `schema at /properties/a`},
		{"bad type", `{"type": "strng"}`, "want one of"},
		{"draft-04", `{"$schema": "http://json-schema.org/draft-04/schema#"}`, "draft 2020-12"},
		{"draft-07 items in 2020-12", `{"items": [{"type": "string"}]}`, "prefixItems"},
		{"2020-12 prefixItems in draft-07", `{"$schema": "http://json-schema.org/draft-07/schema#", "prefixItems": [{}]}`, "draft 2020-12"},
		{"zero multipleOf", `{"multipleOf": 0}`, "above zero"},
		{"negative count", `{"minLength": -1}`, "not negative"},
		{"bound past a float64", `{"maximum": 1e400}`, "out of range"},
		{"bad pattern", `{"pattern": "("}`, "pattern"},
		{"bad pattern property", `{"patternProperties": {"(": {}}}`, "patternProperties"},
		{"default against its schema", `{"type": "object", "properties": {"a": {"type": "integer", "default": "x"}}}`, "schema"},
		{"missing local ref", `{"properties": {"a": {"$ref": "#/$defs/nope"}}}`, "names nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile([]byte(tt.schema))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile: %v; want an error saying %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), baseURI) {
				t.Errorf("Compile: %v names the internal URI", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server was asked %d times; want never", n)
	}
}

// TestCompileAccepts: what draft 2020-12 and draft-07 allow, and
// recursion that descends into the value, compile.
func TestCompileAccepts(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`true`, `{}`, `{"type": "object", "x-ui": {"order": 1}}`,
		`{"type": "object", "properties": {"Required": {"type": "string"}}}`,
		`{"$id": "https://example.com/s.json", "$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "https://example.com/s.json#/$defs/n"}}}`,
		`{"$defs": {"n": {"$anchor": "num", "type": "integer"}}, "properties": {"a": {"$ref": "#num"}}}`,
		`{"$defs": {"t": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}}, "$ref": "#/$defs/t"}`,
		// ten recursive members: a value pays for the one it has
		`{"type": "object", "properties": {` + func() string {
			var p []string
			for i := range 10 {
				p = append(p, fmt.Sprintf(`"p%d": {"$ref": "#"}`, i))
			}
			return strings.Join(p, ", ")
		}() + `}}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/definitions/n"}, "t": {"items": [{"type": "string"}], "additionalItems": false}}, "dependencies": {"a": ["b"]}}`,
	} {
		if _, err := Compile([]byte(s)); err != nil {
			t.Errorf("Compile(%s): %v", s, err)
		}
	}
}

// TestCheck: every problem is said at its value, with line and column, in
// document order, in the library's words.
func TestCheck(t *testing.T) {
	t.Parallel()
	const params = `{"type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1},
    "indent": {"type": "integer", "minimum": 0, "maximum": 8},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
    "n": {"type": "number", "multipleOf": 0.5}
  },
  "required": ["path"],
  "additionalProperties": false}`
	s, err := Compile([]byte(params))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, input string
		want        []string // Problem.String()s; nil: valid
	}{
		{"valid", `{"path": "a", "indent": 2, "tags": ["x"]}`, nil},
		{"empty is {}", ``, []string{`1:1: /path: required: missing properties: ["path"]`}},
		{"several, in document order", "{\"x\": 1,\n \"path\": \"\",\n \"indent\": -1}", []string{
			`1:2: /x: unexpected additional properties ["x"]`,
			`2:2: /path: minLength: "" contains 0 Unicode code points, fewer than 1`,
			`3:2: /indent: minimum: -1 is less than 0`,
		}},
		{"an item", `{"path": "a", "tags": ["ok", "NO"]}`, []string{`1:30: /tags/1: pattern: "NO" does not match regular expression "^[a-z]+$"`}},
		{"numbers as a person writes them", `{"path": "a", "n": 1.25, "indent": 9}`, []string{
			`1:15: /n: multipleOf: 1.25 is not a multiple of 0.5`,
			`1:26: /indent: maximum: 9 is greater than 8`,
		}},
		{"not an object", `[1]`, []string{`1:1: type: [1] has type "array", want "object"`}},
		{"malformed", `{"path": "a",}`, []string{`1:14: malformed JSON: invalid character '}' looking for beginning of object key string`}},
		{"duplicate", `{"path": "a", "path": "b"}`, []string{`1:15: /path: duplicate field "path"`}},
		{"number past a float64", `{"path": "a", "n": 1e400}`, []string{`1:20: /n: number 1e400: out of range (past what a float64 holds)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := s.Check([]byte(tt.input))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var ie *Error
			if !errors.As(err, &ie) {
				t.Fatalf("Check: %v; want an *Error", err)
			}
			var got []string
			for _, p := range ie.Problems {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckDeterministic: an input with many problems gets the same
// error every time, though the library finds them in Go's map order.
func TestCheckDeterministic(t *testing.T) {
	t.Parallel()
	s, err := Compile([]byte(`{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"},
		"d": {"type": "array", "items": {"type": "string"}}}, "additionalProperties": {"type": "integer"}, "required": ["z", "y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	in := []byte(`{"c": 1, "a": 2, "d": ["x", 5, 6], "b": 3, "q": "r", "p": "s"}`)
	first := s.Check(in).Error()
	for range 50 {
		if got := s.Check(in).Error(); got != first {
			t.Fatalf("Check said\n%s\nthen\n%s", first, got)
		}
	}
	if n := strings.Count(first, "\n") + 1; n != 7 {
		t.Errorf("%d problems, want 7 (a, b, c, d/1, d/2, q, p):\n%s", n, first)
	}
}

// TestCheckHostileInput: inputs built to be slow are checked in bounded
// work: a pattern that backtracks in other engines, a large input with a
// problem in every item, deep nesting.
func TestCheckHostileInput(t *testing.T) {
	t.Parallel()
	s, err := Compile([]byte(`{"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"},
		"list": {"type": "array", "items": {"type": "integer"}}, "deep": {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check([]byte(`{"s": "` + strings.Repeat("a", 100000) + `!"}`))
	if err == nil || !strings.Contains(err.Error(), "/s: pattern") {
		t.Errorf("catastrophic pattern: %v", err)
	}
	many := `{"list": [` + strings.Repeat(`"x", `, 200000) + `"x"]}`
	var ie *Error
	if err := s.Check([]byte(many)); !errors.As(err, &ie) || len(ie.Problems) != maxProblems {
		t.Errorf("a problem in each of 200001 items: %v problems, want the first %d", len(ie.Problems), maxProblems)
	}
	deep := `{"deep": ` + strings.Repeat("[", MaxDepth+5) + strings.Repeat("]", MaxDepth+5) + `}`
	if err := s.Check([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("deep input: %v", err)
	}
	if err := s.Check([]byte(`{"list": [` + strings.Repeat("1,", MaxInput/2) + `1]}`)); err == nil || !strings.Contains(err.Error(), "past the limit") {
		t.Errorf("input past MaxInput: %v", err)
	}
}
