package capabilities

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateInput(t *testing.T) {
	t.Parallel()
	dir := writeCap(t, t.TempDir(), "fmt-json", `{
  "name": "fmt-json",
  "description": "Pretty-print JSON",
  "environment": "@wasm",
  "entry": {"module": "fmt-json.wasm"},
  "parameters": {
    "type": "object",
    "properties": {
      "path": {"type": "string", "minLength": 1},
      "indent": {"type": "integer", "minimum": 0, "maximum": 8},
      "opts": {"type": "object", "properties": {"sort": {"type": "boolean"}}, "additionalProperties": false}
    },
    "required": ["path"],
    "additionalProperties": false
  }
}`, map[string]string{"fmt-json.wasm": "x"})
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input string
		want  []string // pointers; nil: valid
		pos   string   // "line:col" of the first error, when set
	}{
		{"valid", `{"path": "a.json", "indent": 2}`, nil, ""},
		{"valid nested", `{"path": "a", "opts": {"sort": true}}`, nil, ""},
		{"missing required", `{"indent": 2}`, []string{"/path"}, ""},
		{"empty input is {}", ``, []string{"/path"}, ""},
		{"wrong type", "{\"path\": \"a\",\n \"indent\": \"2\"}", []string{"/indent"}, "2:2"},
		{"out of range", `{"path": "a", "indent": 9}`, []string{"/indent"}, ""},
		{"unknown field", `{"path": "a", "indnet": 2}`, []string{"/indnet"}, "1:15"},
		{"nested", `{"path": "a", "opts": {"sort": 1}}`, []string{"/opts/sort"}, ""},
		{"several", `{"path": "", "indent": -1, "x": 1}`, []string{"/indent", "/path", "/x"}, ""},
		{"not an object", `[1]`, []string{""}, ""},
		{"malformed", "{\"path\": \"a\",}", []string{""}, "1:14"},
		{"duplicate", `{"path": "a", "path": "b"}`, []string{"/path"}, "1:15"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
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
			if !strings.HasPrefix(err.Error(), "capability fmt-json: input:") {
				t.Errorf("err = %q; want it to name the capability and the input", err)
			}
			if tt.pos != "" && !strings.Contains(errs[0].Error(), "input:"+tt.pos+":") {
				t.Errorf("first error %q; want it at %s", errs[0], tt.pos)
			}
		})
	}
}

func TestValidateInputDefaultParameters(t *testing.T) {
	t.Parallel()
	c, err := Load(writeCap(t, t.TempDir(), "fmt-json", wasmManifest, map[string]string{"fmt-json.wasm": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{``, `{}`, `{"anything": [1, 2]}`} {
		if err := c.ValidateInput(json.RawMessage(in)); err != nil {
			t.Errorf("ValidateInput(%q) = %v; want nil under the default {\"type\":\"object\"}", in, err)
		}
	}
	for _, in := range []string{`"text"`, `1`, `null`, `[]`} {
		if err := c.ValidateInput(json.RawMessage(in)); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("ValidateInput(%q) = %v; want class ErrInvalidInput", in, err)
		}
	}
	// A Capability built by hand (no compiled schema) validates too.
	hand := &Capability{Manifest: Manifest{Name: "h", Parameters: json.RawMessage(`{"type": "object", "required": ["a"]}`)}}
	if err := hand.ValidateInput(json.RawMessage(`{}`)); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("hand-built ValidateInput = %v; want class ErrInvalidInput", err)
	}
}
