// Package dockerenv is the backend of @docker: an image or a @docker
// capability, its reference looked up on the engine before the gate (so a
// grant is bound to the image's ID, not to a tag that may move) and pulled,
// when it is not there, only once the call is allowed, run hardened
// on one of the environment's engines: the local Docker Engine
// (runtime/docker) or a Kubernetes cluster (runtime/kube). The engine
// changes where the container runs, not what the person trusts: the key,
// the digest, the ceiling and the prompt are the same on both.
package dockerenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// Engine is where @docker's containers run.
type Engine interface {
	// Run runs inv's container from image with the pull policy and,
	// when pool, from the warm pool.
	Run(ctx context.Context, inv *backend.Invocation, image, pull string, pool bool) (*job.Result, error)
	// Resolve returns the image ID ref names now, pulling it first as
	// the pull policy says. With "never" it looks at what the engine has
	// and sends nothing to any registry (an error of class
	// errdefs.ErrNotFound when the engine has no such image): Bind's
	// lookup, before anyone allowed the call.
	Resolve(ctx context.Context, ref, pull string) (string, error)
	// Close releases the engine (docker.Executor.Close,
	// kube.Executor.Close).
	Close() error
}

// Backend prepares and runs @docker calls. Its engine starts when a call
// first needs it (to look up an image the gate did not refuse outright,
// or to run), not before. It is safe for concurrent use.
type Backend struct {
	start func(context.Context) (Engine, error)
	e     backend.Lazy[Engine]
}

// Options are a @docker call's options (ccrun.Call.Options), what
// engines.DockerOptions names for a library user. The zero value is the
// defaults: no network, the image pulled when it is missing.
type Options struct {
	// Network is the container's network: "" or "none" (only loopback),
	// "bridge" or "host" (the engine's; on Kubernetes, bridge only). A
	// network other than none loosens the sandbox: it is shown to the
	// person asked and audited, the call is decided as a network call,
	// and a grant covers it only with that network.
	Network string
	// Pull is the pull policy: "" or "missing" (pulled when the engine
	// does not have it, once the call is allowed), "never" or "always"
	// (pulled again once allowed; a different image is asked again).
	Pull string
}

// Environment says the options are @docker's.
func (Options) Environment() ceiling.Environment { return ceiling.Docker }

// options reads inv's options, refusing values no engine knows before
// anyone is asked.
func options(inv *backend.Invocation) (Options, error) {
	var o Options
	switch v := inv.Options.(type) {
	case nil:
		return o, nil
	case Options:
		o = v
	case *Options:
		o = *v
	default:
		return o, fmt.Errorf("call: @docker options of type %T: want engines.DockerOptions: %w", inv.Options, errdefs.ErrInvalidArgument)
	}
	switch o.Network {
	case "", "none", "bridge", "host":
	default:
		return o, fmt.Errorf("call: network %q: want none, bridge or host: %w", o.Network, errdefs.ErrInvalidArgument)
	}
	if !ctr.PullPolicy(o.Pull).Known() {
		return o, fmt.Errorf("call: pull policy %q: want missing, never or always: %w", o.Pull, errdefs.ErrInvalidArgument)
	}
	return o, nil
}

// New returns the @docker backend on the engine start returns.
func New(start func(context.Context) (Engine, error)) *Backend { return &Backend{start: start} }

// plan is what runs.
type plan struct {
	ref   string // the reference as the call or the manifest gives it
	image string // the reference, then the image ID once bound
	pull  string
	pool  bool
	// what Bind was given, which Fetch binds again to what arrived
	digest, display string
}

// EnforcesLimits says the engine stops the container itself on a timeout,
// a cancellation or the output cap.
func (b *Backend) EnforcesLimits() bool { return true }

