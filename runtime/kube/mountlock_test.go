package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/kubetest"
	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/runtime/job"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMountLocked: a run whose writable mount another run writes waits
// for it before anything reaches the cluster (no copy in, no pod), and a
// caller that gives up then gets Cancelled, before the program started.
func TestMountLocked(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // not parallel
	var running, reached atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if running.Load() {
			reached.Store(true)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	}))
	defer srv.Close()
	e, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mounts := []job.Mount{{Host: dir, Guest: "/m", Writable: true}}
	other, _, err := mountlock.Begin(context.Background(), mounts, job.Limits{}.WithDefaults(), time.Now())
	if other == nil {
		t.Fatal(err)
	}
	defer other.End(nil, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waited := ""
	ctx = mountlock.WithWaitFunc(ctx, func(d string, w bool) {
		if w {
			waited = d
			cancel()
		}
	})
	running.Store(true)
	res, err := e.Run(ctx, Spec{Image: "i", Cmd: []string{"/bin/true"}, Mounts: mounts})
	if err != nil || res.Reason != job.Cancelled || !strings.Contains(res.Detail, "before the program started") {
		t.Fatalf("Run = %+v, %v; want Cancelled before the program started", res, err)
	}
	if waited != dir {
		t.Errorf("waited for %q, want %s", waited, dir)
	}
	if reached.Load() {
		t.Error("the run reached the cluster while another run wrote its mount")
	}
}
