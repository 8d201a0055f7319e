package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/runtime/job"
)

// The exit codes of ccrun itself. A tool that ran passes its own code
// through; see exitCode.
const (
	exitOK          = 0
	exitUsage       = 64  // bad usage: flags, arguments, input, an unknown capability, a module that is not a valid WASI command
	exitDenied      = 77  // the gate did not allow the call, or what runs changed since it did
	exitConfig      = 78  // bad configuration: ccrun.json, a settings file, a manifest
	exitTimeout     = 124 // the tool ran past its timeout and was killed
	exitInternal    = 125 // ccrun itself failed, or the environment is unavailable
	exitInterrupted = 130 // ccrun was interrupted (Ctrl-C, a signal): the tool was stopped, or never started (128+SIGINT)
	exitKilled      = 137 // the tool was stopped by ccrun (memory, output limit) without a code of its own
)

// usageError marks an error in how ccrun was called. It is of class
// ccrun.ErrInvalidArgument.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() []error {
	return []error{e.err, ccrun.ErrInvalidArgument}
}

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode is the one place where outcomes become ccrun's exit code. A
// usage error of the CLI's own (usageError: a flag's value, an argument)
// is 64 whatever the library says of what it wraps: a rule or a digest
// the library calls a configuration error when a file holds it is a bad
// flag on the command line. Otherwise it goes by the library's error
// classes only (ccrun.ErrInvalidArgument and the others), in this order: a
// configuration error is one even when a problem in it is an invalid
// argument (an unknown environment in a manifest); an invalid argument is
// one even when what refused it is the ceiling (allowlist add of a @shell
// key for the project); an interruption is one even when the gate then
// denied (Ctrl-C at the prompt).
func exitCode(res *job.Result, err error) int {
	if err == nil {
		if res == nil {
			return exitOK
		}
		switch res.Reason {
		case job.Exit:
			return res.ExitCode
		case job.Timeout:
			return exitTimeout
		case job.Cancelled:
			return exitInterrupted
		default: // memory, output
			if res.ExitCode != 0 {
				return res.ExitCode
			}
			return exitKilled
		}
	}
	var usage usageError
	switch {
	case errors.As(err, &usage):
		return exitUsage
	case errors.Is(err, ccrun.ErrInvalidConfig):
		return exitConfig
	case errors.Is(err, ccrun.ErrInvalidArgument), errors.Is(err, ccrun.ErrNotFound):
		return exitUsage
	case errors.Is(err, context.Canceled): // before a deny: Ctrl-C at the prompt denies, and nothing ran
		return exitInterrupted
	case errors.Is(err, ccrun.ErrPermissionDenied): // ccrun.ErrCeilingViolation too
		return exitDenied
	case errors.Is(err, ccrun.ErrTimeout):
		return exitTimeout
	}
	return exitInternal // ccrun.ErrUnavailable, and what has no class
}

// report prints err for a person: one line, prefixed with ccrun.
func report(w io.Writer, err error) {
	if err == nil {
		return
	}
	fmt.Fprintf(w, "ccrun: %v\n", err)
}
