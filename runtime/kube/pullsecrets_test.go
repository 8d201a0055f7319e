package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/kubetest"
	"github.com/ccrun/ccrun/internal/registrytest"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPullSecretsOnPods: every pod ccrun asks for, cold and warm, lists
// the pull secrets named; a warm pod of other pull secrets is of another
// template (never claimed for this Executor's calls); a name that is no
// secret's is refused.
func TestPullSecretsOnPods(t *testing.T) {
	srv, pods := podCatcher(t, nil)
	e, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"),
		WithPullSecrets("regcred", "team-b", "regcred"), WithPool(1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	want := []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "team-b"}}
	s := Spec{Image: "i@sha256:" + strings.Repeat("a", 64), Cmd: []string{"/bin/true"}}
	if _, err := e.Run(context.Background(), s); !errors.Is(err, ctr.ErrRefused) {
		t.Fatalf("Run = %v, want the test's refusal", err)
	}
	if p := <-pods; !slices.Equal(p.Spec.ImagePullSecrets, want) {
		t.Errorf("cold pod: imagePullSecrets %v, want %v", p.Spec.ImagePullSecrets, want)
	}
	if err := e.createWarm(context.Background(), e.warmPod(e.warmPool(s, s.Limits.WithDefaults()))); !errors.Is(err, ctr.ErrRefused) {
		t.Fatalf("createWarm = %v, want the test's refusal", err)
	}
	if p := <-pods; !slices.Equal(p.Spec.ImagePullSecrets, want) || p.Labels[LabelPool] != poolWarm {
		t.Errorf("warm pod (%s): imagePullSecrets %v, want %v", p.Labels[LabelPool], p.Spec.ImagePullSecrets, want)
	}
	if got := e.PullSecrets(); !slices.Equal(got, []string{"regcred", "team-b"}) {
		t.Errorf("PullSecrets() = %q", got)
	}

	lim := s.Limits.WithDefaults()
	if a, b := newTemplate(s, lim, "amd64", nil), newTemplate(s, lim, "amd64", []string{"regcred"}); a.key == b.key {
		t.Error("a template of other pull secrets has the same key")
	}
	for _, bad := range []string{"", "Reg_Cred", "a/b", strings.Repeat("x", 254)} {
		if _, err := PlaceOf(WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithPullSecrets(bad)); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("pull secret %q: %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// privateRegistry is a registry in the test's process that answers only
// user:pass (HTTP Basic), holding one image, tool:1.
func privateRegistry(t *testing.T, user, pass string) (host string, ref name.Reference) {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	ref, err := name.ParseReference(host + "/tool:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, registrytest.BusyboxImage(t, nil, nil), remote.WithAuth(&authn.Basic{Username: user, Password: pass})); err != nil {
		t.Fatal(err)
	}
	return host, ref
}

// secretServer is a fake API server with the secrets given (nil: that
// name forbidden), counting the secret reads.
func secretServer(t *testing.T, secrets map[string]*corev1.Secret) (e func(...string) *Executor, reads func() int) {
	var mu sync.Mutex
	n := 0
	srv := fakeAPIServer(t, []corev1.Node{nodeWith("n1")}, nil, func(w http.ResponseWriter, r *http.Request, reply func(int, any)) bool {
		sname, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/default/secrets/")
		if !ok || r.Method != "GET" {
			return false
		}
		mu.Lock()
		n++
		mu.Unlock()
		sec, known := secrets[sname]
		switch {
		case !known:
			st := apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, sname).ErrStatus
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			reply(http.StatusNotFound, &st)
		case sec == nil:
			st := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, sname, errors.New("no")).ErrStatus
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			reply(http.StatusForbidden, &st)
		default:
			s := sec.DeepCopy()
			s.TypeMeta = metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"}
			s.Name = sname
			reply(http.StatusOK, s)
		}
		return true
	})
	return func(names ...string) *Executor {
			x, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"), WithPullSecrets(names...))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { x.Close() })
			return x
		}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return n
		}
}

// dockerConfig is a kubernetes.io/dockerconfigjson secret of auths.
func dockerConfig(t *testing.T, auths map[string]map[string]string) *corev1.Secret {
	b, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: b}}
}

