package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/confine"
)

// TestDoctor: the report says what the kernel gives, and what is missing
// when Landlock is forced off.
func TestDoctor(t *testing.T) {
	for _, off := range []bool{false, true} {
		if off {
			t.Setenv(confine.EnvVar, "off")
		}
		var out, errb bytes.Buffer
		if code := run([]string{"doctor", "--json"}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
			t.Fatalf("doctor --json: exit %d, %s", code, errb.String())
		}
		var r doctorReport
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, out.String())
		}
		abi, err := confine.Available()
		if r.Landlock.Available != (err == nil) || r.Landlock.ABI != abi {
			t.Errorf("CCRUN_LANDLOCK off=%v: landlock %+v, Available() = %d, %v", off, r.Landlock, abi, err)
		}
		missing := strings.Join(r.Missing, "\n")
		if off && (!strings.Contains(missing, "landlock") || !strings.Contains(r.Landlock.Reason, "CCRUN_LANDLOCK=off")) {
			t.Errorf("forced off: missing %q, reason %q", r.Missing, r.Landlock.Reason)
		}
		if r.Workspace.Available != (err == nil) || off && !strings.Contains(missing, "workspace tier") {
			t.Errorf("CCRUN_LANDLOCK off=%v: workspace %+v, missing %q", off, r.Workspace, r.Missing)
		}
		if refErr := confine.ProgramRefusals(); err == nil && (r.Refusals.Available != (refErr == nil) || refErr != nil && r.Refusals.Reason != refErr.Error()) {
			t.Errorf("program refusals %+v, ProgramRefusals() = %v", r.Refusals, refErr)
		}
		if err == nil && abi >= 4 && !strings.Contains(strings.Join(r.Landlock.Gives, "\n"), "TCP") {
			t.Errorf("ABI %d: gives %q, want TCP", abi, r.Landlock.Gives)
		}
		out.Reset()
		if code := run([]string{"doctor"}, stdio{strings.NewReader(""), &out, &errb}); code != 0 || !strings.Contains(out.String(), "landlock:") {
			t.Errorf("doctor: exit %d, %q", code, out.String())
		}
		if !strings.Contains(out.String(), "workspace tier:") {
			t.Errorf("doctor does not say whether approved commands are confined: %q", out.String())
		}
		if !off && !strings.Contains(out.String(), "refusals said:") {
			t.Errorf("doctor does not say whether programs' refusals are said: %q", out.String())
		}
		if off && !strings.Contains(out.String(), "cannot be confined") {
			t.Errorf("doctor with landlock off: %q", out.String())
		}
	}
}

// TestCheckSaysLandlockMissing: ccrun check says when the kernel layer is
// missing.
func TestCheckSaysLandlockMissing(t *testing.T) {
	t.Setenv(confine.EnvVar, "off")
	var out, errb bytes.Buffer
	if code := run([]string{"--project-dir", t.TempDir(), "check", "--shell", "ls"}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
		t.Fatalf("check: exit %d, %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "kernel:      missing here: kernel confinement") {
		t.Errorf("check with landlock off: %q", out.String())
	}
}
