package cli

import (
	"os/exec"
	"testing"
)

// TestAuditCallIDsUnique: the call ids of one audit log name one call
// each, across processes (two ccrun exec) and connections (two ccrun mcp,
// one of which reloads its settings between calls).
func TestAuditCallIDsUnique(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	for range 2 {
		cmd := exec.Command(mcpBinary(t), "exec", "--shell", "true")
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ccrun exec: %v\n%s", err, out)
		}
	}
	for range 2 {
		cs := mcpStdio(t, dir, env, nil, "")
		for range 2 {
			if res := callTool(t, cs, "run_command", map[string]any{"command": "true"}); res.IsError {
				t.Fatalf("run_command true: %s", text(res))
			}
		}
		cs.Close()
	}
	seen := map[string]bool{}
	n := 0
	for _, l := range auditLines(t, dir) {
		if l["kind"] != "decision" {
			continue
		}
		id, _ := l["call"].(string)
		if id == "" || seen[id] {
			t.Errorf("decision line with call id %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
		n++
	}
	if n != 6 {
		t.Errorf("%d decision lines, want 6", n)
	}
}
