package capabilities

import (
	"encoding/json"
	"os"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/manifests/valid/docker.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("capability.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad: reading, checking and digesting a small capability, as
// every `ccrun exec NAME` does once.
func BenchmarkLoad(b *testing.B) {
	project := b.TempDir()
	dir, err := Scaffold(project, "hello", "@wasm")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDigest1MiB: the digest of a capability with a 1 MiB artifact.
func BenchmarkDigest1MiB(b *testing.B) {
	project := b.TempDir()
	dir, err := Scaffold(project, "big", "@wasm")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dir+"/big.bin", make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1 << 20)
	for b.Loop() {
		if _, err := Digest(dir); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateInput(b *testing.B) {
	c := &Capability{Manifest: Manifest{Name: "x", Parameters: json.RawMessage(`{"type": "object",
		"properties": {"path": {"type": "string"}, "indent": {"type": "integer", "minimum": 0}}, "required": ["path"]}`)}}
	var err error
	if c.params, err = compileParameters(c.Manifest.Parameters); err != nil {
		b.Fatal(err)
	}
	in := json.RawMessage(`{"path": "a.json", "indent": 2}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.ValidateInput(in); err != nil {
			b.Fatal(err)
		}
	}
}
