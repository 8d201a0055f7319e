package ccrun

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// builtins are the tools every Runtime offers besides the capabilities.
var builtins = []Tool{
	{Name: keys.ShellTool, Description: "Run a shell command (Bash syntax) on the host, from the project root.",
		Environment: ceiling.Shell, Class: permission.ClassExec,
		InputSchema: json.RawMessage(`{"type":"object","required":["command"],"additionalProperties":false,"properties":{"command":{"type":"string","minLength":1,"description":"the command, in Bash syntax"}}}`)},
	{Name: keys.WasmTool, Description: "Run a WebAssembly (WASI preview 1) module in a sandbox: no network, only the mounted directories.",
		Environment: ceiling.Wasm, Class: permission.ClassExec,
		InputSchema: json.RawMessage(`{"type":"object","required":["module"],"additionalProperties":false,"properties":{"module":{"type":"string","minLength":1,"description":"the .wasm file, relative to the project root"},"args":{"type":"array","items":{"type":"string"},"description":"argv[1:]"},"mounts":{"type":"array","items":{"type":"string"},"description":"HOST:GUEST[:ro|rw], read-only unless rw; HOST relative to the project root"}}}`)},
	{Name: keys.DockerTool, Description: "Run a command in a hardened container: no network, read-only root, no capabilities, only the mounted directories.",
		Environment: ceiling.Docker, Class: permission.ClassExec,
		InputSchema: json.RawMessage(`{"type":"object","required":["image"],"additionalProperties":false,"properties":{"image":{"type":"string","minLength":1,"description":"the image reference"},"command":{"type":"array","items":{"type":"string"},"description":"the container's command"},"mounts":{"type":"array","items":{"type":"string"},"description":"HOST:GUEST[:ro|rw], read-only unless rw; HOST relative to the project root"}}}`)},
}

// Tools lists the tools the caller may see: the built-in ones of the
// environments r has a backend for (run_wasm and run_docker only with
// their engines, package engines), the library tools (WithTool) and the
// project's capabilities (of a built-in environment, or of one registered
// with WithBackend), less those its scope hides and those a deny rule
// covers entirely (a deny is applied twice: here, so the agent is not even
// offered the tool, and again by the gate at execution). Capabilities that
// do not load, those of an environment r does not know
// (Capability.CheckEnvironment), and those of one it has no backend for
// are returned as errors beside the list: r lists only what it can run.
func (r *Runtime) Tools() ([]Tool, []error) {
	caps, errs := r.Capabilities()
	pol := r.gate.Policy
	var out []Tool
	for _, t := range builtins {
		if r.runs(t.Environment) && (pol == nil || pol.Visible(t.Name, false)) {
			out = append(out, t)
		}
	}
	out = append(out, r.libTools(pol)...)
	for _, c := range caps {
		if !r.runs(c.Manifest.Environment) {
			errs = append(errs, fmt.Errorf("capability %s: %w", c.Manifest.Name, r.noBackend(r.Environments(), c.Manifest.Environment)))
			continue
		}
		if r.shadowed(c.Manifest.Name) {
			errs = append(errs, fmt.Errorf("capability %s: a library tool has that name, so the capability is not offered: %w", c.Manifest.Name, capabilities.ErrInvalidManifest))
			continue
		}
		if pol == nil || pol.Visible(c.Manifest.Name, false) {
			out = append(out, capabilityTool(c))
		}
	}
	return out, errs
}

// capabilityTool is c as an agent is offered it.
func capabilityTool(c *capabilities.Capability) Tool {
	m := &c.Manifest
	return Tool{Name: m.Name, Description: m.Description, Environment: m.Environment,
		InputSchema: slices.Clone(m.ParametersOrDefault()), Class: c.Class()}
}

// Capabilities loads the project's capabilities that r runs, in name
// order, and returns an error beside them for each that does not load or
// names an environment r does not run (capabilities.LoadAll, then
// Capability.CheckEnvironment against Environments).
func (r *Runtime) Capabilities() ([]*capabilities.Capability, []error) {
	caps, errs := capabilities.LoadAll(r.dir)
	kept := caps[:0]
	for _, c := range caps {
		if err := c.CheckEnvironment(r.Environments()); err != nil {
			errs = append(errs, err)
			continue
		}
		kept = append(kept, c)
	}
	return kept, errs
}

// capability finds the project's capability called name
// (capabilities.Find), refused when r does not run its environment.
func (r *Runtime) capability(name string) (*capabilities.Capability, error) {
	c, err := capabilities.Find(r.dir, name)
	if err != nil {
		return nil, err
	}
	if err := c.CheckEnvironment(r.Environments()); err != nil {
		return nil, err
	}
	return c, nil
}

// SubAgent returns a Runtime for a sub-agent of this one: another view
// of the same project state — the project, the settings and trust, the
// backends, the library tools, the approver, the audit log, the call ids
// and the subscribers are this Runtime's, not copies — whose policy sees
// only tools that never ask (any other call is denied by the gate's scope
// step) and keeps this Runtime's deny and ask rules. It grants nothing
// (Grant), its Close releases nothing, and it cannot derive a further
// sub-agent (permission.ErrDepthExceeded).
func (r *Runtime) SubAgent() (*Runtime, error) {
	pol := r.gate.Policy
	if pol == nil {
		pol = permission.DefaultPolicy()
	}
	sub, err := pol.SubAgent()
	if err != nil {
		return nil, err
	}
	g := *r.gate
	g.Policy = sub
	return &Runtime{shared: r.shared, gate: &g, narrow: narrowing{subAgent: true}}, nil
}
