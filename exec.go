package ccrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ccrun/ccrun/internal/audit"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
)

// Outcome is how a call ended.
type Outcome struct {
	ID       string               // the call's id, unique within the Runtime (Event.Call)
	Tool     string               // the tool called: run_command, write_file, a capability's name…
	Request  *permission.Request  // what the gate was asked; nil when the call failed validation
	Decision *permission.Decision // nil when the call did not reach the gate
	Result   *job.Result          // nil when the tool did not run
}

// Exec runs one call: it validates it, puts it before the gate (asking the
// approver when the gate says ask), and runs it in its environment. The
// error is nil when the tool ran, whatever its exit code (see
// Outcome.Result); it is of class ErrPermissionDenied when the
// gate said no, ErrInvalidCall or capabilities.ErrInvalidManifest for a bad
// call, and otherwise says why the tool could not run.
func (r *Runtime) Exec(ctx context.Context, c *Call) (*Outcome, error) {
	return r.exec(ctx, c, r.gate, nil)
}

// exec is Exec through gate g, also handing each event of the call to
// observe when it is not nil (ExecWith).
func (r *Runtime) exec(ctx context.Context, c *Call, g *permission.Gate, observe func(Event)) (*Outcome, error) {
	t := r.track(c)
	t.observe = observe
	req, inv, p, err := r.prepare(ctx, c)
	t.out.Request = req
	if err != nil {
		return t.out, t.fail(err)
	}
	// A read-only command is likely to run confined: its ruleset starts
	// building now, beside the gate's work, and is taken only if the
	// decision confines the call (shellConfinement).
	pre := r.prewarmConfinement(inv)
	defer func() {
		// what the call was given or not (denied, failed, built for the
		// other tier): its TMPDIR goes, whichever executor ran it
		pre.Discard()
		if inv != nil && inv.Confine != pre {
			inv.Confine.Discard()
		}
	}()
	t.key = req.Permission.Key().String()
	t.out.Tool = req.Tool
	t.emit(Validating, nil)
	if err := r.bind(ctx, req, inv, p); err != nil {
		return t.out, t.fail(err)
	}
	d, err := r.decide(ctx, g, req, inv, p, func(d *permission.Decision) { t.emit(AwaitingApproval, d) })
	t.out.Decision = d
	aerr := r.auditDecision(t, req, d)
	if aerr == nil && r.audit == nil {
		if _, required := r.auditRequired(); required {
			aerr = errors.New(`no audit log is kept (WithAuditLog(""))`)
		}
	}
	if aerr != nil {
		if by, required := r.auditRequired(); required {
			return t.out, t.fail(fmt.Errorf("%s refused: its decision could not be written to the audit log (%v), and %s says \"audit\": \"required\"; nothing ran: %w",
				t.key, aerr, by, ErrPermissionDenied))
		}
		d.Diagnostics = append(d.Diagnostics, aerr.Error())
	}
	if err != nil {
		return t.out, t.fail(err)
	}
	if c := inv.Capability; c != nil {
		// What runs must be what was approved: digest the files again.
		if err := c.Verify(); err != nil {
			return t.out, t.fail(err)
		}
	}
	t.emit(Scheduled, d)
	runner, base, err := r.runnerFor(ctx, inv)
	if err != nil {
		return t.out, t.fail(err)
	}
	if inv.Command != nil {
		// a shell script on the host: the decision is enforced again
		// where each program starts and each file opens
		inv.Guard = r.shellGuard(g, req, inv, d, base).Shell()
		if inv.Confine, err = r.shellConfinement(g.Policy, req, inv, d, pre); err != nil {
			return t.out, t.fail(err)
		}
		r.limitNetwork(g, t, c, req, inv, d)
	}
	closeEgress, err := r.startEgress(g, t, c, req, inv)
	if err != nil {
		return t.out, t.fail(err)
	}
	t.emit(Executing, d)
	start := time.Now()
	res, err := runner(ctx, inv)
	closeEgress(res)
	t.out.Result = res
	r.auditExecution(t, req, res, time.Since(start), err)
	switch {
	case err != nil:
		return t.out, t.fail(err)
	case res.Reason == job.Cancelled:
		t.emit(Cancelled, d)
	case res.OK():
		t.emit(Success, d)
	default:
		t.emit(Error, d)
	}
	return t.out, nil
}

// checkResolveTimeout bounds what Check may wait for a backend's binding
// (an image lookup, which never pulls).
const checkResolveTimeout = 10 * time.Second

