package capabilities

import (
	"encoding/json"
	"sync"
	"testing"
)

// TestConcurrentUse: a loaded capability is shared by many calls at once.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	dir := writeCap(t, t.TempDir(), "fmt-json", `{
  "name": "fmt-json", "description": "d", "environment": "@wasm",
  "entry": {"module": "fmt-json.wasm"},
  "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
}`, map[string]string{"fmt-json.wasm": string(HelloWasm())})
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				in := json.RawMessage(`{"n": 1}`)
				if (i+j)%2 == 1 {
					in = json.RawMessage(`{"n": "x"}`)
				}
				if err := c.ValidateInput(in); (err == nil) != ((i+j)%2 == 0) {
					t.Errorf("ValidateInput(%s) = %v", in, err)
				}
				_ = c.Class()
				_ = c.Manifest.Loosens()
				if err := c.Verify(); err != nil {
					t.Error(err)
				}
				if _, err := c.ReadModule(); err != nil {
					t.Error(err)
				}
				if c2, err := Load(dir); err != nil || c2.Digest != c.Digest {
					t.Errorf("Load = %v, %v", c2, err)
				}
			}
		})
	}
	wg.Wait()
}
