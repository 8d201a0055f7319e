package ccrun_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// fetchy is a backend whose content is never here: Bind says it must be
// fetched, and Fetch fails when told to.
type fetchy struct {
	fetches, runs atomic.Int32
	fail          error
}

func (f *fetchy) Prepare(_ context.Context, inv *ccrun.Invocation) (*ccrun.Prepared, error) {
	return &ccrun.Prepared{Key: keys.Key{Tool: "run_fetchy", Action: "x"}, Display: "x",
		Digest: ccrun.ContentDigest([]byte(inv.Target), nil, "", nil, nil)}, nil
}

func (f *fetchy) Bind(_ context.Context, _ *ccrun.Invocation, p *ccrun.Prepared) error {
	p.Fetch, p.Unbound = "not here: fetched once allowed", true
	return nil
}

func (f *fetchy) Fetch(_ context.Context, _ *ccrun.Invocation, p *ccrun.Prepared) error {
	f.fetches.Add(1)
	if f.fail != nil {
		return f.fail
	}
	p.Digest = ccrun.ContentDigest([]byte("arrived"), nil, "", nil, nil)
	return nil
}

func (f *fetchy) Run(context.Context, *ccrun.Invocation) (*job.Result, error) {
	f.runs.Add(1)
	return &job.Result{Reason: job.Exit}, nil
}

// TestFetchAfterTheDecision: what a Binder must fetch is fetched only once
// the call is allowed — never for a call refused or not yet answered — and
// a fetch that fails after the person said yes refuses the call, saying
// why, and runs nothing; allowed by a rule, it is fetched without asking.
func TestFetchAfterTheDecision(t *testing.T) {
	t.Parallel()
	env := ceiling.Environment("@fetchy")
	var asked atomic.Int32
	var fetchesAtAsk atomic.Int32
	f := &fetchy{}
	approver := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		asked.Add(1)
		fetchesAtAsk.Store(f.fetches.Load())
		if !strings.Contains(p.Request.Display, "not here") {
			t.Errorf("asked about %q, want what is fetched said", p.Request.Display)
		}
		return ceiling.Once, nil
	})
	mk := func(opts ...ccrun.Option) *ccrun.Runtime {
		rt, err := ccrun.New(append([]ccrun.Option{ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""),
			ccrun.WithBackend(env, ceiling.AlwaysThisSession, func(context.Context) (ccrun.Backend, error) { return f, nil })}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		return rt
	}
	call := &ccrun.Call{Environment: env, Target: "x"}
	ctx := context.Background()

	if _, err := mk().Exec(ctx, call); !errors.Is(err, ccrun.ErrPermissionDenied) || f.fetches.Load() != 0 {
		t.Fatalf("nobody to ask: %v, fetched %d times; want denied, nothing fetched", err, f.fetches.Load())
	}
	if _, err := mk().Check(context.Background(), call); err != nil || f.fetches.Load() != 0 {
		t.Fatalf("Check: %v, fetched %d times", err, f.fetches.Load())
	}

	f.fail = errors.New("registry says no")
	out, err := mk(ccrun.WithApprover(approver)).Exec(ctx, call)
	if err == nil || !strings.Contains(err.Error(), "registry says no") || f.runs.Load() != 0 || fetchesAtAsk.Load() != 0 || f.fetches.Load() != 1 {
		t.Fatalf("fetch fails after yes: %v, ran %d, fetched %d (%d before the answer)", err, f.runs.Load(), f.fetches.Load(), fetchesAtAsk.Load())
	}
	if d := out.Decision; d.Verdict != permission.Refuse || !strings.Contains(d.Reason, "could not be fetched") {
		t.Fatalf("fetch fails after yes: decision %+v", d)
	}

	f.fail = nil
	allow, err := permission.FlagSettings("", []string{"run_fetchy:*"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := asked.Load()
	if _, err := mk(ccrun.WithApprover(approver), ccrun.WithSettings(allow)).Exec(ctx, call); err != nil || asked.Load() != n || f.runs.Load() != 1 {
		t.Fatalf("allowed by a rule: %v, asked %d more, ran %d", err, asked.Load()-n, f.runs.Load())
	}
}
