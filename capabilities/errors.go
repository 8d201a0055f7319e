package capabilities

import (
	"errors"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/internal/jsonpos"
)

// Error classes of this package. Test them with errors.Is.
var (
	// ErrInvalidManifest: a capability.json is malformed, breaks the
	// published schema, or names something it may not (a path outside
	// its directory, an unknown environment). The error is a
	// *ManifestError listing every problem found. It is of class
	// ccrun.ErrInvalidConfig.
	ErrInvalidManifest error = subclass{errclass.InvalidConfig, "invalid capability manifest"}
	// ErrNotFound: no capability of that name, or no capability.json in
	// the directory.
	ErrNotFound = errdefs.ErrNotFound.WithMessage("capability not found")
	// ErrInvalidInput: a call's input does not match the capability's
	// parameters schema. The error is an *InputError.
	ErrInvalidInput = errdefs.ErrInvalidArgument.WithMessage("invalid input")
	// ErrChanged: a capability's files are no longer those it was loaded
	// (and approved) with (Verify, ReadModule). Load it again, and ask
	// again.
	ErrChanged = errdefs.ErrPermissionDenied.WithMessage("capability changed since it was loaded")
	// ErrInvalidArgument: a caller passed a name or environment that
	// cannot be used (Scaffold), or asked a capability for what it has not
	// (ReadModule of a non-@wasm capability).
	ErrInvalidArgument = errdefs.ErrInvalidArgument
)

// subclass is a named error within a class: errors.Is finds both.
type subclass struct {
	class error
	msg   string
}

func (e subclass) Error() string { return e.msg }
func (e subclass) Unwrap() error { return e.class }

// FieldError is one problem in a JSON document: a manifest or a call's
// input. It names the file, the position when known, and the field as a
// JSON pointer (RFC 6901), e.g. /limits/memory.
type FieldError struct {
	File    string // the file as given to Load or Parse; "input" for a call's input
	Pointer string // JSON pointer of the field; "" for the whole document
	Line    int    // 1-based; 0 when unknown
	Column  int    // 1-based, in characters; 0 when unknown
	Message string // lowercase, says what is wrong and, where it helps, what is wanted
	// Err is the class or cause, if any (e.g. ceiling.ErrUnknownEnvironment).
	Err error
}

// Error writes file:line:col: /pointer: message.
func (e *FieldError) Error() string {
	return jsonpos.Place(e.File, e.Line, e.Column, e.Pointer, e.Message)
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// ManifestError lists every problem found in one capability.json. It is of
// class ErrInvalidManifest, and errors.As finds each *FieldError in it.
type ManifestError struct {
	File   string        // the capability.json
	Errors []*FieldError // at least one, in document order where known
}

// Error writes one line per problem.
func (e *ManifestError) Error() string { return joinFieldErrors(e.Errors) }

// Is makes errors.Is(err, ErrInvalidManifest) true.
func (e *ManifestError) Is(target error) bool {
	return target == ErrInvalidManifest || errors.Is(ErrInvalidManifest, target)
}

// Unwrap returns the field errors.
func (e *ManifestError) Unwrap() []error { return fieldErrs(e.Errors) }

// InputError lists every problem found in a call's input. It is of class
// ErrInvalidInput; its field errors have File "input" and point into the
// input document.
type InputError struct {
	Capability string        // the capability's name
	Errors     []*FieldError // at least one
}

// Error writes one line per problem, each prefixed with the capability.
func (e *InputError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = "capability " + e.Capability + ": " + fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool {
	return target == ErrInvalidInput || errors.Is(ErrInvalidInput, target)
}

// Unwrap returns the field errors.
func (e *InputError) Unwrap() []error { return fieldErrs(e.Errors) }

func joinFieldErrors(errs []*FieldError) string {
	lines := make([]string, len(errs))
	for i, fe := range errs {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

func fieldErrs(errs []*FieldError) []error {
	out := make([]error, len(errs))
	for i, fe := range errs {
		out[i] = fe
	}
	return out
}
