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
	tool := wasm.Tool()
	if tool.Name != "fmt-json" || tool.Description != "Pretty-print JSON" || tool.Environment != ceiling.Wasm ||
		string(tool.Parameters) != `{"type":"object"}` || tool.Class != permission.ClassExec {
		t.Errorf("Tool() = %+v", tool)
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
	if tool := net.Tool(); tool.Class != permission.ClassNetwork || string(tool.Parameters) != `{"type": "object", "required": ["url"]}` {
		t.Errorf("Tool() = %+v; want ClassNetwork and the manifest's parameters", tool)
	}
}
