package permission

import (
	"context"
	"fmt"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/containerd/errdefs"
)

// Gate decides whether calls may run. It runs this order (the README's
// "The gate" says it for users), first match wins:
//
//  1. scope: a tool outside the caller's scope is denied;
//  2. deny rules, from every settings layer; where text handed to
//     another shell may be read unlike mvdan/sh reads it, a run_command
//     deny rule can neither match nor not: asked, Once only;
//  3. the directive and plan mode: anything but read is denied;
//  4. Permission None: allowed;
//  5. dangerous paths: always asked, and only Once is offered; so is a
//     request whose Widens is set (a loosening the call carries that no
//     grant is bound to);
//  6. the project allowlist, with the ceiling checked again: a @shell key
//     found there is a ceiling violation, reported and never an allow;
//  7. the session allowlist, with expiry;
//  8. allow and ask rules, read-only command detection, mode × class;
//  9. the approver; with none, a deny. Where Sandboxed says the call
//     runs in a sandbox, the person may also run it once outside it
//     (UnconfinedApprover), and that choice is never a lasting grant.
//
// Steps 1, 2, 3, 5 and 8 are the Policy's; a nil Policy has no rules and
// the default mode. A Gate is safe for concurrent use when its Approver is.
type Gate struct {
	Project  *allowlist.ProjectAllowlist // nil: none
	Session  *allowlist.SessionAllowlist // nil: none; a session grant is then kept for the call only
	Policy   *Policy                     // nil: no rules, default mode
	Approver Approver                    // nil: nobody can be asked, so every ask is a deny
	// Now is the clock for expiry; nil is time.Now.
	Now func() time.Time
	// Sandboxed reports whether req, once a person allows it, runs in a
	// sandbox that the person may lift for that one call (the Runtime's
	// workspace tier of an approved @shell command): Decide then offers
	// the choice at an ask (Decision.OfferUnconfined). Nil: no call does,
	// and the choice is never offered.
	Sandboxed func(req *Request) bool
	// Environments are the environments the gate decides calls of, with
	// their ceilings: a request of any other is refused. The zero Set: the
	// built-in ones only.
	Environments ceiling.Set
}

// defaultPolicy is the policy of a Gate without one: default mode, no rules.
var defaultPolicy, _ = NewPolicy(PolicyConfig{})

// DefaultPolicy is the policy a Gate uses when it has none: the default
// mode, no rules, the working directory as the project.
func DefaultPolicy() *Policy { return defaultPolicy }

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Decide runs steps 1 to 8 and says allow, deny or ask, without asking
// anyone and without changing anything. It is what `ccrun check` prints.
func (g *Gate) Decide(req *Request) *Decision {
	if req.Class == "" {
		req.Class = ClassUnknown
	}
	pol := g.Policy
	if pol == nil {
		pol = defaultPolicy
	}
	key := req.Permission.Key()
	d := &Decision{Key: key, Offer: g.Environments.Of(req.Environment)}
	decide := func(v Verdict, l Layer, rule, reason string) *Decision {
		d.Verdict, d.Layer, d.Rule, d.Reason = v, l, rule, reason
		d.OfferUnconfined = v == AskUser && g.Sandboxed != nil && g.Sandboxed(req)
		return d
	}
	if err := g.Environments.Require(req.Environment); err != nil {
		return decide(Refuse, LayerScope, "", err.Error())
	}
	if why, ok := pol.InScope(req); !ok {
		return decide(Refuse, LayerScope, "", why)
	}
	in := &inside{req: req} // one reading of req for every step
	if rule, ok := pol.denyRule(in); ok {
		return decide(Refuse, LayerDenyRule, rule, "denied by rule "+rule)
	}
	if why, ok := pol.restricted(in); ok {
		return decide(Refuse, LayerDirective, "", why)
	}
	if rule, why, ok := pol.denyUnsure(in); ok {
		d.Offer = ceiling.Once
		return decide(AskUser, LayerDenyRule, rule, why)
	}
	d.Warnings = in.Warnings()
	if req.Permission.IsNone() {
		return decide(Allow, LayerNone, "", "the tool has no side effects (permission None)")
	}
	if found := dangerousPaths(in, pol.projectDir, pol.home); len(found) > 0 {
		d.Offer = ceiling.Once
		return decide(AskUser, LayerDangerous, "", "touches a dangerous path: "+found[0].String())
	}
	if req.Widens != "" {
		d.Offer = ceiling.Once
		return decide(AskUser, LayerWidens, "", req.Widens)
	}
	now := g.now()
	if g.Project != nil {
		m := g.Project.Lookup(key, req.Digest, now)
		d.Diagnostics = append(d.Diagnostics, m.Problems...)
		if m.OK {
			if err := g.Environments.Check(req.Environment, key.String(), m.Entry.Grant); err != nil {
				d.Diagnostics = append(d.Diagnostics, fmt.Sprintf("%v (entry %s in %s is ignored; remove it)", err, m.Entry.Pattern, g.Project.Path()))
			} else {
				return decide(Allow, LayerProject, m.Entry.Pattern.String(), "allowed for this project")
			}
		}
	}
	if g.Session != nil {
		m := g.Session.Lookup(key, req.Digest, now)
		d.Diagnostics = append(d.Diagnostics, m.Problems...)
		if m.OK {
			return decide(Allow, LayerSession, m.Entry.Pattern.String(), "allowed for this session")
		}
	}
	v, layer, why := pol.decide(in)
	rule := ""
	if layer == LayerAskRule || layer == LayerAllowRule {
		rule, why = why, "rule "+why
	}
	return decide(v, layer, rule, why)
}