// Prepare keys the image and binds the grant to the reference as written;
// Bind then binds it to the image. It reads the call's options (Options):
// a network other than none is a loosening, shown, decided as a network
// call and part of what a grant is bound to, a capability's too.
func (b *Backend) Prepare(_ context.Context, inv *backend.Invocation) (*backend.Prepared, error) {
	o, err := options(inv)
	if err != nil {
		return nil, err
	}
	var loosens []string
	if o.Network != "" {
		inv.Network = o.Network // over a capability's manifest's
		if o.Network != "none" {
			loosens = []string{"network: " + o.Network}
		}
	}
	network := inv.Network != "" && inv.Network != "none"
	if c := inv.Capability; c != nil {
		m := &c.Manifest
		inv.Dir = m.Entry.Workdir
		inv.Args = append(append([]string(nil), m.Entry.Argv...), inv.Args...)
		inv.Plan = &plan{ref: m.Entry.Image, image: m.Entry.Image, pull: o.Pull, pool: m.Pool}
		p := &backend.Prepared{Display: backend.Display(m.Entry.Image, inv.Args), Loosens: loosens, Network: network}
		if n := inv.Network; n != "" && n != string(m.NetworkOrDefault()) {
			// the capability's digest covers its manifest's network,
			// not this one: a grant of it as written does not cover it
			p.OptionsDigest = "network " + n
		}
		return p, nil
	}
	if m := inv.Limits.Memory; m > 0 && m < job.MinMemory {
		// refused before the engine is reached or anyone is asked
		return nil, fmt.Errorf("call: memory limit %d bytes is below the %d bytes a container needs to start: %w", m, job.MinMemory, errdefs.ErrInvalidArgument)
	}
	inv.Plan = &plan{ref: inv.Target, image: inv.Target, pull: o.Pull}
	return &backend.Prepared{Key: imageKey(inv.Tool, inv.Target), Display: backend.Display(inv.Target, inv.Args),
		Digest:  backend.ContentDigest([]byte(inv.Target), inv.Mounts, inv.Network, nil, nil),
		Loosens: loosens, Network: network}, nil
}

// Bind binds the grant to the image the engine has under the reference,
// before the gate sees the call: the digest then covers the image ID, the
// person asked sees it, and the call runs by it. It looks, and never pulls:
// nothing leaves the machine for a call nobody allowed, not even a
// registry lookup. An image the engine does not have (or, under pull policy
// always, one pulled again) is named in p.Fetch with its registry, from the
// reference alone; Fetch pulls it once the call is allowed.
func (b *Backend) Bind(ctx context.Context, inv *backend.Invocation, p *backend.Prepared) error {
	pl, ok := inv.Plan.(*plan)
	if !ok || pl.image == "" {
		return nil
	}
	e, err := b.engine(ctx)
	if err != nil {
		return err
	}
	pl.digest, pl.display = p.Digest, p.Display
	id, err := e.Resolve(ctx, pl.ref, "never")
	switch {
	case err == nil:
		pl.bind(p, id)
		if pl.pull == "always" {
			p.Fetch = "pull policy always: pulled again from " + registryOf(pl.ref) + " once allowed; a different image that arrives is asked about again"
			pl.image, pl.pull = pl.ref, "always"
		}
		return nil
	case errors.Is(err, errdefs.ErrNotFound) && pl.pull != "never":
		p.Digest = imageDigest(p.Digest, unbound)
		p.Display += "\nimage: not local"
		p.Fetch = "not local: pulled from " + registryOf(pl.ref) + " once allowed, and the grant bound to the image that arrives"
		p.Unbound = true
		return nil
	}
	return err
}

// Fetch pulls the image Bind found missing (or, under pull policy always,
// pulls it again), now that the call is allowed, and binds the grant to
// the image that arrived: the call runs by its ID, never by the name.
func (b *Backend) Fetch(ctx context.Context, inv *backend.Invocation, p *backend.Prepared) error {
	pl, ok := inv.Plan.(*plan)
	if !ok {
		return fmt.Errorf("@docker: the call was not prepared: %w", errdefs.ErrInvalidArgument)
	}
	e, err := b.engine(ctx)
	if err != nil {
		return err
	}
	pull := pl.pull
	if pull == "" || pull == "never" {
		pull = "missing"
	}
	id, err := e.Resolve(ctx, pl.ref, pull)
	if err != nil {
		return err
	}
	pl.bind(p, id)
	p.Display += " (pulled from " + registryOf(pl.ref) + " once allowed)"
	return nil
}

// bind binds p, and what runs, to the image id.
func (pl *plan) bind(p *backend.Prepared, id string) {
	p.Digest = imageDigest(pl.digest, id)
	p.Display = pl.display + "\nimage: " + id
	pl.image, pl.pull = id, "never"
}

// registryOf names the registry ref is pulled from, read from the
// reference alone (no lookup): Docker Hub for a name without one.
func registryOf(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "its registry (" + ref + " does not parse: " + err.Error() + ")"
	}
	domain := reference.Domain(named)
	if domain == "docker.io" {
		return "registry docker.io (Docker Hub, or the engine's mirror of it)"
	}
	return "registry " + domain
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

// unbound stands for the image of a call whose image is not here: random
// for the process, so that no grant kept anywhere (a ccrun.json written by
// anyone) can name it, and a call is allowed to pull only by a rule, a mode
// or the person asked.
var unbound = func() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "not here " + hex.EncodeToString(b)
}()

// imageDigest binds digest (of the call or the capability) to an image ID.
func imageDigest(digest, id string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\nimage %s", digest, id))
	return "sha256:" + hex.EncodeToString(h[:])
}
