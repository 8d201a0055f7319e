package capabilities

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestExamples: the capabilities under examples/ load, and the bundled
// hello.wasm is the one HelloWasm assembles.
func TestExamples(t *testing.T) {
	t.Parallel()
	caps, errs := LoadAll(filepath.Join("..", "examples"))
	for _, err := range errs {
		t.Error(err)
	}
	if len(caps) != 3 {
		t.Fatalf("%d example capabilities; want 3", len(caps))
	}
	wasm, err := os.ReadFile(filepath.Join("..", "examples", Dir, "hello-wasm", "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wasm, HelloWasm()) {
		t.Error("examples' hello.wasm differs from HelloWasm()")
	}
}
