package ccrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
)

func toolRuntime(t *testing.T, opts ...ccrun.Option) *ccrun.Runtime {
	t.Helper()
	echo := ccrun.Tool{Name: "echo_input", Class: permission.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"say":{"type":"string"}},"additionalProperties":false}`),
		Permission:  func(json.RawMessage) (permission.Permission, error) { return permission.None(), nil },
		Execute: func(_ context.Context, in json.RawMessage, stdout, _ io.Writer) error {
			_, err := stdout.Write(in)
			return err
		}}
	rt, err := ccrun.New(append([]ccrun.Option{engines.Wasm(), engines.Docker(), ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""), ccrun.WithTrustDir(""),
		ccrun.WithTool(echo)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// TestCallFromToolHostile: what an agent may send that is not a call is
// refused before the gate, with the class ErrInvalidCall.
func TestCallFromToolHostile(t *testing.T) {
	t.Parallel()
	rt := toolRuntime(t)
	tests := []struct {
		name, tool, input string
		notFound          bool
	}{
		{"unknown field", "run_command", `{"command":"true","approve":"session"}`, false},
		{"a mode in the arguments", "run_command", `{"command":"true","mode":"trust"}`, false},
		{"command not a string", "run_command", `{"command":["rm","-rf","/"]}`, false},
		{"empty command", "run_command", `{"command":""}`, false},
		{"not JSON", "run_command", `{"command":`, false},
		{"not an object", "run_command", `["true"]`, false},
		{"no module", "run_wasm", `{"args":["x"]}`, false},
		{"bad mount", "run_wasm", `{"module":"m.wasm","mounts":["nocolon"]}`, false},
		{"network for docker", "run_docker", `{"image":"busybox","network":"host"}`, false},
		{"capability outside", "../../etc", `{}`, true},
		{"no such tool", "no_such_tool", `{}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.CallFromTool(tc.tool, json.RawMessage(tc.input))
			if !errors.Is(err, ccrun.ErrInvalidCall) {
				t.Fatalf("CallFromTool(%s, %s) = %v, want ErrInvalidCall", tc.tool, tc.input, err)
			}
			if got := errors.Is(err, capabilities.ErrNotFound); got != tc.notFound {
				t.Errorf("ErrNotFound %v, want %v (%v)", got, tc.notFound, err)
			}
		})
	}
}

// TestLibraryToolGate: a library tool's input is validated before the gate;
// one whose permission is None runs and its output is the result.
func TestLibraryToolGate(t *testing.T) {
	t.Parallel()
	rt := toolRuntime(t)
	call, err := rt.CallFromTool("echo_input", json.RawMessage(`{"say":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := rt.Exec(context.Background(), call)
	if err != nil || string(out.Result.Stdout) != `{"say":"hi"}` || out.Decision.Layer != permission.LayerNone {
		t.Fatalf("echo_input: %v %+v", err, out)
	}
	bad, _ := rt.CallFromTool("echo_input", json.RawMessage(`{"say":3}`))
	if _, err := rt.Exec(context.Background(), bad); !errors.Is(err, ccrun.ErrInvalidCall) {
		t.Fatalf("input against the schema: %v, want ErrInvalidCall", err)
	}
	for _, tool := range []ccrun.Tool{{Name: "run_command", Execute: func(context.Context, json.RawMessage, io.Writer, io.Writer) error { return nil }},
		{Name: "Bad Name", Execute: func(context.Context, json.RawMessage, io.Writer, io.Writer) error { return nil }},
		{Name: "no_execute"},
		// a library tool runs in the calling process: it cannot claim a sandbox
		{Name: "in_a_box", Environment: ceiling.Wasm, Execute: func(context.Context, json.RawMessage, io.Writer, io.Writer) error { return nil }}} {
		if _, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithTool(tool)); !errors.Is(err, ccrun.ErrInvalidCall) {
			t.Errorf("WithTool(%q): %v, want ErrInvalidCall", tool.Name, err)
		}
	}
}

// TestLibraryToolWithoutPermission: a library tool with no Permission
// function asks under <name>:call, and runs once a person allows it.
func TestLibraryToolWithoutPermission(t *testing.T) {
	t.Parallel()
	tool := ccrun.Tool{Name: "note", InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(_ context.Context, _ json.RawMessage, out, _ io.Writer) error {
			_, err := out.Write([]byte("noted"))
			return err
		}}
	var key string
	rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithTool(tool), ccrun.WithApprover(permission.ApproverFunc(
		func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
			key = p.Request.Permission.Key().String()
			return ceiling.Once, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	call, err := rt.CallFromTool("note", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := rt.Exec(context.Background(), call)
	if err != nil || string(out.Result.Stdout) != "noted" || key != "note:call" {
		t.Fatalf("note: %v, asked under %q, %+v", err, key, out)
	}
}

// TestExecWithSession: a "this session" grant lives in the session of the
// call that got it, not in another's, nor in the Runtime's.
func TestExecWithSession(t *testing.T) {
	t.Parallel()
	rt := toolRuntime(t)
	var asked int
	grant := permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
		asked++
		return ceiling.AlwaysThisSession, nil
	})
	one, two := allowlist.NewSessionAllowlist(), allowlist.NewSessionAllowlist()
	run := func(s *allowlist.SessionAllowlist, a permission.Approver) error {
		call, err := rt.CallFromTool("run_command", json.RawMessage(`{"command":"touch x"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = rt.ExecWith(context.Background(), call, ccrun.CallOptions{Approver: a, Session: s})
		return err
	}
	if err := run(one, grant); err != nil || asked != 1 {
		t.Fatalf("first: %v, asked %d", err, asked)
	}
	if err := run(one, nil); err != nil {
		t.Fatalf("same session, nobody to ask: %v, want the session grant to allow it", err)
	}
	if err := run(two, nil); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Fatalf("another session: %v, want denied", err)
	}
	call, _ := rt.CallFromTool("run_command", json.RawMessage(`{"command":"touch x"}`))
	if _, err := rt.Exec(context.Background(), call); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Fatalf("the Runtime's own session: %v, want denied", err)
	}
}
