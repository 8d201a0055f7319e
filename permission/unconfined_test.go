package permission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/containerd/errdefs"
)

// unconfinedAnswer is an UnconfinedApprover that always answers g with
// unconfined u, and records which method the gate called.
type unconfinedAnswer struct {
	g                ceiling.Grant
	u                bool
	plain, offered   int
	lastOfferedWhile bool
}

func (a *unconfinedAnswer) Approve(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	a.plain++
	return a.g, nil
}

func (a *unconfinedAnswer) ApproveUnconfined(_ context.Context, p *permission.Prompt) (ceiling.Grant, bool, error) {
	a.offered++
	a.lastOfferedWhile = p.Decision.OfferUnconfined
	return a.g, a.u, nil
}

func shellOnly(req *permission.Request) bool { return req.Environment == ceiling.Shell }

// Running a call outside its sandbox is the person's choice for one call:
// with Once it is kept in the decision; with a lasting grant the answer is
// refused, nothing is stored, and nothing runs.
func TestUnconfinedOnceOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		grant          ceiling.Grant
		wantVerdict    permission.Verdict
		wantUnconfined bool
	}{
		{"once", ceiling.Once, permission.Allow, true},
		{"session", ceiling.AlwaysThisSession, permission.Refuse, false},
		{"project", ceiling.AlwaysThisProject, permission.Refuse, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &unconfinedAnswer{g: tc.grant, u: true}
			s := allowlist.NewSessionAllowlist()
			g := &permission.Gate{Session: s, Approver: a, Sandboxed: shellOnly}
			d, err := g.Authorize(context.Background(), shellReq("run_command:make:test"))
			if a.offered != 1 || a.plain != 0 || !a.lastOfferedWhile {
				t.Fatalf("ApproveUnconfined called %d times, Approve %d (offered %v); want the first once, offered", a.offered, a.plain, a.lastOfferedWhile)
			}
			if d.Verdict != tc.wantVerdict || d.Unconfined != tc.wantUnconfined {
				t.Fatalf("got %s unconfined=%v (%s), want %s unconfined=%v", d.Verdict, d.Unconfined, d.Reason, tc.wantVerdict, tc.wantUnconfined)
			}
			if tc.wantVerdict == permission.Refuse {
				var ue *permission.UnconfinedError
				if !errors.Is(err, errdefs.ErrPermissionDenied) || !errors.As(err, &ue) || ue.Grant != tc.grant {
					t.Fatalf("err %v; want ErrPermissionDenied and an UnconfinedError of %s", err, tc.grant)
				}
				if m := s.Lookup(d.Key, "", time.Now()); m.OK {
					t.Fatalf("the refused answer was kept as a session grant: %+v", m.Entry)
				}
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A session grant never carries the unconfined choice: the next call it
// allows is not unconfined, and nobody is asked.
func TestUnconfinedNeverFromSessionGrant(t *testing.T) {
	t.Parallel()
	a := &unconfinedAnswer{g: ceiling.AlwaysThisSession}
	g := &permission.Gate{Session: allowlist.NewSessionAllowlist(), Approver: a, Sandboxed: shellOnly}
	d, err := g.Authorize(context.Background(), shellReq("run_command:make:test"))
	if err != nil || d.Unconfined || d.Grant != ceiling.AlwaysThisSession {
		t.Fatalf("first: %+v, %v", d, err)
	}
	d, err = g.Authorize(context.Background(), shellReq("run_command:make:test"))
	if err != nil || d.Layer != permission.LayerSession || d.Unconfined || d.OfferUnconfined {
		t.Fatalf("second: layer %s unconfined=%v offer=%v, %v; want the session's, confined", d.Layer, d.Unconfined, d.OfferUnconfined, err)
	}
	// A decision that comes in allowed with the flag set (tampered) is
	// not unconfined either.
	d.Unconfined = true
	if d, _ = g.Resolve(context.Background(), shellReq("run_command:make:test"), d); d.Unconfined {
		t.Fatal("Resolve kept Unconfined on an allow it did not ask about")
	}
	if a.offered+a.plain != 1 {
		t.Fatalf("asked %d times, want once", a.offered+a.plain)
	}
}

// The choice is offered only where Gate.Sandboxed says the call runs in a
// sandbox, and only at an ask; elsewhere the gate calls Approve, so an
// approver cannot answer it.
func TestUnconfinedOfferedOnlyWhereSandboxed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		sandboxed func(*permission.Request) bool
		req       *permission.Request
	}{
		{"no Sandboxed", nil, shellReq("run_command:make:test")},
		{"not sandboxed", func(*permission.Request) bool { return false }, shellReq("run_command:make:test")},
		{"a @wasm call", shellOnly, wasmReq("run_wasm:x.wasm", digestA)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &unconfinedAnswer{g: ceiling.Once, u: true}
			g := &permission.Gate{Approver: a, Sandboxed: tc.sandboxed}
			d, err := g.Authorize(context.Background(), tc.req)
			if err != nil || d.Unconfined || d.OfferUnconfined || a.offered != 0 || a.plain != 1 {
				t.Fatalf("unconfined=%v offer=%v, ApproveUnconfined %d, Approve %d, %v; want Approve alone, confined",
					d.Unconfined, d.OfferUnconfined, a.offered, a.plain, err)
			}
		})
	}
	// An allow rule's decision offers nothing.
	flags, err := permission.FlagSettings("", []string{"run_command:make"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := permission.NewPolicy(permission.PolicyConfig{Layers: []*permission.Settings{flags}})
	if err != nil {
		t.Fatal(err)
	}
	g := &permission.Gate{Policy: pol, Sandboxed: shellOnly}
	if d := g.Decide(shellReq("run_command:make:test")); d.Verdict != permission.Allow || d.OfferUnconfined {
		t.Fatalf("allow rule: %s offer=%v", d.Verdict, d.OfferUnconfined)
	}
	// An approver that knows only Approve (an ApproverFunc) is never
	// asked for it, and its Once is confined.
	g = &permission.Gate{Sandboxed: shellOnly, Approver: permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
		return ceiling.Once, nil
	})}
	if d, err := g.Authorize(context.Background(), shellReq("run_command:make:test")); err != nil || !d.OfferUnconfined || d.Unconfined {
		t.Fatalf("ApproverFunc: offer=%v unconfined=%v %v; want offered, not taken", d.OfferUnconfined, d.Unconfined, err)
	}
}
