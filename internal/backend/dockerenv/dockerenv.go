// Package dockerenv is the backend of @docker: an image or a @docker
// capability, its reference resolved to the image's ID before the gate (so
// a grant is bound to the image, not to a tag that may move), run hardened
// on one of the environment's engines: the local Docker Engine
// (runtime/docker) or a Kubernetes cluster (runtime/kube). The engine
// changes where the container runs, not what the person trusts: the key,
// the digest, the ceiling and the prompt are the same on both.
package dockerenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// Engine is where @docker's containers run.
type Engine interface {
	// Run runs inv's container from image with the pull policy and,
	// when pool, from the warm pool.
	Run(ctx context.Context, inv *backend.Invocation, image, pull string, pool bool) (*job.Result, error)
	// Resolve returns the image ID ref names now, pulling it first as
	// the pull policy says.
	Resolve(ctx context.Context, ref, pull string) (string, error)
	Close() error
}

// Backend prepares and runs @docker calls. Its engine starts when a call
// first needs it (to resolve an image the gate did not refuse outright, or
// to run), not before. It is safe for concurrent use.
type Backend struct {
	start func(context.Context) (Engine, error)
	e     backend.Lazy[Engine]
}

// New returns the @docker backend on the engine start returns.
func New(start func(context.Context) (Engine, error)) *Backend { return &Backend{start: start} }

// plan is what runs.
type plan struct {
	image string // the reference, then the image ID once bound
	pull  string
	pool  bool
}

// EnforcesLimits says the engine stops the container itself on a timeout,
// a cancellation or the output cap.
func (b *Backend) EnforcesLimits() bool { return true }

// Prepare keys the image and binds the grant to the reference as written;
// Bind then binds it to the image.
func (b *Backend) Prepare(_ context.Context, inv *backend.Invocation) (*backend.Prepared, error) {
	if c := inv.Capability; c != nil {
		m := &c.Manifest
		inv.Dir = m.Entry.Workdir
		inv.Args = append(append([]string(nil), m.Entry.Argv...), inv.Args...)
		inv.Plan = &plan{image: m.Entry.Image, pull: inv.Pull, pool: m.Pool}
		return &backend.Prepared{Display: backend.Display(m.Entry.Image, inv.Args)}, nil
	}
	if m := inv.Limits.Memory; m > 0 && m < job.MinMemory {
		// refused before the engine is reached or anyone is asked
		return nil, fmt.Errorf("call: memory limit %d bytes is below the %d bytes a container needs to start: %w", m, job.MinMemory, errdefs.ErrInvalidArgument)
	}
	inv.Plan = &plan{image: inv.Target, pull: inv.Pull}
	return &backend.Prepared{Key: imageKey(inv.Tool, inv.Target), Display: backend.Display(inv.Target, inv.Args),
		Digest:  backend.ContentDigest([]byte(inv.Target), inv.Mounts, inv.Network, nil, nil),
		Network: inv.Network != "" && inv.Network != "none"}, nil
}

// Bind resolves the image before the gate sees the call: the digest then
// covers the image ID, the person asked sees it, and the call runs by it
// (pulled already, so never again). So an image not yet local is pulled,
// as the call's pull policy says, before anyone is asked: what is approved
// is what runs. fetch false looks the image up without pulling (Check).
func (b *Backend) Bind(ctx context.Context, inv *backend.Invocation, p *backend.Prepared, fetch bool) error {
	pl, ok := inv.Plan.(*plan)
	if !ok || pl.image == "" {
		return nil
	}
	e, err := b.engine(ctx)
	if err != nil {
		return err
	}
	policy := pl.pull
	if !fetch {
		policy = "never"
	}
	id, err := e.Resolve(ctx, pl.image, policy)
	if err != nil {
		return err
	}
	p.Digest = imageDigest(p.Digest, id)
	p.Display += "\nimage: " + id
	pl.image, pl.pull = id, "never"
	return nil
}

// Run runs the image Prepare (and Bind) chose.
func (b *Backend) Run(ctx context.Context, inv *backend.Invocation) (*job.Result, error) {
	pl, ok := inv.Plan.(*plan)
	if !ok {
		return nil, fmt.Errorf("@docker: the call was not prepared: %w", errdefs.ErrInvalidArgument)
	}
	e, err := b.engine(ctx)
	if err != nil {
		return nil, err
	}
	return e.Run(ctx, inv, pl.image, pl.pull, pl.pool)
}

func (b *Backend) engine(ctx context.Context) (Engine, error) {
	return b.e.Get(func() (Engine, error) { return b.start(ctx) })
}

// Close releases the engine's client, when it started.
func (b *Backend) Close() error { return b.e.Close(Engine.Close) }

// imageKey keys an image as TOOL:NAME[:TAG], so run_docker:NAME:* and
// run_docker:NAME cover every tag of NAME.
func imageKey(tool, image string) keys.Key {
	k := keys.Key{Tool: tool, Action: image}
	if i := strings.LastIndexByte(image, ':'); i > 0 && !strings.Contains(image[i:], "/") {
		k.Action, k.Detail = image[:i], image[i+1:]
	}
	if !k.Valid() || (k.Detail != "" && !(keys.Key{Tool: "t", Action: k.Detail}).Valid()) {
		k = keys.Key{Tool: tool, Action: image, Exact: true}
	}
	return k
}

// imageDigest binds digest (of the call or the capability) to an image ID.
func imageDigest(digest, id string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\nimage %s", digest, id))
	return "sha256:" + hex.EncodeToString(h[:])
}
