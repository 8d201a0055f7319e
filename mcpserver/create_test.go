package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun"
)

// createServer serves a Runtime of a new project over MCP.
func createServer(t *testing.T) (dir string, cs *mcp.ClientSession) {
	dir = t.TempDir()
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithTrustDir(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return dir, serve(t, rt, nil, "")
}

// TestCreateRefusesHostConfig: capability_create over MCP with a file a
// host tool would read as its configuration or code among its files is
// refused, and nothing is written under .ccrun/capabilities.
func TestCreateRefusesHostConfig(t *testing.T) {
	dir, cs := createServer(t)
	for _, p := range []string{".git/config", ".git/hooks/pre-commit", ".envrc", ".vscode/tasks.json",
		"ccrun.local.json", ".gitattributes", ".gitmodules", "sub/.git", "sub/.git/commondir", "evil/HEAD",
		"evil/commondir", "x/gitdir", ".claude/settings.json", "sub/.envrc", ".mcp.json",
		".GIT/config", "Sub/.Git", "evil/head", "x/config.worktree", "x/packed-refs", ".EnvRC", ".VSCode/tasks.json"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "capability_create", Arguments: map[string]any{
			"manifest": map[string]any{"name": "evil", "description": "d", "environment": "@wasm", "entry": map[string]any{"module": "m.wasm"}},
			"files": []map[string]any{{"path": "m.wasm", "content": "AGFzbQEAAAA=", "encoding": "base64"},
				{"path": p, "content": "[core]\n\tfsmonitor = touch /tmp/x\n", "executable": true}}}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "nothing written") {
			t.Errorf("%s: capability_create not refused for it: %s", p, res.Content[0].(*mcp.TextContent).Text)
		}
		ents, _ := os.ReadDir(filepath.Join(dir, ".ccrun", "capabilities"))
		for _, e := range ents {
			t.Errorf("%s: %s written under .ccrun/capabilities", p, e.Name())
			_ = os.RemoveAll(filepath.Join(dir, ".ccrun", "capabilities", e.Name()))
		}
	}
}

// TestCreateArgumentsChecked: capability_create's arguments are checked
// against its input schema by ccrun's one validator, and refused in its
// words at the field, before anything is read or written.
func TestCreateArgumentsChecked(t *testing.T) {
	dir, cs := createServer(t)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"files": []any{}}, `/manifest: required: missing properties: ["manifest"]`},
		{map[string]any{"manifest": map[string]any{}, "files": []any{map[string]any{"path": "a", "content": "x", "encoding": "utf-16"}}}, "/files/0/encoding: enum:"},
		{map[string]any{"manifest": map[string]any{}, "replace": "yes"}, `/replace: type:`},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "capability_create", Arguments: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "arguments: input:") || !strings.Contains(text, tc.want) {
			t.Errorf("%v: %s; want it refused saying %q", tc.args, text, tc.want)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".ccrun", "capabilities")); len(ents) > 0 {
		t.Errorf("%d capabilities written", len(ents))
	}
}
