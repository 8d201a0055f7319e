package kube

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
)

// nodeWith is a ready amd64 node that reports one image by names.
func nodeWith(name string, names ...string) corev1.Node {
	n := node(name, "amd64", true)
	if len(names) > 0 {
		n.Status.Images = []corev1.ContainerImage{{Names: names}}
	}
	return n
}

// TestResolveBeforeTheDecision: the lookup made for a call nobody has
// allowed yet (PullNever) sends nothing to the image's registry, even
// when the image is there: an image no node has is ErrNotFound naming
// the registry it would be pulled from, read from the reference alone.
// The registry is a real one, in process, that logs every request.
func TestResolveBeforeTheDecision(t *testing.T) {
	reg := registrytest.Start(t, "127.0.0.1:0")
	ref := reg.Host + "/tool:1"
	reg.Push(t, ref, registrytest.BusyboxImage(t, nil, nil))
	reg.Reset()
	e := fakeAPI(t, []corev1.Node{nodeWith("n1", "docker.io/library/other:1", "docker.io/library/other@sha256:"+strings.Repeat("a", 64))}, nil, func(http.ResponseWriter, *http.Request, func(int, any)) bool { return false })
	for _, r := range []string{ref, "evil.example/exfiltrate-this:latest", "python:3.12"} {
		_, err := e.Resolve(context.Background(), r, PullNever)
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: %v, want ErrNotFound", r, err)
		}
		if want := "would be pulled from " + Registry(r); !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not say %q", r, err, want)
		}
	}
	if got := reg.Requests(); len(got) != 0 {
		t.Fatalf("the registry was sent %d requests before any decision: %q", len(got), got)
	}
}

// TestResolveRegistry: once the call is allowed, a tag no node has is
// resolved in its registry to the digest the registry serves (not the
// nodes'), and a tag moved there is a different digest; a tag a node has
// is the node's digest, the registry not asked; "always" asks the
// registry whatever the nodes have.
func TestResolveRegistry(t *testing.T) {
	reg := registrytest.Start(t, "127.0.0.1:0")
	ref := reg.Host + "/tool:1"
	d1 := reg.Push(t, ref, registrytest.BusyboxImage(t, []string{"V=1"}, nil))
	onNode := reg.Host + "/cached@sha256:" + strings.Repeat("b", 64)
	e := fakeAPI(t, []corev1.Node{nodeWith("n1", reg.Host+"/cached:2", onNode)}, nil, func(http.ResponseWriter, *http.Request, func(int, any)) bool { return false })
	ctx := context.Background()
	reg.Reset()

	got, err := e.Resolve(ctx, ref, PullMissing)
	if err != nil {
		t.Fatal(err)
	}
	if want := reg.Host + "/tool@" + d1.String(); got != want {
		t.Fatalf("resolved %s, want %s", got, want)
	}
	if len(reg.Requests()) == 0 {
		t.Fatal("the registry was not asked")
	}

	d2 := reg.Push(t, ref, registrytest.BusyboxImage(t, []string{"V=2"}, nil))
	if got, err := e.Resolve(ctx, ref, ""); err != nil || got != reg.Host+"/tool@"+d2.String() {
		t.Fatalf("after the tag moved: %s, %v; want %s", got, err, d2)
	}

	reg.Reset()
	if got, err := e.Resolve(ctx, reg.Host+"/cached:2", PullMissing); err != nil || got != onNode {
		t.Fatalf("a tag a node has: %s, %v; want %s", got, err, onNode)
	}
	if r := reg.Requests(); len(r) != 0 {
		t.Errorf("a tag a node has asked the registry: %q", r)
	}
	// "always": the registry's digest, though a node has another.
	reg.Push(t, reg.Host+"/cached:2", registrytest.BusyboxImage(t, []string{"V=3"}, nil))
	if got, err := e.Resolve(ctx, reg.Host+"/cached:2", PullAlways); err != nil || got == onNode || !strings.HasPrefix(got, reg.Host+"/cached@sha256:") {
		t.Fatalf("always: %s, %v; want the registry's digest", got, err)
	}
	if got, err := e.Resolve(ctx, onNode, PullAlways); err != nil || got != onNode {
		t.Fatalf("a pinned reference: %s, %v; want it as it is", got, err)
	}
}

// TestResolveRegistryErrors: what the registry says, by class: no such
// image, credentials refused, no registry there.
func TestResolveRegistryErrors(t *testing.T) {
	reg := registrytest.Start(t, "127.0.0.1:0")
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"errors":[{"code":"DENIED","message":"no"}]}`))
	}))
	t.Cleanup(refuse.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	e := fakeAPI(t, []corev1.Node{nodeWith("n1")}, nil, func(http.ResponseWriter, *http.Request, func(int, any)) bool { return false })
	for _, tc := range []struct {
		ref  string
		want error
	}{
		{reg.Host + "/absent:1", ErrNotFound},
		{strings.TrimPrefix(refuse.URL, "http://") + "/private:1", ctr.ErrRefused},
		{closed + "/gone:1", ErrUnavailable},
		{"UPPER/case:1", ErrInvalidArgument},
	} {
		_, err := e.Resolve(context.Background(), tc.ref, PullMissing)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.ref, err, tc.want)
		}
	}
	if _, err := e.Resolve(context.Background(), reg.Host+"/x:1", "sometimes"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("an unknown pull policy: %v", err)
	}
}

// TestRegistry: where an image would be pulled from, from its reference.
func TestRegistry(t *testing.T) {
	for in, want := range map[string]string{
		"python:3.12":               "docker.io",
		"me/tool":                   "docker.io",
		"127.0.0.1:16500/x:1":       "127.0.0.1:16500",
		"localhost/x":               "localhost",
		"ghcr.io/o/r:v1":            "ghcr.io",
		"registry.example:5000/a/b": "registry.example:5000",
	} {
		if got := Registry(in); got != want {
			t.Errorf("Registry(%q) = %q, want %q", in, got, want)
		}
	}
}
