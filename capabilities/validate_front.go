//go:build ccrunfront

package capabilities

import "errors"

// errFront is the error of every schema in the front build of ccrun
// (cmd/ccrun's bin/ccrun), which links the gate and @shell alone and no
// JSON Schema library: its package init alone is a tenth of the front's
// start. The front hands every command that reads a capability to the
// whole ccrun before anything is read; should one reach it after all,
// the manifest is refused, never run unchecked.
var errFront = errors.New("capabilities are read by the whole ccrun (ccrun-full): this front build serves the gate and @shell only")

// compiled is never made in the front build.
type compiled struct{}

func compileSchema([]byte) (*compiled, error) { return nil, errFront }

func objectSchema(*compiled) bool { return false }

func (*compiled) validate(*document) []problem { return []problem{{msg: errFront.Error()}} }

func (*compiled) check([]byte) []*FieldError {
	return []*FieldError{{File: "input", Message: errFront.Error(), Err: errFront}}
}
