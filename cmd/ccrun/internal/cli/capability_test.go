package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestCapabilityRunFunctions: capability new, validate and list run from
// their options, without cobra, as every command does.
func TestCapabilityRunFunctions(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, io.Discard}, projectDir: dir}
	ctx := context.Background()
	if err := a.runCapabilityNew(ctx, &capabilityNewOptions{name: "greet", env: "@shell"}); err != nil {
		t.Fatalf("new: %v", err)
	}
	if err := a.runCapabilityNew(ctx, &capabilityNewOptions{name: "other", env: "@nowhere"}); exitCode(nil, err) != exitUsage {
		t.Errorf("new --env @nowhere: %v (exit %d), want a usage error", err, exitCode(nil, err))
	}
	out.Reset()
	if err := a.runCapabilityValidate(ctx, &capabilityValidateOptions{name: "greet"}); err != nil || !strings.HasPrefix(out.String(), "greet: ok (sha256:") {
		t.Errorf("validate greet: %v, %q", err, out.String())
	}
	out.Reset()
	if err := a.runCapabilityList(ctx, &capabilityListOptions{json: true}); err != nil {
		t.Fatalf("list --json: %v", err)
	}
	var r capabilitiesReport
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil || len(r.Capabilities) != 1 || r.Capabilities[0].Name != "greet" {
		t.Errorf("list --json: %v, %q", err, out.String())
	}
}

// TestGCRunFunction: gc --dry-run --json runs from its options, without
// cobra, and removes nothing.
func TestGCRunFunction(t *testing.T) {
	t.Setenv("CCRUN_SESSION_DIR", t.TempDir())
	var out strings.Builder
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, io.Discard}}
	if err := a.runGC(context.Background(), &gcOptions{dryRun: true, json: true}); err != nil {
		t.Fatalf("gc --dry-run: %v", err)
	}
	var r gcReport
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil || !r.DryRun || r.WouldRemove == nil || len(r.Containers) != 0 {
		t.Errorf("gc --dry-run --json: %v, %q", err, out.String())
	}
}
