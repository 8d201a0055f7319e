package ccrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/docker"
)

// ImageResolver is implemented by a @docker Executor that can say which
// image a reference names now (runtime/docker's can). With one, a @docker
// call's grant is bound to that image, not to its name, and the call runs
// by the image's ID: a tag moved to another image after it was approved
// is asked about again, and the image that runs is the one approved.
// Without one, grants are bound to the reference as written.
type ImageResolver interface {
	// Resolve returns the image ID ref names, pulling it first as the
	// pull policy says ("missing", the default, "always" or "never").
	Resolve(ctx context.Context, ref, pull string) (string, error)
}

// checkResolveTimeout bounds the image lookup of Check, which asks the
// engine but never pulls.
const checkResolveTimeout = 10 * time.Second

// bindImage resolves a @docker call's image before the gate sees it: the
// request's digest then covers the image ID, the person asked sees it, and
// the invocation runs by it (pulled already, so never again). So an image
// not yet local is pulled, as the call's pull policy says, before anyone is
// asked: what is approved is what runs. pull false looks the image up
// without pulling (Check). A call the gate refuses whatever its digest, or
// a @docker executor that is not an ImageResolver, leaves the call as it is.
func (r *Runtime) bindImage(ctx context.Context, req *permission.Request, inv *Invocation, pull bool) error {
	if inv.Environment != ceiling.Docker || inv.Image == "" {
		return nil
	}
	if r.gate.Decide(req).Verdict == permission.Refuse {
		return nil // no grant can change a refusal: no need to ask the engine, or pull
	}
	e, err := r.executor(ctx, ceiling.Docker)
	if err != nil {
		return err
	}
	res, ok := e.(ImageResolver)
	if !ok {
		return nil
	}
	policy := inv.Pull
	if !pull {
		policy = "never"
	}
	id, err := res.Resolve(ctx, inv.Image, policy)
	if err != nil {
		return err
	}
	req.Digest = imageDigest(req.Digest, id)
	req.Display += "\nimage: " + id
	inv.Image, inv.Pull = id, "never"
	return nil
}

// imageDigest binds digest (of the call or the capability) to an image ID.
func imageDigest(digest, id string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\nimage %s", digest, id))
	return "sha256:" + hex.EncodeToString(h[:])
}

func (d *dockerExecutor) Resolve(ctx context.Context, ref, pull string) (string, error) {
	return d.e.Resolve(ctx, ref, docker.PullPolicy(pull))
}
