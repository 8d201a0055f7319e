package ctr

import (
	"context"
	"errors"
	"io/fs"
	"slices"
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
