package kube

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// poolServer is a fake API server for fill: it lists the warm pods given
// (the informer's list; its watch shows nothing more), records the pods
// created and the deletes with their precondition, and refuses a delete
// whose precondition is not the pod's resourceVersion now (rv: a claim
// may have changed it).
type poolServer struct {
	mu      sync.Mutex
	listed  []corev1.Pod
	rv      map[string]string // pod -> its resourceVersion now
	created []string
	deletes map[string]string // pod -> the precondition's resourceVersion ("" none)
}

// seen returns what ps was asked for so far.
func (ps *poolServer) seen() (created []string, deletes map[string]string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	d := map[string]string{}
	for k, v := range ps.deletes {
		d[k] = v
	}
	return append([]string(nil), ps.created...), d
}

func (ps *poolServer) route(t *testing.T) func(w http.ResponseWriter, r *http.Request, reply func(int, any)) bool {
	return func(w http.ResponseWriter, r *http.Request, reply func(int, any)) bool {
		const pods = "/api/v1/namespaces/default/pods"
		switch {
		case r.Method == http.MethodGet && r.URL.Path == pods && r.URL.Query().Get("sendInitialEvents") == "true":
			// No watch list here: the informer lists.
			st := apierrors.NewBadRequest("no watch list").ErrStatus
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			reply(int(st.Code), &st)
		case r.Method == http.MethodGet && r.URL.Path == pods && r.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == http.MethodGet && r.URL.Path == pods:
			ps.mu.Lock()
			list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "100"}, Items: ps.listed}
			ps.mu.Unlock()
			reply(http.StatusOK, list)
		case r.Method == http.MethodPost && r.URL.Path == pods:
			var p corev1.Pod
			decode(t, r, &p)
			ps.mu.Lock()
			ps.created = append(ps.created, p.Name)
			ps.mu.Unlock()
			p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
			reply(http.StatusCreated, &p)
		case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, pods+"/"):
			name := strings.TrimPrefix(r.URL.Path, pods+"/")
			var o metav1.DeleteOptions
			decode(t, r, &o)
			pre := ""
			if o.Preconditions != nil && o.Preconditions.ResourceVersion != nil {
				pre = *o.Preconditions.ResourceVersion
			}
			ps.mu.Lock()
			ps.deletes[name] = pre
			now := ps.rv[name]
			ps.mu.Unlock()
			if pre != now {
				st := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, name, nil).ErrStatus
				st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
				reply(int(st.Code), &st)
				return true
			}
			reply(http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
		default:
			return false
		}
		return true
	}
}

// poolExecutor is an Executor with a pool of size on ps, and the pool of
// s's template, whose pods ps lists: n of them, Running, the first mine of
// them this Executor's, each at resourceVersion "1".
func poolExecutor(t *testing.T, size, n, mine int) (*Executor, *warmPool, *poolServer) {
	ps := &poolServer{rv: map[string]string{}, deletes: map[string]string{}}
	srv := fakeAPIServer(t, []corev1.Node{node("n", "amd64", true)}, nil, ps.route(t))
	e, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"), WithPool(size))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := Spec{Image: "i@sha256:" + strings.Repeat("a", 64), Cmd: []string{"/bin/true"}, Pool: true}
	wp := e.warmPool(s, s.Limits.WithDefaults())
	for i := range n {
		name := "ccrun-warm-listed" + string(rune('a'+i))
		ps.listed = append(ps.listed, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1", Labels: map[string]string{
				LabelManaged: managedBy, LabelTemplate: wp.t.key, LabelPool: poolWarm,
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: containerRun, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			}}},
		})
		ps.rv[name] = "1"
		if i < mine {
			e.made.Store(name, time.Now())
			e.conns.Store(name, (*warmConn)(nil)) // no session opened by the test
		}
	}
	return e, wp, ps
}

