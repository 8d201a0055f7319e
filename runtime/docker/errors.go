package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// The classes of error Run, New and GC return, for errors.Is. They are the
// containerd errdefs values themselves, so errdefs.IsNotFound and friends
// agree with errors.Is on them.
var (
	// ErrUnavailable: the Docker Engine could not be reached.
	ErrUnavailable = errdefs.ErrUnavailable
	// ErrPermissionDenied: the engine refused us (socket permissions).
	ErrPermissionDenied = errdefs.ErrPermissionDenied
	// ErrNotFound: the image is neither local nor pullable.
	ErrNotFound = errdefs.ErrNotFound
	// ErrInvalidArgument: the Spec cannot be run as given (memory limit
	// too small, bad mount source, unknown network mode...).
	ErrInvalidArgument = errdefs.ErrInvalidArgument
)

// classError is an error of one class with a message a person can act on
// and, when there is one, the engine's own error as its cause.
type classError struct {
	class error
	msg   string
	cause error
}

func (e *classError) Error() string {
	if e.cause == nil {
		return e.msg
	}
	return e.msg + ": " + e.cause.Error()
}

func (e *classError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.class}
	}
	return []error{e.class, e.cause}
}

func newError(class error, cause error, format string, args ...any) error {
	return &classError{class: class, msg: fmt.Sprintf(format, args...), cause: cause}
}

// unavailable is the error for an engine that does not answer at host.
func unavailable(host string, cause error) error {
	return newError(ErrUnavailable, cause,
		"docker: cannot reach the docker engine at %s: start one (dockerd &, or systemctl start docker) or point DOCKER_HOST at one", host)
}

// classify turns an engine error into one of the classes above, with a
// message saying what to do about it. It never reads the error's text: it
// goes by client.IsErrConnectionFailed, the errno underneath, and errdefs.
func classify(host, op string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("docker: %s: %w", op, err)
	case client.IsErrConnectionFailed(err) && errors.Is(err, fs.ErrPermission):
		return newError(ErrPermissionDenied, err,
			"docker: %s: permission denied on the docker engine socket at %s: add your user to the docker group (sudo usermod -aG docker $USER, then log in again) or point DOCKER_HOST at an engine you may use", op, host)
	case client.IsErrConnectionFailed(err):
		return unavailable(host, fmt.Errorf("%s: %w", op, err))
	case errdefs.IsUnavailable(err):
		return unavailable(host, fmt.Errorf("%s: %w", op, err))
	case errdefs.IsNotFound(err):
		return newError(ErrNotFound, err, "docker: %s", op)
	case errdefs.IsInvalidArgument(err):
		return newError(ErrInvalidArgument, err, "docker: %s: the engine refused the container's configuration", op)
	case errdefs.IsPermissionDenied(err), errdefs.IsUnauthorized(err):
		return newError(ErrPermissionDenied, err, "docker: %s", op)
	}
	return fmt.Errorf("docker: %s: %w", op, err)
}
