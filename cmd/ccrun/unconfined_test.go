package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decisions are the decision lines of the project's audit log.
func decisions(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range auditLines(t, dir) {
		if l["kind"] == "decision" {
			out = append(out, l)
		}
	}
	return out
}

// TestSandboxSessionGrantStaysInTier: a @shell command granted for the
// session runs in the workspace tier, and the same command again, allowed
// by the grant, runs there too: its write outside the project is refused
// both times, and no audit line says unconfined.
func TestSandboxSessionGrantStaysInTier(t *testing.T) {
	needKernelSandbox(t)
	fakeHome(t)
	project := t.TempDir()
	inSession(t, project)
	outside := filepath.Join(t.TempDir(), "outside")
	cmd := "echo x > " + outside
	for i, args := range [][]string{{"exec", "--approve", "session", "--shell", cmd}, {"exec", "--shell", cmd}} {
		_, errOut, code := ccrunIn(t, project, args...)
		if code == 0 {
			t.Errorf("run %d (%q): exit 0; want the write refused", i, args)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Fatalf("run %d (%q): the write outside the project landed; stderr: %s", i, args, errOut)
		}
	}
	lines := decisions(t, project)
	if len(lines) != 2 || lines[0]["grant"] != "AlwaysThisSession" || lines[1]["layer"] != "session" {
		t.Fatalf("decision lines %v; want the person's session grant, then the session's", lines)
	}
	for _, l := range lines {
		if _, ok := l["unconfined"]; ok {
			t.Errorf("an audit line says unconfined: %v", l)
		}
	}
}

// TestApproveUnconfined: `--approve unconfined` runs the approved command
// outside the workspace tier (its write outside the project lands), once:
// the audit line says unconfined and Once, and the same command with
// `--approve once` is in the tier again.
func TestApproveUnconfined(t *testing.T) {
	needKernelSandbox(t)
	fakeHome(t)
	project := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	cmd := "echo x > " + outside
	if _, errOut, code := ccrunIn(t, project, "exec", "--approve", "once", "--shell", cmd); code == 0 {
		t.Errorf("--approve once: exit 0; want the write refused (%s)", errOut)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("--approve once: the write outside the project landed")
	}
	if _, errOut, code := ccrunIn(t, project, "exec", "--approve", "unconfined", "--shell", cmd); code != 0 {
		t.Fatalf("--approve unconfined: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "x\n" {
		t.Fatalf("--approve unconfined: the write did not land: %q %v", b, err)
	}
	if err := os.Remove(outside); err != nil {
		t.Fatal(err)
	}
	if _, _, code := ccrunIn(t, project, "exec", "--approve", "once", "--shell", cmd); code == 0 {
		t.Error("--approve once after unconfined: exit 0; want the write refused again")
	}
	lines := decisions(t, project)
	if len(lines) != 3 {
		t.Fatalf("decision lines %v; want 3", lines)
	}
	for i, want := range []bool{false, true, false} {
		got, _ := lines[i]["unconfined"].(bool)
		if got != want || lines[i]["grant"] != "Once" {
			t.Errorf("decision %d: unconfined %v grant %v; want %v, Once: %v", i, got, lines[i]["grant"], want, lines[i])
		}
	}
}

// TestApproveUnconfinedNotOffered: where the settings require the sandbox,
// `--approve unconfined` is a plain Once, in the tier, and says so; an
// unknown --approve word is a usage error naming unconfined.
func TestApproveUnconfinedNotOffered(t *testing.T) {
	needKernelSandbox(t)
	home := fakeHome(t)
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"shell": {"sandbox": "required"}}` + "\n"})
	project := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	_, errOut, code := ccrunIn(t, project, "exec", "--approve", "unconfined", "--shell", "echo x > "+outside)
	if code == 0 {
		t.Error("exit 0; want the write refused in the tier")
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the write outside the project landed under \"sandbox\": \"required\"")
	}
	if !strings.Contains(errOut, "--approve unconfined: ") || !strings.Contains(errOut, "ran once in its sandbox") {
		t.Errorf("stderr does not say the call ran in its sandbox: %s", errOut)
	}
	if _, errOut, code := ccrunIn(t, project, "exec", "--approve", "outside", "--shell", "true"); code != exitUsage || !strings.Contains(errOut, "unconfined") {
		t.Errorf("--approve outside: exit %d, %q; want a usage error naming unconfined", code, errOut)
	}
}

// TestPromptUnconfined: at the terminal, a @shell command in the workspace
// tier is offered u with its own text; u runs it outside (the write
// lands, the audit line says so), o runs it inside.
func TestPromptUnconfined(t *testing.T) {
	needKernelSandbox(t)
	fakeHome(t)
	dir := t.TempDir()
	inSession(t, dir)
	outside := filepath.Join(t.TempDir(), "outside")
	screen, code := promptRun(t, dir, []string{"o\n"}, "exec", "--shell", "echo x > "+outside)
	if code == 0 {
		t.Errorf("o: exit 0; want the write refused; screen:\n%s", screen)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("o: the write outside the project landed")
	}
	screen, code = promptRun(t, dir, []string{"u\n"}, "exec", "--shell", "echo x > "+outside)
	if code != 0 {
		t.Fatalf("u: exit %d; screen:\n%s", code, screen)
	}
	wantScreen(t, screen, []string{
		"allow? [o] once  [s] this session  [u] run once outside the sandbox  [d] deny  (Enter: deny): ",
		"sandbox:   approved, it runs in the workspace sandbox",
		`outside:   "run once outside the sandbox" runs this call alone with all your rights`,
	}, nil)
	if b, err := os.ReadFile(outside); err != nil || string(b) != "x\n" {
		t.Fatalf("u: the write did not land: %q %v", b, err)
	}
	lines := decisions(t, dir)
	if len(lines) != 2 || lines[0]["unconfined"] != nil || lines[1]["unconfined"] != true || lines[1]["grant"] != "Once" {
		t.Fatalf("decision lines %v; want o confined, then u unconfined Once", lines)
	}
}
