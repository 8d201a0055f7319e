package kapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// request is what the API server got: all of it that a client chooses.
type request struct {
	Method, URI, Accept, ContentType, UserAgent string
	Body                                        []byte
}

// recorder is an API server that records its requests and answers each
// with an object of the kind its path names (a list where it names no
// object), or with status where that is set.
type recorder struct {
	mu     sync.Mutex
	got    []request
	status *metav1.Status
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.got = append(rec.got, request{r.Method, r.URL.RequestURI(), r.Header.Get("Accept"), r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), body})
	status := rec.status
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case status != nil:
		w.WriteHeader(int(status.Code))
		json.NewEncoder(w).Encode(status)
	case r.URL.Path == "/version":
		io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
	case r.Method == http.MethodDelete:
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	case r.URL.Query().Get("watch") == "true":
		pod := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","resourceVersion":"7"}}`
		io.WriteString(w, `{"type":"ADDED","object":`+pod+"}\n")
		io.WriteString(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired"}}`+"\n")
	default:
		kind, apiVersion, name := kindOf(r.URL.Path)
		if name == "" && r.Method == http.MethodGet {
			kind += "List"
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": map[string]any{"name": name, "resourceVersion": "7"}})
	}
}

// kindOf is the kind, group version and object name of an API path.
func kindOf(path string) (kind, apiVersion, name string) {
	kinds := map[string]string{"pods": "Pod", "configmaps": "ConfigMap", "secrets": "Secret", "networkpolicies": "NetworkPolicy", "namespaces": "Namespace", "nodes": "Node"}
	apiVersion = "v1"
	rest, ok := strings.CutPrefix(path, "/api/v1/")
	if !ok {
		rest, _ = strings.CutPrefix(path, "/apis/networking.k8s.io/v1/")
		apiVersion = "networking.k8s.io/v1"
	}
	seg := strings.Split(rest, "/")
	if len(seg) > 2 && seg[0] == "namespaces" {
		seg = seg[2:]
	}
	if len(seg) > 1 {
		name = seg[1]
	}
	return kinds[seg[0]], apiVersion, name
}

// clients are a Client and client-go's clientset of one API server.
func clients(t *testing.T, h http.Handler) (*Client, kubernetes.Interface) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, QPS: 50, Burst: 100, UserAgent: "ccrun"}
	ours, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ours, theirs
}

// resources is what a kapi Resource and a typed client of the clientset
// have alike.
type resources[T, L any] interface {
	Get(context.Context, string, metav1.GetOptions) (T, error)
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// side is one of the two clients, as the calls below use it, in the
// namespace ns.
type side struct {
	pods       resources[*corev1.Pod, *corev1.PodList]
	configMaps resources[*corev1.ConfigMap, *corev1.ConfigMapList]
	secrets    resources[*corev1.Secret, *corev1.SecretList]
	policies   resources[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList]
	namespaces resources[*corev1.Namespace, *corev1.NamespaceList]
	nodes      resources[*corev1.Node, *corev1.NodeList]
	patchPod   func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*corev1.Pod, error)
	version    func(context.Context) (*version.Info, error)
}

const ns = "ccrun-test"

func ours(c *Client) side {
	return side{c.Pods(ns), c.ConfigMaps(ns), c.Secrets(ns), c.NetworkPolicies(ns), c.Namespaces(), c.Nodes(), c.Pods(ns).Patch, c.ServerVersion}
}

func theirs(cs kubernetes.Interface) side {
	core := cs.CoreV1()
	return side{core.Pods(ns), core.ConfigMaps(ns), core.Secrets(ns), cs.NetworkingV1().NetworkPolicies(ns), core.Namespaces(), core.Nodes(),
		func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*corev1.Pod, error) {
			return core.Pods(ns).Patch(ctx, name, pt, data, opts)
		},
		func(context.Context) (*version.Info, error) { return cs.Discovery().ServerVersion() }}
}

// call is one call ccrun makes: what it returns.
type call struct {
	name string
	do   func(context.Context, side) (any, error)
}

