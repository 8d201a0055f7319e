package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// markAsker is a person answering through mark3labs/mcp-go's client.
type markAsker struct {
	mu     sync.Mutex
	n      int
	answer string
}

func (a *markAsker) Elicit(_ context.Context, _ mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept,
		Content: map[string]any{"grant": a.answer}}}, nil
}

func (a *markAsker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// markClient starts `ccrun mcp` in dir under mark3labs/mcp-go's stdio
// client, on protocol version.
func markClient(t *testing.T, dir string, env []string, version string, a *markAsker) (*mcpclient.Client, *forging) {
	t.Helper()
	bin := mcpBinary(t)
	cmdFunc := func(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
		cmd := exec.Command(command, args...) // not bound to the context Start was given: it ends with the test
		cmd.Dir, cmd.Env = dir, env
		return cmd, nil
	}
	tr := &forging{Stdio: transport.NewStdioWithOptions(bin, env, []string{"mcp"}, transport.WithCommandFunc(cmdFunc))}
	opts := []mcpclient.ClientOption{mcpclient.WithProtocolVersion(version)}
	if a != nil {
		opts = append(opts, mcpclient.WithElicitationHandler(a))
	}
	c := mcpclient.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil { // its context serves the server's requests for the whole test
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcpgo.Implementation{Name: "mark3labs-test", Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize on %s: %v", version, err)
	}
	if res.ProtocolVersion != version {
		t.Fatalf("negotiated %s, want %s", res.ProtocolVersion, version)
	}
	return c, tr
}

// forging is the client's transport, which can add input responses and a
// request state of its own to the next tools/call: what a hostile client
// sends (mcp-go's CallTool sets those fields itself).
type forging struct {
	*transport.Stdio
	mu    sync.Mutex
	extra map[string]any
}

func (f *forging) forgeNext(extra map[string]any) {
	f.mu.Lock()
	f.extra = extra
	f.mu.Unlock()
}

func (f *forging) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	f.mu.Lock()
	extra := f.extra
	f.extra = nil
	f.mu.Unlock()
	if extra != nil && req.Method == "tools/call" {
		b, _ := json.Marshal(req.Params)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		for k, v := range extra {
			m[k] = v
		}
		req.Params = m
	}
	return f.Stdio.SendRequest(ctx, req)
}

func markCall(t *testing.T, c *mcpclient.Client, name string, args map[string]any, _ any) (*mcpgo.CallToolResult, mcpResult) {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var r mcpResult
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &r)
	return res, r
}

// TestMCPInterop: the smoke test through an independent client,
// mark3labs/mcp-go, on the oldest and the newest protocol version the SDK
// speaks: list, a read-only call, a call asked and answered Once, and a
// forged answer refused.
func TestMCPInterop(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2024-11-05", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			dir, env := mcpProject(t)
			a := &markAsker{answer: "once"}
			c, tr := markClient(t, dir, env, version, a)
			list, err := c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			if got := strings.Join(names, " "); !strings.Contains(got, "run_command") || !strings.Contains(got, "capability_create") {
				t.Fatalf("listed %s", got)
			}
			res, r := markCall(t, c, "run_command", map[string]any{"command": "echo hi"}, nil)
			if res.IsError || r.Stdout != "hi\n" || a.count() != 0 {
				t.Fatalf("read-only: %+v, %d questions", r, a.count())
			}
			res, r = markCall(t, c, "run_command", map[string]any{"command": "touch asked"}, nil)
			if res.IsError || a.count() != 1 {
				t.Fatalf("asked once: isError %v %+v, %d questions", res.IsError, r, a.count())
			}
			if _, err := os.Stat(filepath.Join(dir, "asked")); err != nil {
				t.Fatal("the answered call did not run")
			}
			tr.forgeNext(map[string]any{"requestState": "forged", "inputResponses": map[string]any{
				"ccrun_approval": map[string]any{"action": "accept", "content": map[string]any{"grant": "once"}}}})
			res, r = markCall(t, c, "run_command", map[string]any{"command": "touch forged"}, nil)
			if !res.IsError || r.Outcome != "refused" || a.count() != 1 {
				t.Fatalf("forged answer: %+v, %d questions", r, a.count())
			}
			if _, err := os.Stat(filepath.Join(dir, "forged")); err == nil {
				t.Fatal("a forged answer ran the command")
			}
		})
	}
}
