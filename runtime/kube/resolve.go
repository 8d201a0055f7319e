package kube

import (
	"context"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resolve returns the digest-pinned reference (name@sha256:…) of the image
// ref names now, so that a grant bound to it runs exactly that image on
// any node, whatever the tag is made to name later. A reference pinned
// already is returned as it is. A tag is resolved through the cluster: the
// images its nodes report (Node.status.images, which lists each image by
// its tags and its repository digests); the nodes must agree. An image no
// node has is ErrNotFound: give it by digest (pull policy applies then).
// The pull policy is not used: the cluster pulls, not ccrun.
func (e *Executor) Resolve(ctx context.Context, ref string, _ PullPolicy) (string, error) {
	if strings.Contains(ref, "@sha256:") {
		return ref, nil
	}
	want := normalize(ref)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	nodes, err := e.api.Nodes().List(rctx, metav1.ListOptions{})
	if err != nil {
		return "", classify(e.server, "list nodes to resolve "+ref, err)
	}
	repo := want[:strings.LastIndex(want, ":")]
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
		return "", newError(ErrNotFound, nil, "kube: image %s is on no node of %s: give it by digest (%s@sha256:…) or load it on the nodes", ref, e.server, repo)
	}
	var ds []string
	for d, on := range found {
		ds = append(ds, d+" on "+strings.Join(on, ","))
	}
	sort.Strings(ds)
	return "", newError(ErrInvalidArgument, nil, "kube: image %s names different images on different nodes (%s): give it by digest", ref, strings.Join(ds, "; "))
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
