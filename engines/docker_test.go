package engines_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/kubetest"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/kube"
)

// userConfig points XDG_CONFIG_HOME at a new directory and returns where
// the user config goes in it.
func userConfig(t *testing.T) string {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	path := filepath.Join(cfg, "ccrun", "config.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDockerEngineFromSettings: the user config chooses the @docker
// engine, from the settings layer the Runtime loaded (the file read once:
// what it says after New is not what the Runtime uses), and a bad choice
// is an error of New naming the file.
func TestDockerEngineFromSettings(t *testing.T) {
	path := userConfig(t)
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"docker": {"engine": "kubernetes", "namespace": "tools"}}`)
	rt, err := ccrun.New(append(engines.All(), ccrun.WithProjectDir(t.TempDir()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	write(`{"docker": {"engine": "docker"}}`)
	if engine, from, err := engines.DockerEngine(rt); err != nil || engine != engines.EngineKubernetes || from != path {
		t.Errorf("engine %q from %q, %v; want kubernetes from %s, as loaded", engine, from, err, path)
	}

	write(`{"docker": {"engine": "nomad"}}`)
	_, err = ccrun.New(ccrun.WithProjectDir(t.TempDir()))
	if !errors.Is(err, ccrun.ErrInvalidConfig) {
		t.Errorf("engine nomad: %v, want ErrInvalidConfig", err)
	}

	os.Remove(path)
	rt, err = ccrun.New(ccrun.WithProjectDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if engine, from, err := engines.DockerEngine(rt); err != nil || engine != engines.EngineDocker || from != "default" {
		t.Errorf("no file: engine %q from %q, %v; want docker, default", engine, from, err)
	}
}

// TestDockerSettingsOneVerdict: the settings' "docker" member is read in
// one place (permission), strictly, whether a Runtime reads it from the
// layers it loaded or DefaultDockerEngine from the files. Before, the
// file reading took a misspelt member, a name in another case, a member
// given twice and a file whose other members were wrong, where the
// layers refused the first and last and took the others too.
func TestDockerSettingsOneVerdict(t *testing.T) {
	path := userConfig(t)
	for _, tc := range []struct{ text, at string }{
		{`{"docker": {"engine": "kubernetes", "namspace": "tools"}}`, ":1:37: docker: unknown member \"namspace\""},
		{`{"docker": {"Engine": "kubernetes"}}`, ":1:13: docker: unknown member \"Engine\""},
		{`{"docker": {"engine": "docker", "engine": "kubernetes"}}`, ":1:33: docker: member \"engine\" given twice"},
		{`{"docker": {"engine": "kubernetes"}, "mode": "bogus"}`, ":1:46:"},
		{`{"docker": {"engine": "kubernetes", "pool": 1.5}}`, ":1:45: docker.pool 1.5"},
		{`{"docker": {"namespace": 7}}`, ":1:26: docker.namespace: want a string"},
	} {
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _, derr := engines.DefaultDockerEngine()
		_, nerr := ccrun.New(ccrun.WithProjectDir(t.TempDir()))
		for what, err := range map[string]error{"DefaultDockerEngine": derr, "New": nerr} {
			if !errors.Is(err, ccrun.ErrInvalidConfig) || !strings.Contains(err.Error(), path+tc.at) {
				t.Errorf("%s: %s: %v; want ErrInvalidConfig at %s%s", tc.text, what, err, path, tc.at)
			}
		}
	}
}

// TestWithDockerEngine: the option wins over the settings files, an
// engine of another name fails New, and the backend Docker adds starts
// the engine chosen (the settings' Kubernetes, whose kubeconfig does not
// exist here; the option's local engine, at a socket nobody listens on).
func TestWithDockerEngine(t *testing.T) {
	path := userConfig(t)
	kc := filepath.Join(t.TempDir(), "no-kubeconfig")
	if err := os.WriteFile(path, []byte(`{"docker": {"engine": "kubernetes", "kubeconfig": "`+kc+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	local := engines.WithDockerEngine(engines.EngineDocker)
	if _, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), engines.Docker(engines.WithDockerEngine("nomad"))); !errors.Is(err, ccrun.ErrInvalidCall) {
		t.Errorf("engine nomad: %v, want ErrInvalidCall", err)
	}
	for _, tc := range []struct {
		name       string
		opts       []engines.Option
		engine     string
		from, says string
	}{
		{"settings", nil, engines.EngineKubernetes, path, "@docker on kubernetes"},
		{"option", []engines.Option{local}, engines.EngineDocker, "option", "no-docker.sock"},
	} {
		rt, err := ccrun.New(append(engines.All(tc.opts...), ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""))...)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		if engine, from, err := engines.DockerEngine(rt, tc.opts...); err != nil || engine != tc.engine || from != tc.from {
			t.Errorf("%s: engine %q from %q, %v; want %s from %s", tc.name, engine, from, err, tc.engine, tc.from)
		}
		// Binding the image to a grant starts the engine, before anyone
		// is asked (nobody is here).
		_, err = rt.Exec(context.Background(), &ccrun.Call{Image: "busybox", Args: []string{"true"}})
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Exec: %v; want the error of the engine chosen (%q)", tc.name, err, tc.says)
		}
	}
}

// TestKubeOptionsPullSecrets: the settings' pull_secrets reach the
// Kubernetes engine, which puts them on its pods (runtime/kube's
// TestPullSecretsOnPods) and reports them.
func TestKubeOptionsPullSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"tools"}}`)
	}))
	defer srv.Close()
	opts := engines.KubeOptions(permission.DockerSettings{Engine: "kubernetes", Namespace: "tools", Kubeconfig: kubetest.Kubeconfig(t, srv.URL), PullSecrets: []string{"regcred", "team-b"}})
	e, err := kube.New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.PullSecrets(); !slices.Equal(got, []string{"regcred", "team-b"}) {
		t.Errorf("pull secrets %q, want regcred, team-b", got)
	}
}
