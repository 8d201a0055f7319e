package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend/toy"
)

// The test binary is a ccrun that adds the environment @toy, as a Go
// program adds its own: one line (backends.go). Every test of this
// package, and every process of it (asCCRun), knows @toy.
func init() {
	backends = append(backends, ccrun.WithBackend(toy.Environment, ceiling.AlwaysThisSession, toy.New))
}

// TestToyBackend: an environment a Go program adds in one WithBackend
// line is picked up by every front end: capability new writes a
// capability of it, list and validate show it, the completions offer it,
// check and exec run it ad hoc (@toy TARGET) and as a capability, the
// advice on a denial never offers the project grant its ceiling refuses,
// allowlist add grants it within its ceiling (the session, not the
// project), and ccrun mcp, a process of its own, serves it to a real MCP
// client, asking within the ceiling.
func TestToyBackend(t *testing.T) {
	// not parallel: the session is the process's environment
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.toy"), []byte("a toy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CCRUN_SESSION", "")
	cli := func(want int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := ccrunIn(t, dir, args...)
		if code != want {
			t.Fatalf("ccrun %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}

	// capability new, list, validate
	if out, _ := cli(0, "capability", "new", "hello", "--env", "toy"); !strings.Contains(out, filepath.Join(".ccrun", "capabilities", "hello")) {
		t.Errorf("capability new: %s", out)
	}
	if out, _ := cli(0, "capability", "list"); !strings.Contains(out, "hello") || !strings.Contains(out, "@toy") {
		t.Errorf("capability list: %s", out)
	}
	out, _ := cli(0, "capability", "list", "--json")
	var list capabilitiesReport
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Capabilities) != 1 || list.Capabilities[0].Environment != "@toy" || len(list.Errors) != 0 {
		t.Errorf("capability list --json: %v %s", err, out)
	}
	for _, args := range [][]string{{"capability", "validate", "hello"}, {"capability", "validate"}} {
		if out, _ := cli(0, args...); !strings.HasPrefix(out, "hello: ok (sha256:") {
			t.Errorf("%s: %s", strings.Join(args, " "), out)
		}
	}
	if _, errOut := cli(exitUsage, "capability", "new", "other", "--env", "@nothere"); !strings.Contains(errOut, "(@shell, @wasm, @docker, @toy;") {
		t.Errorf("capability new of an environment this ccrun does not run: %s; want the ones it runs listed", errOut)
	}

	// the completions
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "capability", "new", "x", "--env", "@"}, "@toy"},
		{[]string{"__complete", "exec", "@"}, "@toy\trun a target in @toy"},
		{[]string{"__complete", "check", ""}, "hello\tPrints hello"},
		{[]string{"__complete", "capability", "validate", ""}, "hello\tPrints hello"},
	} {
		if out, _ := cli(0, c.args...); !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, c.want) }) {
			t.Errorf("%s: %q; want a line %q", strings.Join(c.args, " "), out, c.want)
		}
	}
	if out, _ := cli(0, "__complete", "capability", "validate", "@"); strings.Contains(out, "@toy") {
		t.Errorf("capability validate completes an environment: %s", out)
	}

	// check and exec, ad hoc and as a capability
	for _, args := range [][]string{{"check", "--json", "@toy", "a.toy"}, {"check", "--json", "hello"}} {
		out, _ := cli(0, args...)
		var r checkReport
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Decision != "ask" || r.Environment != "@toy" || r.Offer != "AlwaysThisSession" {
			t.Errorf("%s: %v %s; want ask in @toy, offering the session", strings.Join(args, " "), err, out)
		}
	}
	if out, _ := cli(0, "exec", "--approve", "once", "@toy", "a.toy", "--", "one", "two"); out != "a toy\none\ntwo\n" {
		t.Errorf("exec @toy a.toy: %q", out)
	}
	if _, errOut := cli(exitUsage, "exec", "--approve", "once", "@toy"); !strings.Contains(errOut, "@toy TARGET") {
		t.Errorf("exec @toy without a target: %s", errOut)
	}
	_, errOut := cli(exitDenied, "exec", "hello")
	if !strings.Contains(errOut, "denied: capability:hello") || strings.Contains(errOut, "--scope project") || strings.Contains(errOut, "|project") || !strings.Contains(errOut, "--scope session") {
		t.Errorf("the advice on a denial: %s; want the session offered, never the project", errOut)
	}
	if _, errOut := cli(exitDenied, "exec", "--approve", "project", "hello"); !strings.Contains(errOut, "ceiling violation") {
		t.Errorf("exec --approve project: %s; want a ceiling violation", errOut)
	}

	// allowlist add: the ceiling is the registered one
	for _, key := range []string{"capability:hello", "run_toy:*"} {
		if _, errOut := cli(exitUsage, "allowlist", "add", key, "--scope", "project"); !strings.Contains(errOut, "at most AlwaysThisSession") || !strings.Contains(errOut, "use --scope session") {
			t.Errorf("allowlist add %s --scope project: %s; want refused by the ceiling, the session advised", key, errOut)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "ccrun.json")); string(data) != "{}\n" {
		t.Errorf("a refused project grant wrote ccrun.json: %s", data)
	}
	inSession(t, dir)
	for _, key := range []string{"capability:hello", "run_toy:*"} {
		if out, _ := cli(0, "allowlist", "add", key, "--scope", "session"); !strings.HasPrefix(out, "added "+key) {
			t.Errorf("allowlist add %s --scope session: %s", key, out)
		}
	}
	if out, _ := cli(0, "exec", "hello"); out != "hello from hello\n" {
		t.Errorf("exec hello with the session grant: %q", out)
	}

	// ccrun mcp, a process of its own, served to a real MCP client
	mdir, env := mcpProject(t)
	if _, errOut, code := ccrunIn(t, mdir, "capability", "new", "hello", "--env", "@toy"); code != 0 {
		t.Fatalf("capability new: %s", errOut)
	}
	env = append(env, asCCRun+"=1")
	serve := func(opts *mcp.ClientOptions) *mcp.ClientSession {
		return mcpConnect(t, exec.Command(os.Args[0], "mcp"), mdir, env, opts, "")
	}
	cs := serve(nil) // nobody to ask
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "hello" })
	if i < 0 || tools.Tools[i].Annotations.Title != "hello (@toy capability)" {
		t.Fatalf("tools/list: hello missing or wrong: %+v", tools.Tools)
	}
	res := callTool(t, cs, "hello", map[string]any{})
	if r := structured(t, res); !res.IsError || r.Outcome != "denied" || strings.Contains(r.HowToAllow, "--scope project") {
		t.Errorf("hello with nobody to ask: %+v; want denied, never a project grant advised", r)
	}
	a := &asker{answer: "session"}
	cs = serve(&mcp.ClientOptions{ElicitationHandler: a.handle})
	for range 2 {
		res := callTool(t, cs, "hello", map[string]any{})
		if r := structured(t, res); res.IsError || r.Stdout != "hello from hello\n" {
			t.Fatalf("hello, allowed for the session: %+v %s", r, text(res))
		}
	}
	if a.count() != 1 || slices.Contains(a.offered(t, 0), "project") || !slices.Contains(a.offered(t, 0), "session") {
		t.Errorf("asked %d times, offered %v; want asked once, the session offered and the project not", a.count(), a.offered(t, 0))
	}
	res = callTool(t, cs, "capability_create", map[string]any{"manifest": map[string]any{"name": "elsewhere", "description": "d",
		"environment": "@nothere", "entry": map[string]any{"target": "t"}}})
	if !res.IsError || !strings.Contains(text(res), "(@shell, @wasm, @docker, @toy;") {
		t.Errorf("capability_create of an environment this ccrun does not run: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(mdir, ".ccrun", "capabilities", "elsewhere")); err == nil {
		t.Error("the refused capability was written")
	}
}
