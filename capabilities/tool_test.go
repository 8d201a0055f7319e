package capabilities

import (
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

func TestToolAndKey(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	wasm, err := Load(writeCap(t, project, "fmt-json", wasmManifest, map[string]string{"fmt-json.wasm": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if m := wasm.Manifest; m.Name != "fmt-json" || m.Description != "Pretty-print JSON" || m.Environment != ceiling.Wasm ||
		string(m.ParametersOrDefault()) != `{"type":"object"}` || wasm.Class() != permission.ClassExec {
		t.Errorf("manifest %+v, class %s", m, wasm.Class())
	}
	k := wasm.Key()
	if got := k.String(); got != "capability:fmt-json" {
		t.Errorf("Key() = %q; want capability:fmt-json", got)
	}
	if back, err := keys.ParseKey(k.String()); err != nil || back != k {
		t.Errorf("ParseKey(%q) = %v, %v; want the key back", k, back, err)
	}
	if !keys.MustParsePattern("capability:*").Match(k) || keys.MustParsePattern("capability:fmt").Match(k) {
		t.Error("capability patterns do not match as keys should")
	}

	net, err := Load(writeCap(t, project, "web", `{"name": "web", "description": "d", "environment": "@docker",
		"entry": {"image": "i"}, "network": "bridge", "parameters": {"type": "object", "required": ["url"]}}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if net.Class() != permission.ClassNetwork || string(net.Manifest.ParametersOrDefault()) != `{"type": "object", "required": ["url"]}` {
		t.Errorf("class %s, parameters %s; want ClassNetwork and the manifest's parameters", net.Class(), net.Manifest.ParametersOrDefault())
	}
}
