package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// The classes of error Run, New and GC return, for errors.Is. They are the
// containerd errdefs values themselves, so errdefs.IsNotFound and friends
// agree with errors.Is on them.
var (
	// ErrUnavailable: the Docker Engine could not be reached, or it
	// refused us (permission on its socket; a refusal of the engine's
	// own): internal/ctr.ErrRefused, of this class.
	ErrUnavailable = errdefs.ErrUnavailable
	// ErrNotFound: the image is neither local nor pullable.
	ErrNotFound = errdefs.ErrNotFound
	// ErrInvalidArgument: the Spec cannot be run as given (memory limit
	// too small, bad mount source, unknown network mode...).
	ErrInvalidArgument = errdefs.ErrInvalidArgument
)

// newError is an error of class with a message a person can act on and,
// when there is one, the engine's own error as its cause.
func newError(class error, cause error, format string, args ...any) error {
	return ctr.NewError(class, cause, format, args...)
}

// TestImageRepo is the repository of ccrun's own test images, built from
// its source tree by `make testimage` (ccrun-test:busybox), never pulled.
const TestImageRepo = "ccrun-test"

// imageNotFound is the ErrNotFound error for the image ref names: what
// happened (msg), the engine's error, and the command that gets the image.
func imageNotFound(ref, msg string, cause error, pulled bool) error {
	return &ctr.Error{Class: ErrNotFound, Msg: msg, Cause: cause, Hint: imageAdvice(ref, pulled)}
}

// imageAdvice names the command that gets the image ref names: `make
// testimage` for ccrun's test images, `docker pull REF` for any other
// reference (and `docker login` when a pull was tried: the registry may
// want one); an image ID names no image to pull.
func imageAdvice(ref string, pulled bool) string {
	switch name := repository(ref); {
	case name == TestImageRepo:
		return fmt.Sprintf("%s is one of ccrun's test images: build it from ccrun's source tree with `make testimage` (it builds %s:busybox)", ref, TestImageRepo)
	case name == "":
		return fmt.Sprintf("%s is an image ID, which no registry serves: pull or build that image again by its name (docker pull NAME:TAG)", ref)
	case pulled:
		return fmt.Sprintf("get it with `docker pull %s` (after `docker login` when its registry wants one), or build it under that name (docker build -t %s .)", ref, ref)
	}
	return fmt.Sprintf("get it with `docker pull %s`, or build it under that name (docker build -t %s .)", ref, ref)
}

// repository is the familiar repository of an image reference, without
// tag or digest and without the default registry's prefixes
// ("docker.io/library/busybox:1" is "busybox"); "" for an image ID.
func repository(ref string) string {
	if strings.HasPrefix(ref, "sha256:") || (len(ref) == 64 && strings.Trim(ref, "0123456789abcdef") == "") {
		return ""
	}
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	for _, p := range []string{"index.docker.io/", "docker.io/", "library/"} {
		name = strings.TrimPrefix(name, p)
	}
	return name
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
		return newError(ctr.ErrRefused, err,
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
		return newError(ctr.ErrRefused, err, "docker: %s", op)
	}
	return fmt.Errorf("docker: %s: %w", op, err)
}
