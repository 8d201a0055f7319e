package ccrun_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/permission"
)

// TestDockerEngineFromSettings: the user config chooses the @docker
// engine, from the settings layer the Runtime loaded (the file read once:
// what it says after New is not what the Runtime uses), and a bad choice
// is an error of New naming the file.
func TestDockerEngineFromSettings(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	path := filepath.Join(cfg, "ccrun", "config.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"docker": {"engine": "kubernetes", "namespace": "tools"}}`)
	rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	write(`{"docker": {"engine": "docker"}}`)
	if engine, from, err := rt.DockerEngine(); err != nil || engine != ccrun.EngineKubernetes || from != path {
		t.Errorf("engine %q from %q, %v; want kubernetes from %s, as loaded", engine, from, err, path)
	}

	write(`{"docker": {"engine": "nomad"}}`)
	_, err = ccrun.New(ccrun.WithProjectDir(t.TempDir()))
	if !errors.Is(err, permission.ErrInvalidConfig) {
		t.Errorf("engine nomad: %v, want ErrInvalidConfig", err)
	}

	os.Remove(path)
	rt, err = ccrun.New(ccrun.WithProjectDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if engine, from, err := rt.DockerEngine(); err != nil || engine != ccrun.EngineDocker || from != "default" {
		t.Errorf("no file: engine %q from %q, %v; want docker, default", engine, from, err)
	}
}
