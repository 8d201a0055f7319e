package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun/capabilities"
)

// percentiles reports p50 and p99 of the round trips, in ms.
func percentiles(b *testing.B, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkMCPRunCommandTrue: a tools/call of run_command `true` over stdio
// to a warm `ccrun mcp`, against the same through a `ccrun exec` process
// each; p50 and p99 of the round trip (goal: under 2 ms p50 through MCP).
// Run with -benchtime=1000x for 1,000 calls.
func BenchmarkMCPRunCommandTrue(b *testing.B) {
	dir, env := mcpProject(b)
	b.Run("mcp", func(b *testing.B) {
		cs := mcpStdio(b, dir, env, nil, "")
		args := map[string]any{"command": "true"}
		callTool(b, cs, "run_command", args) // warm
		d := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: args})
			d = append(d, time.Since(start))
			if err != nil || res.IsError {
				b.Fatalf("%v %+v", err, res)
			}
		}
		percentiles(b, d)
	})
	b.Run("exec", func(b *testing.B) {
		bin := mcpBinary(b)
		d := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			cmd := exec.Command(bin, "exec", "--shell", "true")
			cmd.Dir, cmd.Env = dir, env
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d = append(d, time.Since(start))
			if err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
		percentiles(b, d)
	})
}

// BenchmarkMCPRunWasmHello: run_wasm of the hello module through a warm
// `ccrun mcp` (its compiled module cached), granted for the session; p50
// (goal: at most 2 ms).
func BenchmarkMCPRunWasmHello(b *testing.B) {
	dir, env := mcpProject(b)
	if err := os.WriteFile(filepath.Join(dir, "hello.wasm"), capabilities.HelloWasm(), 0o644); err != nil {
		b.Fatal(err)
	}
	a := &asker{answer: "session"}
	cs := mcpStdio(b, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle}, "")
	args := map[string]any{"module": "hello.wasm"}
	if res := callTool(b, cs, "run_wasm", args); res.IsError {
		b.Fatalf("%s", text(res))
	}
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_wasm", Arguments: args})
		d = append(d, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
	percentiles(b, d)
}
