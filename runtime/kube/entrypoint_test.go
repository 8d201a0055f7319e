package kube

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/kubetest"
	"github.com/ccrun/ccrun/internal/registrytest"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
)

// withCommand is img with entry and cmd as its configuration's Entrypoint
// and Cmd, and arch as its architecture ("": img's).
func withCommand(t *testing.T, img v1.Image, arch string, entry, cmd []string) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Entrypoint, cf.Config.Cmd = entry, cmd
	if arch != "" {
		cf.Architecture = arch
	}
	out, err := mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// noPods is a fake API server's handler of the requests the tests below
// do not expect: none.
func noPods(http.ResponseWriter, *http.Request, func(int, any)) bool { return false }

// TestEntrypointFromRegistry: a call with no program runs the image's
// Entrypoint followed by its Cmd, as docker run IMAGE does, read from the
// image's registry by digest; a tag is pinned first, so that the command
// is the image's that runs; what was read once is not read again.
func TestEntrypointFromRegistry(t *testing.T) {
	reg := registrytest.Start(t, "127.0.0.1:0")
	base := registrytest.BusyboxImage(t, nil, nil)
	d := reg.Push(t, reg.Host+"/tool:1", withCommand(t, base, "", []string{"/bin/busybox"}, []string{"echo", "hi"}))
	dc := reg.Push(t, reg.Host+"/cmdonly:1", withCommand(t, base, "", nil, []string{"/bin/sh", "-c", "exit 3"}))
	e := fakeAPI(t, []corev1.Node{nodeWith("n1")}, nil, noPods)
	ctx := context.Background()

	for _, tc := range []struct {
		ref, pinned string
		want        []string
	}{
		{reg.Host + "/tool@" + d.String(), reg.Host + "/tool@" + d.String(), []string{"/bin/busybox", "echo", "hi"}},
		{reg.Host + "/tool:1", reg.Host + "/tool@" + d.String(), []string{"/bin/busybox", "echo", "hi"}},
		{reg.Host + "/cmdonly:1", reg.Host + "/cmdonly@" + dc.String(), []string{"/bin/sh", "-c", "exit 3"}},
	} {
		reg.Reset()
		pinned, cmd, err := e.ImageCommand(ctx, tc.ref, PullMissing)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if pinned != tc.pinned || !slices.Equal(cmd, tc.want) {
			t.Errorf("%s: %s %q, want %s %q", tc.ref, pinned, cmd, tc.pinned, tc.want)
		}
		if len(reg.Requests()) == 0 {
			t.Errorf("%s: the registry was not asked", tc.ref)
		}
	}
	// Read once: the digest names one configuration for good.
	reg.Reset()
	if _, cmd, err := e.ImageCommand(ctx, reg.Host+"/tool@"+d.String(), PullAlways); err != nil || cmd[0] != "/bin/busybox" {
		t.Fatalf("again: %q, %v", cmd, err)
	}
	if r := reg.Requests(); len(r) != 0 {
		t.Errorf("read again: %q", r)
	}
}

// TestEntrypointOfIndex: of a multi-platform image, the command is that
// of the nodes' architecture, the one the pods run.
func TestEntrypointOfIndex(t *testing.T) {
	reg := registrytest.Start(t, "127.0.0.1:0")
	base := registrytest.BusyboxImage(t, nil, nil)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: withCommand(t, base, "amd64", []string{"/amd64"}, nil), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: withCommand(t, base, "arm64", []string{"/arm64"}, nil), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	tag, err := name.NewTag(reg.Host + "/multi:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		e := fakeAPI(t, []corev1.Node{node("n1", arch, true)}, nil, noPods)
		_, cmd, err := e.ImageCommand(context.Background(), reg.Host+"/multi:1", PullMissing)
		if err != nil || !slices.Equal(cmd, []string{"/" + arch}) {
			t.Errorf("on %s nodes: %q, %v; want /%s", arch, cmd, err, arch)
		}
	}
}

