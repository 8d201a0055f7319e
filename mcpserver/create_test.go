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

// TestCreateRefusesHostConfig: capability_create over MCP with a file a
// host tool would read as its configuration or code among its files is
// refused, and nothing is written under .ccrun/capabilities.
func TestCreateRefusesHostConfig(t *testing.T) {
	dir := t.TempDir()
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithTrustDir(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	cs := serve(t, rt, nil, "")
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
