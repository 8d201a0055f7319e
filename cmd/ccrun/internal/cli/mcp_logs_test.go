package cli

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logLevelKey is the tools/call `_meta` key that asks for log messages on
// protocol 2026-07-28, as docs/mcp.md names it (the Go SDK's
// mcp.MetaKeyLogLevel, which the server reads).
const logLevelKey = "io.modelcontextprotocol/logLevel"

// logClient is one MCP client as TestMCPClientLogs drives it.
type logClient struct {
	version func() string // the protocol version negotiated
	run     func(string)  // run_command, with what the case asks for
	logs    *atomic.Int32 // debug log messages from logger "ccrun"
}

// TestMCPClientLogs: what docs/mcp.md ("Long runs", "What each client
// library needs") says each client gets of a call's state events as debug
// log messages from logger "ccrun", per client, protocol and what it asked:
//
//   - up to 2025-11-25, after logging/setLevel debug (the Go SDK's
//     SetLoggingLevel, mcp-go's SetLevel): at least 3 for a 1 s run, over
//     stdio and HTTP (where both settle on 2025-11-25); without it, none;
//   - on 2026-07-28, with "io.modelcontextprotocol/logLevel": "debug" in
//     the call's _meta: the Go SDK's CallToolParams.Meta, mcp-go's SetLevel
//     (which puts the level in the _meta of every request after it) or
//     its CallToolRequest's Params.Meta; without it, none, even after the
//     Go SDK's SetLoggingLevel, which the server accepts and the call's
//     _meta then overrides.
func TestMCPClientLogs(t *testing.T) {
	t.Parallel()
	//lint:ignore SA1019 the key the server reads (through the Go SDK), and the one mcp-go sends
	sdkKey, markKey := mcp.MetaKeyLogLevel, mcpgo.MetaKeyLogLevel
	if sdkKey != logLevelKey || markKey != logLevelKey {
		t.Fatalf("the _meta key of the log level is %q (Go SDK) and %q (mcp-go), docs/mcp.md says %q", sdkKey, markKey, logLevelKey)
	}
	for _, c := range []struct {
		name    string
		version string // the version negotiated
		open    func(t *testing.T, dir string, env []string) logClient
		want    bool // whether the log messages come
	}{
		{"go-sdk/stdio/2025-11-25/setLevel", "2025-11-25", sdkStdioLogs("2025-11-25", true, false), true},
		{"go-sdk/stdio/2025-11-25/none", "2025-11-25", sdkStdioLogs("2025-11-25", false, false), false},
		{"go-sdk/stdio/2026-07-28/meta", "2026-07-28", sdkStdioLogs("", false, true), true},
		{"go-sdk/stdio/2026-07-28/none", "2026-07-28", sdkStdioLogs("", false, false), false},
		{"go-sdk/stdio/2026-07-28/setLevel", "2026-07-28", sdkStdioLogs("", true, false), false},
		{"go-sdk/http/setLevel", "2025-11-25", sdkHTTPLogs(true), true},
		{"go-sdk/http/none", "2025-11-25", sdkHTTPLogs(false), false},
		{"mcp-go/stdio/2025-11-25/setLevel", "2025-11-25", markStdioLogs("2025-11-25", true, false), true},
		{"mcp-go/stdio/2025-11-25/none", "2025-11-25", markStdioLogs("2025-11-25", false, false), false},
		{"mcp-go/stdio/2026-07-28/setLevel", "2026-07-28", markStdioLogs("2026-07-28", true, false), true},
		{"mcp-go/stdio/2026-07-28/meta", "2026-07-28", markStdioLogs("2026-07-28", false, true), true},
		{"mcp-go/stdio/2026-07-28/none", "2026-07-28", markStdioLogs("2026-07-28", false, false), false},
		{"mcp-go/http/setLevel", "2025-11-25", markHTTPLogs(true), true},
		{"mcp-go/http/none", "2025-11-25", markHTTPLogs(false), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, env := mcpProject(t)
			lc := c.open(t, dir, env)
			if got := lc.version(); got != c.version {
				t.Errorf("negotiated %q, want %q", got, c.version)
			}
			lc.run("sleep 1")
			if !c.want {
				time.Sleep(500 * time.Millisecond) // any message on its way arrives
				if n := lc.logs.Load(); n != 0 {
					t.Fatalf("%d debug log messages of state events, where docs/mcp.md says none", n)
				}
				return
			}
			// validating, scheduled, executing, success: each is sent before
			// the result, and handled by the client as it comes
			for deadline := time.Now().Add(2 * time.Second); lc.logs.Load() < 3 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if n := lc.logs.Load(); n < 3 {
				t.Fatalf("%d debug log messages of state events, want at least 3", n)
			}
		})
	}
}

