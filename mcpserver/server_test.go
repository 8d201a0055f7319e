package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/mcpserver"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// serve connects a go-sdk client to a Server of rt over in-memory
// transports, on protocol version ("" the newest).
func serve(t *testing.T, rt *ccrun.Runtime, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	srv, err := mcpserver.New(rt, &mcpserver.Options{Rescan: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Serve(ctx, st) }()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts).Connect(ctx, ct, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestLibraryToolsServed: a library tool registered into the Runtime is
// listed with its schema and annotations of its class, and called through
// the gate: 16 calls in flight on one connection, on both protocol
// families, half of them asked and answered (run under -race).
func TestLibraryToolsServed(t *testing.T) {
	for _, version := range []string{"", "2025-06-18"} {
		t.Run("v"+version, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int32
			tool := ccrun.Tool{Name: "note", Description: "Keep a note.", Class: permission.ClassWrite,
				InputSchema: json.RawMessage(`{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}`),
				Permission: func(in json.RawMessage) (permission.Permission, error) {
					var a struct{ Text string }
					_ = json.Unmarshal(in, &a)
					return permission.Ask(keys.Key{Tool: "note", Action: a.Text}), nil
				},
				Execute: func(_ context.Context, in json.RawMessage, stdout, _ io.Writer) error {
					ran.Add(1)
					_, err := stdout.Write(in)
					return err
				}}
			rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""), ccrun.WithTrustDir(""), ccrun.WithTool(tool))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var asked atomic.Int32
			cs := serve(t, rt, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"grant": "once"}}, nil
			}}, version)
			list, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var listed *mcp.Tool
			for _, tl := range list.Tools {
				if tl.Name == "note" {
					listed = tl
				}
			}
			if listed == nil || listed.Annotations.ReadOnlyHint || *listed.Annotations.OpenWorldHint {
				t.Fatalf("note listed as %+v", listed)
			}
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name, args := "note", map[string]any{"text": fmt.Sprint("n", i)}
					if i%2 == 0 {
						name, args = "run_command", map[string]any{"command": fmt.Sprint("echo ", i)}
					}
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
					if err != nil || res.IsError {
						t.Errorf("call %d: %v %+v", i, err, res)
					}
				}()
			}
			wg.Wait()
			if ran.Load() != 8 || asked.Load() != 8 {
				t.Fatalf("%d library runs and %d questions, want 8 and 8", ran.Load(), asked.Load())
			}
		})
	}
}
