package inputschema

import (
	"encoding/json"

	"github.com/ccrun/ccrun/internal/jsonpos"
)

// MaxDepth bounds the nesting of a document (a schema or a value), so
// that a hostile one cannot exhaust the stack: no manifest, schema or
// tool input needs more.
const MaxDepth = 200

// Parse decodes data for Validate: jsonpos.Decode at MaxDepth. Its error
// is a *jsonpos.Error.
func Parse(data []byte) (*jsonpos.Document, error) { return jsonpos.Decode(data, MaxDepth) }

// instance turns a value decoded with UseNumber into what the library
// validates: json.Number becomes an int64 when it is a whole number that
// fits, a float64 otherwise (Decode refused those with no float64 form).
func instance(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = instance(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = instance(e)
		}
		return out
	}
	return v
}
