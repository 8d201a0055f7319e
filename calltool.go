package ccrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// CallFromTool turns a tool call as an agent makes it — a tool's name and
// its JSON arguments — into a Call: run_command {"command"}, run_wasm
// {"module", "args", "mounts"}, run_docker {"image", "command", "mounts"}
// (mounts as HOST:GUEST[:ro|rw], HOST relative to the project root), a
// library tool (WithTool) or a capability of the project by name, whose
// arguments are the call's Input. The arguments of a built-in are checked
// against its schema (Tools); a library tool's and a capability's are
// checked when the call is prepared, before the gate.
//
// Nothing in the arguments can choose a mode, a rule, a limit or an
// approval: what the call may do is decided by the gate, as for any call.
// The error is of class ErrInvalidCall, and also capabilities.ErrNotFound
// for a name that is no tool.
func (r *Runtime) CallFromTool(name string, input json.RawMessage) (*Call, error) {
	if len(bytes.TrimSpace(input)) == 0 || string(bytes.TrimSpace(input)) == "null" {
		input = json.RawMessage(`{}`)
	}
	if len(input) > maxInput {
		return nil, fmt.Errorf("%s: arguments of %d bytes: past the limit of %d bytes (64 MiB): %w", name, len(input), maxInput, ErrInvalidCall)
	}
	switch name {
	case keys.ShellTool, keys.WasmTool, keys.DockerTool:
		var a struct {
			Command json.RawMessage `json:"command"`
			Module  string          `json:"module"`
			Image   string          `json:"image"`
			Args    []string        `json:"args"`
			Mounts  []string        `json:"mounts"`
		}
		if err := checkBuiltin(name, input); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(input, &a); err != nil {
			return nil, fmt.Errorf("%s: arguments: %v: %w", name, err, ErrInvalidCall)
		}
		c := &Call{Module: a.Module, Image: a.Image, Args: a.Args}
		switch name {
		case keys.ShellTool:
			if err := json.Unmarshal(a.Command, &c.Command); err != nil {
				return nil, fmt.Errorf("%s: command: %v: %w", name, err, ErrInvalidCall)
			}
		case keys.DockerTool:
			if len(a.Command) > 0 {
				if err := json.Unmarshal(a.Command, &c.Args); err != nil {
					return nil, fmt.Errorf("%s: command: %v: %w", name, err, ErrInvalidCall)
				}
			}
		}
		for _, m := range a.Mounts {
			mt, err := job.ParseMount(m)
			if err != nil {
				return nil, fmt.Errorf("%s: mount %v: %w", name, err, ErrInvalidCall)
			}
			c.Mounts = append(c.Mounts, mt)
		}
		return c, nil
	}
	if r.findLib(name) != nil {
		return &Call{Tool: name, Input: bytes.Clone(input)}, nil
	}
	if !capabilities.ValidName(name) {
		return nil, fmt.Errorf("tool %q: no such tool: %w: %w", name, capabilities.ErrNotFound, ErrInvalidCall)
	}
	if _, err := os.Lstat(filepath.Join(r.dir, filepath.FromSlash(capabilities.Dir), name, capabilities.ManifestFile)); err != nil {
		return nil, fmt.Errorf("tool %q: no such tool: %w: %w", name, capabilities.ErrNotFound, ErrInvalidCall)
	}
	return &Call{Capability: name, Input: bytes.Clone(input)}, nil
}

// builtinSchemas are the compiled parameter schemas of the built-in tools
// (an error only in the front build, which compiles none).
var builtinSchemas = sync.OnceValues(func() (map[string]inputSchema, error) {
	out := map[string]inputSchema{}
	for _, t := range builtins {
		res, err := compileInputSchema(t.InputSchema, false)
		if err != nil {
			return nil, fmt.Errorf("built-in %s: %w", t.Name, err)
		}
		out[t.Name] = res
	}
	return out, nil
})

func checkBuiltin(name string, input json.RawMessage) error {
	schemas, err := builtinSchemas()
	if err != nil {
		return fmt.Errorf("%s: arguments: %w", name, err)
	}
	if err := schemas[name].Check(input); err != nil {
		return fmt.Errorf("%s: arguments: %w: %w", name, err, ErrInvalidCall)
	}
	return nil
}

// CallOptions are what one front end brings to one call of its own, in
// place of the Runtime's (WithApprover, WithSession): an MCP server gives
// each connection its own approver and session.
type CallOptions struct {
	// Approver answers the gate's asks for this call. Nil: nobody can be
	// asked, so an ask is a deny.
	Approver permission.Approver
	// Session is the session allowlist whose grants count for this call,
	// and where a "this session" answer is kept. Nil: none, so a session
	// grant lasts for this call only.
	Session *allowlist.SessionAllowlist
	// Events, when not nil, is also given each transition of this call,
	// on the goroutine running it, after the Runtime's subscribers.
	Events func(Event)
}

// ExecWith is Exec with the approver and session of o in place of the
// Runtime's: the same validation, gate (policy, ceiling, project
// allowlist, dangerous paths), enforcement where the call runs, events and
// audit log.
func (r *Runtime) ExecWith(ctx context.Context, c *Call, o CallOptions) (*Outcome, error) {
	return r.exec(ctx, c, r.gateWith(o), o.Events)
}

// CheckWith is Check with the session of o in place of the Runtime's: the
// decision ExecWith would take before asking anyone.
func (r *Runtime) CheckWith(ctx context.Context, c *Call, o CallOptions) (*Outcome, error) {
	return r.check(ctx, c, r.gateWith(o))
}

func (r *Runtime) gateWith(o CallOptions) *permission.Gate {
	g := *r.gate
	g.Approver, g.Session = o.Approver, o.Session
	return &g
}