// TestPullSecretCredentials: once a call is allowed, the registry reads
// (Resolve's lookup of a tag, ImageCommand's configuration) carry the
// credentials of the pull secrets named: a registry that answers only
// them is read; without them, or with the wrong ones, it refuses
// (ctr.ErrRefused). A pull secret missing, forbidden or of another
// type fails the read, saying which (fail closed). The lookup before the
// decision (PullNever) reads no secret.
func TestPullSecretCredentials(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials of the user's
	host, _ := privateRegistry(t, "robot", "s3cret")
	good := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	newE, reads := secretServer(t, map[string]*corev1.Secret{
		"regcred":   dockerConfig(t, map[string]map[string]string{"http://" + host: {"auth": good}}),
		"by-name":   dockerConfig(t, map[string]map[string]string{host + "/tool": {"username": "robot", "password": "s3cret"}}),
		"elsewhere": dockerConfig(t, map[string]map[string]string{"registry.example": {"auth": good}}),
		"wrong":     dockerConfig(t, map[string]map[string]string{host: {"username": "robot", "password": "guess"}}),
		"opaque":    {Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("s3cret")}},
		"forbidden": nil,
	})
	ctx := context.Background()
	ref := host + "/tool:1"

	for _, names := range [][]string{{"regcred"}, {"by-name"}, {"elsewhere", "regcred"}} {
		e := newE(names...)
		pinned, err := e.Resolve(ctx, ref, PullMissing)
		if err != nil || !strings.HasPrefix(pinned, host+"/tool@sha256:") {
			t.Fatalf("%q: Resolve = %s, %v", names, pinned, err)
		}
		if _, _, err := e.ImageCommand(ctx, pinned, PullMissing); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "no Entrypoint, no Cmd") {
			t.Errorf("%q: ImageCommand = %v; want the configuration read (it names no command)", names, err)
		}
	}
	for _, tc := range []struct {
		names []string
		want  error
		says  string
	}{
		{nil, ctr.ErrRefused, "refused"},
		{[]string{"elsewhere"}, ctr.ErrRefused, "refused"},
		{[]string{"wrong"}, ctr.ErrRefused, "refused"},
		{[]string{"absent"}, ErrNotFound, "kubectl create secret docker-registry absent"},
		{[]string{"forbidden"}, ctr.ErrRefused, "get on secrets"},
		{[]string{"opaque"}, ErrInvalidArgument, "kubernetes.io/dockerconfigjson"},
		{[]string{"regcred", "absent"}, ErrNotFound, "absent"},
	} {
		_, err := newE(tc.names...).Resolve(ctx, ref, PullMissing)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v; want %v saying %q", tc.names, err, tc.want, tc.says)
		}
	}

	// Hostile: another registry, asking for credentials, is never sent
	// the secret's, which are for host alone.
	var sent []string
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="other"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(other.Close)
	if _, err := newE("regcred", "by-name").Resolve(ctx, strings.TrimPrefix(other.URL, "http://")+"/tool:1", PullMissing); !errors.Is(err, ctr.ErrRefused) {
		t.Errorf("another registry: %v, want ctr.ErrRefused", err)
	}
	mu.Lock()
	for _, a := range sent {
		if a != "" {
			t.Errorf("another registry was sent credentials: %q", a)
		}
	}
	if len(sent) == 0 {
		t.Error("another registry was not asked")
	}
	mu.Unlock()

	before := reads()
	if _, err := newE("regcred").Resolve(ctx, ref, PullNever); !errors.Is(err, ErrNotFound) {
		t.Errorf("never: %v, want ErrNotFound (on no node)", err)
	}
	if n := reads() - before; n != 0 {
		t.Errorf("the lookup before the decision read %d secrets", n)
	}
}

// TestSecretKeychain: which auths entry a repository's credentials come
// from, as the kubelet matches them: the host (Docker Hub's names as one,
// a "*" label a glob of one label, ports equal), then the longest path
// prefix; none is anonymous.
func TestSecretKeychain(t *testing.T) {
	kc := secretKeychain{}
	for i, k := range []string{"https://index.docker.io/v1/", "ghcr.io/team", "ghcr.io/team/tool", "*.example.com", "registry.local:5000"} {
		host, path := authKey(k)
		kc = append(kc, registryAuth{host: host, path: path, cfg: authn.AuthConfig{Username: string(rune('a' + i))}})
	}
	for ref, want := range map[string]string{
		"busybox":                        "a",
		"docker.io/me/x":                 "a",
		"ghcr.io/team/other":             "b",
		"ghcr.io/team/tool":              "c",
		"ghcr.io/team/tool/sub":          "c",
		"ghcr.io/teamster/x":             "",
		"ghcr.io/else":                   "",
		"reg.example.com/x":              "d",
		"a.b.example.com/x":              "",
		"registry.local:5000/x":          "e",
		"registry.local/x":               "",
		"registry.local:5001/x":          "",
		"quay.io/x":                      "",
		"index.docker.io/library/python": "a",
	} {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		a, err := kc.Resolve(r.Context())
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if a != authn.Anonymous {
			c, err := a.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			got = c.Username
		}
		if got != want {
			t.Errorf("%s: entry %q, want %q", ref, got, want)
		}
	}
}

// TestSecretKeychainTie: of two entries as specific as each other, an
// exact host is taken before a wildcard, in either order.
func TestSecretKeychainTie(t *testing.T) {
	r, err := name.ParseReference("reg.example.com/x")
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{{"*.example.com", "reg.example.com"}, {"reg.example.com", "*.example.com"}} {
		kc := secretKeychain{}
		for _, k := range keys {
			host, path := authKey(k)
			kc = append(kc, registryAuth{host: host, path: path, cfg: authn.AuthConfig{Username: k}})
		}
		a, err := kc.Resolve(r.Context())
		if err != nil {
			t.Fatal(err)
		}
		c, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		if c.Username != "reg.example.com" {
			t.Errorf("%q: entry %q, want the exact host's", keys, c.Username)
		}
	}
}