// sdkStdioLogs opens the Go SDK's client over stdio on version (empty:
// the newest), as sdkLogs drives it.
func sdkStdioLogs(version string, setLevel, meta bool) func(*testing.T, string, []string) logClient {
	return func(t *testing.T, dir string, env []string) logClient {
		return sdkLogs(t, setLevel, meta, func(opts *mcp.ClientOptions) *mcp.ClientSession { return mcpStdio(t, dir, env, opts, version) })
	}
}

// sdkHTTPLogs opens the Go SDK's client over HTTP, as sdkLogs drives it.
func sdkHTTPLogs(setLevel bool) func(*testing.T, string, []string) logClient {
	return func(t *testing.T, dir string, env []string) logClient {
		url, token := mcpHTTP(t, dir, env)
		return sdkLogs(t, setLevel, false, func(opts *mcp.ClientOptions) *mcp.ClientSession { return mcpHTTPClient(t, url, token, opts) })
	}
}

// sdkLogs connects the Go SDK's client through connect, counting log
// messages; with setLevel it calls SetLoggingLevel debug first, and with
// meta each call carries the level in its _meta.
func sdkLogs(t *testing.T, setLevel, meta bool, connect func(*mcp.ClientOptions) *mcp.ClientSession) logClient {
	logs := new(atomic.Int32)
	cs := connect(&mcp.ClientOptions{
		//lint:ignore SA1019 the server sends state events as debug log messages
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			if r.Params.Level == "debug" && r.Params.Logger == "ccrun" {
				logs.Add(1)
			}
		},
	})
	if setLevel {
		//lint:ignore SA1019 the server sends state events as debug log messages
		if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatalf("logging/setLevel: %v", err)
		}
	}
	return logClient{
		version: func() string { return cs.InitializeResult().ProtocolVersion },
		run: func(cmd string) {
			p := &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": cmd}}
			if meta {
				p.Meta = mcp.Meta{logLevelKey: "debug"}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, p)
			if err != nil || res.IsError {
				t.Fatalf("run_command %s: %v %v", cmd, err, res)
			}
		},
		logs: logs,
	}
}

// markStdioLogs opens mcp-go's client over stdio on version, as markLogs
// drives it.
func markStdioLogs(version string, setLevel, meta bool) func(*testing.T, string, []string) logClient {
	return func(t *testing.T, dir string, env []string) logClient {
		c, _ := markClient(t, dir, env, version, nil)
		return markLogs(t, c, setLevel, meta)
	}
}

// markHTTPLogs opens mcp-go's client over HTTP, as markLogs drives it.
func markHTTPLogs(setLevel bool) func(*testing.T, string, []string) logClient {
	return func(t *testing.T, dir string, env []string) logClient {
		return markLogs(t, markHTTP(t, dir, env), setLevel, false)
	}
}

// markLogs drives an mcp-go client, counting log messages; with setLevel it
// calls SetLevel debug first, and with meta each call carries the level in
// its Params.Meta.
func markLogs(t *testing.T, c *mcpclient.Client, setLevel, meta bool) logClient {
	logs := new(atomic.Int32)
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		f := n.Params.AdditionalFields
		if n.Method == string(mcpgo.MethodNotificationMessage) && f["level"] == "debug" && f["logger"] == "ccrun" {
			logs.Add(1)
		}
	})
	if setLevel {
		req := mcpgo.SetLevelRequest{}
		req.Params.Level = mcpgo.LoggingLevelDebug
		//lint:ignore SA1019 the server sends state events as debug log messages
		if err := c.SetLevel(context.Background(), req); err != nil {
			t.Fatalf("SetLevel: %v", err)
		}
	}
	return logClient{
		version: c.ProtocolVersion,
		run: func(cmd string) {
			req := mcpgo.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "run_command", map[string]any{"command": cmd}
			if meta {
				req.Params.Meta = &mcpgo.Meta{AdditionalFields: map[string]any{logLevelKey: "debug"}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				t.Fatalf("run_command %s: %v %+v", cmd, err, res)
			}
		},
		logs: logs,
	}
}
