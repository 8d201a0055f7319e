package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/mcpserver"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// toyBackend is a backend of a registered environment that runs nothing.
type toyBackend struct{}

func (toyBackend) Prepare(_ context.Context, inv *ccrun.Invocation) (*ccrun.Prepared, error) {
	return &ccrun.Prepared{Key: keys.Key{Tool: "run_toy", Action: inv.Target}, Display: inv.Target}, nil
}

func (toyBackend) Run(context.Context, *ccrun.Invocation) (*job.Result, error) {
	return &job.Result{Reason: job.Exit}, nil
}

// channelWords are what each front end puts around the advice they share
// (advice.Advice): the CLI's ways to answer and its session grant, the MCP
// server's words to the agent.
var channelWords = regexp.MustCompile(` \(ccrun asks at a terminal; --approve [a-z|]+ answers ahead\)|; in a session: ccrun allowlist add '[^']*' --scope session$|the person can | \(in a client that shows ccrun's question: MCP elicitation\)`)

// TestAdviceSameEverywhere: the CLI and the MCP server give the same
// advice for the same denied call — the words of their channels aside —
// for each environment, built-in or registered with either ceiling a Go
// program may give it, and neither advises a grant beyond the ceiling
// (the CLI advised a project grant for a registered environment whose
// ceiling is the session).
func TestAdviceSameEverywhere(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	t.Setenv("CCRUN_SESSION", "")
	t.Setenv(trustDigestEnv, "")
	backends := []ccrun.Option{
		ccrun.WithBackend("@advtoy", ceiling.AlwaysThisSession, func(context.Context) (ccrun.Backend, error) { return toyBackend{}, nil }),
		ccrun.WithBackend("@advonce", ceiling.Once, func(context.Context) (ccrun.Backend, error) { return toyBackend{}, nil }),
	}
	manifest := func(name, env, entry string) string {
		return `{"name": "` + name + `", "description": "d", "environment": "` + env + `", "entry": ` + entry + `, "parameters": {"type": "object", "properties": {}}}`
	}
	capFiles := map[string]string{
		".ccrun/capabilities/hello/capability.json":    manifest("hello", "@wasm", `{"module": "hello.wasm"}`),
		".ccrun/capabilities/hello/hello.wasm":         string(capabilities.HelloWasm()),
		".ccrun/capabilities/boxed/capability.json":    manifest("boxed", "@advtoy", `{"target": "t"}`),
		".ccrun/capabilities/onceonly/capability.json": manifest("onceonly", "@advonce", `{"target": "t"}`),
	}
	for _, tc := range []struct {
		env     ceiling.Environment
		ceil    ceiling.Grant
		cli     []string
		tool    string
		args    map[string]any
		denyKey string // a deny rule of the call, for the case a rule denies it
	}{
		{ceiling.Shell, ceiling.AlwaysThisSession, []string{"exec", "--shell", "touch made"}, "run_command", map[string]any{"command": "touch made"}, "run_command:touch"},
		{ceiling.Shell, ceiling.AlwaysThisSession, []string{"exec", "--shell", "cat .env"}, "run_command", map[string]any{"command": "cat .env"}, "run_command:cat"},
		{ceiling.Wasm, ceiling.AlwaysThisProject, []string{"exec", "hello"}, "hello", map[string]any{}, "capability:hello"},
		{"@advtoy", ceiling.AlwaysThisSession, []string{"exec", "boxed"}, "boxed", map[string]any{}, "capability:boxed"},
		{"@advonce", ceiling.Once, []string{"exec", "onceonly"}, "onceonly", map[string]any{}, "capability:onceonly"},
	} {
		for _, denied := range []string{"nobody to ask", "a deny rule"} {
			t.Run(string(tc.env)+" "+tc.tool+"/"+denied, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
					t.Fatal(err)
				}
				files := map[string]string{".env": "SECRET=1\n"}
				for k, v := range capFiles {
					files[k] = v
				}
				if denied == "a deny rule" {
					files["ccrun.json"] = `{"permissions": {"deny": ["` + tc.denyKey + `"]}}`
				}
				writeFiles(t, dir, files)

				var out, errb bytes.Buffer
				a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, &errb}, args: append([]string{"--project-dir", dir}, tc.cli...), options: backends}
				if code := a.execute(); code != exitDenied {
					t.Fatalf("CLI: exit %d, want %d; %s", code, exitDenied, errb.String())
				}
				line, _, _ := strings.Cut(errb.String(), "\n")
				_, cliHow, ok := strings.Cut(line, "; to allow it, ")
				if !ok {
					t.Fatalf("CLI: no advice in %q", errb.String())
				}

				if denied == "a deny rule" && tc.tool != "run_command" {
					// The MCP server does not list a capability a deny
					// rule covers: nothing to call.
					if !strings.HasPrefix(cliHow, "change what denies it") {
						t.Errorf("CLI: %s", cliHow)
					}
					return
				}
				rt, err := ccrun.New(append(append([]ccrun.Option{ccrun.WithProjectDir(dir), ccrun.WithAuditLog("")}, engines.All()...), backends...)...)
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				srv, err := mcpserver.New(rt, &mcpserver.Options{Rescan: -1})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				st, ct := mcp.NewInMemoryTransports()
				go func() { _ = srv.Serve(ctx, st) }()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				res := callTool(t, cs, tc.tool, tc.args)
				r := structured(t, res)
				if r.Outcome != "denied" || r.HowToAllow == "" {
					t.Fatalf("MCP: %+v %s", r, text(res))
				}
				if _, err := os.Stat(filepath.Join(dir, "made")); err == nil {
					t.Fatal("the command ran")
				}

				cliShared, mcpShared := channelWords.ReplaceAllString(cliHow, ""), channelWords.ReplaceAllString(r.HowToAllow, "")
				if cliShared != mcpShared {
					t.Errorf("the front ends advise differently:\nCLI: %s\nMCP: %s", cliHow, r.HowToAllow)
				}
				for _, how := range []string{cliHow, r.HowToAllow} {
					if tc.ceil < ceiling.AlwaysThisProject && strings.Contains(how, "--scope project") ||
						tc.ceil < ceiling.AlwaysThisSession && regexp.MustCompile(`session|rule:`).MatchString(how) {
						t.Errorf("advice beyond the ceiling %s: %s", tc.ceil, how)
					}
				}
			})
		}
	}
}
