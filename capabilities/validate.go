package capabilities

import (
	"errors"

	"github.com/ccrun/ccrun/internal/inputschema"
)

// compiled is a JSON Schema compiled by ccrun's one validator
// (internal/inputschema): the manifest schema, a capability's parameters.
// It is safe for concurrent use.
type compiled struct{ s *inputschema.Schema }

func compileSchema(raw []byte) (*compiled, error) {
	s, err := inputschema.Compile(raw)
	if err != nil {
		return nil, err
	}
	return &compiled{s}, nil
}

func objectSchema(c *compiled) bool { return c.s.Object() }

// validate checks doc against c: nil when valid, else at least one
// problem, in document order.
func (c *compiled) validate(doc *document) []problem {
	return problems(c.s.Validate(doc.Document))
}

// check is the one check of a call's input (inputschema's Check, as the
// library tools' and the built-in tools' inputs are checked).
func (c *compiled) check(input []byte) []*FieldError {
	var ie *inputschema.Error
	if err := c.s.Check(input); !errors.As(err, &ie) {
		return nil
	}
	out := make([]*FieldError, len(ie.Problems))
	for i, p := range ie.Problems {
		out[i] = &FieldError{File: "input", Pointer: p.Pointer, Line: p.Line, Column: p.Column, Message: p.Message}
	}
	return out
}

func problems(ps []inputschema.Problem) []problem {
	if ps == nil {
		return nil
	}
	out := make([]problem, len(ps))
	for i, p := range ps {
		out[i] = problem{ptr: p.Pointer, keyword: p.Keyword, msg: p.Message, got: p.Got}
	}
	return out
}
