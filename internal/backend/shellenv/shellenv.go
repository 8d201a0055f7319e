// Package shellenv is the backend of @shell: a command or a @shell
// capability, parsed once, keyed by the parse and run from that very parse
// tree by runtime/shell, under the guard the root builds from the gate's
// decision.
package shellenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/shell"
	"github.com/ccrun/ccrun/shellcmd"
)

// Backend prepares and runs @shell calls. It is safe for concurrent use.
type Backend struct{ e *shell.Executor }

// New returns the @shell backend; envPass names the host variables that
// reach commands on top of runtime/shell's default list.
func New(envPass ...string) (*Backend, error) {
	e, err := shell.New(shell.WithEnvPass(envPass...))
	if err != nil {
		return nil, fmt.Errorf("@shell: %w", err)
	}
	return &Backend{e}, nil
}

// Environ is the environment a command starts from (the host's,
// filtered), which the root's guard holds programs against.
func (b *Backend) Environ() []string { return b.e.Environ() }

// EnforcesLimits says Run stops the process group itself on a timeout, a
// cancellation or the output cap.
func (b *Backend) EnforcesLimits() bool { return true }

// Prepare parses the command (ad hoc, or the capability's entry) and
// keys it by that parse.
func (b *Backend) Prepare(_ context.Context, inv *backend.Invocation) (*backend.Prepared, error) {
	if c := inv.Capability; c != nil {
		m := &c.Manifest
		cmd := permission.ParseCommand(m.Entry.Command)
		if cmd.File == nil {
			return nil, fmt.Errorf("capability %s: entry command does not parse: %w", m.Name, capabilities.ErrInvalidManifest)
		}
		inv.Command = cmd
		inv.Dir = c.Project
		if m.Entry.Workdir != "" {
			inv.Dir = filepath.Join(c.Project, m.Entry.Workdir)
		}
		// The capability's own files come first on PATH, so its entry can name
		// them with a literal program word (run.sh) that the policy can read.
		path := os.Getenv("PATH")
		if v, ok := m.Env["PATH"]; ok { // the manifest's own PATH, shown when approved
			path = v
		}
		if path == "" {
			path = shell.DefaultPath
		}
		inv.Env = append(inv.Env, "CCRUN_CAPABILITY_DIR="+c.Dir, "PATH="+c.Dir+string(os.PathListSeparator)+path)
		return &backend.Prepared{Command: cmd, Display: m.Entry.Command}, nil
	}
	if strings.TrimSpace(inv.Target) == "" {
		return nil, fmt.Errorf("call: the command is empty: %w", errdefs.ErrInvalidArgument)
	}
	if len(inv.Mounts) > 0 {
		return nil, fmt.Errorf("call: mounts do not apply to @shell (it sees the whole host): %w", errdefs.ErrInvalidArgument)
	}
	if inv.Limits.Memory != 0 || inv.Limits.Pids != 0 || inv.Limits.CPUs != 0 {
		return nil, fmt.Errorf("call: memory, pids and cpus limits do not apply to @shell (the host does not enforce them): %w", errdefs.ErrInvalidArgument)
	}
	cmd := permission.ParseCommand(inv.Target)
	if cmd.File == nil {
		return nil, fmt.Errorf("call: the command does not parse as a shell command, so it cannot run: %s: %w", shellcmd.Escape(inv.Target), errdefs.ErrInvalidArgument)
	}
	inv.Command, inv.Dir = cmd, inv.ProjectDir
	p := &backend.Prepared{Key: cmd.Key, Command: cmd, Display: inv.Target, Dir: inv.ProjectDir}
	if len(inv.Args) > 0 || len(inv.Env) > 0 {
		// A grant kept for the session covers these arguments and this
		// environment, not any: they are part of what the person saw.
		p.Digest = backend.ContentDigest([]byte(inv.Target), nil, "", inv.Args, inv.Env)
	}
	return p, nil
}

// Run runs the parsed command with the guard and confinement the root set.
func (b *Backend) Run(ctx context.Context, inv *backend.Invocation) (*job.Result, error) {
	if inv.Command == nil || inv.Command.File == nil {
		return nil, fmt.Errorf("@shell: no parsed command: %w", errdefs.ErrInvalidArgument)
	}
	return b.e.Run(ctx, shell.Spec{Script: inv.Command.File, Args: inv.Args, Dir: inv.Dir,
		Env: inv.Env, Streams: inv.Streams, Limits: inv.Limits, Guard: inv.Guard, Confine: inv.Confine})
}
