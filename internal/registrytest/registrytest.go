// Package registrytest is for tests only: an image registry on 127.0.0.1
// in the test's own process (go-containerregistry's), that logs every
// connection and request it is sent, and the test image (FROM scratch,
// the host's static busybox) pushed into it. A Docker Engine pulls from it
// over plain HTTP: dockerd lets a registry on 127.0.0.0/8 be insecure.
package registrytest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Registry is a registry on 127.0.0.1 that logs what it is sent.
type Registry struct {
	srv   *httptest.Server
	mu    sync.Mutex
	conns int
	log   []string
}

// Start starts a registry, stopped when t ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.log = append(r.log, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	r.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.mu.Lock()
			r.conns++
			r.mu.Unlock()
		}
	}
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	return r
}

// Host is the registry's address, 127.0.0.1:PORT: the first component of
// the references of its images.
func (r *Registry) Host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// Push pushes the test image as repo:tag, with CCRUN_VARIANT=variant in
// its environment (so that two pushes are two images), and returns its
// reference.
func (r *Registry) Push(t testing.TB, repoTag, variant string) string {
	t.Helper()
	ref := r.Host() + "/" + repoTag
	img, err := busyboxImage(variant)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref
}

// Reset forgets what was logged so far (the pushes).
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns, r.log = 0, nil
}

// Seen returns the number of connections made to the registry since the
// last Reset and the requests they sent ("GET /v2/…").
func (r *Registry) Seen() (conns int, requests []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns, append([]string(nil), r.log...)
}

// busyboxImage is FROM scratch with /bin/busybox, the host's.
func busyboxImage(variant string) (v1.Image, error) {
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return nil, fmt.Errorf("the test image needs the host's static busybox: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bin); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Env = []string{"CCRUN_VARIANT=" + variant}
	return mutate.ConfigFile(img, cf)
}
