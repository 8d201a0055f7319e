package ccrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// Tool is a tool an agent is offered: what Runtime.Tools lists (a
// built-in tool, a capability of the project, a library tool) and what a
// Go program gives its Runtime as a library tool of its own (WithTool):
// what its Permission says is decided by the gate before its Execute may
// run. In Tools' list the fields that describe it are set (Name,
// Description, Environment, InputSchema, Class), not its functions: a
// call of any tool goes through Exec.
//
// A call of a library tool goes through the same pipeline as any other: its input is
// validated against InputSchema, the gate decides on what Permission says
// (deny rules, the mode × Class matrix, the dangerous paths of Paths, the
// allowlists, the person), every transition is published and the decision
// and execution are in the audit log. Its environment is the host, so its
// ceiling is @shell's: a grant lasts for the session at most. Execute runs
// in the calling process, and only after the gate has said yes.
type Tool struct {
	// Name is what an agent calls it by: lowercase letters, digits, _ and -,
	// starting with a letter, at most 64. It must differ from the built-in
	// tools' names; a capability of the same name is not offered.
	Name string
	// Description says what it does, for the agent and the person asked.
	Description string
	// Environment is where its calls run: in Tools' list, a built-in
	// tool's or the capability's environment, and @shell (the host) for
	// a library tool; WithTool takes "" or @shell, the host's.
	Environment ceiling.Environment
	// InputSchema is the JSON Schema (draft 2020-12) of its input, an
	// object. Default: {"type":"object"}, any object; in Tools' list it
	// is never empty.
	InputSchema json.RawMessage
	// Class is what kind of effect it has; it picks the mode's verdict
	// (accept-edits allows ClassWrite, plan mode only reads). Default:
	// ClassUnknown, treated as the most dangerous.
	Class permission.Class
	// Permission says what a call with this input asks for:
	// permission.None() (never asked) or permission.Ask(key), such as
	// write_file:<path>. It must not have side effects. Nil: every call
	// asks under the key <name>:call.
	Permission func(input json.RawMessage) (permission.Permission, error)
	// Paths returns the file paths a call with this input touches
	// (relative ones are taken against the project root): they are held
	// against the dangerous paths (always asked, Once only), shown to the
	// person asked, and in the audit log. Nil: none.
	Paths func(input json.RawMessage) []string
	// Execute does the work, once the gate has allowed it. What it writes to
	// stdout and stderr is the call's output, capped like any tool's
	// (Call.Limits.Output, default 4 MiB per stream: past it ctx is
	// cancelled and the result says so). A nil error is exit code 0; an
	// error is exit code 1 with the error as the result's detail. It must
	// return when ctx is done (the call's timeout, default 10 minutes, or
	// its cancellation): the run waits for it.
	Execute func(ctx context.Context, input json.RawMessage, stdout, stderr io.Writer) error
}

// libCall is a prepared call of a library tool: the tool and its input.
type libCall struct {
	t     *libTool
	input json.RawMessage
}

// inputSchema checks a tool's input, the JSON text, against its compiled
// JSON Schema (compileInputSchema: schema.go, and schema_front.go in the
// front build). Its error is an *inputschema.Error.
type inputSchema interface{ Check(input []byte) error }

// libTool is a registered Tool with its compiled schema.
type libTool struct {
	Tool
	schema inputSchema
}

// WithTool gives the Runtime library tools (see Tool). Default: none. A
// tool without a name, Execute, or a valid object schema, or with a name
// taken (a built-in's, another library tool's), makes New fail with
// ErrInvalidCall.
func WithTool(tools ...Tool) Option {
	return func(r *Runtime) error {
		for _, t := range tools {
			lt, err := compileTool(t)
			if err != nil {
				return err
			}
			if r.findLib(t.Name) != nil {
				return fmt.Errorf("tool %s: registered twice: %w", t.Name, ErrInvalidCall)
			}
			r.libs = append(r.libs, lt)
		}
		return nil
	}
}

func compileTool(t Tool) (*libTool, error) {
	if !validToolName(t.Name) {
		return nil, fmt.Errorf("tool %q: want lowercase letters, digits, _ and -, starting with a letter, at most 64: %w", t.Name, ErrInvalidCall)
	}
	for _, b := range builtins {
		if b.Name == t.Name {
			return nil, fmt.Errorf("tool %s: the name of a built-in tool: %w", t.Name, ErrInvalidCall)
		}
	}
	if t.Name == keys.CapabilityTool {
		return nil, fmt.Errorf("tool %s: the key tool of capabilities: %w", t.Name, ErrInvalidCall)
	}
	if t.Execute == nil {
		return nil, fmt.Errorf("tool %s: no Execute function: %w", t.Name, ErrInvalidCall)
	}
	if t.Environment != "" && t.Environment != ceiling.Shell {
		return nil, fmt.Errorf("tool %s: environment %s: a library tool runs in the calling process, on the host: want %s or none: %w", t.Name, t.Environment, ceiling.Shell, ErrInvalidCall)
	}
	t.Environment = ceiling.Shell
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	res, err := compileInputSchema(t.InputSchema, true)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w: %w", t.Name, err, ErrInvalidCall)
	}
	if t.Class == "" {
		t.Class = permission.ClassUnknown
	}
	t.InputSchema = slices.Clone(t.InputSchema)
	return &libTool{Tool: t, schema: res}, nil
}

