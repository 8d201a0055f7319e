package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTrustAndMCPOptions: trust's and mcp's command lines become their
// options, and nothing else is done with them.
func TestTrustAndMCPOptions(t *testing.T) {
	t.Parallel()
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
	var tr *trustOptions
	c := a.trustCommand(func(_ context.Context, o *trustOptions) error { tr = o; return nil })
	c.SetArgs([]string{"--list", "--json"})
	if err := c.Execute(); err != nil || *tr != (trustOptions{list: true, json: true}) {
		t.Errorf("trust: %+v, %v", tr, err)
	}
	var m *mcpOptions
	c = a.mcpCommand(func(_ context.Context, o *mcpOptions) error { m = o; return nil })
	c.SetArgs([]string{"--max-sessions", "3", "--allow-origin", "https://a.example", "--session-timeout", "1m"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	want := mcpOptions{httpOnly: []string{"allow-origin", "session-timeout", "max-sessions"}, origins: []string{"https://a.example"}, sessionTimeout: time.Minute, maxSessions: 3}
	if diff := cmp.Diff(want, *m, cmp.AllowUnexported(mcpOptions{})); diff != "" {
		t.Errorf("mcp (-want +got):\n%s", diff)
	}
}

// TestRunTrustAndMCP calls trust's and mcp's run functions without cobra:
// what their flags together refuse, and trust on a project whose files
// loosen nothing.
func TestRunTrustAndMCP(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv(trustDigestEnv, "")
	dir := t.TempDir()
	var out bytes.Buffer
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, io.Discard}, projectDir: dir}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"trust --yes --list", a.runTrust(ctx, &trustOptions{yes: true, list: true}), "at most one of"},
		{"trust --json alone", a.runTrust(ctx, &trustOptions{json: true}), "--json goes with --list"},
		{"mcp --token-file without --http", a.runMCP(ctx, &mcpOptions{httpOnly: []string{"token-file"}, maxSessions: 1, sessionTimeout: time.Second}), "--token-file needs --http"},
		{"mcp --max-sessions 0", a.runMCP(ctx, &mcpOptions{sessionTimeout: time.Second}), "must be positive"},
	} {
		if exitCode(nil, tc.err) != exitUsage || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error saying %q", tc.name, tc.err, tc.want)
		}
	}
	if err := a.runTrust(ctx, &trustOptions{}); err != nil || !strings.Contains(out.String(), "loosens the defaults; nothing to trust") {
		t.Errorf("trust: %v %q", err, out.String())
	}
	out.Reset()
	if err := a.runTrust(ctx, &trustOptions{digest: true}); err != nil || !strings.HasPrefix(out.String(), "sha256:") {
		t.Errorf("trust --digest: %v %q", err, out.String())
	}
}
