package dockerenv

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/internal/kubetest"
	"github.com/ccrun/ccrun/internal/registrytest"
	"github.com/ccrun/ccrun/runtime/kube"
)

// TestKubeNoProgramNever: a call with no program, whose own pull policy
// is never, is refused on Kubernetes saying what to do, before any pod
// and with no request to the image's registry, though the plan's "never"
// (Bind's, for an image it pinned) is what every such call carries; a
// call of the default policy reads the image's command from the registry.
func TestKubeNoProgramNever(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // the engine record of the fake cluster
	reg := registrytest.Start(t, "127.0.0.1:0")
	d := reg.Push(t, reg.Host+"/tool:1", registrytest.BusyboxImage(t, nil, nil)) // no Entrypoint, no Cmd
	var mu sync.Mutex
	var pods int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "GET" && r.URL.Path == "/api/v1/namespaces/default":
			json.NewEncoder(w).Encode(map[string]any{"kind": "Namespace", "apiVersion": "v1", "metadata": map[string]any{"name": "default"}})
		case r.Method == "GET" && r.URL.Path == "/api/v1/nodes":
			json.NewEncoder(w).Encode(map[string]any{"kind": "NodeList", "apiVersion": "v1", "items": []any{}})
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/configmaps"):
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"kind": "ConfigMap", "apiVersion": "v1"})
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/networkpolicies"):
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"kind": "NetworkPolicy", "apiVersion": "networking.k8s.io/v1"})
		default:
			if strings.HasSuffix(r.URL.Path, "/pods") {
				mu.Lock()
				pods++
				mu.Unlock()
			}
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403})
		}
	}))
	t.Cleanup(srv.Close)
	e, err := Kubernetes(context.Background(), kube.WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), kube.WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	pinned := reg.Host + "/tool@" + d.String()

	reg.Reset()
	_, err = e.Run(context.Background(), &backend.Invocation{Options: Options{Pull: "never"}}, pinned, "never", false)
	if !errors.Is(err, kube.ErrInvalidArgument) || !strings.Contains(err.Error(), "name the program in the call") {
		t.Fatalf("never: %v; want ErrInvalidArgument saying what to do", err)
	}
	if r := reg.Requests(); len(r) != 0 || pods != 0 {
		t.Fatalf("never: the registry was sent %q, %d pods asked for", r, pods)
	}
	_, err = e.Run(context.Background(), &backend.Invocation{}, pinned, "never", false)
	if !errors.Is(err, kube.ErrInvalidArgument) || !strings.Contains(err.Error(), "no Entrypoint, no Cmd") {
		t.Fatalf("default policy: %v; want the image's configuration read, naming no command", err)
	}
	if len(reg.Requests()) == 0 {
		t.Fatal("default policy: the registry was not asked")
	}
}
