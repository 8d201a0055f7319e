package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditRequired: with "audit": "required" in the user config, a call
// whose decision line cannot be written (a directory where the log goes)
// is refused and nothing runs; without it the call runs with a note. A
// project file cannot set it.
func TestAuditRequired(t *testing.T) {
	home := fakeHome(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".ccrun", "audit.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"permissions": {"allow": ["run_command:touch"]}}`})
	_, stderr, code := ccrunIn(t, dir, "exec", "--shell", "touch ran")
	if code != 0 || !strings.Contains(stderr, "note") {
		t.Errorf("without audit required: exit %d, %q; want 0 with a note", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("without audit required the call did not run: %v", err)
	}
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"audit": "required", "permissions": {"allow": ["run_command:touch"]}}`})
	for _, cmd := range []string{"touch refused", "ls"} {
		_, stderr, code = ccrunIn(t, dir, "exec", "--shell", cmd)
		if code != exitDenied || !strings.Contains(stderr, `"audit": "required"`) {
			t.Errorf("%q with audit required: exit %d, %q; want %d naming the setting", cmd, code, stderr, exitDenied)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "refused")); err == nil {
		t.Error("with audit required and no log, the call ran")
	}
	// The log writable again: the call runs.
	if err := os.Remove(filepath.Join(dir, ".ccrun", "audit.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := ccrunIn(t, dir, "exec", "--shell", "touch refused"); code != 0 {
		t.Errorf("with audit required and a log: exit %d, %q", code, stderr)
	}
	writeFiles(t, dir, map[string]string{"ccrun.json": `{"audit": "required"}`})
	if _, _, code := ccrunIn(t, dir, "exec", "--shell", "ls"); code != exitConfig {
		t.Errorf("audit in a project file: exit %d, want %d", code, exitConfig)
	}
}
