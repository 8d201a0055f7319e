package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/containerd/errdefs"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The classes of error New, Run, Resolve and GC return, for errors.Is. They
// are the containerd errdefs values, as in runtime/docker, so one check
// serves both engines of @docker.
var (
	// ErrUnavailable: the API server does not answer, or the pod was lost
	// (evicted, its node gone, deleted from outside) before it finished;
	// or the cluster refuses us (internal/ctr.ErrRefused, of this class):
	// the API server refuses the credentials, RBAC forbids what the call
	// needs (pods, pods/attach, pods/exec), a registry refuses the
	// lookup, the helpers' ConfigMap is someone else's.
	ErrUnavailable = errdefs.ErrUnavailable
	// ErrNotFound: the image is on no node (and the lookup asked no
	// registry), or not in its registry and cannot be pulled, or the
	// namespace does not exist.
	ErrNotFound = errdefs.ErrNotFound
	// ErrInvalidArgument: the Spec cannot run on Kubernetes as given, or
	// the API server refused the pod (admission, validation).
	ErrInvalidArgument = errdefs.ErrInvalidArgument
)

// newError is an error of class with a message a person can act on and,
// when there is one, the cause underneath.
func newError(class, cause error, format string, args ...any) error {
	return ctr.NewError(class, cause, format, args...)
}

// unavailable is the error for an API server that does not answer.
func unavailable(server string, cause error) error {
	return newError(ErrUnavailable, cause,
		"kube: cannot reach the Kubernetes API server at %s: check the cluster (kubectl cluster-info) or the kubeconfig and context ccrun uses (ccrun doctor)", server)
}

// classify turns a client-go error into one of the classes above. It goes
// by the API status (apierrors) and the network error underneath, never by
// the message text.
func classify(server, op string, err error) error {
	if err == nil {
		return nil
	}
	var nerr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("kube: %s: %w", op, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH), errors.As(err, &nerr):
		return unavailable(server, fmt.Errorf("%s: %w", op, err))
	case apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err):
		return unavailable(server, fmt.Errorf("%s: %w", op, err))
	case apierrors.IsUnauthorized(err):
		return newError(ctr.ErrRefused, err, "kube: %s: the API server at %s refused the credentials of the kubeconfig", op, server)
	case apierrors.IsForbidden(err):
		return newError(ctr.ErrRefused, err, "kube: %s: forbidden (RBAC: ccrun needs create/get/list/watch/patch/delete on pods, create on pods/attach and pods/exec)", op)
	case apierrors.IsNotFound(err):
		return newError(ErrNotFound, err, "kube: %s", op)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return newError(ErrInvalidArgument, err, "kube: %s: the API server refused the pod", op)
	}
	return fmt.Errorf("kube: %s: %w", op, err)
}
