package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/enginerecord"
	"github.com/ccrun/ccrun/internal/kubetest"
)

// blackHole accepts connections and never answers: an engine or API
// server that hangs. It returns its address.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// fakeCluster is an API server whose namespace ns holds one pod of ccrun
// past its expiry, named name, which gc deletes; it reports the deletions.
func fakeCluster(t *testing.T, ns, name string) (server string, deleted func() []string) {
	t.Helper()
	var mu sync.Mutex
	var gone []string
	pod := map[string]any{
		"metadata": map[string]any{"name": name, "labels": map[string]string{"app.kubernetes.io/managed-by": "ccrun"},
			"annotations": map[string]string{"ccrun.dev/expires": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		base := "/api/v1/namespaces/" + ns
		switch {
		case r.Method == "GET" && r.URL.Path == base:
			json.NewEncoder(w).Encode(map[string]any{"kind": "Namespace", "apiVersion": "v1", "metadata": map[string]string{"name": ns}})
		case r.Method == "GET" && r.URL.Path == base+"/pods":
			items := []any{pod}
			mu.Lock()
			if len(gone) > 0 {
				items = nil
			}
			mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"kind": "PodList", "apiVersion": "v1", "items": items})
		case r.Method == "DELETE" && strings.HasPrefix(r.URL.Path, base+"/pods/"):
			mu.Lock()
			gone = append(gone, strings.TrimPrefix(r.URL.Path, base+"/pods/"))
			mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), gone...)
	}
}

// TestGCRecordedSites: gc, with no flag, visits every engine and cluster
// of ccrun's engine record: it lists (--dry-run) and deletes the pods a
// killed ccrun left on a cluster the settings do not name; an engine and a
// cluster that accept connections and never answer are reported and
// skipped within gc's bound, never a hang; a damaged line of the record
// is reported, and the rest of it still used.
func TestGCRecordedSites(t *testing.T) {
	deadDocker(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	defer func(d time.Duration) { gcSiteTimeout = d }(gcSiteTimeout)
	gcSiteTimeout = 2 * time.Second

	server, deleted := fakeCluster(t, "ccrun", "ccrun-left-behind")
	kc := kubetest.Kubeconfig(t, server)
	hungKC := kubetest.Kubeconfig(t, "http://"+blackHole(t))
	hungDocker := "tcp://" + blackHole(t)
	dir := enginerecord.Dir()
	day := time.Now()
	for _, s := range []enginerecord.Site{
		{Engine: enginerecord.Docker, Host: hungDocker},
		{Engine: enginerecord.Kubernetes, Kubeconfig: hungKC, Context: "c", Namespace: "ccrun"},
		{Engine: enginerecord.Kubernetes, Kubeconfig: kc, Context: "c", Namespace: "ccrun", Server: server},
	} {
		if err := enginerecord.AddTo(dir, s, day); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(enginerecord.File(dir), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"engine\":\"kubernetes\",\"cont\n")
	f.Close()
	project := t.TempDir()

	for _, tc := range []struct {
		args   []string
		stdout string
	}{
		{[]string{"gc", "--dry-run"}, "would remove pod ccrun-left-behind\n"},
		{[]string{"gc"}, "removed pod ccrun-left-behind\n"},
	} {
		start := time.Now()
		stdout, stderr, code := ccrunIn(t, project, tc.args...)
		took := time.Since(start)
		t.Logf("%s (%s):\n%s%s", tc.args, took.Round(time.Millisecond), stdout, stderr)
		if code != 0 {
			t.Errorf("%s: exit %d; stderr %q", tc.args, code, stderr)
		}
		if !strings.Contains(stdout, tc.stdout) {
			t.Errorf("%s: stdout %q, want %q in it", tc.args, stdout, tc.stdout)
		}
		for _, want := range []string{"docker engine " + hungDocker, "kubernetes context c namespace ccrun of " + hungKC, "line 4 is not a record", "containers not"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr %q, want a note naming %q", tc.args, stderr, want)
			}
		}
		if took > time.Minute {
			t.Errorf("%s took %s: an engine that does not answer held gc past its bound", tc.args, took)
		}
		if got := deleted(); tc.args[len(tc.args)-1] == "--dry-run" && len(got) != 0 {
			t.Fatalf("gc --dry-run deleted %v", got)
		}
	}
	if got := deleted(); len(got) != 1 || got[0] != "ccrun-left-behind" {
		t.Errorf("gc deleted %v, want the pod left behind", got)
	}

	stdout, _, code := ccrunIn(t, project, "gc", "--json")
	var r gcReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 {
		t.Fatalf("gc --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if want := "kubernetes context c namespace ccrun of " + kc + " (" + server + ")"; !slices.Contains(r.Engines, want) {
		t.Errorf("engines %q, want %q among them", r.Engines, want)
	}
}

// TestGCEngineFlag: an --engine gc does not know is a usage error.
func TestGCEngineFlag(t *testing.T) {
	deadDocker(t)
	if _, stderr, code := ccrunIn(t, t.TempDir(), "gc", "--engine", "podman"); code != exitUsage || !strings.Contains(stderr, "valid: docker, kubernetes") {
		t.Errorf("exit %d, stderr %q; want %d, naming the engines", code, stderr, exitUsage)
	}
}
