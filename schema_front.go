//go:build ccrunfront

package ccrun

import "encoding/json"

// compileInputSchema refuses in the front build: it links no JSON Schema
// library (its package init alone is a tenth of the front's start), and
// nothing the front serves has an input to check. A built-in called by
// name (CallFromTool) or a library tool (WithTool) fails with ErrFront.
func compileInputSchema(json.RawMessage, bool) (inputSchema, error) { return nil, ErrFront }
