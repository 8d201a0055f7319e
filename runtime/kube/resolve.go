package kube

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccrun/ccrun/internal/ctr"
)

// Resolve returns the digest-pinned reference (name@sha256:…) of the image
// ref names now, so that a grant bound to it runs exactly that image on
// any node, whatever the tag is made to name later. A reference pinned
// already is returned as it is, with no request. A tag is looked up, as
// policy says, in the places the local engine's pull policy names:
//
//   - PullNever: the cluster only, the images its nodes report
//     (Node.status.images, which lists each image by its tags and its
//     repository digests); the nodes must agree. An image no node has is
//     ErrNotFound, saying the registry it would be pulled from (Registry).
//     Nothing but the API server is asked, and nothing of ref is sent
//     to it: this is the lookup for a call nobody has allowed yet.
//   - PullMissing (""): the nodes, else the image's registry.
//   - PullAlways: the registry, whatever the nodes have.
//
// The registry is asked with remote.Head (the manifest's digest, of an
// index for a multi-platform image: each node pulls its platform), with
// the credentials of the pull secrets (WithPullSecrets), then of the
// user's Docker configuration (authn's default keychain:
// ~/.docker/config.json, its credential helpers); the nodes
// then pull by that digest. Asking the registry sends ref off this
// machine: do it only for a call that was allowed.
func (e *Executor) Resolve(ctx context.Context, ref string, policy PullPolicy) (string, error) {
	if strings.Contains(ref, "@sha256:") {
		return ref, nil
	}
	if !policy.Known() {
		return "", newError(ErrInvalidArgument, nil, "kube: pull policy %q: want never, missing or always", policy)
	}
	if policy.OrDefault() != PullAlways {
		d, err := e.onNodes(ctx, ref)
		if err == nil || !errors.Is(err, ErrNotFound) || policy.OrDefault() == PullNever {
			return d, err
		}
	}
	return e.fromRegistry(ctx, ref)
}

// onNodes resolves the tag ref through the images the nodes report.
func (e *Executor) onNodes(ctx context.Context, ref string) (string, error) {
	want := normalize(ref)
	repo := want[:strings.LastIndex(want, ":")]
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	nodes, err := e.api.Nodes().List(rctx, metav1.ListOptions{})
	if err != nil {
		return "", classify(e.server, "list nodes to resolve "+ref, err)
	}
	found := map[string][]string{}
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			has := false
			for _, name := range img.Names {
				if name == want {
					has = true
				}
			}
			if !has {
				continue
			}
			for _, name := range img.Names {
				if strings.HasPrefix(name, repo+"@sha256:") {
					found[name] = append(found[name], n.Name)
				}
			}
		}
	}
	switch len(found) {
	case 1:
		for d := range found {
			return d, nil
		}
	case 0:
		return "", newError(ErrNotFound, nil, "kube: image %s is on no node of %s; it would be pulled from %s", ref, e.server, Registry(ref))
	}
	var ds []string
	for d, on := range found {
		ds = append(ds, d+" on "+strings.Join(on, ","))
	}
	sort.Strings(ds)
	return "", newError(ErrInvalidArgument, nil, "kube: image %s names different images on different nodes (%s): give it by digest", ref, strings.Join(ds, "; "))
}

// fromRegistry resolves the tag ref to its digest in its registry.
func (e *Executor) fromRegistry(ctx context.Context, ref string) (string, error) {
	want := normalize(ref)
	r, err := name.ParseReference(want, name.StrictValidation)
	if err != nil {
		return "", newError(ErrInvalidArgument, err, "kube: image %s is not a reference a registry can be asked for", ref)
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	opts, err := e.registryOptions(rctx)
	if err != nil {
		return "", err
	}
	d, err := remote.Head(r, opts...)
	if err != nil {
		return "", registryError(ref, Registry(ref), e.pullSecrets, err)
	}
	return want[:strings.LastIndex(want, ":")] + "@" + d.Digest.String(), nil
}

// registryOptions are the options of every request ccrun makes to a
// registry: ctx, the credentials (the pull secrets', then the user's
// Docker configuration's: keychain), ccrun's user agent.
func (e *Executor) registryOptions(ctx context.Context) ([]remote.Option, error) {
	kc, err := e.keychain(ctx)
	if err != nil {
		return nil, err
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithUserAgent("ccrun")}, nil
}

// registryError classifies what the registry said of ref, asked with the
// credentials of the pull secrets and the user's Docker configuration.
func registryError(ref, registry string, secrets []string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusNotFound:
			return newError(ErrNotFound, err, "kube: image %s: the registry %s has no such image", ref, registry)
		case http.StatusUnauthorized, http.StatusForbidden:
			if len(secrets) > 0 {
				return newError(ctr.ErrRefused, err, "kube: image %s: the registry %s refused the credentials of the pull secrets %s and of the Docker configuration (check the secrets' entry for %s, or docker login %s)", ref, registry, strings.Join(secrets, ", "), registry, registry)
			}
			return newError(ctr.ErrRefused, err, "kube: image %s: the registry %s refused (log in with docker login %s)", ref, registry, registry)
		}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return newError(ErrUnavailable, err, "kube: image %s: cannot reach the registry %s", ref, registry)
}

// Registry is the registry a reference's image would be pulled from
// (docker.io for a name without one), read from ref alone: no lookup, no
// DNS query. It is what a prompt says of an image that is not on any
// node.
func Registry(ref string) string {
	first, _, _ := strings.Cut(normalize(ref), "/")
	return first
}

// normalize spells ref as nodes report it: registry, repository, tag
// (docker.io/library/ for a short name, :latest for none).
func normalize(ref string) string {
	name, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	return name + ":" + tag
}
