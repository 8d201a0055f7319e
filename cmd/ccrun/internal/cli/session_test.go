package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSessionOptions: session start's command line becomes its options.
func TestSessionOptions(t *testing.T) {
	t.Parallel()
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
	var got *sessionStartOptions
	c := a.sessionStartCommand(func(_ context.Context, o *sessionStartOptions) error { got = o; return nil })
	c.SetArgs([]string{"--lifetime", "90m"})
	if err := c.Execute(); err != nil || got.lifetime != 90*time.Minute {
		t.Errorf("start: %+v, %v", got, err)
	}
	var st *sessionStatusOptions
	c = a.sessionStatusCommand(func(_ context.Context, o *sessionStatusOptions) error { st = o; return nil })
	c.SetArgs([]string{"--json"})
	if err := c.Execute(); err != nil || !st.json {
		t.Errorf("status: %+v, %v", st, err)
	}
}

// TestRunSession calls the session commands' run functions without
// cobra: start, status, end, and a lifetime that is not positive.
func TestRunSession(t *testing.T) {
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	t.Setenv("CCRUN_SESSION", "")
	var out, errb bytes.Buffer
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, &errb}}
	ctx := context.Background()
	if err := a.runSessionStart(ctx, &sessionStartOptions{lifetime: time.Hour}); err != nil {
		t.Fatal(err)
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "export CCRUN_SESSION=")
	if !ok || !validID(id) {
		t.Fatalf("start printed %q", out.String())
	}
	t.Setenv("CCRUN_SESSION", id)
	out.Reset()
	if err := a.runSessionStatus(ctx, &sessionStatusOptions{}); err != nil || !strings.HasPrefix(out.String(), "session "+id+", ends ") {
		t.Errorf("status: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := a.runSessionEnd(ctx, &sessionEndOptions{}); err != nil || out.String() != "unset CCRUN_SESSION\n" {
		t.Errorf("end: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := a.runSessionStatus(ctx, &sessionStatusOptions{json: true}); err != nil || !strings.Contains(out.String(), `"active": false`) {
		t.Errorf("status after the end: %q, %v", out.String(), err)
	}
	if err := a.runSessionStart(ctx, &sessionStartOptions{}); exitCode(nil, err) != exitUsage {
		t.Errorf("a lifetime of 0: %v, want a usage error", err)
	}
}