// Authorize decides, asks the approver when the decision is ask, and keeps
// the grant the person chose. It returns the final decision (allow or
// deny). A deny comes with an error of class ccrun.ErrPermissionDenied; a person
// choosing AlwaysThisProject for a key whose environment cannot reach it
// also gets a *ceiling.Violation (errors.As), and the call is denied.
func (g *Gate) Authorize(ctx context.Context, req *Request) (*Decision, error) {
	return g.Resolve(ctx, req, g.Decide(req))
}

// Resolve finishes what Decide started: for an ask it asks the approver and
// keeps the grant, as Authorize does. d must be Decide's answer for req.
//
// When d offers it (OfferUnconfined) and the approver is an
// UnconfinedApprover, the person may choose to run the call once outside
// its sandbox: d.Unconfined is then set, with the grant Once. The choice
// with any other grant is refused (a *UnconfinedError), and nothing runs.
func (g *Gate) Resolve(ctx context.Context, req *Request, d *Decision) (*Decision, error) {
	d.Unconfined = false // only the answer below sets it
	switch d.Verdict {
	case Allow:
		return d, nil
	case Refuse:
		return d, &DeniedError{Decision: d}
	}
	if g.Approver == nil {
		d.Verdict, d.Layer = Refuse, LayerApprover
		d.Reason = "nobody to ask (" + d.Reason + ")"
		return d, &DeniedError{Decision: d}
	}
	var (
		grant      ceiling.Grant
		unconfined bool
		err        error
	)
	p := &Prompt{Request: req, Decision: d}
	if ua, ok := g.Approver.(UnconfinedApprover); ok && d.OfferUnconfined {
		grant, unconfined, err = ua.ApproveUnconfined(ctx, p)
	} else {
		grant, err = g.Approver.Approve(ctx, p)
	}
	d.Layer = LayerApprover
	if err != nil {
		d.Verdict, d.Grant = Refuse, ceiling.Deny
		d.Reason = fmt.Sprintf("nobody answered: %v", err)
		return d, &DeniedError{Decision: d, Err: err}
	}
	d.Grant = grant
	if grant == ceiling.Deny {
		d.Verdict, d.Reason = Refuse, "denied by the person asked"
		return d, &DeniedError{Decision: d}
	}
	if unconfined && grant != ceiling.Once {
		uerr := &UnconfinedError{Grant: grant}
		d.Verdict, d.Reason = Refuse, uerr.Error()
		d.Diagnostics = append(d.Diagnostics, uerr.Error())
		return d, &DeniedError{Decision: d, Err: uerr}
	}
	if grant > d.Offer {
		verr := g.Environments.Check(req.Environment, d.Key.String(), grant)
		if verr == nil { // within the ceiling, but past what was offered (dangerous path)
			verr = fmt.Errorf("%s was not offered for %s: only %s is", grant, d.Key, d.Offer)
		}
		d.Verdict, d.Reason = Refuse, verr.Error()
		d.Diagnostics = append(d.Diagnostics, verr.Error())
		return d, &DeniedError{Decision: d, Err: verr}
	}
	d.Verdict = Allow
	switch {
	case unconfined:
		d.Unconfined = true
		d.Reason = "allowed once, outside the sandbox, by the person asked"
	case grant == ceiling.Once:
		d.Reason = "allowed once by the person asked"
	case grant == ceiling.AlwaysThisSession:
		d.Reason = "allowed for this session by the person asked"
		if g.Session == nil {
			d.Diagnostics = append(d.Diagnostics, "no session is open, so the grant lasts for this call only (start one with `ccrun session start`)")
		} else if err := g.Session.Add(allowlist.Entry{Pattern: keys.PatternOf(d.Key), Grant: grant, Expiry: allowlist.Never, Digest: req.Digest}); err != nil {
			d.Diagnostics = append(d.Diagnostics, fmt.Sprintf("the session grant could not be kept: %v", err))
		}
	case grant == ceiling.AlwaysThisProject:
		d.Reason = "allowed for this project by the person asked"
		if g.Project == nil {
			d.Diagnostics = append(d.Diagnostics, "no project allowlist is open, so the grant lasts for this call only")
		} else if err := g.Project.Add(allowlist.Entry{Pattern: keys.PatternOf(d.Key), Grant: grant, Expiry: allowlist.Never, Digest: req.Digest, Environment: req.Environment}); err != nil {
			d.Diagnostics = append(d.Diagnostics, fmt.Sprintf("the project grant could not be kept: %v", err))
		}
	}
	return d, nil
}

// UnconfinedError is why an approver's answer was refused when it chose to
// run a call outside its sandbox with a grant other than Once: that choice
// is for one call, never a lasting grant.
type UnconfinedError struct {
	Grant ceiling.Grant // what the approver answered with it
}

// Error says that running outside the sandbox is for one call only.
func (e *UnconfinedError) Error() string {
	return fmt.Sprintf("running a call outside the sandbox is for this one call only (once), not %s", e.Grant)
}

// DeniedError is the error of a call the gate did not allow. It is of class
// ccrun.ErrPermissionDenied, and unwraps to the cause (a ceiling violation, the
// approver's failure) when there is one.
type DeniedError struct {
	Decision *Decision
	Err      error
}

// Error names the denied key, the gate's step and its reason, then the
// cause if there is one.
func (e *DeniedError) Error() string {
	msg := fmt.Sprintf("permission denied: %s (%s: %s)", e.Decision.Key, e.Decision.Layer, e.Decision.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ccrun.ErrPermissionDenied and the cause.
func (e *DeniedError) Unwrap() []error {
	if e.Err == nil {
		return []error{errdefs.ErrPermissionDenied}
	}
	return []error{errdefs.ErrPermissionDenied, e.Err}
}
