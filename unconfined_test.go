package ccrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/shell"
)

// needTier skips a test of the workspace tier where the kernel cannot give
// it, unless CCRUN_REQUIRE_LANDLOCK=1 makes that a failure.
func needTier(t *testing.T) {
	t.Helper()
	if _, err := shell.ConfineAvailable(); err != nil {
		if os.Getenv("CCRUN_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("landlock required: %v", err)
		}
		t.Skipf("no landlock: %v", err)
	}
}

// chooser is an UnconfinedApprover that answers every ask with grant and
// unconfined, and records how it was asked.
type chooser struct {
	mu         sync.Mutex
	grant      ceiling.Grant
	unconfined bool
	plain      int    // Approve calls
	offered    []bool // ApproveUnconfined calls: what the decision offered
}

func (c *chooser) Approve(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.plain++
	return c.grant, nil
}

func (c *chooser) ApproveUnconfined(_ context.Context, p *permission.Prompt) (ceiling.Grant, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offered = append(c.offered, p.Decision.OfferUnconfined)
	return c.grant, c.unconfined, nil
}

// tierHome points the user's settings at a fresh directory (config says
// what the user config holds; "" none).
func tierHome(t *testing.T, config string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	if config != "" {
		p := filepath.Join(home, ".config", "ccrun", "config.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func tierRuntime(t *testing.T, a permission.Approver) (rt *ccrun.Runtime, auditLog string) {
	t.Helper()
	dir := t.TempDir()
	auditLog = filepath.Join(t.TempDir(), "audit.jsonl")
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(auditLog), ccrun.WithApprover(a))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, auditLog
}

// decisionLines are the decision lines of an audit log.
func decisionLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if m["kind"] == "decision" {
			out = append(out, m)
		}
	}
	return out
}

// TestUnconfinedSessionGrantStaysInTier: a @shell command granted for the
// session runs in the workspace tier, and so does the same command again
// from the grant: its write outside the project is refused both times,
// and neither decision is unconfined.
func TestUnconfinedSessionGrantStaysInTier(t *testing.T) {
	needTier(t)
	tierHome(t, "")
	a := &chooser{grant: ceiling.AlwaysThisSession}
	rt, log := tierRuntime(t, a)
	outside := filepath.Join(t.TempDir(), "outside")
	for i := range 2 {
		out, err := rt.Exec(context.Background(), &ccrun.Call{Command: "echo x > " + outside})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if out.Decision.Unconfined || out.Result.OK() {
			t.Fatalf("run %d: unconfined=%v, exit %d (%s); want confined, the write refused", i, out.Decision.Unconfined, out.Result.ExitCode, out.Result.Stderr)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Fatalf("run %d: the write outside the project landed", i)
		}
	}
	if len(a.offered) != 1 || !a.offered[0] || a.plain != 0 {
		t.Fatalf("asked %v unconfined-capable, %d plain; want once, offered", a.offered, a.plain)
	}
	lines := decisionLines(t, log)
	if len(lines) != 2 || lines[1]["layer"] != string(permission.LayerSession) {
		t.Fatalf("decision lines %v; want the approver's, then the session's", lines)
	}
	for _, l := range lines {
		if _, ok := l["unconfined"]; ok {
			t.Errorf("a confined call's audit line says unconfined: %v", l)
		}
	}
}

// TestUnconfinedOnce: a person's choice to run a call once outside the
// tier runs it with their rights (the write outside the project lands),
// says so in the audit line, and lasts for that call alone; the same
// choice with a session grant is refused, and nothing runs.
func TestUnconfinedOnce(t *testing.T) {
	needTier(t)
	tierHome(t, "")
	a := &chooser{grant: ceiling.Once, unconfined: true}
	rt, log := tierRuntime(t, a)
	outside := filepath.Join(t.TempDir(), "outside")
	out, err := rt.Exec(context.Background(), &ccrun.Call{Command: "echo x > " + outside})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Decision.Unconfined || out.Decision.Grant != ceiling.Once || !out.Result.OK() {
		t.Fatalf("unconfined=%v grant %s exit %d (%s); want an unconfined Once that ran", out.Decision.Unconfined, out.Decision.Grant, out.Result.ExitCode, out.Result.Stderr)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "x\n" {
		t.Fatalf("the unconfined write did not land: %q %v", b, err)
	}
	lines := decisionLines(t, log)
	if len(lines) != 1 || lines[0]["unconfined"] != true || lines[0]["grant"] != "Once" {
		t.Fatalf("audit lines %v; want one, unconfined, Once", lines)
	}

	a.mu.Lock()
	a.grant = ceiling.AlwaysThisSession
	a.mu.Unlock()
	other := filepath.Join(t.TempDir(), "other")
	out, err = rt.Exec(context.Background(), &ccrun.Call{Command: "echo y > " + other})
	var ue *permission.UnconfinedError
	if !errors.Is(err, ccrun.ErrPermissionDenied) || !errors.As(err, &ue) || out.Result != nil {
		t.Fatalf("session + unconfined: %v, result %v; want refused, nothing run", err, out.Result)
	}
	if _, err := os.Stat(other); err == nil {
		t.Fatal("the refused answer's command ran")
	}
	// nothing was kept: asked again, a plain Once runs it in the tier
	a.mu.Lock()
	a.grant, a.unconfined = ceiling.Once, false
	a.mu.Unlock()
	out, err = rt.Exec(context.Background(), &ccrun.Call{Command: "echo y > " + other})
	if err != nil || out.Decision.Layer != permission.LayerApprover || out.Decision.Unconfined || out.Result.OK() {
		t.Fatalf("after: %v, layer %s unconfined=%v; want asked again, confined", err, out.Decision.Layer, out.Decision.Unconfined)
	}
}

// TestUnconfinedNotOfferedWithoutTier: where the settings turn the
// sandbox off or require it, the choice is not offered: the approver is
// asked through Approve alone.
func TestUnconfinedNotOfferedWithoutTier(t *testing.T) {
	needTier(t)
	for _, sandbox := range []string{"off", "required"} {
		t.Run(sandbox, func(t *testing.T) {
			tierHome(t, `{"shell": {"sandbox": "`+sandbox+`"}}`)
			a := &chooser{grant: ceiling.Once, unconfined: true}
			rt, _ := tierRuntime(t, a)
			out, err := rt.Exec(context.Background(), &ccrun.Call{Command: "touch made"})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.offered) != 0 || a.plain != 1 || out.Decision.OfferUnconfined || out.Decision.Unconfined {
				t.Fatalf("offered %v, plain %d, decision offer=%v unconfined=%v; want Approve alone", a.offered, a.plain,
					out.Decision.OfferUnconfined, out.Decision.Unconfined)
			}
		})
	}
}
