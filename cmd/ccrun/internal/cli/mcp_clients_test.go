package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listClient is one MCP client as TestMCPClientNotes drives it.
type listClient struct {
	version func() string       // the protocol version negotiated
	tools   func() []string     // tools/list
	call    func(string) string // run_command: its stdout
	changed <-chan struct{}     // a notifications/tools/list_changed
}

// TestMCPClientNotes: what docs/mcp.md says each client needs, per client
// and transport. Each lists the tools, runs a read-only command and, when
// a deny rule is added to ccrun.json, gets notifications/tools/list_changed
// and no longer lists the hidden tool:
//
//   - the official Go SDK: over stdio on 2026-07-28 (it opens the
//     subscriptions/listen stream itself when a ToolListChangedHandler is
//     set) and 2025-11-25, and over HTTP, where it settles on 2025-11-25;
//   - mcp-go: over stdio on 2026-07-28 only once it called Listen (without,
//     no notification comes), on 2025-11-25 unasked; over HTTP, unpinned, it
//     settles on 2025-11-25 (ccrun refuses to discover 2026-07-28 there),
//     and gets list changes with transport.WithContinuousListening.
func TestMCPClientNotes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		version string // the version negotiated
		open    func(t *testing.T, dir string, env []string) listClient
		notice  bool // whether list_changed comes
	}{
		{"go-sdk/stdio/newest", "2026-07-28", func(t *testing.T, dir string, env []string) listClient {
			return sdkClient(t, func(opts *mcp.ClientOptions) *mcp.ClientSession { return mcpStdio(t, dir, env, opts, "") })
		}, true},
		{"go-sdk/stdio/2025-11-25", "2025-11-25", func(t *testing.T, dir string, env []string) listClient {
			return sdkClient(t, func(opts *mcp.ClientOptions) *mcp.ClientSession { return mcpStdio(t, dir, env, opts, "2025-11-25") })
		}, true},
		{"go-sdk/http", "2025-11-25", func(t *testing.T, dir string, env []string) listClient {
			url, token := mcpHTTP(t, dir, env)
			return sdkClient(t, func(opts *mcp.ClientOptions) *mcp.ClientSession { return mcpHTTPClient(t, url, token, opts) })
		}, true},
		{"mcp-go/stdio/2026-07-28/listen", "2026-07-28", func(t *testing.T, dir string, env []string) listClient {
			c, _ := markClient(t, dir, env, "2026-07-28", nil)
			lc := markList(t, c)
			stop, err := c.ListenAsync(context.Background(), mcpgo.SubscriptionFilter{ToolsListChanged: true}, func(err error) { t.Errorf("listen: %v", err) })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			return lc
		}, true},
		{"mcp-go/stdio/2026-07-28/no-listen", "2026-07-28", func(t *testing.T, dir string, env []string) listClient {
			c, _ := markClient(t, dir, env, "2026-07-28", nil)
			return markList(t, c)
		}, false},
		{"mcp-go/stdio/2025-11-25", "2025-11-25", func(t *testing.T, dir string, env []string) listClient {
			c, _ := markClient(t, dir, env, "2025-11-25", nil)
			return markList(t, c)
		}, true},
		{"mcp-go/http", "2025-11-25", func(t *testing.T, dir string, env []string) listClient {
			return markList(t, markHTTP(t, dir, env))
		}, false},
		{"mcp-go/http/continuous-listening", "2025-11-25", func(t *testing.T, dir string, env []string) listClient {
			//lint:ignore SA1019 what an HTTP client on 2025-11-25 needs for list_changed (docs/mcp.md)
			return markList(t, markHTTP(t, dir, env, transport.WithContinuousListening()))
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, env := mcpProject(t)
			lc := c.open(t, dir, env)
			if got := lc.version(); got != c.version {
				t.Errorf("negotiated %q, want %q", got, c.version)
			}
			if tools := lc.tools(); !slices.Contains(tools, "run_command") || !slices.Contains(tools, "run_wasm") {
				t.Fatalf("listed %v", tools)
			}
			if got := lc.call("echo hi"); got != "hi\n" {
				t.Fatalf("run_command echo hi: stdout %q", got)
			}
			if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), []byte(`{"permissions": {"deny": ["run_wasm"]}}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			wait := 20 * time.Second
			if !c.notice {
				wait = 3 * time.Second // the list is read again every second
			}
			select {
			case <-lc.changed:
				if !c.notice {
					t.Fatal("notifications/tools/list_changed came, where docs/mcp.md says it does not")
				}
			case <-time.After(wait):
				if c.notice {
					t.Fatalf("no notifications/tools/list_changed within %s of a deny rule", wait)
				}
			}
			if slices.Contains(lc.tools(), "run_wasm") {
				t.Error("run_wasm still listed under a deny rule")
			}
		})
	}
}

// sdkClient connects the Go SDK's client through connect, with a
// ToolListChangedHandler.
func sdkClient(t *testing.T, connect func(*mcp.ClientOptions) *mcp.ClientSession) listClient {
	changed := make(chan struct{}, 16)
	cs := connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	return listClient{
		version: func() string { return cs.InitializeResult().ProtocolVersion },
		tools: func() []string {
			list, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			return names
		},
		call: func(cmd string) string {
			res := callTool(t, cs, "run_command", map[string]any{"command": cmd})
			if res.IsError {
				t.Fatalf("run_command %s: %s", cmd, text(res))
			}
			return structured(t, res).Stdout
		},
		changed: changed,
	}
}

// markHTTP starts `ccrun mcp --http` in dir and connects mcp-go's
// streamable HTTP client to it, with no protocol version pinned.
func markHTTP(t *testing.T, dir string, env []string, opts ...transport.StreamableHTTPCOption) *mcpclient.Client {
	t.Helper()
	url, token := mcpHTTP(t, dir, env)
	tr, err := transport.NewStreamableHTTP(url, append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))...)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "mark3labs-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// markList drives an mcp-go client.
func markList(t *testing.T, c *mcpclient.Client) listClient {
	changed := make(chan struct{}, 16)
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == mcpgo.MethodNotificationToolsListChanged {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	return listClient{
		version: c.ProtocolVersion,
		tools: func() []string {
			list, err := c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			return names
		},
		call: func(cmd string) string {
			res, r := markCall(t, c, "run_command", map[string]any{"command": cmd}, nil)
			if res.IsError {
				t.Fatalf("run_command %s: %+v", cmd, r)
			}
			return r.Stdout
		},
		changed: changed,
	}
}
