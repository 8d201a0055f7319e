package ccrun_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

// boxEnv is the environment of the test-only backend below: a new
// environment, trusted as far as the host, for the session.
const boxEnv ceiling.Environment = "@testbox"

// box is a backend of a Go program's own, written as the next engineer
// would write one: it runs a "box file" (here, it prints the file's
// content), keyed by the file's name and bound to its content. It knows
// nothing of the gate: it says what to show, what to key and bind, and
// runs what it prepared. A capability's box file is the entry's target,
// in the capability's directory.
type box struct {
	runs atomic.Int32
	// block makes Run wait for its context and then claim a clean exit,
	// as a backend that does not classify its own end would; flood makes
	// it write until its context ends.
	block, flood bool
	// network makes Prepare say the call reaches a network.
	network bool
	// keyTool, when set, is the tool Prepare keys a call under, in place
	// of its environment's (run_testbox).
	keyTool string
	// seen is what the last Run was given.
	seen atomic.Pointer[boxSeen]
}

type boxPlan struct{ content []byte }

// boxSeen is what a Run was given: the capability (its name), the
// target, the arguments, the environment and what it read on stdin.
type boxSeen struct {
	capability, target string
	args, env          []string
	stdin              []byte
}

func (b *box) Prepare(_ context.Context, inv *ccrun.Invocation) (*ccrun.Prepared, error) {
	path, base := inv.Target, inv.ProjectDir
	if inv.Capability != nil {
		base = inv.Capability.Dir // where the capability's digest binds it
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	inv.Plan = &boxPlan{content: content}
	return &ccrun.Prepared{
		Key:     keys.Key{Tool: b.tool(), Action: filepath.Base(path)},
		Display: "box " + filepath.Base(path),
		Digest:  ccrun.ContentDigest(content, inv.Mounts, "", inv.Args, inv.Env),
		Network: b.network,
	}, nil
}

func (b *box) tool() string {
	if b.keyTool != "" {
		return b.keyTool
	}
	return "run_testbox"
}

func (b *box) Run(ctx context.Context, inv *ccrun.Invocation) (*job.Result, error) {
	b.runs.Add(1)
	seen := &boxSeen{target: inv.Target, args: inv.Args, env: inv.Env}
	if inv.Capability != nil {
		seen.capability = inv.Capability.Manifest.Name
	}
	if inv.Streams.Stdin != nil {
		seen.stdin, _ = io.ReadAll(inv.Streams.Stdin)
	}
	b.seen.Store(seen)
	if b.block {
		<-ctx.Done()
		return &job.Result{Reason: job.Exit}, nil
	}
	for b.flood && ctx.Err() == nil {
		inv.Streams.Stdout.Write(make([]byte, 4096))
	}
	p := inv.Plan.(*boxPlan)
	if inv.Streams.Stdout != nil {
		inv.Streams.Stdout.Write(p.content)
	}
	return &job.Result{Reason: job.Exit, Stdout: p.content}, nil
}

// TestBackendSeam: a backend registered with one WithBackend line is
// gated (asked, allowed, denied, its ceiling enforced), its grants are
// bound to its content (a changed content is asked again), and its runs
// are supervised (the timeout and a cancellation end them), without a
// line of the root, the gate or the CLI knowing it.
func TestBackendSeam(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "hello.box")
	if err := os.WriteFile(file, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	var answer atomic.Value
	approver := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		asked.Add(1)
		if p.Request.Environment != boxEnv || p.Decision.Offer != ceiling.AlwaysThisSession {
			t.Errorf("asked about %s, offered %s; want %s, AlwaysThisSession", p.Request.Environment, p.Decision.Offer, boxEnv)
		}
		return answer.Load().(ceiling.Grant), nil
	})
	b := &box{}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), ccrun.WithApprover(approver),
		ccrun.WithBackend(boxEnv, ceiling.AlwaysThisSession, func(context.Context) (ccrun.Backend, error) { return b, nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	call := func() *ccrun.Call { return &ccrun.Call{Environment: boxEnv, Target: "hello.box"} }
	ctx := context.Background()

	// denied: asked, and nothing runs
	answer.Store(ceiling.Deny)
	if _, err := rt.Exec(ctx, call()); !errors.Is(err, ccrun.ErrPermissionDenied) || asked.Load() != 1 || b.runs.Load() != 0 {
		t.Fatalf("denied: %v, asked %d, ran %d", err, asked.Load(), b.runs.Load())
	}
	// past its ceiling: a project grant is a violation, and nothing runs
	answer.Store(ceiling.AlwaysThisProject)
	if _, err := rt.Exec(ctx, call()); !errors.Is(err, ccrun.ErrCeilingViolation) || b.runs.Load() != 0 {
		t.Fatalf("AlwaysThisProject: %v, ran %d; want a ceiling violation", err, b.runs.Load())
	}
	// allowed for the session: runs, and is not asked again
	answer.Store(ceiling.AlwaysThisSession)
	out, err := rt.Exec(ctx, call())
	if err != nil || string(out.Result.Stdout) != "hello\n" || out.Request.Environment != boxEnv {
		t.Fatalf("allowed: %v %+v", err, out)
	}
	n := asked.Load()
	if _, err := rt.Exec(ctx, call()); err != nil || asked.Load() != n || b.runs.Load() != 2 {
		t.Fatalf("with the session grant: %v, asked %d (want %d), ran %d", err, asked.Load(), n, b.runs.Load())
	}
	// bound to content: the same file changed is asked again
	if err := os.WriteFile(file, []byte("changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	answer.Store(ceiling.Deny)
	if _, err := rt.Exec(ctx, call()); !errors.Is(err, ccrun.ErrPermissionDenied) || asked.Load() != n+1 {
		t.Fatalf("changed content: %v, asked %d; want asked again and denied", err, asked.Load())
	}
	if out, err := rt.Check(context.Background(), call()); err != nil || out.Decision.Verdict != permission.AskUser {
		t.Fatalf("Check of the changed content: %v %+v", err, out.Decision)
	}

	// supervised: the timeout, a cancellation and the output cap end a
	// run that would not end of itself, and say so whatever the backend
	// claimed
	b.block = true
	answer.Store(ceiling.Once)
	slow := call()
	slow.Limits.Timeout = 100 * time.Millisecond
	if out, err := rt.Exec(ctx, slow); err != nil || out.Result.Reason != job.Timeout || out.Result.ExitCode != job.TimeoutExit {
		t.Fatalf("timeout: %v %+v", err, out.Result)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if out, err := rt.Exec(cctx, call()); err != nil || out.Result.Reason != job.Cancelled {
		t.Fatalf("cancelled: %v %+v", err, out.Result)
	}
	b.block, b.flood = false, true
	flood := call()
	flood.Limits.Output = 64 << 10
	if out, err := rt.Exec(ctx, flood); err != nil || out.Result.Reason != job.OutputCap || len(out.Result.Stdout) != 64<<10 || !out.Result.Truncated {
		t.Fatalf("output cap: %v, reason %s, %d bytes", err, out.Result.Reason, len(out.Result.Stdout))
	}
}

// TestBackendFailsClosed: an environment no backend is registered for is
// refused before anyone is asked, by an error that names it and the
// environments the Runtime runs; a backend cannot claim a sandbox's
// ceiling by registering a new environment, nor @shell's tool; a backend
// whose key names another environment's tool is refused before the gate,
// so that no grant of one environment covers a call of another; and a
// constructor that returns no backend is an error, not a crash.
func TestBackendFailsClosed(t *testing.T) {
	t.Parallel()
	var asked atomic.Bool
	approver := ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
		asked.Store(true)
		return ceiling.Once, nil
	}))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.box"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), approver)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, env := range []ceiling.Environment{"@nowhere", "@Nowhere", ""} {
		_, err := rt.Exec(context.Background(), &ccrun.Call{Environment: env, Target: "x"})
		if !errors.Is(err, ccrun.ErrInvalidArgument) || !errors.Is(err, ceiling.ErrUnknownEnvironment) || asked.Load() ||
			!strings.Contains(err.Error(), fmt.Sprintf("%q: not one this runtime runs (@shell, @wasm, @docker;", env)) {
			t.Errorf("environment %q: %v, asked %v; want an unknown environment naming it and the ones this Runtime runs, nobody asked", env, err, asked.Load())
		}
	}
	mk := func(context.Context) (ccrun.Backend, error) { return &box{}, nil }
	for _, bad := range []struct {
		env     ceiling.Environment
		ceiling ceiling.Grant
	}{{"@fakesandbox", ceiling.AlwaysThisProject}, {"@command", ceiling.AlwaysThisSession}, {"@Box", ceiling.Once}} {
		if _, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithBackend(bad.env, bad.ceiling, mk)); !errors.Is(err, ccrun.ErrInvalidArgument) {
			t.Errorf("a new environment %s of ceiling %s: %v, want an invalid argument", bad.env, bad.ceiling, err)
		}
	}
	if rt.Environments().Has("@fakesandbox") || len(rt.Environments().List()) != 3 {
		t.Errorf("environments %s; want the built-in ones", rt.Environments())
	}

	// A key of another environment's tool: run_command is @shell's.
	for _, tool := range []string{"run_command", "run_wasm", "capability", "run_other"} {
		b := &box{keyTool: tool}
		rt := boxRuntime(t, dir, b, approver)
		if _, err := rt.Exec(context.Background(), &ccrun.Call{Environment: boxEnv, Target: "hello.box"}); !errors.Is(err, ccrun.ErrInvalidCall) || asked.Load() || b.runs.Load() != 0 {
			t.Errorf("a %s key from %s: %v, asked %v, ran %d; want an invalid call before the gate", tool, boxEnv, err, asked.Load(), b.runs.Load())
		}
	}

	// A constructor that returns a nil backend.
	none, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithAuditLog(""), approver,
		ccrun.WithBackend(boxEnv, ceiling.Once, func(context.Context) (*box, error) { return nil, nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if _, err := none.Exec(context.Background(), &ccrun.Call{Environment: boxEnv, Target: "hello.box"}); !errors.Is(err, ccrun.ErrUnavailable) || asked.Load() {
		t.Errorf("a nil backend: %v, asked %v; want unavailable, nobody asked", err, asked.Load())
	}
}
