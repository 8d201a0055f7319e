package ctr

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestError(t *testing.T) {
	cause := fs.ErrPermission
	for _, tc := range []struct {
		err   *Error
		text  string
		cause bool
	}{
		{&Error{Class: errdefs.ErrNotFound, Msg: "no image"}, "no image", false},
		{&Error{Class: errdefs.ErrNotFound, Msg: "no image", Cause: cause}, "no image: permission denied", true},
		{&Error{Class: errdefs.ErrNotFound, Msg: "no image", Hint: "pull it"}, "no image: pull it", false},
		{&Error{Class: errdefs.ErrNotFound, Msg: "no image", Cause: cause, Hint: "pull it"}, "no image (permission denied): pull it", true},
	} {
		if got := tc.err.Error(); got != tc.text {
			t.Errorf("Error() = %q, want %q", got, tc.text)
		}
		if !errors.Is(tc.err, errdefs.ErrNotFound) || errors.Is(tc.err, errdefs.ErrUnavailable) {
			t.Errorf("%q: not of its class alone", tc.text)
		}
		if got := errors.Is(tc.err, cause); got != tc.cause {
			t.Errorf("%q: errors.Is(cause) = %v, want %v", tc.text, got, tc.cause)
		}
	}
	if err := NewError(errdefs.ErrUnavailable, nil, "engine %s down", "x"); err.Error() != "engine x down" || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("NewError: %v", err)
	}
}

func TestCleanup(t *testing.T) {
	var got []int
	var c Cleanup
	for i := range 3 {
		c.Push(func(context.Context) { got = append(got, i) })
	}
	c.Run(context.Background())
	if want := []int{2, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}

// TestRefused: an engine's refusal is of class ErrUnavailable, and never
// ErrPermissionDenied (the gate's), even over a cause of that class.
func TestRefused(t *testing.T) {
	for _, cause := range []error{nil, fs.ErrPermission, errdefs.ErrPermissionDenied, errors.Join(errors.New("ping"), errdefs.ErrPermissionDenied)} {
		err := NewError(ErrRefused, cause, "docker: ping: permission denied on the socket")
		if !errors.Is(err, ErrRefused) || !errors.Is(err, errdefs.ErrUnavailable) || errors.Is(err, errdefs.ErrPermissionDenied) {
			t.Errorf("cause %v: %v: want ErrRefused, of class ErrUnavailable, and not ErrPermissionDenied", cause, err)
		}
		if cause != nil && !strings.Contains(err.Error(), cause.Error()) {
			t.Errorf("cause %v: %q does not say it", cause, err)
		}
	}
	if err := NewError(ErrRefused, fs.ErrPermission, "x"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("%v: the cause is lost", err)
	}
}
