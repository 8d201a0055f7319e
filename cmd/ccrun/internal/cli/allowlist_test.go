package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
)

// TestAllowlistOptions: each allowlist command's command line becomes its
// options, and nothing else is done with it.
func TestAllowlistOptions(t *testing.T) {
	t.Parallel()
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
	parse := func(c *cobra.Command, args ...string) {
		t.Helper()
		c.SetArgs(args)
		c.SetOut(io.Discard)
		if err := c.Execute(); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
	}
	var add *allowlistAddOptions
	parse(a.allowlistAddCommand(func(_ context.Context, o *allowlistAddOptions) error { add = o; return nil }), "capability:fmt", "--scope", "project")
	if *add != (allowlistAddOptions{pattern: "capability:fmt", scope: "project"}) {
		t.Errorf("add: %+v", *add)
	}
	var rm *allowlistRemoveOptions
	parse(a.allowlistRemoveCommand(func(_ context.Context, o *allowlistRemoveOptions) error { rm = o; return nil }), "capability:fmt")
	if *rm != (allowlistRemoveOptions{key: "capability:fmt", scope: "project"}) {
		t.Errorf("remove: %+v", *rm)
	}
	var list *allowlistListOptions
	parse(a.allowlistListCommand(func(_ context.Context, o *allowlistListOptions) error { list = o; return nil }), "--json")
	if !list.json {
		t.Errorf("list: %+v", *list)
	}
	linted := false
	parse(a.allowlistLintCommand(func(context.Context, *allowlistLintOptions) error { linted = true; return nil }))
	if !linted {
		t.Error("lint: runF not called")
	}
}

// TestRunAllowlist calls the allowlist commands' run functions without
// cobra: a project grant of a capability added, listed, linted and
// removed; a @shell key refused for the project (the ceiling), a session
// grant refused without a session, a scope that is neither.
func TestRunAllowlist(t *testing.T) {
	t.Setenv("CCRUN_SESSION", "")
	t.Setenv("CCRUN_SESSION_DIR", filepath.Join(t.TempDir(), "sessions"))
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := capabilities.Scaffold(dir, "fmt", ceiling.Wasm); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, &errb}, projectDir: dir}
	ctx := context.Background()
	step := func(name string, err error, want string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v; %s", name, err, errb.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s: %q, want %q", name, out.String(), want)
		}
		out.Reset()
	}
	step("add", a.runAllowlistAdd(ctx, &allowlistAddOptions{pattern: "capability:fmt", scope: "project"}), "added capability:fmt → AlwaysThisProject")
	step("list", a.runAllowlistList(ctx, &allowlistListOptions{json: true}), `"key": "capability:fmt"`)
	var r allowlistReport
	if err := a.runAllowlistList(ctx, &allowlistListOptions{json: true}); err != nil || json.Unmarshal(out.Bytes(), &r) != nil || len(r.Project.Entries) != 1 {
		t.Fatalf("list --json: %v %q", err, out.String())
	}
	out.Reset()
	step("lint", a.runAllowlistLint(ctx, &allowlistLintOptions{}), "1 entry, no problems")
	step("remove", a.runAllowlistRemove(ctx, &allowlistRemoveOptions{key: "capability:fmt", scope: "project"}), "removed capability:fmt")
	step("list", a.runAllowlistList(ctx, &allowlistListOptions{}), "0 entries")

	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a @shell key for the project", a.runAllowlistAdd(ctx, &allowlistAddOptions{pattern: "run_command:make", scope: "project"}), "ceiling violation"},
		{"a session grant without a session", a.runAllowlistAdd(ctx, &allowlistAddOptions{pattern: "run_command:make", scope: "session"}), "no session"},
		{"neither scope", a.runAllowlistAdd(ctx, &allowlistAddOptions{pattern: "capability:fmt", scope: "forever"}), `"forever" is not a valid --scope; valid: session, project`},
		{"a bad key", a.runAllowlistAdd(ctx, &allowlistAddOptions{pattern: "bad key!!", scope: "project"}), "invalid permission key"},
		{"remove from the session", a.runAllowlistRemove(ctx, &allowlistRemoveOptions{key: "capability:fmt", scope: "session"}), "end the session"},
		{"remove what is not there", a.runAllowlistRemove(ctx, &allowlistRemoveOptions{key: "capability:fmt", scope: "project"}), "is not in"},
	} {
		if exitCode(nil, tc.err) != exitUsage || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error saying %q", tc.name, tc.err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ccrun.json")); err != nil {
		t.Errorf("ccrun.json: %v (the grant and its removal are written there)", err)
	}
}