// Check prepares c and runs the gate's steps without asking anyone and
// without running anything: the decision `ccrun exec` would take with
// nobody to ask. It appends nothing to the audit log.
//
// A @docker call's image is looked up (never pulled) so that a grant bound
// to it can match; when it cannot be (not local, no engine), the decision
// says so in its diagnostics, and no grant bound to an image matches. That
// lookup, the one step that reaches an engine, ends when ctx does (and
// after a few seconds in any case); the decision then says the image was
// not resolved.
func (r *Runtime) Check(ctx context.Context, c *Call) (*Outcome, error) {
	return r.check(ctx, c, r.gate)
}

// check is Check through gate g (CheckWith).
func (r *Runtime) check(ctx context.Context, c *Call, g *permission.Gate) (*Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, checkResolveTimeout)
	defer cancel()
	req, inv, p, err := r.prepare(ctx, c)
	if err != nil {
		return &Outcome{Request: req}, err
	}
	unresolved := r.bind(ctx, req, inv, p)
	d := g.Decide(req)
	if unresolved == nil && p != nil && p.Fetch != "" {
		d.Diagnostics = append(d.Diagnostics, p.Fetch+"; no grant bound to content applies before it arrives")
	}
	if req.Command != nil && d.Verdict != permission.Refuse {
		d.Diagnostics = append(d.Diagnostics, "decided again at execution: each program is checked with its expanded words and environment, and each file the script opens")
	}
	if unresolved != nil {
		d.Diagnostics = append(d.Diagnostics, "image not resolved, so no grant bound to an image applies: "+unresolved.Error())
	}
	return &Outcome{Tool: req.Tool, Request: req, Decision: d}, nil
}

// tracker publishes one call's events.
type tracker struct {
	r       *Runtime
	out     *Outcome
	key     string
	start   time.Time
	observe func(Event) // this call's own watcher (ExecWith); nil: none
}

func (r *Runtime) track(c *Call) *tracker {
	id := r.nextID()
	return &tracker{r: r, out: &Outcome{ID: id}, start: time.Now()}
}

func (t *tracker) emit(s State, d *permission.Decision) {
	now := time.Now()
	t.publish(Event{Call: t.out.ID, Tool: t.out.Tool, Key: t.key, State: s, Time: now,
		Elapsed: now.Sub(t.start), Decision: d, Result: t.out.Result})
}

func (t *tracker) publish(e Event) {
	t.r.bus.publish(e)
	if t.observe != nil {
		t.observe(e)
	}
}

func (t *tracker) fail(err error) error {
	s := Error
	if errors.Is(err, context.Canceled) {
		s = Cancelled
	}
	now := time.Now()
	t.publish(Event{Call: t.out.ID, Tool: t.out.Tool, Key: t.key, State: s, Time: now,
		Elapsed: now.Sub(t.start), Decision: t.out.Decision, Result: t.out.Result, Err: err.Error()})
	return err
}

func (r *Runtime) auditDecision(t *tracker, req *permission.Request, d *permission.Decision) error {
	rec := audit.Record{Kind: "decision", Call: t.out.ID, Tool: req.Tool, Key: t.key,
		Environment: string(req.Environment), Decision: string(d.Verdict), Layer: string(d.Layer),
		Reason: d.Reason, Diagnostics: d.Diagnostics,
		Display: req.Display, Args: req.Args, Env: redactEnv(req.Env), Dir: req.Dir, Stdin: req.Stdin,
		Loosens: req.Loosens}
	if d.Layer == permission.LayerApprover {
		rec.Grant, rec.Unconfined = d.Grant.String(), d.Unconfined
	}
	return r.audit.Write(rec)
}

func (r *Runtime) auditExecution(t *tracker, req *permission.Request, res *job.Result, took time.Duration, err error) {
	rec := audit.Record{Kind: "execution", Call: t.out.ID, Tool: req.Tool, Key: t.key, Environment: string(req.Environment)}
	ms := took.Milliseconds()
	rec.DurationMS = &ms
	switch {
	case err != nil:
		rec.Outcome, rec.Error = "error", err.Error()
	default:
		rec.EndReason = string(res.Reason)
		code := res.ExitCode
		rec.ExitCode = &code
		rec.Detail = res.Detail
		rec.Outcome = "success"
		if res.Reason == job.Cancelled {
			rec.Outcome = "cancelled"
		} else if !res.OK() {
			rec.Outcome = "error"
		}
	}
	if aerr := r.audit.Write(rec); aerr != nil && res != nil {
		res.Detail = strings.TrimSpace(res.Detail + "; " + aerr.Error())
	}
}

// redactEnv is env as the audit log keeps it: the value of a variable whose
// name says it holds a secret is left out (the log lives in the project).
func redactEnv(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(name)
		out[i] = kv
		for _, w := range []string{"TOKEN", "SECRET", "PASS", "KEY", "CREDENTIAL", "AUTH", "COOKIE", "SESSION"} {
			if strings.Contains(up, w) {
				out[i] = name + "=<redacted>"
				break
			}
		}
	}
	return out
}
