package capabilities

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; it either returns a manifest that passes
// its own rules again, or a *ManifestError whose every field error names
// the file.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/manifests/*/*.json")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(wasmManifest))
	f.Add([]byte(`{"name": "a", "description": "d", "environment": "@shell", "entry": {"command": "x"}, "env": {"A~/b": "x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("f.json", data)
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) || !errors.Is(err, ErrInvalidManifest) || len(me.Errors) == 0 {
				t.Fatalf("err = %v (%T); want a non-empty *ManifestError", err, err)
			}
			for _, fe := range me.Errors {
				if fe.File != "f.json" || !strings.HasPrefix(fe.Error(), "f.json") {
					t.Fatalf("field error %q does not name the file", fe)
				}
			}
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("again.json", out); err != nil {
			t.Fatalf("a parsed manifest does not parse again: %v\n%s", err, out)
		}
	})
}

func TestDeepNesting(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20)
	_, err := Parse("c.json", []byte(`{"description": `+deep[:MaxManifestSize-100]+`}`))
	if !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("deep manifest: %v; want class ErrInvalidManifest", err)
	}
	c := &Capability{Manifest: Manifest{Name: "x"}}
	err = c.ValidateInput(json.RawMessage(`{"a": ` + deep + `}`))
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("deep input: %v; want class ErrInvalidInput, too deep", err)
	}
}
