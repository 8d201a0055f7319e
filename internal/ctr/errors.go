package ctr

import "fmt"

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

// Unwrap returns the class, then the cause when there is one.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Class}
	}
	return []error{e.Class, e.Cause}
}
