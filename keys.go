package ccrun

import (
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
)

// ErrUnknownKey is the class of EnvironmentOf's error: a key pattern that
// names no tool ccrun runs, or no single capability.
var ErrUnknownKey = errdefs.ErrInvalidArgument.WithMessage("unknown key form")

// EnvironmentOf says where the calls a key pattern covers would run, so
// that a grant of it can be checked against the ceiling. For a capability it
// also returns the capability (whose digest a project grant is bound to).
// A pattern with a wildcard in a capability's name, or of a tool ccrun does
// not know, is an error of class ErrUnknownKey.
func (r *Runtime) EnvironmentOf(p keys.Pattern) (ceiling.Environment, *capabilities.Capability, error) {
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
		c, err := capabilities.Find(r.dir, p.Action)
		if err != nil {
			return "", nil, err
		}
		return c.Manifest.Environment, c, nil
	}
	return "", nil, fmt.Errorf("%s: tool %q is not one ccrun runs (run_command, run_wasm, run_docker, capability): %w", p, p.Tool, ErrUnknownKey)
}
