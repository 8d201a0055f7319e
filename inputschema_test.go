package ccrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/internal/inputschema"
	"github.com/ccrun/ccrun/permission"
)

// TestOneSchemaValidator: a schema and an input get one verdict and one
// message whether they are a library tool's (WithTool) or a capability's
// parameters: both are checked by internal/inputschema. Before, the root
// took "Required" for "required" where capabilities refused it, and the
// two worded the same problem differently. (Malformed JSON never reaches
// either: a call's input is refused as not JSON before.)
func TestOneSchemaValidator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		inputs       []string
		compiles     bool
	}{
		{"types and bounds", `{"type": "object", "properties": {"path": {"type": "string", "minLength": 1},
			"indent": {"type": "integer", "minimum": 0, "maximum": 8}}, "required": ["path"], "additionalProperties": false}`,
			[]string{`{"path": "a", "indent": 2}`, `{"indent": 9}`, "{\"path\": \"\",\n \"indent\": \"2\", \"x\": 1}", `[1]`, ``}, true},
		{"nested and referenced", `{"type": "object", "$defs": {"n": {"type": "number", "multipleOf": 0.5}},
			"properties": {"b": {"type": "array", "items": {"$ref": "#/$defs/n"}}, "o": {"type": "object", "properties": {"k": {"enum": ["a", "b"]}}}}}`,
			[]string{`{"b": [1, 1.5, 1.25], "o": {"k": "c"}}`, `{"b": [1e400]}`, `{"o": {"k": "a", "k": "b"}}`}, true},
		{"combinators", `{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
			"b": {"oneOf": [{"type": "integer"}, {"minimum": 0}]}, "c": {"not": {"const": "x"}}},
			"if": {"required": ["a"]}, "then": {"required": ["d"]}}`,
			[]string{`{"a": true, "b": 3, "c": "x"}`, `{"a": "s"}`}, true},
		{"keyword in another case", `{"type": "object", "Required": ["a"]}`, nil, false},
		{"not an object schema", `{"type": "string"}`, nil, false},
		{"ref cycle", `{"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}}`, nil, false},
		{"remote ref", `{"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:1/s.json"}}}`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool := ccrun.Tool{Name: "t", InputSchema: json.RawMessage(tt.schema),
				Permission: func(json.RawMessage) (permission.Permission, error) { return permission.None(), nil },
				Execute:    func(context.Context, json.RawMessage, io.Writer, io.Writer) error { return nil }}
			rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""), ccrun.WithTrustDir(""), ccrun.WithTool(tool))
			manifest := `{"name": "t", "description": "d", "environment": "@wasm", "entry": {"module": "m.wasm"}, "parameters": ` + tt.schema + `}`
			_, perr := capabilities.Parse("capability.json", []byte(manifest))
			if (err == nil) != tt.compiles || (perr == nil) != tt.compiles {
				t.Fatalf("as a library tool's: %v; as a capability's: %v; want both to compile: %v", err, perr, tt.compiles)
			}
			if !tt.compiles {
				if !errors.Is(err, ccrun.ErrInvalidCall) || !errors.Is(perr, capabilities.ErrInvalidManifest) {
					t.Errorf("classes: %v; %v", err, perr)
				}
				return
			}
			defer rt.Close()
			capa := &capabilities.Capability{Manifest: capabilities.Manifest{Name: "t", Parameters: json.RawMessage(tt.schema)}}
			// the same parameters, a capability of a project, called
			proj := t.TempDir()
			cdir := filepath.Join(proj, ".ccrun", "capabilities", "c")
			if err := os.MkdirAll(cdir, 0o755); err != nil {
				t.Fatal(err)
			}
			shell := `{"name": "c", "description": "d", "environment": "@shell", "entry": {"command": "true"}, "parameters": ` + tt.schema + `}`
			if err := os.WriteFile(filepath.Join(cdir, "capability.json"), []byte(shell), 0o644); err != nil {
				t.Fatal(err)
			}
			crt, err := ccrun.New(ccrun.WithProjectDir(proj), ccrun.WithAuditLog(""), ccrun.WithTrustDir(""))
			if err != nil {
				t.Fatal(err)
			}
			defer crt.Close()
			refused := 0
			for _, in := range tt.inputs {
				var fromCap []string
				cerr := capa.ValidateInput(json.RawMessage(in))
				var ie *capabilities.InputError
				if errors.As(cerr, &ie) {
					for _, fe := range ie.Errors {
						fromCap = append(fromCap, fe.Error())
					}
				}
				var fromTool []string
				call, err := rt.CallFromTool("t", json.RawMessage(in))
				if err == nil {
					_, err = rt.Check(context.Background(), call)
				}
				var se *inputschema.Error
				if errors.As(err, &se) {
					fromTool = strings.Split(se.Error(), "\n")
					if !errors.Is(err, ccrun.ErrInvalidCall) {
						t.Errorf("input %s: %v, want ErrInvalidCall", in, err)
					}
				} else if err != nil {
					t.Errorf("input %s: %v, not the schema's error", in, err)
				}
				if diff := cmp.Diff(fromCap, fromTool); diff != "" {
					t.Errorf("input %s: as a capability's (-) and a library tool's (+):\n%s", in, diff)
				}
				var fromCall []string
				_, err = crt.Check(context.Background(), &ccrun.Call{Capability: "c", Input: json.RawMessage(in)})
				if errors.As(err, &ie) {
					for _, fe := range ie.Errors {
						fromCall = append(fromCall, fe.Error())
					}
					if !errors.Is(err, ccrun.ErrInvalidCall) || !errors.Is(err, capabilities.ErrInvalidInput) {
						t.Errorf("input %s: a capability's call: %v, want ErrInvalidCall and ErrInvalidInput", in, err)
					}
				}
				if diff := cmp.Diff(fromCap, fromCall); diff != "" {
					t.Errorf("input %s: ValidateInput (-) and a capability's call (+):\n%s", in, diff)
				}
				if fromCap != nil {
					refused++
				}
			}
			if refused == 0 {
				t.Errorf("no input was refused: the table checks nothing")
			}
		})
	}
}
