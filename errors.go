package ccrun

import (
	"context"
	"errors"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/errclass"
)

// The error classes. Every error the Runtime returns — its own, the
// gate's, a manifest's, a backend's — is of at most one of these classes,
// tested with errors.Is; the named errors of the packages (ErrInvalidCall,
// capabilities.ErrInvalidInput, wasm.ErrNotWasm, docker.ErrNotFound, ...)
// are finer names within a class: errors.Is(err, wasm.ErrNotWasm) implies
// errors.Is(err, ErrInvalidArgument). The classes are containerd's errdefs
// values where one fits, so errdefs.IsNotFound and friends agree with
// errors.Is. The CLI turns these classes, and only these, into its exit
// codes (README, "Exit codes").
var (
	// ErrInvalidArgument: what the caller passed cannot be used as given
	// (a malformed call, a flag, a key, a limit below what the
	// environment can run, a module that is not a WASI command).
	ErrInvalidArgument = errdefs.ErrInvalidArgument
	// ErrNotFound: what the call names does not exist (a capability, a
	// module file, an image neither local nor pullable).
	ErrNotFound = errdefs.ErrNotFound
	// ErrInvalidConfig: a settings file, the project allowlist or a
	// capability manifest is malformed or holds what cannot be kept (a
	// grant past the ceiling, a key of no known form).
	ErrInvalidConfig = errclass.InvalidConfig
	// ErrPermissionDenied: the gate said no, nobody could be asked, or
	// what runs changed since it was allowed.
	ErrPermissionDenied = errdefs.ErrPermissionDenied
	// ErrCeilingViolation: a grant past its environment's ceiling (a
	// @shell key kept for the project). It is of class ErrPermissionDenied
	// too; errors.As finds the *ceiling.Violation.
	ErrCeilingViolation = ceiling.ErrViolation
	// ErrUnavailable: the environment cannot be reached or was not
	// configured (no Docker Engine, a closed executor, no kernel
	// confinement where it is required).
	ErrUnavailable = errdefs.ErrUnavailable
	// ErrTimeout: the call ran past its deadline. It is
	// context.DeadlineExceeded, as errdefs.IsDeadlineExceeded has it; a
	// tool that ran past its own timeout is a Result (job.Timeout), not
	// an error.
	ErrTimeout = context.DeadlineExceeded
)

// ErrInvalidCall: the call itself is malformed (no tool, two tools, input
// that does not match the schema, an empty command, a missing mount). It
// is of class ErrInvalidArgument. Its one definition is this one: a
// backend's refusal to prepare a call, of class ErrInvalidArgument (the
// built-in backends, which cannot import this package, say
// errdefs.ErrInvalidArgument), is reported as ErrInvalidCall too.
var ErrInvalidCall = errdefs.ErrInvalidArgument.WithMessage("invalid call")

// refusedCall makes err, a backend's refusal to prepare a call or a
// capability's refusal of its input (capabilities.ErrInvalidInput, as a
// library tool's input refused is), of class ErrInvalidCall when it is of
// class ErrInvalidArgument, its message unchanged.
func refusedCall(err error) error {
	if err == nil || errors.Is(err, ErrInvalidCall) || !errors.Is(err, ErrInvalidArgument) {
		return err
	}
	return invalidCall{err}
}

// invalidCall is an error of class ErrInvalidCall besides its own.
type invalidCall struct{ error }

func (e invalidCall) Unwrap() error        { return e.error }
func (e invalidCall) Is(target error) bool { return target == ErrInvalidCall }
