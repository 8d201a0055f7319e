package ccrun

import (
	"context"
	"fmt"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
)

// decide puts req before g and resolves the decision (asking the approver
// when it says ask). For a call whose content must be fetched first
// (Prepared.Fetch: an image that is not local), nothing is fetched before
// the call is allowed: allowed by a rule or a mode, it is fetched and
// decided again on what arrived (a kept grant is bound to content, never
// to what is not here yet); asked about, it is fetched once the person
// said yes and before the grant is kept, so that the grant is bound to what
// arrived. awaiting is told when a person is about to be asked. The error
// is the gate's refusal, or why what was allowed could not be fetched.
func (r *Runtime) decide(ctx context.Context, g *permission.Gate, req *permission.Request, inv *Invocation, p *Prepared, awaiting func(*permission.Decision)) (*permission.Decision, error) {
	d := g.Decide(req)
	if p != nil && p.Fetch != "" && d.Verdict == permission.Allow {
		if err := r.fetch(ctx, req, inv, p); err != nil {
			return d, err
		}
		d = g.Decide(req) // on what arrived: a grant bound to another image asks again
	}
	if d.Verdict == permission.AskUser && g.Approver != nil {
		awaiting(d)
	}
	if p == nil || p.Fetch == "" || d.Verdict != permission.AskUser || g.Approver == nil {
		return g.Resolve(ctx, req, d)
	}
	fa := &fetchingApprover{Approver: g.Approver, fetch: func(ctx context.Context) error { return r.fetch(ctx, req, inv, p) }, rebound: !p.Unbound}
	fg := *g
	fg.Approver = fa
	d, err := fg.Resolve(ctx, req, d)
	if fa.err != nil {
		d.Verdict, d.Grant = permission.Refuse, ceiling.Deny
		d.Reason = "allowed by the person asked, but what runs could not be fetched: " + fa.err.Error()
		return d, fa.err
	}
	return d, err
}

// fetchingApprover asks its Approver, and on a yes fetches what runs
// before it hands the grant back to the gate, which then keeps the grant
// bound to what arrived. When the person was shown a copy that was here
// (rebound) and another one arrived, they are asked again about it.
type fetchingApprover struct {
	permission.Approver
	fetch   func(context.Context) error
	rebound bool
	err     error // why the fetch failed
}

// Approve implements permission.Approver.
func (a *fetchingApprover) Approve(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	grant, err := a.Approver.Approve(ctx, p)
	if err != nil || grant == ceiling.Deny {
		return grant, err
	}
	shown := p.Request.Digest
	if err := a.fetch(ctx); err != nil {
		a.err = err
		return ceiling.Deny, fmt.Errorf("fetch: %w", err)
	}
	if a.rebound && p.Request.Digest != shown {
		// what arrived is not what the person saw: ask about it
		return a.Approver.Approve(ctx, p)
	}
	return grant, nil
}
