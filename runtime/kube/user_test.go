package kube

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/kubetest"
	"github.com/ccrun/ccrun/runtime/job"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// TestCallerUser: a pod with mounts runs as the caller's uid and gid (not
// root: root's is 65534), taken by New from this process's effective ids.
func TestCallerUser(t *testing.T) {
	for _, tc := range []struct {
		uid, gid int
		want     string
	}{
		{0, 0, ""},
		{0, 1000, ""},
		{1000, 1000, "1000:1000"},
		{1000, 100, "1000:100"},
	} {
		if got := callerUser(tc.uid, tc.gid); got != tc.want {
			t.Errorf("callerUser(%d, %d) = %q, want %q", tc.uid, tc.gid, got, tc.want)
		}
	}
	srv, _ := podCatcher(t, nil)
	e, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if want := callerUser(os.Geteuid(), os.Getegid()); e.user != want {
		t.Errorf("New: user of a pod with mounts %q, want %q", e.user, want)
	}
}

// fakeServer is fakeAPI's API server alone, of a cluster of one amd64
// node, for a test that makes its own Executor: route answers what the
// setup does not, reporting whether it did.
func fakeServer(t *testing.T, route func(r *http.Request, reply func(code int, v any)) bool) *httptest.Server {
	t.Helper()
	return fakeAPIServer(t, []corev1.Node{node("n", "amd64", true)}, nil, func(_ http.ResponseWriter, r *http.Request, reply func(int, any)) bool {
		return route(r, reply)
	})
}

// podCatcher is a fake API server (fakeServer) that keeps the pod it is asked
// to create, and refuses it with refusal (nil: forbidden), so that nothing
// runs.
func podCatcher(t *testing.T, refusal *apierrors.StatusError) (*httptest.Server, <-chan *corev1.Pod) {
	t.Helper()
	pods := make(chan *corev1.Pod, 4)
	srv := fakeServer(t, func(r *http.Request, reply func(int, any)) bool {
		if r.Method+" "+r.URL.Path != "POST /api/v1/namespaces/default/pods" {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		obj, _, err := decoder().Decode(body, nil, nil) // protobuf, as the client sends it
		p, ok := obj.(*corev1.Pod)
		if err != nil || !ok {
			t.Errorf("pod: %v (%T)", err, obj)
			p = &corev1.Pod{}
		}
		select {
		case pods <- p:
		default:
		}
		no := refusal
		if no == nil {
			no = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p.Name, errors.New("caught by the test"))
		}
		st := no.ErrStatus
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		reply(int(st.Code), &st)
		return true
	})
	return srv, pods
}

// decoder reads a core/v1 object as the API server would: protobuf or
// JSON.
func decoder() runtime.Decoder {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}

// TestPodUser: the pod a call asks the API server for runs, in each of
// its containers, as the caller's uid and gid when the call has mounts
// (the copy container that writes the copies too, so that the program
// may write what was copied in and the copy back reads it), still
// hardened; and as 65534 without mounts, or when the Spec names a user.
func TestPodUser(t *testing.T) {
	srv, pods := podCatcher(t, nil)
	e, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.user = "1000:1001" // a caller that is not root (this test may run as root)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rw := []job.Mount{{Host: dir, Guest: "/w", Writable: true}}
	for _, tc := range []struct {
		name       string
		spec       Spec
		uid, gid   int64
		containers int
	}{
		{"with a writable mount", Spec{Mounts: rw}, 1000, 1001, 2},
		{"with a read-only mount", Spec{Mounts: []job.Mount{{Host: dir, Guest: "/r"}}}, 1000, 1001, 2},
		{"without mounts", Spec{}, DefaultUID, DefaultUID, 1},
		{"a user named", Spec{Mounts: rw, User: "4242"}, 4242, 4242, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			s.Image, s.Cmd = "i", []string{"/bin/true"}
			if _, err := e.Run(context.Background(), s); !errors.Is(err, ctr.ErrRefused) {
				t.Fatalf("Run = %v, want the test's refusal", err)
			}
			p := <-pods
			psc := p.Spec.SecurityContext
			if *psc.RunAsUser != tc.uid || *psc.RunAsGroup != tc.gid || !*psc.RunAsNonRoot {
				t.Errorf("pod securityContext runs as %d:%d (non-root %v), want %d:%d", *psc.RunAsUser, *psc.RunAsGroup, *psc.RunAsNonRoot, tc.uid, tc.gid)
			}
			if len(p.Spec.Containers) != tc.containers {
				t.Fatalf("%d containers, want %d", len(p.Spec.Containers), tc.containers)
			}
			for _, c := range p.Spec.Containers {
				sc := c.SecurityContext
				if *sc.RunAsUser != tc.uid || *sc.RunAsGroup != tc.gid || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || *sc.Privileged ||
					!*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 ||
					sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("container %s: %+v, want hardened, as %d:%d", c.Name, sc, tc.uid, tc.gid)
				}
			}
		})
	}
}

// TestCopyOwner: what is copied into a pod is owned by the pod's user, so
// that the program, running as that user, may write a writable mount's
// copy (its own files, as on the host).
func TestCopyOwner(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &Executor{mountMax: DefaultMountSize}
	ms, err := e.prepareMounts(Spec{Image: "i", User: "1000:1001", Mounts: []job.Mount{{Host: dir, Guest: "/w", Writable: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.close()
	f := ms.mounts[0].archive
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(f)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if h.Uid != 1000 || h.Gid != 1001 {
			t.Errorf("%s copied in as %d:%d, want 1000:1001", h.Name, h.Uid, h.Gid)
		}
	}
	if n != 2 {
		t.Errorf("%d entries copied in, want 2", n)
	}
}