func validToolName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// findLib returns the library tool named name, or nil.
func (r *shared) findLib(name string) *libTool {
	for _, t := range r.libs {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// shadowed reports whether a capability of this name is hidden by a
// library tool.
func (r *shared) shadowed(name string) bool { return r.findLib(name) != nil }

// libTools are the library tools pol lets the caller see, in the order they
// were given.
func (r *shared) libTools(pol *permission.Policy) []Tool {
	var out []Tool
	for _, t := range r.libs {
		if pol == nil || pol.Visible(t.Name, false) {
			out = append(out, Tool{Name: t.Name, Description: t.Description, Environment: t.Environment,
				InputSchema: slices.Clone(t.InputSchema), Class: t.Class})
		}
	}
	return out
}

// prepareTool fills the gate's request and the invocation of a call of a
// library tool: its input validated, its permission and paths asked of the
// tool, the host's environment.
func (r *Runtime) prepareTool(c *Call, req *permission.Request, inv *Invocation) error {
	t := r.findLib(c.Tool)
	if t == nil {
		return fmt.Errorf("call: no library tool %q: %w", c.Tool, ErrInvalidCall)
	}
	if len(c.Mounts) > 0 || !isNil(c.Options) || len(c.Args) > 0 || len(c.Env) > 0 {
		return fmt.Errorf("call: %s: a library tool takes its input only (no args, env, mounts or environment options): %w", t.Name, ErrInvalidCall)
	}
	if c.Limits.Memory != 0 || c.Limits.Pids != 0 || c.Limits.CPUs != 0 {
		return fmt.Errorf("call: %s: memory, pids and cpus limits do not apply to a library tool: %w", t.Name, ErrInvalidCall)
	}
	input := c.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if err := t.schema.Check(input); err != nil {
		return fmt.Errorf("call: %s: %w: %w", t.Name, err, ErrInvalidCall)
	}
	perm := permission.Ask(keys.Key{Tool: t.Name, Action: "call"})
	if t.Permission != nil {
		p, err := t.Permission(input)
		if err != nil {
			return fmt.Errorf("call: %s: permission: %v: %w", t.Name, err, ErrInvalidCall)
		}
		perm = p
	}
	if k := perm.Key(); !perm.IsNone() && !k.Valid() {
		return fmt.Errorf("call: %s: permission key %q is not valid: %w", t.Name, k, ErrInvalidCall)
	}
	if t.Paths != nil {
		for _, p := range t.Paths(input) {
			if !filepath.IsAbs(p) {
				p = filepath.Join(r.dir, p)
			}
			req.Paths = append(req.Paths, filepath.Clean(p))
		}
	}
	inv.Environment, inv.Tool, inv.Plan = ceiling.Shell, t.Name, &libCall{t: t, input: slices.Clone(input)}
	inv.Dir = r.dir
	req.Tool, req.Class, req.Permission, req.Dir = t.Name, t.Class, perm, ""
	req.Display = t.Name + " " + string(input)
	return nil
}

// runnerFor is what runs inv: the library tool's own Execute, or its
// environment's backend (supervised, unless it enforces the limits
// itself). base is the environment a shell script starts from, for its
// guard (the backend's Environ), or nil.
func (r *Runtime) runnerFor(ctx context.Context, inv *Invocation) (run func(context.Context, *Invocation) (*job.Result, error), base []string, err error) {
	if _, ok := inv.Plan.(*libCall); ok {
		return runLibTool, nil, nil
	}
	b, err := r.backend(ctx, inv.Environment)
	if err != nil {
		return nil, nil, err
	}
	if e, ok := b.(interface{ Environ() []string }); ok {
		base = e.Environ()
	}
	return func(ctx context.Context, inv *Invocation) (*job.Result, error) { return supervise(ctx, b, inv) }, base, nil
}

// errOutputCap cancels a library tool that wrote past the output limit.
var errOutputCap = errors.New("output limit")

// runLibTool runs a library tool's Execute under the call's limits.
func runLibTool(ctx context.Context, inv *Invocation) (*job.Result, error) {
	lim := inv.Limits.WithDefaults()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if lim.Timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, lim.Timeout, context.DeadlineExceeded)
		defer stop()
	}
	capt := job.NewCapture(lim.Output, job.Streams{Stdout: inv.Streams.Stdout, Stderr: inv.Streams.Stderr},
		func() { cancel(errOutputCap) })
	lib := inv.Plan.(*libCall)
	err := runTool(ctx, lib.t, lib.input, capt)
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errOutputCap):
		return capt.Result(job.OutputCap, job.KilledExitCode, "stopped: wrote past the output limit"), nil
	case errors.Is(cause, context.DeadlineExceeded):
		return capt.Result(job.Timeout, job.TimeoutExit, fmt.Sprintf("timed out after %s", lim.Timeout)), nil
	case errors.Is(cause, context.Canceled):
		return capt.Result(job.Cancelled, job.KilledExitCode, "cancelled"), nil
	case err != nil:
		return capt.Result(job.Exit, 1, err.Error()), nil
	}
	return capt.Result(job.Exit, 0, ""), nil
}

// runTool calls t's Execute, turning a panic into an error: a library
// tool's bug must not take the front end down.
func runTool(ctx context.Context, t *libTool, input []byte, c *job.Capture) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s panicked: %v", t.Name, p)
		}
	}()
	return t.Execute(ctx, json.RawMessage(input), c.Stdout, c.Stderr)
}
