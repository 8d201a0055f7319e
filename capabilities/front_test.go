//go:build ccrunfront

package capabilities

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun/ceiling"
)

// TestFrontRefuses: the front build links no JSON Schema library, so it
// cannot check a manifest or an input; a capability that reached it after
// all (the front hands every command that reads one to the whole ccrun)
// is refused, never run unchecked. Run by make test with the ccrunfront tag.
func TestFrontRefuses(t *testing.T) {
	valid := []byte(`{"name": "x", "description": "d", "environment": "@shell", "run": "true"}`)
	if _, err := Parse("capability.json", valid); !errors.Is(err, errFront) {
		t.Errorf("Parse: %v, want errFront", err)
	}
	if err := Validate("capability.json", valid); !errors.Is(err, errFront) {
		t.Errorf("Validate: %v, want errFront", err)
	}
	dir := t.TempDir()
	if _, err := Scaffold(dir, "hello", ceiling.Wasm); !errors.Is(err, errFront) {
		t.Errorf("Scaffold: %v, want errFront", err)
	}
	cdir := filepath.Join(dir, "x")
	if err := os.Mkdir(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, ManifestFile), valid, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cdir); !errors.Is(err, errFront) {
		t.Errorf("Load: %v, want errFront", err)
	}
}
