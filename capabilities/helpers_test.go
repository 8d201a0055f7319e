package capabilities

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// parseInvalid parses data as file and checks that it fails with errors
// at exactly the pointers want (sorted), each of class ErrInvalidManifest
// and naming the file, its position and the field. It returns them.
func parseInvalid(t *testing.T, file, data string, want []string) []*FieldError {
	t.Helper()
	m, err := Parse(file, []byte(data))
	if err == nil {
		t.Fatalf("Parse = %+v, nil; want errors at %q", m, want)
	}
	if !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("errors.Is(err, ErrInvalidManifest) = false; err = %v", err)
	}
	errs := fieldErrors(t, err)
	if diff := cmp.Diff(want, pointers(errs)); diff != "" {
		t.Errorf("pointers (-want +got):\n%s\nerror:\n%v", diff, err)
	}
	for _, fe := range errs {
		if fe.File != file || fe.Line < 1 || fe.Column < 1 {
			t.Errorf("field error %q: file %q at %d:%d; want the file and a position", fe, fe.File, fe.Line, fe.Column)
		}
		if !strings.HasPrefix(fe.Error(), file+":") || fe.Pointer != "" && !strings.Contains(fe.Error(), fe.Pointer+": ") {
			t.Errorf("message %q does not name the file and the field", fe)
		}
	}
	return errs
}
