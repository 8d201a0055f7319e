package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun/capabilities"
)

// decisions are the decision lines of the project's audit log.
func decisions(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range auditLines(t, dir) {
		if l["kind"] == "decision" {
			out = append(out, l)
		}
	}
	return out
}

// TestSandboxSessionGrantStaysInTier: a @shell command granted for the
// session runs in the workspace tier, and the same command again, allowed
// by the grant, runs there too: its write outside the project is refused
// both times, and no audit line says unconfined.
func TestSandboxSessionGrantStaysInTier(t *testing.T) {
	needKernelSandbox(t)
	fakeHome(t)
	project := t.TempDir()
	inSession(t, project)
	outside := filepath.Join(t.TempDir(), "outside")
	cmd := "echo x > " + outside
	for i, args := range [][]string{{"exec", "--approve", "session", "--shell", cmd}, {"exec", "--shell", cmd}} {
		_, errOut, code := ccrunIn(t, project, args...)
		if code == 0 {
			t.Errorf("run %d (%q): exit 0; want the write refused", i, args)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Fatalf("run %d (%q): the write outside the project landed; stderr: %s", i, args, errOut)
		}
	}
	lines := decisions(t, project)
	if len(lines) != 2 || lines[0]["grant"] != "AlwaysThisSession" || lines[1]["layer"] != "session" {
		t.Fatalf("decision lines %v; want the person's session grant, then the session's", lines)
	}
	for _, l := range lines {
		if _, ok := l["unconfined"]; ok {
			t.Errorf("an audit line says unconfined: %v", l)
		}
	}
}

