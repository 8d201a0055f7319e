//go:build !ccrunfront

package ccrun

import (
	"encoding/json"
	"errors"

	"github.com/google/jsonschema-go/jsonschema"
)

// compileInputSchema compiles the JSON Schema of a tool's input (a
// built-in's parameters, a library tool's InputSchema). object: it must be
// a schema of an object, and its defaults are checked against it.
func compileInputSchema(raw json.RawMessage, object bool) (inputSchema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if object && s.Type != "object" {
		return nil, errors.New(`want "type": "object"`)
	}
	return s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: object})
}
