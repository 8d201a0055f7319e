package capabilities

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParametersChecked: what a meta-schema would refuse is refused, with
// the library's own checks behind; what draft 2020-12 and draft-07 allow is
// allowed.
func TestParametersChecked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, params string
		ok           bool
	}{
		{"bad type", `{"type": "object", "properties": {"a": {"type": "strng"}}}`, false},
		{"types twice", `{"type": ["object", "object"]}`, false},
		{"no types", `{"type": []}`, false},
		{"draft-04", `{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}`, false},
		{"keyword in another case", `{"type": "object", "Required": ["a"]}`, false},
		{"nested keyword in another case", `{"type": "object", "properties": {"a": {"MinLength": 1}}}`, false},
		{"negative count", `{"type": "object", "properties": {"a": {"minLength": -1}}}`, false},
		{"fractional count", `{"type": "object", "minProperties": 1.5}`, false},
		{"zero multipleOf", `{"type": "object", "properties": {"a": {"multipleOf": 0}}}`, false},
		{"bad pattern", `{"type": "object", "properties": {"a": {"pattern": "("}}}`, false},
		{"properties not an object", `{"type": "object", "properties": 1}`, false},
		{"empty allOf", `{"type": "object", "allOf": []}`, false},
		{"missing local ref", `{"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}`, false},
		{"required not strings", `{"type": "object", "required": [1]}`, false},
		{"draft-07 items in 2020-12", `{"type": "object", "properties": {"t": {"items": [{"type": "string"}]}}}`, false},
		{"draft-07 dependencies in 2020-12", `{"type": "object", "dependencies": {"a": ["b"]}}`, false},
		{"draft-07 dependencies", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}`, true},
		{"a property named like a keyword in another case", `{"type": "object", "properties": {"Required": {"type": "string"}}}`, true},
		{"draft-07", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/definitions/n"}, "t": {"type": "array", "items": [{"type": "string"}], "additionalItems": false}}}`, true},
		{"unknown keywords", `{"type": "object", "x-ui": {"order": 1}}`, true},
		{"anchor", `{"type": "object", "$defs": {"n": {"$anchor": "num", "type": "integer"}}, "properties": {"a": {"$ref": "#num"}}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("c.json", []byte(`{"name": "x", "description": "d", "environment": "@wasm", "entry": {"module": "m"}, "parameters": `+tt.params+`}`))
			if tt.ok {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("err = %v; want class ErrInvalidManifest", err)
			}
			if diff := cmp.Diff([]string{"/parameters"}, pointers(fieldErrors(t, err))); diff != "" {
				t.Errorf("pointers (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}

// TestValidateInputExplained: every problem is named at its field, for the
// keywords beyond the common ones too (pointers are compared sorted).
func TestValidateInputExplained(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, params, input string
		want                []string // pointers; nil: valid
		msg                 string   // in the first error, when set
	}{
		{"anyOf", `{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}`,
			`{"a": true}`, []string{"/a"}, "anyOf"},
		{"oneOf", `{"type": "object", "properties": {"a": {"oneOf": [{"type": "integer"}, {"minimum": 0}]}}}`,
			`{"a": 3}`, []string{"/a"}, "oneOf"},
		{"not", `{"type": "object", "properties": {"a": {"not": {"const": "x"}}}}`, `{"a": "x"}`, []string{"/a"}, ""},
		{"ref in items", `{"type": "object", "$defs": {"n": {"type": "number", "multipleOf": 0.5}}, "properties": {"b": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}`,
			`{"b": [1, 1.5, 1.25]}`, []string{"/b/2"}, "multiple of"},
		{"prefixItems", `{"type": "object", "properties": {"p": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}}}`,
			`{"p": ["a", "b", 3]}`, []string{"/p/1", "/p/2"}, ""},
		{"uniqueItems", `{"type": "object", "properties": {"u": {"type": "array", "uniqueItems": true}}}`,
			`{"u": [1, 2, 1.0]}`, []string{"/u"}, "equal"},
		{"contains", `{"type": "object", "properties": {"c": {"type": "array", "contains": {"type": "string"}, "minItems": 3}}}`,
			`{"c": [1]}`, []string{"/c"}, "contains"},
		{"propertyNames", `{"type": "object", "propertyNames": {"maxLength": 3}}`, `{"ok": 1, "toolong": 2}`, []string{"/toolong"}, "property name"},
		{"patternProperties", `{"type": "object", "patternProperties": {"^n_": {"type": "integer"}}, "additionalProperties": false}`,
			`{"n_a": 1, "n_b": "x", "c": 1}`, []string{"/c", "/n_b"}, ""},
		{"dependentRequired", `{"type": "object", "dependentRequired": {"a": ["b"]}}`, `{"a": 1}`, []string{"/b"}, "missing"},
		{"if then else", `{"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"required": ["c"]}}`,
			`{"x": 1}`, []string{"/c"}, ""},
		{"const and enum", `{"type": "object", "properties": {"k": {"const": {"x": [1]}}, "e": {"enum": [1, "a"]}}}`,
			`{"k": {"x": [2]}, "e": 1.5}`, []string{"/e", "/k"}, ""},
		{"numbers equal across forms", `{"type": "object", "properties": {"k": {"const": 1}, "e": {"enum": [2]}}}`,
			`{"k": 1.0, "e": 2e0}`, nil, ""},
		{"big integer", `{"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}}`,
			`{"n": 100000000000000000000000}`, []string{"/n"}, ""},
		{"number out of range", `{"type": "object"}`, `{"a": [1e999]}`, []string{"/a/0"}, "out of range"},
		{"escaped names", `{"type": "object", "properties": {"a/b": {"type": "object", "properties": {"c~d": {"type": "string"}}}}}`,
			`{"a/b": {"c~d": 1}}`, []string{"/a~1b/c~0d"}, ""},
		{"recursive ref", `{"type": "object", "$defs": {"t": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}, "v": {"type": "integer"}}}}, "properties": {"root": {"$ref": "#/$defs/t"}}}`,
			`{"root": {"kids": [{"kids": [{"v": "x"}]}]}}`, []string{"/root/kids/0/kids/0/v"}, ""},
		{"draft-07 additionalItems", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"t": {"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}}}`,
			`{"t": ["a", "b"]}`, []string{"/t/1"}, ""},
		{"draft-07 dependencies", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}`,
			`{"a": 1, "c": 2}`, []string{"/d"}, ""}, // a value's own problems once its parts are fixed
		{"draft-07 ref ignores siblings", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s", "minLength": 5}}}`,
			`{"a": "x"}`, nil, ""},
		// unevaluatedProperties is the library's alone: the verdict stands,
		// said of the whole input.
		{"unevaluatedProperties", `{"type": "object", "properties": {"a": {}}, "unevaluatedProperties": false}`,
			`{"a": 1, "b": 2}`, []string{""}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Capability{Manifest: Manifest{Name: "t", Parameters: json.RawMessage(tt.params)}}
			err := c.ValidateInput(json.RawMessage(tt.input))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateInput: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("err = %v; want class ErrInvalidInput", err)
			}
			errs := fieldErrors(t, err)
			if diff := cmp.Diff(tt.want, pointers(errs)); diff != "" {
				t.Errorf("pointers (-want +got):\n%s\n%v", diff, err)
			}
			if tt.msg != "" && !strings.Contains(errs[0].Message, tt.msg) {
				t.Errorf("first error %q; want it to say %q", errs[0], tt.msg)
			}
		})
	}
}
