package ccrun

import (
	"encoding/json"
	"errors"

	"github.com/ccrun/ccrun/internal/inputschema"
)

// compileInputSchema compiles the JSON Schema of a tool's input (a
// built-in's parameters, a library tool's InputSchema) with ccrun's one
// validator, internal/inputschema, which checks a capability's parameters
// too: the same schema is refused, and the same input refused with the
// same message, whichever kind of tool has it. object: it must be a schema
// of an object.
func compileInputSchema(raw json.RawMessage, object bool) (inputSchema, error) {
	s, err := inputschema.Compile(raw)
	if err != nil {
		return nil, err
	}
	if object && !s.Object() {
		return nil, errors.New(`want "type": "object"`)
	}
	return s, nil
}
