package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// The exit codes of ccrun itself. A tool that ran passes its own code
// through; see exitCode.
const (
	exitOK       = 0
	exitUsage    = 64  // bad usage: flags, arguments, input, an unknown capability, a module that is not a valid WASI command
	exitDenied   = 77  // the gate did not allow the call, or what runs changed since it did
	exitConfig   = 78  // bad configuration: ccrun.json, a settings file, a manifest
	exitTimeout  = 124 // the tool ran past its timeout and was killed
	exitInternal = 125 // ccrun itself failed, or the environment is unavailable
	exitKilled   = 137 // the tool was stopped by ccrun (memory, output limit, cancelled) without a code of its own
)

// usageError marks an error in how ccrun was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode is the one place where outcomes become ccrun's exit code.
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
		default: // memory, output, cancelled
			if res.ExitCode != 0 {
				return res.ExitCode
			}
			return exitKilled
		}
	}
	var ue usageError
	switch {
	case errors.As(err, &ue),
		errors.Is(err, ccrun.ErrInvalidCall),
		errors.Is(err, capabilities.ErrInvalidInput),
		errors.Is(err, capabilities.ErrNotFound),
		errors.Is(err, wasm.ErrNotWasm), errors.Is(err, wasm.ErrTruncated),
		errors.Is(err, wasm.ErrInvalidModule), errors.Is(err, wasm.ErrMissingStart):
		return exitUsage
	case errors.Is(err, permission.ErrPermissionDenied),
		errors.Is(err, capabilities.ErrChanged):
		return exitDenied
	case errors.Is(err, permission.ErrInvalidConfig),
		errors.Is(err, capabilities.ErrInvalidManifest):
		return exitConfig
	case errors.Is(err, context.DeadlineExceeded):
		return exitTimeout
	}
	return exitInternal
}

// report prints err for a person: one line, prefixed with ccrun.
func report(w io.Writer, err error) {
	if err == nil {
		return
	}
	fmt.Fprintf(w, "ccrun: %v\n", err)
}
