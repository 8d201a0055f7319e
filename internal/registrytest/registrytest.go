// Package registrytest is for tests only: an image registry on a
// loopback address in the test's own process (go-containerregistry's
// pkg/registry, the real protocol) that counts every connection and logs
// every request it is sent, and the test images (FROM scratch, the host's
// static busybox) pushed into it. A Docker Engine pulls from it over
// plain HTTP (dockerd lets a registry on 127.0.0.0/8 be insecure); the
// nodes of the test cluster (testdata/k8s/cluster.sh) pull from the one
// served on the fixed address cluster.sh names in CCRUN_K8S_REGISTRY.
package registrytest

import (
	"archive/tar"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
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

// Registry is an image registry on a loopback address that counts the
// connections and logs the requests it is sent.
type Registry struct {
	// Host is its address, 127.0.0.1:PORT: the first component of the
	// references of its images.
	Host  string
	mu    sync.Mutex
	conns int
	reqs  []string
}

// Start serves a registry on addr until t ends: a loopback address and
// port, "127.0.0.1:0" for any free port, or the one the test cluster's
// nodes pull from (cluster.sh env: CCRUN_K8S_REGISTRY). Another address,
// or a port in use, fails t.
func Start(t testing.TB, addr string) *Registry {
	t.Helper()
	if ip, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(ip).IsLoopback() {
		t.Fatalf("registry address %q: want a loopback address and port", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("registry on %s: %v (another test's registry?)", addr, err)
	}
	r := &Registry{Host: l.Addr().String()}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			r.mu.Lock()
			r.reqs = append(r.reqs, req.Method+" "+req.URL.Path)
			r.mu.Unlock()
			h.ServeHTTP(w, req)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				r.mu.Lock()
				r.conns++
				r.mu.Unlock()
			}
		},
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return r
}

// Requests returns the requests ("GET /v2/…") sent since the last Reset.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs...)
}

// Conns returns the number of connections made since the last Reset.
func (r *Registry) Conns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns
}

// Reset forgets the connections and requests logged so far (a test's own
// pushes).
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns, r.reqs = 0, nil
}

// Push pushes img as ref (HOST/REPO:TAG) and returns its digest.
func (r *Registry) Push(t testing.TB, ref string, img v1.Image) v1.Hash {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// BusyboxImage is an image FROM scratch for linux on the host's
// architecture holding the host's static busybox (/bin/busybox, Debian's
// busybox-static) at /bin/busybox, with /bin/sh, /bin/tar and /bin/cat
// linked to it, a /tmp (mode 1777), and, for each file of files (a path
// without the leading slash), that content, mode 0755. env is its
// configuration's environment (PATH among it, or none; a variable of its
// own makes two images of the same files two images). A missing busybox
// fails t.
func BusyboxImage(t testing.TB, env []string, files map[string]string) v1.Image {
	t.Helper()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("the test image needs a static busybox at /bin/busybox (apt-get install busybox-static): %v", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body []byte) {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	dirs := map[string]bool{}
	dir := func(p string) {
		for i := range len(p) {
			if p[i] == '/' && !dirs[p[:i]] {
				dirs[p[:i]] = true
				add(&tar.Header{Typeflag: tar.TypeDir, Name: p[:i] + "/", Mode: 0o755}, nil)
			}
		}
	}
	dir("bin/busybox")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))}, bb)
	for _, l := range []string{"sh", "tar", "cat"} {
		add(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + l, Linkname: "busybox"}, nil)
	}
	dirs["tmp"] = true
	add(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}, nil)
	for p, body := range files {
		p = strings.TrimPrefix(p, "/")
		dir(p)
		add(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: 0o755, Size: int64(len(body))}, []byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Env = env
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}
