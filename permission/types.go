package permission

import (
	"context"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// The errors of this package are of the root's classes: the gate's
// refusals of ccrun.ErrPermissionDenied (errdefs.ErrPermissionDenied), a
// malformed settings file or allowlist of ccrun.ErrInvalidConfig. Test
// them with errors.Is against those.

// Permission is what a tool call asks for: None (a call with no side
// effects, never asked) or Ask(key). The zero Permission is None.
type Permission struct {
	key keys.Key
	ask bool
}

// None is the permission of a call with no side effects.
func None() Permission { return Permission{} }

// Ask is the permission of a call that must be allowed under key k.
func Ask(k keys.Key) Permission { return Permission{key: k, ask: true} }

// IsNone reports whether p is None.
func (p Permission) IsNone() bool { return !p.ask }

// Key returns the key p asks under; the zero Key for None.
func (p Permission) Key() keys.Key { return p.key }

// Class is what kind of effect a tool has: the columns of the mode × class
// matrix (Mode; docs/policy.md, "Modes × classes").
type Class string

// The classes. Unknown is treated as the most dangerous.
const (
	ClassRead     Class = "read"     // reads, changes nothing
	ClassInternal Class = "internal" // ccrun's own bookkeeping (todos, sub-agent research)
	ClassWrite    Class = "write"    // writes files
	ClassExec     Class = "exec"     // runs code: shell commands, capabilities
	ClassNetwork  Class = "network"  // reaches the network
	ClassUnknown  Class = "unknown"  // anything not declared
)

// Directive narrows what one call or turn may do, whatever the mode
// (docs/policy.md, "Directives, scopes, sub-agents"). The zero Directive
// narrows nothing.
type Directive string

// The directives.
const (
	DirectiveNone     Directive = ""
	DirectiveReadOnly Directive = "read-only"
	DirectivePlanOnly Directive = "plan-only"
	DirectiveAnalyze  Directive = "analyze-only"
	DirectiveNoEdit   Directive = "do-not-edit"
)

// Directives lists the directives a call may name. The gate reads any
// other as allowing only reads; a front end refuses it.
var Directives = []Directive{DirectiveReadOnly, DirectivePlanOnly, DirectiveAnalyze, DirectiveNoEdit}

// Request is one call put before the gate.
type Request struct {
	Tool        string              // the tool's name: run_command, write_file, or a capability's name
	Environment ceiling.Environment // where the call would run
	Permission  Permission          // None, or Ask(key)
	Class       Class               // what kind of effect it has; "" is ClassUnknown
	// Command is the parsed shell command for run_command calls; nil otherwise.
	Command *Command
	// Paths are the file paths the call names (tool arguments, mounts), as given.
	Paths []string
	// Digest is the content digest of what runs (a capability's manifest
	// and artifact, a module); grants are bound to it. Empty: not bound.
	Digest string
	// Loosens lists what the call loosens from the sandbox's defaults
	// (e.g. "network: bridge"), for the person asked.
	Loosens []string
	// Widens, when set, says why the call carries a loosening of its own
	// that no grant binds (hosts the caller adds to the network lists): the
	// gate then asks, Once, whatever a grant, rule or mode says, and
	// refuses with nobody to ask.
	Widens string
	// Directive narrows this call.
	Directive Directive
	// Display is what to show a person for this call (the command, the
	// arguments); the approver escapes it.
	Display string
	// Env is what the call adds to the tool's environment (KEY=VALUE). It
	// is part of the decision (a variable that changes what programs run
	// makes a command non-read-only), of the prompt and of the audit line.
	Env []string
	// Args are the call's positional arguments: $1… of a command, argv[1:]
	// of a module, the container's command. Part of the decision (each is
	// checked as a path), of the prompt and of the audit line.
	Args []string
	// Dir is the working directory of a @shell call on the host; empty:
	// the project root.
	Dir string
	// Stdin says where the call's standard input comes from, when it is a
	// file or the call's input ("file /x", "input"); empty: none or the
	// caller's stream.
	Stdin string
	// Mounts describe the call's mounts for the person asked, one line
	// each: the source as given and where it really points, the guest
	// path, ro or rw, the protected paths it may change.
	Mounts []string
	// Dangerous are dangerous paths the caller found itself (a mount that
	// holds the home directory, a protected path a manifest lets a sandbox
	// write): the gate's step 5 counts them with what it finds, so the call
	// is asked and only Once is offered.
	Dangerous []shellcmd.Finding
}

// Layer names the step of the gate that decided (Gate lists the steps).
type Layer string

// The layers, in the gate's order.
const (
	LayerScope     Layer = "scope"
	LayerDenyRule  Layer = "deny-rule"
	LayerDirective Layer = "directive"
	LayerNone      Layer = "none-permission"
	LayerDangerous Layer = "dangerous-path"
	LayerWidens    Layer = "widens"
	LayerProject   Layer = "project"
	LayerSession   Layer = "session"
	LayerAllowRule Layer = "allow-rule"
	LayerAskRule   Layer = "ask-rule"
	LayerMode      Layer = "mode"
	LayerReadOnly  Layer = "read-only"
	LayerApprover  Layer = "approver"
)

// Verdict is the gate's answer.
type Verdict string

// The verdicts.
const (
	Allow   Verdict = "allow"
	AskUser Verdict = "ask"
	Refuse  Verdict = "deny"
)

// Decision is what the gate decided, and why.
type Decision struct {
	Verdict Verdict  `json:"verdict"`
	Key     keys.Key `json:"key"`   // the key asked under (zero for None)
	Layer   Layer    `json:"layer"` // the step that decided
	Reason  string   `json:"reason"`
	// Rule is the rule or allowlist entry that decided, as written, if any.
	Rule string `json:"rule,omitempty"`
	// Grant is what the approver chose, when one was asked.
	Grant ceiling.Grant `json:"grant,omitempty"`
	// Offer is the highest grant that may be offered when asking
	// (Once for dangerous paths, the environment's ceiling otherwise).
	Offer ceiling.Grant `json:"offer"`
	// Diagnostics are problems found on the way that did not decide but
	// must be shown: ceiling violations, expired or outdated grants.
	Diagnostics []string `json:"diagnostics,omitempty"`
	// Warnings are short notes for the person asked (destructive forms);
	// they never change the decision.
	Warnings []string `json:"warnings,omitempty"`
	// OfferUnconfined says that the person asked may also choose to run
	// this very call once outside the sandbox the caller would run it in
	// (the Runtime's workspace tier of an approved @shell command), as a
	// choice of its own: Gate.Sandboxed said so, at an ask. An approver
	// offers it only through UnconfinedApprover. Default false: every
	// approval runs the call in its sandbox.
	OfferUnconfined bool `json:"offer_unconfined,omitempty"`
	// Unconfined says that the person asked chose to run this call once
	// outside its sandbox (UnconfinedApprover); Grant is then Once. Only
	// Gate.Resolve sets it, for the one call asked about: a session or
	// project grant, an allow rule, the mode and Decide never do.
	Unconfined bool `json:"unconfined,omitempty"`
}

// Allowed reports whether the call may run.
func (d *Decision) Allowed() bool { return d.Verdict == Allow }

// Prompt is what an approver is shown.
type Prompt struct {
	Request  *Request
	Decision *Decision // Verdict AskUser; Offer bounds the choices
}

// Approver answers an ask: a terminal prompt, an MCP client, a callback,
// a policy. It returns the grant chosen (Deny to refuse). An error means
// nobody could answer; the gate then denies.
type Approver interface {
	Approve(ctx context.Context, p *Prompt) (ceiling.Grant, error)
}

// UnconfinedApprover is an Approver that can also answer "run this call
// once outside the sandbox". The gate calls ApproveUnconfined instead of
// Approve when the decision offers it (Decision.OfferUnconfined), and
// Approve otherwise, so an approver that cannot show the choice as one of
// its own (a wrapper that knows only Approve, an ApproverFunc) never
// gives it. unconfined is true only for the person's explicit choice of
// it, with Once: any other grant with it is refused by the gate, and
// nothing runs.
type UnconfinedApprover interface {
	Approver
	ApproveUnconfined(ctx context.Context, p *Prompt) (g ceiling.Grant, unconfined bool, err error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, p *Prompt) (ceiling.Grant, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, p *Prompt) (ceiling.Grant, error) {
	return f(ctx, p)
}
