package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMCPSeesTrust: following the denial's advice — an allow rule in
// ccrun.local.json, then `ccrun trust --yes` — a running `ccrun mcp`
// allows the call at once, as a new process would, without waiting for
// another change of the file.
func TestMCPSeesTrust(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	cs := mcpStdio(t, dir, env, nil, "2025-11-25")
	touch := map[string]any{"command": "touch made"}
	if res := callTool(t, cs, "run_command", touch); !res.IsError {
		t.Fatalf("touch before any rule: %s", text(res))
	}
	if err := os.WriteFile(filepath.Join(dir, "ccrun.local.json"), []byte(`{"permissions": {"allow": ["run_command:touch"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, cs, "run_command", touch); !res.IsError {
		t.Fatalf("touch allowed by an untrusted file: %s", text(res))
	}
	// The server's rescan (every second) reads the changed file before
	// the person trusts it: what is left to notice is the trust record.
	time.Sleep(2500 * time.Millisecond)
	if res := callTool(t, cs, "run_command", touch); !res.IsError {
		t.Fatalf("touch allowed by an untrusted file: %s", text(res))
	}
	trust := exec.Command(mcpBinary(t), "trust", "--yes")
	trust.Dir, trust.Env = dir, env
	if out, err := trust.CombinedOutput(); err != nil {
		t.Fatalf("ccrun trust --yes: %v\n%s", err, out)
	}
	trusted := time.Now()
	for {
		res := callTool(t, cs, "run_command", touch)
		if !res.IsError {
			break
		}
		if time.Since(trusted) > 5*time.Second {
			t.Fatalf("still denied 5 s after ccrun trust --yes: %s", text(res))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("allowed %s after ccrun trust --yes returned", time.Since(trusted).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Errorf("the allowed touch did not run: %v", err)
	}
}
