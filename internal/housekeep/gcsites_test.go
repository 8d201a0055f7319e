package housekeep_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/enginerecord"
	"github.com/ccrun/ccrun/internal/housekeep"
	"github.com/ccrun/ccrun/internal/kubetest"
)

// TestGCSites: gc's places are the environment's Docker Engine, the
// settings' cluster, then the record's, each once however it came: a
// recorded place that is also a default is not visited twice.
func TestGCSites(t *testing.T) {
	if _, err := os.Stat("/etc/ccrun/managed.json"); err == nil {
		t.Skip("a managed policy here chooses the engine")
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("DOCKER_HOST", "unix:///run/gc-sites-test.sock")
	kc := kubetest.Kubeconfig(t, "https://127.0.0.1:1")
	os.MkdirAll(filepath.Join(config, "ccrun"), 0o700)
	os.WriteFile(filepath.Join(config, "ccrun", "config.json"), []byte(`{"docker": {"engine": "kubernetes", "kubeconfig": "`+kc+`", "namespace": "ccrun"}}`), 0o600)

	docker := housekeep.EngineSite{Engine: engines.EngineDocker, Host: "unix:///run/gc-sites-test.sock"}
	cluster := housekeep.EngineSite{Engine: engines.EngineKubernetes, Kubeconfig: kc, Context: "c", Namespace: "ccrun", Server: "https://127.0.0.1:1"}
	other := housekeep.EngineSite{Engine: engines.EngineDocker, Host: "tcp://elsewhere:2376"}
	dir := enginerecord.Dir()
	for _, s := range []housekeep.EngineSite{other, cluster, docker} {
		if err := enginerecord.AddTo(dir, s, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	sites, err := housekeep.GCSites(false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sites {
		sites[i].Seen = ""
	}
	if diff := cmp.Diff([]housekeep.EngineSite{docker, cluster, other}, sites); diff != "" {
		t.Errorf("GCSites (-want +got):\n%s", diff)
	}
}
