package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// mcpBox is a backend of a registered environment that runs nothing but
// counts its runs.
type mcpBox struct{ runs atomic.Int32 }

func (b *mcpBox) Prepare(_ context.Context, inv *ccrun.Invocation) (*ccrun.Prepared, error) {
	return &ccrun.Prepared{Key: keys.Key{Tool: "run_mcpbox", Action: inv.Target}, Display: inv.Target}, nil
}

func (b *mcpBox) Run(context.Context, *ccrun.Invocation) (*job.Result, error) {
	b.runs.Add(1)
	return &job.Result{Reason: job.Exit}, nil
}

// TestRegisteredCapabilityServed: a capability of an environment a Go
// program registered is served like the others, but neither as closed
// to the world nor as harmless (ccrun cannot tell what its backend
// reaches or changes), and a denial's advice never offers a project
// grant its ceiling refuses.
func TestRegisteredCapabilityServed(t *testing.T) {
	dir := t.TempDir()
	cap := filepath.Join(dir, filepath.FromSlash(capabilities.Dir), "boxed")
	if err := os.MkdirAll(cap, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := `{"name": "boxed", "description": "Runs in the box", "environment": "@mcpbox",
	  "entry": {"target": "t.box"}, "parameters": {"type": "object", "properties": {}}}`
	if err := os.WriteFile(filepath.Join(cap, capabilities.ManifestFile), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &mcpBox{}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithTrustDir(t.TempDir()),
		ccrun.WithBackend("@mcpbox", ceiling.AlwaysThisSession, func(context.Context) (ccrun.Backend, error) { return b, nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	cs := serve(t, rt, nil, "")
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed *mcp.Tool
	for _, tl := range list.Tools {
		if tl.Name == "boxed" {
			listed = tl
		}
	}
	if listed == nil {
		t.Fatal("boxed not listed")
	}
	a := listed.Annotations
	if a.ReadOnlyHint || (a.OpenWorldHint != nil && !*a.OpenWorldHint) || (a.DestructiveHint != nil && !*a.DestructiveHint) {
		t.Errorf("boxed listed as read-only, closed or harmless: %+v", a)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "boxed", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !res.IsError || b.runs.Load() != 0 {
		t.Fatalf("a call nobody could be asked about ran (%d runs): %s", b.runs.Load(), text)
	}
	if strings.Contains(text, "--scope project") {
		t.Errorf("the advice offers a project grant the ceiling refuses: %s", text)
	}
}
