package capabilities

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeCap writes a capability called name into project's .ccrun/capabilities
// with the manifest and the files given (path → contents; a path ending in
// "*" is written executable, without the star).
func writeCap(t *testing.T, project, name, manifest string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(project, ".ccrun", "capabilities", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, data := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, "*") {
			p, mode = strings.TrimSuffix(p, "*"), 0o755
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fieldErrors returns the field errors of err, failing the test when err
// is not a *ManifestError or *InputError.
func fieldErrors(t *testing.T, err error) []*FieldError {
	t.Helper()
	var me *ManifestError
	if errors.As(err, &me) {
		return me.Errors
	}
	var ie *InputError
	if errors.As(err, &ie) {
		return ie.Errors
	}
	t.Fatalf("error %v (%T): want a *ManifestError or *InputError", err, err)
	return nil
}

// pointers returns the sorted pointers of errs.
func pointers(errs []*FieldError) []string {
	out := make([]string, len(errs))
	for i, fe := range errs {
		out[i] = fe.Pointer
	}
	slices.Sort(out)
	return out
}

// hasField reports whether errs holds an error at ptr.
func hasField(errs []*FieldError, ptr string) bool {
	for _, fe := range errs {
		if fe.Pointer == ptr {
			return true
		}
	}
	return false
}

const wasmManifest = `{
  "name": "fmt-json",
  "description": "Pretty-print JSON",
  "environment": "@wasm",
  "entry": {"module": "fmt-json.wasm", "args": ["--indent", "2"]}
}`
