package ccrun

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
)

// ErrUnknownKey is the class of the error of Grant, and of the problem of
// an allowlist entry (`ccrun allowlist lint`), for a key pattern that
// names no tool the Runtime runs, or no single capability.
var ErrUnknownKey = errdefs.ErrInvalidArgument.WithMessage("unknown key form")

// environmentOf says where the calls a key pattern covers would run, so
// that a grant of it can be checked against the ceiling. For a capability it
// also returns the capability (whose digest a project grant is bound to).
// The tool run_NAME is the environment @NAME of WithBackend, when r has it.
// A pattern with a wildcard in a capability's name, or of a tool r does
// not run, is an error of class ErrUnknownKey.
func (r *Runtime) environmentOf(p keys.Pattern) (ceiling.Environment, *capabilities.Capability, error) {
	switch p.Tool {
	case keys.ShellTool:
		return ceiling.Shell, nil, nil
	case keys.WasmTool:
		return ceiling.Wasm, nil, nil
	case keys.DockerTool:
		return ceiling.Docker, nil, nil
	case keys.CapabilityTool:
		if p.HasWildcard() || p.Exact || p.Detail != "" || p.NoDetail() {
			return "", nil, fmt.Errorf("%s: a capability key names one capability, capability:NAME: %w", p, ErrUnknownKey)
		}
		c, err := r.capability(p.Action)
		if err != nil {
			return "", nil, err
		}
		return c.Manifest.Environment, c, nil
	}
	if env, ok := strings.CutPrefix(p.Tool, "run_"); ok {
		if e := ceiling.Environment("@" + env); !e.Builtin() && r.Environments().Has(e) {
			return e, nil, nil
		}
	}
	tools := []string{keys.ShellTool, keys.WasmTool, keys.DockerTool}
	for _, e := range r.Environments().List()[len(ceiling.Environments):] {
		tools = append(tools, adHocTool(e))
	}
	return "", nil, fmt.Errorf("%s: tool %q is not one this runtime runs (%s, capability): %w", p, p.Tool, strings.Join(tools, ", "), ErrUnknownKey)
}
