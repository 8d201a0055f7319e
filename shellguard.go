package ccrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/dotccrun"
	"github.com/ccrun/ccrun/internal/guard"
	"github.com/ccrun/ccrun/internal/projectdir"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/shell"
	"github.com/ccrun/ccrun/shellcmd"
)

// shellGuard builds the checks that enforce d where a @shell call runs
// (internal/guard): every program with its expanded words and every file
// the script opens is held against the basis of the decision, the deny
// rules and the dangerous paths. A capability runs under the basis of a
// person's approval: its files were approved as a whole, by digest.
func (r *Runtime) shellGuard(g *permission.Gate, req *permission.Request, inv *Invocation, d *permission.Decision, base []string) *guard.Guard {
	basis, pat := guard.BasisOf(d)
	if inv.Capability != nil && basis != guard.ReadOnly {
		basis = guard.Person
	}
	home, _ := os.UserHomeDir()
	cfg := guard.Config{Basis: basis, Pattern: pat, Policy: r.gate.Policy, ProjectDir: r.dir, Home: home, BaseEnv: base}
	if d.Layer == permission.LayerApprover {
		// The person saw the dangerous paths the prompt named.
		for _, f := range r.gate.Policy.Dangerous(req) {
			cfg.Approved = append(cfg.Approved, f.Resolved, f.Given)
		}
	}
	if a := g.Approver; a != nil { // the call's approver (ExecWith), else the Runtime's
		cfg.Ask = func(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error) {
			p.Request.Environment = ceiling.Shell
			grant, err := a.Approve(ctx, p)
			return grant, err
		}
	}
	return guard.New(cfg)
}

// shellConfinement is the kernel confinement of a @shell call, in one of
// two tiers (nil: none).
//
// The read-only tier: a command that nobody approved as such — judged
// read-only, whatever layer then let it run (the read-only detection, an
// allow rule, a grant, the mode) — runs under Landlock, which sees what
// the interpreter does not (find -exec, xargs, what git starts), reading
// all but the dangerous paths and writing nothing. pre is
// prewarmConfinement's Confinement for this call (or nil): taken when the
// decision confines the call so, its ruleset then already under way.
//
// The workspace tier: everything else that runs — a person's approval of
// this very call, a grant or an allow rule of a command that is not
// read-only, the mode, a capability (approved by digest) — runs with
// what the person approved in mind but not everything they own: it reads
// all but the dangerous paths, writes the project but its protected paths
// (.git/config, hooks, .envrc…: bound read-only), its own temporary
// directory and the settings' writable directories, and keeps the
// network (shell.WorkspaceConfinement). What it starts inherits it.
// "shell": {"sandbox": "off"} in the user or managed settings runs them
// with the person's full rights instead; where the kernel cannot give the
// tier, they run so with a note, or, with "required", not at all.
//
// Where the kernel cannot confine, the read-only tier is not given
// either: the policy then asks for the read-only commands that only the
// kernel could contain (PolicyConfig Unconfined), and the Guard still
// checks every program.
//
// An error (of class ErrUnavailable) when the tier is "required" and
// cannot be given: nothing may run.
func (r *Runtime) shellConfinement(pol *permission.Policy, req *permission.Request, inv *Invocation, d *permission.Decision, pre *shell.Confinement) (*shell.Confinement, error) {
	if d.Unconfined { // a person chose to run this one call outside the tier (Gate.Resolve: Once only)
		return nil, nil
	}
	if d.Layer != permission.LayerApprover && inv.Capability == nil && (pol == nil || pol.ReadOnlyCall(req)) {
		if pre != nil {
			return pre, nil
		}
		if c := r.prewarmConfinement(inv); c != nil {
			return c, nil
		}
	}
	sandbox, by, writable := r.shellSandbox()
	if sandbox == permission.SandboxOff {
		return nil, nil
	}
	fail := func(why string) (*shell.Confinement, error) {
		if sandbox == permission.SandboxRequired {
			return nil, fmt.Errorf("not run: %s, and %s says \"shell\": {\"sandbox\": \"required\"}: %w", why, by, ErrUnavailable)
		}
		d.Diagnostics = append(d.Diagnostics, "runs unconfined: "+why)
		return nil, nil
	}
	if _, err := shell.ConfineAvailable(); err != nil {
		return fail(fmt.Sprintf("the workspace sandbox is not available here (%v)", err))
	}
	c := pre
	if c == nil || c.Sweep == "" { // none, or the read-only tier's
		var err error
		if c, _, err = r.workspaceConfinement(inv, writable, nil); err != nil {
			// not the kernel's lack but the project's shape (a protected
			// path that is a symbolic link, which a committed file can be):
			// running unconfined would let a repository turn the tier off
			return nil, fmt.Errorf("not run: the workspace sandbox cannot be built (%v): %w", err, ErrUnavailable)
		}
	}
	if c.Partial() {
		d.Diagnostics = append(d.Diagnostics, "the workspace sandbox searched the first 50000 names of the project: protected and secret paths deeper were not found")
	}
	return c, nil
}