// TestFillSurge: a pool of 2 with nothing in it creates 2 pods; after 3
// claims within the surge's window it creates as many more as were
// claimed, at most the surge (2, the pool's size): the pods claimed are
// replaced and 2 more are on their way while calls claim them.
func TestFillSurge(t *testing.T) {
	e, wp, ps := poolExecutor(t, 2, 0, 0)
	ctx := context.Background()
	if err := e.fill(ctx, wp); err != nil {
		t.Fatal(err)
	}
	created, _ := ps.seen()
	if len(created) != 2 {
		t.Fatalf("created %d pods, want 2", len(created))
	}
	for _, name := range created {
		wp.noteClaimed(name)
	}
	if err := e.fill(ctx, wp); err != nil {
		t.Fatal(err)
	}
	created, _ = ps.seen()
	if len(created) != 6 {
		t.Fatalf("created %d pods in all after 2 claims, want 6 (2, then 2 replaced + 2 surge)", len(created))
	}
	wp.noteClaimed(created[2])
	if err := e.fill(ctx, wp); err != nil {
		t.Fatal(err)
	}
	if created, _ = ps.seen(); len(created) != 7 {
		t.Fatalf("created %d pods in all after a 3rd claim, want 7 (the surge at most 2)", len(created))
	}
}

// TestFillNoSurgeWhenReady: with half of the pool ready or more, claims
// add no pod past the size.
func TestFillNoSurgeWhenReady(t *testing.T) {
	e, wp, ps := poolExecutor(t, 4, 2, 0) // 2 of 4 ready
	for i := range 3 {
		wp.noteClaimed("ccrun-warm-gone" + string(rune('a'+i)))
	}
	if err := e.fill(context.Background(), wp); err != nil {
		t.Fatal(err)
	}
	if created, _ := ps.seen(); len(created) != 2 {
		t.Errorf("created %d pods, want the 2 the size lacks", len(created))
	}
}

// TestFillTrims: with no claim in the surge's window, fill deletes the
// pods past the pool's size that this Executor made, each only if it is
// still as the cache showed it (the precondition): never another
// process's pod, never one a claim relabelled meanwhile; with a recent
// claim it deletes none.
func TestFillTrims(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		// 5 listed, 3 of them mine, a pool of 2: 3 past the size, all mine.
		e, wp, ps := poolExecutor(t, 2, 5, 3)
		wp.surplus = 3 // a surge made them
		claimedMeanwhile := ps.listed[0].Name
		ps.rv[claimedMeanwhile] = "2" // a claim relabelled it after the cache saw it
		if err := e.fill(context.Background(), wp); err != nil {
			t.Fatal(err)
		}
		created, deletes := ps.seen()
		if len(created) != 0 {
			t.Errorf("created %v in a full pool", created)
		}
		if len(deletes) != 3 {
			t.Errorf("deleted %v, want the 3 of mine past the size", deletes)
		}
		for name, pre := range deletes {
			if !e.isMine(name) {
				t.Errorf("deleted %s, another process's warm pod", name)
			}
			if pre != "1" {
				t.Errorf("delete of %s with precondition %q, want the resourceVersion the cache showed", name, pre)
			}
		}
		if _, ok := deletes[claimedMeanwhile]; !ok {
			t.Errorf("%s not asked for; want asked for and refused", claimedMeanwhile)
		}
		if !wp.wasClaimed(ps.listed[1].Name) {
			t.Error("a pod being trimmed is still claimable in this process")
		}
	})
	for _, tc := range []struct {
		name          string
		mine, surplus int
		claim         bool
	}{
		// Past the size because two processes filled the pool at once:
		// no surge of this one's made them.
		{name: "no surge", mine: 3},
		{name: "claims recent", mine: 3, surplus: 3, claim: true},
		{name: "none mine", surplus: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, wp, ps := poolExecutor(t, 2, 5, tc.mine)
			wp.surplus = tc.surplus
			if tc.claim {
				wp.noteClaimed("ccrun-warm-elsewhere")
			}
			if err := e.fill(context.Background(), wp); err != nil {
				t.Fatal(err)
			}
			if _, deletes := ps.seen(); len(deletes) != 0 {
				t.Errorf("deleted %v", deletes)
			}
		})
	}
}

func (e *Executor) isMine(name string) bool { _, ok := e.made.Load(name); return ok }
