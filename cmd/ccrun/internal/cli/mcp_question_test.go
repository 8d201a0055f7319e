package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun/capabilities"
)

// TestMCPAskCancel: a question the person dismissed (the client's
// "cancel") is a deny reported as cancelled, in the result and in the
// audit log; a decline is reported as declined. On the newest protocol
// (the question as input requests) and on 2025-11-25 (asked while the
// call waits).
func TestMCPAskCancel(t *testing.T) {
	t.Parallel()
	eachProtocol(t, []string{"", "2025-11-25"}, func(t *testing.T, version string) {
		dir, env := mcpProject(t)
		a := &asker{action: "cancel"}
		cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle}, version)

		res := callTool(t, cs, "run_command", map[string]any{"command": "touch one"})
		r := structured(t, res)
		if !res.IsError || r.Outcome != "denied" || a.count() != 1 {
			t.Fatalf("cancel: isError %v, %+v, %d questions; want denied after 1", res.IsError, r, a.count())
		}
		if got := text(res); !strings.Contains(got, "cancelled") || strings.Contains(got, "declined") {
			t.Errorf("cancel: the result says %q; want cancelled, not declined", got)
		}
		if !strings.Contains(r.HowToAllow, "cancelled") {
			t.Errorf("cancel: how_to_allow %q does not say the question was cancelled", r.HowToAllow)
		}
		if _, err := os.Stat(filepath.Join(dir, "one")); err == nil {
			t.Fatal("cancel: it ran")
		}

		a.mu.Lock()
		a.action = "decline"
		a.mu.Unlock()
		res = callTool(t, cs, "run_command", map[string]any{"command": "touch two"})
		if got := text(res); !res.IsError || !strings.Contains(got, "declined") || strings.Contains(got, "cancelled") {
			t.Errorf("decline: isError %v, %q; want declined, not cancelled", res.IsError, got)
		}

		var reasons []string
		for _, l := range auditLines(t, dir) {
			if l["kind"] == "decision" {
				s, _ := l["reason"].(string)
				reasons = append(reasons, s)
			}
		}
		if len(reasons) != 2 || !strings.Contains(reasons[0], "cancelled") || strings.Contains(reasons[1], "cancelled") ||
			!strings.Contains(reasons[1], "denied by the person") {
			t.Errorf("audit reasons %q; want the first cancelled, the second denied by the person", reasons)
		}
	})
}

// TestMCPQuestionFooter: a question's footer and its choice description
// explain only the grants offered: no "project" for run_command (a @shell
// grant never outlives the session), "project" for run_wasm.
func TestMCPQuestionFooter(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	if err := os.WriteFile(filepath.Join(dir, "hello.wasm"), capabilities.HelloWasm(), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &asker{answer: "once"}
	cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle}, "2025-11-25")
	for _, c := range []struct {
		tool    string
		args    map[string]any
		offered string
		project bool
	}{
		{"run_command", map[string]any{"command": "touch x"}, shellOffer(), false},
		{"run_wasm", map[string]any{"module": "hello.wasm"}, "once,session,project,deny", true},
	} {
		n := a.count()
		if res := callTool(t, cs, c.tool, c.args); res.IsError {
			t.Fatalf("%s: %s", c.tool, text(res))
		}
		if got := strings.Join(a.offered(t, n), ","); got != c.offered {
			t.Fatalf("%s offered %s, want %s", c.tool, got, c.offered)
		}
		a.mu.Lock()
		q := a.asked[n]
		a.mu.Unlock()
		footer := q.Message[strings.LastIndex(q.Message, "\n\n")+2:]
		desc := q.RequestedSchema.(map[string]any)["properties"].(map[string]any)["grant"].(map[string]any)["description"].(string)
		for what, s := range map[string]string{"footer": footer, "description": desc} {
			if got := strings.Contains(s, "project"); got != c.project {
				t.Errorf("%s: the %s names project: %v, want %v: %q", c.tool, what, got, c.project, s)
			}
			if !strings.Contains(s, "session") {
				t.Errorf("%s: the %s does not explain session: %q", c.tool, what, s)
			}
		}
	}
}
