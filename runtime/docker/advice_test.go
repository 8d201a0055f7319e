package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// noImages is an engine that has no image and reaches no registry.
type noImages struct {
	fake
	pulls int
}

func (f *noImages) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{}, fmt.Errorf("no such image: %w", errdefs.ErrNotFound)
}

func (f *noImages) ImagePull(context.Context, string, image.PullOptions) (io.ReadCloser, error) {
	f.pulls++
	return nil, errors.New("Get \"https://registry.example/v2/\": no such host")
}

// TestImageNotFoundAdvice: an image that is neither local nor pulled is
// ErrNotFound with a message that names the image and, last, the command
// that gets it: `make testimage` for ccrun's test images, `docker pull
// REF` for the others, whatever the pull policy and whichever step (the
// resolve before the gate, the create) found it missing.
func TestImageNotFoundAdvice(t *testing.T) {
	id := "sha256:" + strings.Repeat("0a", 32)
	for _, tc := range []struct {
		ref, want, not string
	}{
		{"alpine:3.20", "get it with `docker pull alpine:3.20`", "make testimage"},
		{"docker.io/library/alpine", "`docker pull docker.io/library/alpine`", "make testimage"},
		{"registry.example:5000/team/tool@sha256:" + strings.Repeat("1b", 32), "`docker pull registry.example:5000/team/tool@sha256:", "make testimage"},
		{"ccrun-test:busybox", "ccrun-test:busybox is one of ccrun's test images: build it from ccrun's source tree with `make testimage`", "docker pull ccrun-test"},
		{"docker.io/ccrun-test:other", "with `make testimage` (it builds ccrun-test:busybox)", "docker pull"},
		{"example.com/ccrun-test:busybox", "`docker pull example.com/ccrun-test:busybox`", "make testimage"},
		{id, id + " is an image ID, which no registry serves", "make testimage"},
	} {
		for _, pull := range []PullPolicy{PullNever, PullMissing, PullAlways} {
			t.Run(tc.ref+"/"+string(pull), func(t *testing.T) {
				t.Parallel()
				eng := &noImages{}
				e, err := New(context.Background(), withEngine(eng))
				if err != nil {
					t.Fatal(err)
				}
				_, err = e.Resolve(context.Background(), tc.ref, pull)
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Resolve = %v; want ErrNotFound", err)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, "docker: image "+tc.ref+" not found locally") {
					t.Errorf("%q does not start by naming the image", msg)
				}
				if !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.not) {
					t.Errorf("%q: want %q in it, not %q", msg, tc.want, tc.not)
				}
				if i := strings.Index(msg, "no such"); i < 0 || i > strings.Index(msg, tc.want) {
					t.Errorf("%q: want the engine's words before the advice", msg)
				}
				if pulled := eng.pulls > 0; pulled != (pull != PullNever) {
					t.Errorf("pull policy %s: %d pulls", pull, eng.pulls)
				}
				if pull != PullNever && !strings.Contains(msg, "could not be pulled") {
					t.Errorf("%q: want it to say the pull failed", msg)
				}
			})
		}
	}
	// The create step (an image removed after the resolve) says the same.
	e, err := New(context.Background(), withEngine(&fake{create: errdefs.ErrNotFound}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(context.Background(), Spec{Image: "alpine:3.20", Pull: PullNever})
	if !errors.Is(err, ErrNotFound) || !strings.HasSuffix(err.Error(), "get it with `docker pull alpine:3.20`, or build it under that name (docker build -t alpine:3.20 .)") {
		t.Errorf("Run = %v; want ErrNotFound ending with the docker pull advice", err)
	}
}