func calls() []call {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ccrun-1", Labels: map[string]string{"app.kubernetes.io/managed-by": "ccrun"}, Annotations: map[string]string{"ccrun.dev/expires": "2030-01-01T00:00:00Z"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "run", Image: "busybox@sha256:ab", Command: []string{"/.ccrun/once"}, Stdin: true,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: k8sresource.MustParse("64Mi"), corev1.ResourceCPU: k8sresource.MustParse("500m")}}}},
		},
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ccrun-helpers-1"}, BinaryData: map[string][]byte{"gate": {0x7f, 'E', 'L', 'F'}}, Immutable: new(true)}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "ccrun-deny-all"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"ccrun.dev/network": "none"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	list := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=ccrun,ccrun.dev/sandbox-template", Limit: 500}
	// As a podWatch, then as an informer's watch list.
	watchOne := metav1.ListOptions{FieldSelector: "metadata.name=ccrun-1", ResourceVersion: "7"}
	watchList := metav1.ListOptions{LabelSelector: list.LabelSelector, SendInitialEvents: new(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, TimeoutSeconds: new(int64(300))}
	patch := []byte(`{"metadata":{"labels":{"ccrun.dev/warm-pool":"claimed"},"resourceVersion":"7"}}`)
	return []call{
		{"get namespace", func(ctx context.Context, s side) (any, error) { return s.namespaces.Get(ctx, ns, metav1.GetOptions{}) }},
		{"list nodes", func(ctx context.Context, s side) (any, error) { return s.nodes.List(ctx, metav1.ListOptions{}) }},
		{"server version", func(ctx context.Context, s side) (any, error) { return s.version(ctx) }},
		{"create configmap", func(ctx context.Context, s side) (any, error) {
			return s.configMaps.Create(ctx, cm, metav1.CreateOptions{})
		}},
		{"get configmap", func(ctx context.Context, s side) (any, error) {
			return s.configMaps.Get(ctx, cm.Name, metav1.GetOptions{})
		}},
		{"get secret", func(ctx context.Context, s side) (any, error) {
			return s.secrets.Get(ctx, "regcred", metav1.GetOptions{})
		}},
		{"create networkpolicy", func(ctx context.Context, s side) (any, error) {
			return s.policies.Create(ctx, np, metav1.CreateOptions{})
		}},
		{"create pod", func(ctx context.Context, s side) (any, error) { return s.pods.Create(ctx, pod, metav1.CreateOptions{}) }},
		{"get pod", func(ctx context.Context, s side) (any, error) { return s.pods.Get(ctx, pod.Name, metav1.GetOptions{}) }},
		{"list pods", func(ctx context.Context, s side) (any, error) { return s.pods.List(ctx, list) }},
		{"watch a pod", func(ctx context.Context, s side) (any, error) { return events(s.pods.Watch(ctx, watchOne)) }},
		{"watch list of pods", func(ctx context.Context, s side) (any, error) { return events(s.pods.Watch(ctx, watchList)) }},
		{"patch pod", func(ctx context.Context, s side) (any, error) {
			return s.patchPod(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		}},
		{"delete pod", func(ctx context.Context, s side) (any, error) {
			return nil, s.pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
		}},
	}
}

// events reads a watch to its end.
func events(w watch.Interface, err error) ([]watch.Event, error) {
	if err != nil {
		return nil, err
	}
	var evs []watch.Event
	for ev := range w.ResultChan() {
		evs = append(evs, ev)
	}
	return evs, nil
}

// TestSameAsClientset: each call ccrun makes sends the API server what
// client-go's clientset sends (method, path and query, content types,
// body) and returns what it returns.
func TestSameAsClientset(t *testing.T) {
	t.Parallel()
	for _, tc := range calls() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var recOurs, recTheirs recorder
			c, _ := clients(t, &recOurs)
			_, cs := clients(t, &recTheirs)
			got, err := tc.do(ctx, ours(c))
			if err != nil {
				t.Fatal(err)
			}
			want, err := tc.do(ctx, theirs(cs))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(recTheirs.got, recOurs.got); d != "" {
				t.Errorf("requests (-clientset +kapi):\n%s", d)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("results (-clientset +kapi):\n%s", d)
			}
		})
	}
}

// TestPodURL: the URLs of the attach and exec sessions are the
// clientset's.
func TestPodURL(t *testing.T) {
	t.Parallel()
	c, cs := clients(t, http.NotFoundHandler())
	for _, tc := range []struct {
		sub  string
		opts runtime.Object
	}{
		{"attach", &corev1.PodAttachOptions{Container: "run", Stdin: true, Stdout: true}},
		{"exec", &corev1.PodExecOptions{Container: "copy", Command: []string{"/bin/busybox", "tar", "-x", "-f", "-"}, Stdin: true, Stderr: true}},
	} {
		want := cs.CoreV1().RESTClient().Post().Namespace("ns").Resource("pods").Name("p").SubResource(tc.sub).
			VersionedParams(tc.opts, scheme.ParameterCodec).URL()
		if got := c.PodURL("ns", "p", tc.sub, tc.opts); got.String() != want.String() {
			t.Errorf("%s: %s, want %s", tc.sub, got, want)
		}
	}
}

// TestErrorClasses: an API status is an error of its class, and the
// clientset's error, whether the body is a Status or only its HTTP code
// says what went wrong.
func TestErrorClasses(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err *apierrors.StatusError
		is  func(error) bool
	}{
		{apierrors.NewNotFound(gr, "p"), apierrors.IsNotFound},
		{apierrors.NewAlreadyExists(gr, "p"), apierrors.IsAlreadyExists},
		{apierrors.NewConflict(gr, "p", errors.New("changed")), apierrors.IsConflict},
		{apierrors.NewForbidden(gr, "p", errors.New("rbac")), apierrors.IsForbidden},
		{apierrors.NewUnauthorized("no"), apierrors.IsUnauthorized},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), apierrors.IsInvalid},
		{apierrors.NewResourceExpired("too old"), apierrors.IsResourceExpired},
		{apierrors.NewServiceUnavailable("down"), apierrors.IsServiceUnavailable},
		{apierrors.NewInternalError(errors.New("boom")), apierrors.IsInternalError},
	}
	for _, tc := range tests {
		for _, typed := range []bool{true, false} {
			st := tc.err.ErrStatus
			if typed {
				st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			}
			c, cs := clients(t, &recorder{status: &st})
			_, got := ours(c).pods.Create(context.Background(), &corev1.Pod{}, metav1.CreateOptions{})
			_, want := theirs(cs).pods.Create(context.Background(), &corev1.Pod{}, metav1.CreateOptions{})
			if typed && !tc.is(got) {
				t.Errorf("%s: got %v (%s)", st.Reason, got, apierrors.ReasonForError(got))
			}
			if apierrors.ReasonForError(got) != apierrors.ReasonForError(want) || got.Error() != want.Error() {
				t.Errorf("%s (a Status: %v): got %v (%s), want %v (%s)", st.Reason, typed, got, apierrors.ReasonForError(got), want, apierrors.ReasonForError(want))
			}
		}
	}
}
