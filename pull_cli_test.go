package ccrun_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The end-to-end side of TestDockerNothingBeforeTheDecision: the built
// ccrun, a process of its own, asked on its command line and over MCP.

var ccrunBuild struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

// ccrunBinary builds cmd/ccrun once per test binary.
func ccrunBinary(t *testing.T) string {
	t.Helper()
	ccrunBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "ccrun-pull-bin")
		if err != nil {
			ccrunBuild.err = err
			return
		}
		ccrunBuild.path = filepath.Join(dir, "ccrun")
		ccrunBuild.out, ccrunBuild.err = exec.Command("go", "build", "-o", ccrunBuild.path, "./cmd/ccrun").CombinedOutput()
	})
	if ccrunBuild.err != nil {
		t.Fatalf("go build ./cmd/ccrun: %v\n%s", ccrunBuild.err, ccrunBuild.out)
	}
	return ccrunBuild.path
}

// cliProject is a fresh project (ccrun.json marks it, so its audit log is
// its own .ccrun/audit.jsonl) and the environment of a ccrun there, its
// state and configuration beside it.
func cliProject(t *testing.T) (dir string, env []string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "project")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(base, "state"), "XDG_CONFIG_HOME="+filepath.Join(base, "config"),
		"XDG_CACHE_HOME="+filepath.Join(base, "cache"), "CCRUN_SESSION_DIR="+filepath.Join(base, "sessions"), "CCRUN_SESSION=")
	return dir, env
}

// TestDockerNothingBeforeTheDecisionCLI: `ccrun exec --docker` of an image
// the engine does not have, with no terminal and no --approve, is refused
// (exit 77) without a connection to its registry, and audited; with
// --approve once it is pulled and run.
func TestDockerNothingBeforeTheDecisionCLI(t *testing.T) {
	reg, ref := remoteImage(t)
	bin := ccrunBinary(t)
	dir, env := cliProject(t)
	run := func(extra ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(append([]string{"exec", "--docker", ref}, extra...), "--", "/bin/busybox", "sh", "-c", "echo ran $CCRUN_VARIANT")...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := run()
	if code != 77 || strings.Contains(out, "ran a") {
		t.Fatalf("not approved: exit %d, %s; want 77 (denied)", code, out)
	}
	untouched(t, reg, "ccrun exec, not approved")
	if d := auditDecisions(t, filepath.Join(dir, ".ccrun", "audit.jsonl")); len(d) != 1 || !strings.Contains(d[0], `"decision":"deny"`) {
		t.Fatalf("not approved: audited %q, want one deny", d)
	}
	out, code = run("--approve", "once")
	if code != 0 || !strings.Contains(out, "ran a") {
		t.Fatalf("approved: exit %d, %s", code, out)
	}
	if reg.Conns() == 0 {
		t.Fatal("approved: the registry saw nothing, want the pull")
	}
}

// TestDockerNothingBeforeTheDecisionMCP: run_docker over `ccrun mcp` from
// a client that cannot be asked (no elicitation) is refused without a
// connection to the image's registry, and audited; from one that answers
// once, it is pulled and run.
func TestDockerNothingBeforeTheDecisionMCP(t *testing.T) {
	reg, ref := remoteImage(t)
	bin := ccrunBinary(t)
	dir, env := cliProject(t)
	connect := func(opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		cmd := exec.Command(bin, "mcp")
		cmd.Dir, cmd.Env = dir, env
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "ccrun-test", Version: "1"}, opts).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession) (*mcp.CallToolResult, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_docker", Arguments: map[string]any{
			"image": ref, "command": []string{"/bin/busybox", "sh", "-c", "echo ran $CCRUN_VARIANT"}}})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return res, text.String()
	}

	res, text := call(connect(nil))
	if !res.IsError || strings.Contains(text, "ran a") {
		t.Fatalf("no elicitation: %s, want refused", text)
	}
	untouched(t, reg, "run_docker over MCP, nobody to ask")
	if d := auditDecisions(t, filepath.Join(dir, ".ccrun", "audit.jsonl")); len(d) != 1 || !strings.Contains(d[0], `"decision":"deny"`) {
		t.Fatalf("no elicitation: audited %q, want one deny", d)
	}

	var shown string
	res, text = call(connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		shown = r.Params.Message
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"grant": "once"}}, nil
	}}))
	if res.IsError || !strings.Contains(text, "ran a") {
		t.Fatalf("answered once: %s", text)
	}
	if !strings.Contains(shown, "not local") || !strings.Contains(shown, reg.Host) {
		t.Errorf("the question was %q; want the image said not local, and its registry", shown)
	}
	if reg.Conns() == 0 {
		t.Fatal("answered once: the registry saw nothing, want the pull")
	}
}
