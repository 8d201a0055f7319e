package ctr

import (
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
)

// ErrRefused is the one error of an engine of @docker that refuses ccrun:
// the Docker Engine's socket does not admit the user, the Kubernetes API
// server refuses the kubeconfig's credentials or RBAC forbids what a run
// needs, a registry refuses the pull, an object of the namespace ccrun
// must own is someone else's. The environment cannot be used as it is
// configured until the person fixes that, so it is of class
// errdefs.ErrUnavailable (ccrun.ErrUnavailable: the CLI's exit 125), and
// never of errdefs.ErrPermissionDenied, which is the gate's word (a call
// not allowed). The message of the error that wraps it says what to do.
var ErrRefused = errdefs.ErrUnavailable.WithMessage("refused by the engine")

// Error is an error of one class (an errdefs value: ErrUnavailable,
// ErrNotFound...) with a message a person can act on, the engine's own
// error underneath when there is one, and, when the message does not say
// it, what to do. errors.Is finds both the class and the cause.
type Error struct {
	Class error
	Msg   string
	Cause error
	// Hint is what to do, after the engine's words: the last a person
	// reads. "": the message says it.
	Hint string
}

// NewError returns an Error of class with its message from format and
// args, and the cause (nil: none).
func NewError(class, cause error, format string, args ...any) error {
	return &Error{Class: class, Msg: fmt.Sprintf(format, args...), Cause: cause}
}

// Error is the message, then the cause and the hint when there are.
func (e *Error) Error() string {
	switch {
	case e.Cause == nil && e.Hint == "":
		return e.Msg
	case e.Hint == "":
		return e.Msg + ": " + e.Cause.Error()
	case e.Cause == nil:
		return e.Msg + ": " + e.Hint
	}
	return e.Msg + " (" + e.Cause.Error() + "): " + e.Hint
}

// Unwrap returns the class, then the cause when there is one. The cause
// of an ErrRefused error that is itself of class ErrPermissionDenied (an
// engine's own "forbidden") is given by its text alone: a refusal of the
// engine is never the gate's word.
func (e *Error) Unwrap() []error {
	switch {
	case e.Cause == nil:
		return []error{e.Class}
	case e.Class == ErrRefused && errors.Is(e.Cause, errdefs.ErrPermissionDenied):
		return []error{e.Class, errors.New(e.Cause.Error())}
	}
	return []error{e.Class, e.Cause}
}
