package kube

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/enginerecord"
	"github.com/ccrun/ccrun/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPlace: where an Executor runs is read from the kubeconfig alone,
// with no request (the API server here answers nobody), as New sees it.
func TestPlace(t *testing.T) {
	kc := kubetest.Kubeconfig(t, "https://127.0.0.1:1")
	p, err := PlaceOf(WithKubeconfig(kc), WithNamespace("ccrun"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Place{Kubeconfig: kc, Context: "c", Namespace: "ccrun", Server: "https://127.0.0.1:1"}); p != want {
		t.Errorf("PlaceOf = %+v, want %+v", p, want)
	}
	t.Setenv("KUBECONFIG", kc)
	if p, err := PlaceOf(); err != nil || p.Kubeconfig != kc || p.Namespace != "default" {
		t.Errorf("PlaceOf with $KUBECONFIG = %+v, %v; want the file $KUBECONFIG names, namespace default", p, err)
	}
}

// TestRecorded: an Executor records its place in ccrun's engine record
// before its first pod (for ccrun gc), even when the pod is then refused.
func TestRecorded(t *testing.T) {
	srv, _ := podCatcher(t, nil)
	kc := kubetest.Kubeconfig(t, srv.URL)
	e, err := New(context.Background(), WithKubeconfig(kc), WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.Run(context.Background(), Spec{Image: "i", Cmd: []string{"/bin/true"}})
	sites, err := enginerecord.Read(enginerecord.Dir())
	if err != nil {
		t.Fatal(err)
	}
	want := enginerecord.Site{Engine: enginerecord.Kubernetes, Kubeconfig: kc, Context: "c", Namespace: "default", Server: srv.URL}
	if !slices.ContainsFunc(sites, func(s enginerecord.Site) bool { s.Seen = ""; return s == want }) {
		t.Errorf("the record holds %+v, not %+v", sites, want)
	}
}

// TestGarbage: Garbage lists what GC deletes — the pods of a gone owner
// of this host, and any past their expiry — and with pool the warm pods,
// deleting nothing; GC then deletes exactly those it listed (a fake API
// server listing a pod of each kind, one of them not ccrun's though the
// server says so).
func TestGarbage(t *testing.T) {
	host, _ := os.Hostname()
	self := self()
	labels := func(pid int, start string, extra ...string) map[string]string {
		l := map[string]string{LabelManaged: managedBy, LabelHost: labelValue(host), LabelPID: strconv.Itoa(pid), LabelStart: start}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "dead", Labels: labels(1<<22, "1")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "expired", Labels: labels(self.PID, self.Start), Annotations: map[string]string{AnnotationExpires: past}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "live", Labels: labels(self.PID, self.Start)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "warm", Labels: labels(1<<22, "1", LabelTemplate, "t", LabelPool, poolWarm)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "not-ours", Labels: map[string]string{LabelPID: "1"}}},
	}
	var mu sync.Mutex
	var deleted []string
	srv := fakeServer(t, func(r *http.Request, reply func(int, any)) bool {
		switch path := r.URL.Path; {
		case r.Method == "GET" && path == "/api/v1/namespaces/default/pods":
			reply(http.StatusOK, &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods})
		case r.Method == "DELETE" && strings.HasPrefix(path, "/api/v1/namespaces/default/pods/"):
			mu.Lock()
			deleted = append(deleted, strings.TrimPrefix(path, "/api/v1/namespaces/default/pods/"))
			mu.Unlock()
			reply(http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
		default:
			return false
		}
		return true
	})
	e, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tc := range []struct {
		pool bool
		want []string
	}{{false, []string{"dead", "expired"}}, {true, []string{"dead", "expired", "warm"}}} {
		got, err := e.Garbage(context.Background(), tc.pool)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Garbage(pool %v) = %v, %v; want %v", tc.pool, got, err, tc.want)
		}
	}
	if len(deleted) != 0 {
		t.Fatalf("Garbage deleted %v", deleted)
	}
	gone, err := e.GC(context.Background())
	if err != nil || !slices.Equal(gone, []string{"dead", "expired"}) || !slices.Equal(deleted, gone) {
		t.Errorf("GC = %v, %v, deleting %v; want dead and expired", gone, err, deleted)
	}
}
