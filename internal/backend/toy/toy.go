// Package toy is a backend for tests: the environment @toy, added to a
// Runtime as a Go program adds its own, in one line:
//
//	ccrun.WithBackend(toy.Environment, ceiling.AlwaysThisSession, toy.New)
//
// A call's target is a text file (a "toy"), which the run prints, followed
// by the call's arguments, one a line. It is keyed run_toy:PATH and bound
// to the file's content, and it says what `ccrun capability new --env @toy`
// writes (Scaffold). It confines nothing: it reads the file on the host
// and writes to the call's streams. It is what a newcomer writes, and the
// tests check that every front end of ccrun picks it up.
package toy

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/containerd/errdefs"
)

// Environment is the toy's environment.
const Environment ceiling.Environment = "@toy"

// Tool is the tool its ad-hoc calls are keyed under.
const Tool = "run_toy"

// Backend prepares and runs @toy calls. It is safe for concurrent use.
type Backend struct{}

// New returns the @toy backend.
func New(context.Context) (*Backend, error) { return &Backend{}, nil }

// plan is what runs: the content the digest was made of.
type plan struct{ content []byte }

// Prepare reads the target: an ad-hoc call's, relative to the project;
// a capability's, inside its directory (which its digest covers).
func (*Backend) Prepare(_ context.Context, inv *backend.Invocation) (*backend.Prepared, error) {
	base := inv.ProjectDir
	if inv.Capability != nil {
		if !filepath.IsLocal(inv.Target) {
			return nil, fmt.Errorf("%s: target %q: want a file inside the capability's directory: %w", Environment, inv.Target, errdefs.ErrInvalidArgument)
		}
		base = inv.Capability.Dir
	}
	path := inv.Target
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: target %s: want a regular file: %w", Environment, inv.Target, errdefs.ErrInvalidArgument)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Environment, err)
	}
	inv.Plan = plan{content: content}
	shown := backend.Rel(inv.ProjectDir, path)
	return &backend.Prepared{
		Key:     backend.PathKey(Tool, shown),
		Display: backend.Display("toy "+shown, inv.Args),
		Digest:  backend.ContentDigest(content, nil, "", inv.Args, inv.Env),
	}, nil
}

// Run prints what Prepare read, then the arguments.
func (*Backend) Run(_ context.Context, inv *backend.Invocation) (*job.Result, error) {
	p, ok := inv.Plan.(plan)
	if !ok {
		return nil, fmt.Errorf("%s: not prepared: %w", Environment, errdefs.ErrInvalidArgument)
	}
	out := inv.Streams.Stdout
	if out == nil {
		out = io.Discard
	}
	if _, err := out.Write(p.content); err != nil {
		return nil, err
	}
	for _, a := range inv.Args {
		fmt.Fprintln(out, a)
	}
	return &job.Result{Reason: job.Exit}, nil
}

// Scaffold is a new @toy capability called name: a toy that says hello.
func (*Backend) Scaffold(name string) capabilities.Template {
	return capabilities.Template{
		Description: "Prints hello (scaffold: edit hello.toy)",
		Target:      "hello.toy",
		Files:       map[string][]byte{"hello.toy": []byte("hello from " + name + "\n")},
	}
}