// ShellSandboxNotes says, for the Outcome of a @shell call that Check
// (or Exec) returned, what of its sandbox tier this machine does not give,
// one sentence each, each naming the guarantee that is missing: the
// read-only tier for a call the gate lets run unasked as read-only, the
// workspace tier for one a person, a grant, a rule or the mode lets run
// (a call asked for is judged as the person's approval would run it).
// Nil when the tier holds in full, for another environment, and where
// "shell": {"sandbox": "off"} runs approved calls outside any tier (said
// so). What `ccrun check` prints as its kernel lines.
func (r *Runtime) ShellSandboxNotes(o *Outcome) []string {
	if o == nil || o.Request == nil || o.Request.Tool != keys.ShellTool || o.Decision == nil {
		return nil
	}
	d := o.Decision
	if d.Layer != permission.LayerApprover && d.Verdict != permission.AskUser && r.gate.Policy != nil && r.gate.Policy.ReadOnlyCall(o.Request) {
		return shell.MissingGuarantees(false)
	}
	sandbox, by, _ := r.shellSandbox()
	if sandbox == permission.SandboxOff {
		return []string{"the workspace tier: " + by + " says \"shell\": {\"sandbox\": \"off\"}: an approved command runs with all of the person's rights"}
	}
	return shell.MissingGuarantees(true)
}

// workspaceConfinement is shell.WorkspaceConfinement for inv's project,
// its ruleset preparing beside the search when script may need it
// (shell.WarmWorkspace; nil: none).
//
// A project's .ccrun is made first (as the audit log would make it): it
// is a protected path, so it must exist to be bound read-only, and what
// ccrun itself writes there during the call (the audit log) is then no
// path the command made, for the sweep to remove.
func (r *Runtime) workspaceConfinement(inv *Invocation, writable []string, script *syntax.File) (*shell.Confinement, bool, error) {
	home, _ := os.UserHomeDir()
	project := r.dir
	if project == "" {
		project = inv.Dir
	}
	if dot := filepath.Join(r.dir, dotccrun.Name); r.dir != "" && (projectdir.Marked(r.dir) || r.auditLog == filepath.Join(dot, "audit.jsonl")) {
		if err := dotccrun.Mkdir(dot, 0o700); err != nil {
			return nil, false, err
		}
	}
	return shell.WarmWorkspace(home, project, writable, script)
}

// prewarmConfinement returns the confinement a @shell call gets if the
// gate lets it run without a person's approval of this very call — a
// read-only command that is no capability — with its ruleset building in
// the background (Warm); nil for a call that would never be confined.
// Called before the gate decides, so that the build overlaps the gate's
// work: the ruleset is the same whenever it is built (its fields come from
// the project, the home and the call's directory alone), and one no run
// takes is closed once the Confinement is garbage.
func (r *Runtime) prewarmConfinement(inv *Invocation) *shell.Confinement {
	if inv == nil || inv.Capability != nil || inv.Command == nil || inv.Command.File == nil {
		return nil
	}
	if _, err := shell.ConfineAvailable(); err != nil {
		return nil
	}
	if _, ro := shellcmd.ReadOnly(inv.Command.File); !ro {
		// likely to run in the workspace tier, once approved: its ruleset
		// starts now, beside the search of the project and the gate
		// (Discard if not taken)
		if sandbox, _, writable := r.shellSandbox(); sandbox != permission.SandboxOff && shell.MayOpen(inv.Command.File) {
			if c, _, err := r.workspaceConfinement(inv, writable, inv.Command.File); err == nil {
				return c
			}
		}
		return nil
	}
	if !shell.MayOpen(inv.Command.File) {
		// Builtins only, no redirection: no ruleset is ever built, and the
		// table of dangerous paths is not read. Should the script start a
		// program or open a file after all, the ruleset hides everything.
		return shell.SealedConfinement()
	}
	home, _ := os.UserHomeDir()
	c := shell.ReadOnlyConfinement(home, r.dir, inv.Dir)
	c.Warm(inv.Command.File)
	return c
}