// TestEntrypointRefused: where the image's command cannot be had, the
// error says so, and what to do: under pull policy never no registry is
// asked at all (hostile: the registry has the image); an image known
// only from the nodes, which report no configuration, is not in the
// registry; an image that names no command; a registry that refuses.
func TestEntrypointRefused(t *testing.T) {
	reg := registrytest.Start(t, "127.0.0.1:0")
	base := registrytest.BusyboxImage(t, nil, nil)
	d := reg.Push(t, reg.Host+"/tool:1", withCommand(t, base, "", []string{"/bin/busybox"}, []string{"true"}))
	reg.Push(t, reg.Host+"/bare:1", base)
	loaded := reg.Host + "/loaded@sha256:" + strings.Repeat("c", 64)
	e := fakeAPI(t, []corev1.Node{nodeWith("n1", reg.Host+"/loaded:1", loaded)}, nil, noPods)
	ctx := context.Background()

	reg.Reset()
	for _, ref := range []string{reg.Host + "/tool:1", reg.Host + "/tool@" + d.String()} {
		_, _, err := e.ImageCommand(ctx, ref, PullNever)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "name the program in the call") || !strings.Contains(err.Error(), "pull policy missing") {
			t.Errorf("never, %s: %v; want ErrInvalidArgument saying what to do", ref, err)
		}
	}
	if r := reg.Requests(); len(r) != 0 {
		t.Fatalf("under pull policy never the registry was sent %q", r)
	}

	for _, tc := range []struct {
		ref  string
		want error
		says string
	}{
		{reg.Host + "/loaded:1", ErrNotFound, "known only from the cluster's nodes"},
		{loaded, ErrNotFound, "name the program in the call"},
		{reg.Host + "/bare:1", ErrInvalidArgument, "no Entrypoint, no Cmd"},
		{reg.Host + "/absent:1", ErrNotFound, "no such image"},
		{"sometimes", ErrInvalidArgument, "pull policy"},
	} {
		policy := PullMissing
		if tc.ref == "sometimes" {
			tc.ref, policy = reg.Host+"/tool:1", "sometimes"
		}
		_, _, err := e.ImageCommand(ctx, tc.ref, policy)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.ref, err, tc.want, tc.says)
		}
	}
}

// TestRunNoCommand: Run of a Spec with no program asks for the pod of the
// image pinned, its command the image's; under pull policy never it makes
// no pod, and asks no registry.
func TestRunNoCommand(t *testing.T) {
	reg := registrytest.Start(t, "127.0.0.1:0")
	d := reg.Push(t, reg.Host+"/tool:1", withCommand(t, registrytest.BusyboxImage(t, nil, nil), "", []string{"/bin/busybox"}, []string{"true"}))
	srv, pods := podCatcher(t, nil)
	e, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	reg.Reset()
	if _, err := e.Run(context.Background(), Spec{Image: reg.Host + "/tool:1", Pull: PullNever}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("never: %v, want ErrInvalidArgument", err)
	}
	if len(pods) != 0 || len(reg.Requests()) != 0 {
		t.Fatalf("never: %d pods asked for, registry sent %q", len(pods), reg.Requests())
	}
	if _, err := e.Run(context.Background(), Spec{Image: reg.Host + "/tool:1", Limits: job.Limits{Memory: 1 << 20}}); !errors.Is(err, ErrInvalidArgument) || len(reg.Requests()) != 0 {
		t.Fatalf("a bad spec: %v, registry sent %q; want ErrInvalidArgument first", err, reg.Requests())
	}

	if _, err := e.Run(context.Background(), Spec{Image: reg.Host + "/tool:1"}); !errors.Is(err, ctr.ErrRefused) {
		t.Fatalf("Run = %v, want the test's refusal of the pod", err)
	}
	p := <-pods
	if want := reg.Host + "/tool@" + d.String(); p.Spec.Containers[0].Image != want {
		t.Errorf("pod image %s, want %s", p.Spec.Containers[0].Image, want)
	}
	if got, ok := e.cmds.get(reg.Host + "/tool@" + d.String()); !ok || !slices.Equal(got, []string{"/bin/busybox", "true"}) {
		t.Errorf("the command run: %q", got)
	}
}
