package capabilities

import (
	"errors"

	"github.com/ccrun/ccrun/internal/jsonpos"
)

// document is a parsed JSON text with the position of every value, so that
// errors can say line and column.
type document struct {
	file string
	*jsonpos.Document
}

// maxDepth bounds the nesting of a document, so that a hostile one cannot
// exhaust the stack: no manifest or tool input needs more (the schema
// validator's bound, inputschema.MaxDepth).
const maxDepth = 200

// parseDocument decodes data (jsonpos.Decode). A syntax error, nesting past
// maxDepth, a duplicate member name or a number past a float64 is
// returned as a *FieldError with line and column.
func parseDocument(file string, data []byte) (*document, *FieldError) {
	d, err := jsonpos.Decode(data, maxDepth)
	if err != nil {
		fe := &FieldError{File: file, Message: "malformed JSON: " + err.Error()}
		var je *jsonpos.Error
		if errors.As(err, &je) {
			fe.Pointer, fe.Line, fe.Column, fe.Message = je.Pointer, je.Line, je.Column, je.Msg
			if je.Pointer == "" {
				fe.Message = "malformed JSON: " + je.Msg
			}
		}
		return nil, fe
	}
	return &document{file: file, Document: d}, nil
}

// errorFor makes a FieldError for the value at ptr, placed at the nearest
// position known (the pointer's own, else its parent's).
func (d *document) errorFor(ptr, msg string, class error) *FieldError {
	fe := &FieldError{File: d.file, Pointer: ptr, Message: msg, Err: class}
	fe.Line, fe.Column = d.Position(ptr)
	return fe
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(s string) string { return jsonpos.EscapePointer(s) }