// TestApproveUnconfined: `--approve unconfined` runs the approved command
// outside the workspace tier (its write outside the project lands), once:
// the audit line says unconfined and Once, and the same command with
// `--approve once` is in the tier again.
func TestApproveUnconfined(t *testing.T) {
	needKernelSandbox(t)
	fakeHome(t)
	project := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	cmd := "echo x > " + outside
	if _, errOut, code := ccrunIn(t, project, "exec", "--approve", "once", "--shell", cmd); code == 0 {
		t.Errorf("--approve once: exit 0; want the write refused (%s)", errOut)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("--approve once: the write outside the project landed")
	}
	if _, errOut, code := ccrunIn(t, project, "exec", "--approve", "unconfined", "--shell", cmd); code != 0 {
		t.Fatalf("--approve unconfined: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "x\n" {
		t.Fatalf("--approve unconfined: the write did not land: %q %v", b, err)
	}
	if err := os.Remove(outside); err != nil {
		t.Fatal(err)
	}
	if _, _, code := ccrunIn(t, project, "exec", "--approve", "once", "--shell", cmd); code == 0 {
		t.Error("--approve once after unconfined: exit 0; want the write refused again")
	}
	lines := decisions(t, project)
	if len(lines) != 3 {
		t.Fatalf("decision lines %v; want 3", lines)
	}
	for i, want := range []bool{false, true, false} {
		got, _ := lines[i]["unconfined"].(bool)
		if got != want || lines[i]["grant"] != "Once" {
			t.Errorf("decision %d: unconfined %v grant %v; want %v, Once: %v", i, got, lines[i]["grant"], want, lines[i])
		}
	}
}

// TestApproveUnconfinedNotOffered: where the settings require the sandbox,
// `--approve unconfined` is a plain Once, in the tier, and says so; an
// unknown --approve word is a usage error naming unconfined.
func TestApproveUnconfinedNotOffered(t *testing.T) {
	needKernelSandbox(t)
	home := fakeHome(t)
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"shell": {"sandbox": "required"}}` + "\n"})
	project := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	_, errOut, code := ccrunIn(t, project, "exec", "--approve", "unconfined", "--shell", "echo x > "+outside)
	if code == 0 {
		t.Error("exit 0; want the write refused in the tier")
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the write outside the project landed under \"sandbox\": \"required\"")
	}
	if !strings.Contains(errOut, "--approve unconfined: ") || !strings.Contains(errOut, "ran once in its sandbox") {
		t.Errorf("stderr does not say the call ran in its sandbox: %s", errOut)
	}
	if _, errOut, code := ccrunIn(t, project, "exec", "--approve", "outside", "--shell", "true"); code != exitUsage || !strings.Contains(errOut, "unconfined") {
		t.Errorf("--approve outside: exit %d, %q; want a usage error naming unconfined", code, errOut)
	}
}

// TestPromptUnconfined: at the terminal, a @shell command in the workspace
// tier is offered u with its own text; u runs it outside (the write
// lands, the audit line says so), o runs it inside.
func TestPromptUnconfined(t *testing.T) {
	needKernelSandbox(t)
	fakeHome(t)
	dir := t.TempDir()
	inSession(t, dir)
	outside := filepath.Join(t.TempDir(), "outside")
	screen, code := promptRun(t, dir, []string{"o\n"}, "exec", "--shell", "echo x > "+outside)
	if code == 0 {
		t.Errorf("o: exit 0; want the write refused; screen:\n%s", screen)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("o: the write outside the project landed")
	}
	screen, code = promptRun(t, dir, []string{"u\n"}, "exec", "--shell", "echo x > "+outside)
	if code != 0 {
		t.Fatalf("u: exit %d; screen:\n%s", code, screen)
	}
	wantScreen(t, screen, []string{
		"allow? [o] once  [s] this session  [u] run once outside the sandbox  [d] deny  (Enter: deny): ",
		"sandbox:   approved, it runs in the workspace sandbox",
		`outside:   "run once outside the sandbox" runs this call alone with all your rights`,
	}, nil)
	if b, err := os.ReadFile(outside); err != nil || string(b) != "x\n" {
		t.Fatalf("u: the write did not land: %q %v", b, err)
	}
	lines := decisions(t, dir)
	if len(lines) != 2 || lines[0]["unconfined"] != nil || lines[1]["unconfined"] != true || lines[1]["grant"] != "Once" {
		t.Fatalf("decision lines %v; want o confined, then u unconfined Once", lines)
	}
}

// shellOffer is what an MCP question offers for a @shell command in the
// workspace tier: "unconfined" as a choice of its own where the kernel
// gives the tier (the sandbox on, as by default).
func shellOffer() string {
	if uLetter() == "" {
		return "once,session,deny"
	}
	return "once,session,unconfined,deny"
}

// TestMCPUnconfined: the MCP question about a @shell command offers
// "unconfined" as a choice of its own, labelled "run once outside the
// sandbox"; that answer runs it outside the workspace tier (the write
// lands, the audit line says unconfined), an ordinary "once" runs it
// inside; a @wasm question never offers it (the server's refusal of the
// word where it was not offered is mcpserver's TestChoiceUnconfined: this
// client checks answers against the schema itself). On the newest protocol (the question as input requests) and on
// 2025-11-25 (asked while the call waits).
func TestMCPUnconfined(t *testing.T) {
	needKernelSandbox(t)
	t.Parallel()
	eachProtocol(t, []string{"", "2025-11-25"}, func(t *testing.T, version string) {
		dir, env := mcpProject(t)
		if err := os.WriteFile(filepath.Join(dir, "hello.wasm"), capabilities.HelloWasm(), 0o644); err != nil {
			t.Fatal(err)
		}
		a := &asker{answer: "unconfined"}
		cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle}, version)
		outside := filepath.Join(t.TempDir(), "outside")

		res := callTool(t, cs, "run_command", map[string]any{"command": "echo x > " + outside})
		if res.IsError {
			t.Fatalf("unconfined: %s", text(res))
		}
		if b, err := os.ReadFile(outside); err != nil || string(b) != "x\n" {
			t.Fatalf("unconfined: the write outside the project did not land: %q %v", b, err)
		}
		words, labels := choicesAsked(t, a, 0)
		if strings.Join(words, ",") != "once,session,unconfined,deny" || labels[2] != "run once outside the sandbox" || labels[0] != "once" {
			t.Errorf("choices %q labelled %q; want unconfined labelled \"run once outside the sandbox\"", words, labels)
		}
		a.mu.Lock()
		q := a.asked[0]
		a.mu.Unlock()
		if !strings.Contains(q.Message, "runs in the workspace sandbox") || !strings.Contains(q.Message, `"unconfined" runs this call alone outside the sandbox`) {
			t.Errorf("the question does not say what the choice means:\n%s", q.Message)
		}

		a.set("once")
		inside := filepath.Join(t.TempDir(), "inside")
		if res := callTool(t, cs, "run_command", map[string]any{"command": "echo y > " + inside}); !res.IsError {
			t.Errorf("once: %s; want the write refused", text(res))
		}
		if _, err := os.Stat(inside); err == nil {
			t.Fatal("once: an ordinary accept ran the command outside the tier")
		}

		if res := callTool(t, cs, "run_wasm", map[string]any{"module": "hello.wasm"}); res.IsError {
			t.Errorf("run_wasm: %s", text(res))
		}
		if words, _ := choicesAsked(t, a, 2); strings.Join(words, ",") != "once,session,project,deny" {
			t.Errorf("run_wasm offered %q; want no unconfined", words)
		}

		var got []any
		for _, l := range decisions(t, dir) {
			got = append(got, l["unconfined"])
		}
		if len(got) != 3 || got[0] != true || got[1] != nil || got[2] != nil {
			t.Errorf("the decisions' unconfined fields %v; want true, then none", got)
		}
	})
}

// choicesAsked is the enum and the enumNames of the i-th question, one
// label a choice.
func choicesAsked(t *testing.T, a *asker, i int) (words, labels []string) {
	t.Helper()
	g := a.grant(t, i)
	if len(g.EnumNames) != len(g.Enum) {
		t.Fatalf("enum %q, enumNames %q: not one label a choice", g.Enum, g.EnumNames)
	}
	return g.Enum, g.EnumNames
}
