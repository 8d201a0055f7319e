package ccrun_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/audit"
	"github.com/ccrun/ccrun/internal/backend/shellenv"
	"github.com/ccrun/ccrun/internal/projectdir"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm"
)

// recorder is a backend of @shell that prepares as the built-in one does
// and records what it was asked to run, running nothing.
type recorder struct {
	*shellenv.Backend
	mu   sync.Mutex
	runs int
}

func newRecorder(t testing.TB) *recorder {
	b, err := shellenv.New()
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{Backend: b}
}

func (r *recorder) Run(ctx context.Context, inv *ccrun.Invocation) (*job.Result, error) {
	r.mu.Lock()
	r.runs++
	r.mu.Unlock()
	return &job.Result{Reason: job.Exit}, nil
}

// withRecorder runs @shell calls on rec.
func withRecorder(rec *recorder) ccrun.Option {
	return ccrun.WithBackend(ceiling.Shell, ceiling.AlwaysThisSession, func(context.Context) (*recorder, error) { return rec, nil })
}

func grant(g ceiling.Grant) permission.Approver {
	return permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) { return g, nil })
}

func newRuntime(t *testing.T, opts ...ccrun.Option) (*ccrun.Runtime, *recorder, []ccrun.State) {
	t.Helper()
	rec := newRecorder(t)
	opts = append([]ccrun.Option{ccrun.WithProjectDir(t.TempDir()), withRecorder(rec)}, opts...)
	rt, err := ccrun.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, rec, nil
}

func states(rt *ccrun.Runtime) *[]ccrun.State {
	var mu sync.Mutex
	got := &[]ccrun.State{}
	rt.Subscribe(func(e ccrun.Event) {
		mu.Lock()
		*got = append(*got, e.State)
		mu.Unlock()
	})
	return got
}

func TestEventsOfAnApprovedCall(t *testing.T) {
	t.Parallel()
	rt, rec, _ := newRuntime(t, ccrun.WithApprover(grant(ceiling.Once)))
	got := states(rt)
	if _, err := rt.Exec(context.Background(), &ccrun.Call{Command: "touch x"}); err != nil {
		t.Fatal(err)
	}
	want := []ccrun.State{ccrun.Validating, ccrun.AwaitingApproval, ccrun.Scheduled, ccrun.Executing, ccrun.Success}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if rec.runs != 1 {
		t.Errorf("ran %d times, want 1", rec.runs)
	}
}

// The gate decides before the executor can run: a denied call never
// reaches it, whatever the reason for the deny.
func TestDeniedNeverExecutes(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]ccrun.Option{
		"nobody to ask":           func(*ccrun.Runtime) error { return nil },
		"person denies":           ccrun.WithApprover(grant(ceiling.Deny)),
		"project grant for shell": ccrun.WithApprover(grant(ceiling.AlwaysThisProject)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt, rec, _ := newRuntime(t, opt)
			got := states(rt)
			out, err := rt.Exec(context.Background(), &ccrun.Call{Command: "rm -rf build"})
			if !errors.Is(err, ccrun.ErrPermissionDenied) {
				t.Fatalf("err = %v, want ErrPermissionDenied", err)
			}
			if rec.runs != 0 || out.Result != nil {
				t.Fatal("a denied call reached the executor")
			}
			if last := (*got)[len(*got)-1]; last != ccrun.Error {
				t.Errorf("last state %s, want %s", last, ccrun.Error)
			}
		})
	}
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt, _, _ := newRuntime(t, ccrun.WithProjectDir(dir), ccrun.WithApprover(grant(ceiling.AlwaysThisSession)))
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := rt.Exec(ctx, &ccrun.Call{Command: "make test"}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(filepath.Join(dir, ".ccrun", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []audit.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4 (two decisions, two executions)", len(recs))
	}
	first, second := recs[0], recs[2]
	if first.Kind != "decision" || first.Layer != "approver" || first.Grant != "AlwaysThisSession" || first.Key != "run_command:make:test" || first.Environment != "@shell" {
		t.Errorf("first decision %+v", first)
	}
	if second.Layer != "session" {
		t.Errorf("second decision decided by %q, want session", second.Layer)
	}
	if recs[1].Kind != "execution" || recs[1].ExitCode == nil || *recs[1].ExitCode != 0 || recs[1].DurationMS == nil {
		t.Errorf("execution %+v", recs[1])
	}
}

func TestInvalidCalls(t *testing.T) {
	t.Parallel()
	rt, _, _ := newRuntime(t)
	for name, c := range map[string]*ccrun.Call{
		"nothing":       {},
		"two tools":     {Command: "ls", Image: "x"},
		"blank command": {Command: "   "},
		"bad env":       {Command: "ls", Env: []string{"NOEQUALS"}},
		"bad input":     {Command: "ls", Input: json.RawMessage(`{`)},
		"shell mount":   {Command: "ls", Mounts: []job.Mount{{Host: "/", Guest: "/x"}}},
	} {
		if _, err := rt.Exec(context.Background(), c); !errors.Is(err, ccrun.ErrInvalidCall) {
			t.Errorf("%s: err = %v, want ErrInvalidCall", name, err)
		}
	}
}

// Many goroutines run calls on one Runtime at once (run with -race).
func TestConcurrentExec(t *testing.T) {
	t.Parallel()
	rt, rec, _ := newRuntime(t, ccrun.WithApprover(grant(ceiling.AlwaysThisSession)))
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := rt.Exec(context.Background(), &ccrun.Call{Command: "go test ./..."}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if rec.runs != 320 {
		t.Errorf("%d runs, want 320", rec.runs)
	}
}

func TestFindProject(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := projectdir.Find(deep); err != nil || got != deep {
		t.Errorf("no ccrun.json: got %s, %v, want %s", got, err, deep)
	}
	if err := os.WriteFile(filepath.Join(root, "ccrun.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := projectdir.Find(deep); err != nil || got != root {
		t.Errorf("got %s, %v, want %s", got, err, root)
	}
}

func TestMalformedConfigIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := []byte("{\n  \"allowlist\": {\"capability:x\": \"AlwaysThisProject\",}\n}\n")
	if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ccrun.New(ccrun.WithProjectDir(dir))
	if !errors.Is(err, ccrun.ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "ccrun.json")); string(data) != string(bad) {
		t.Error("the malformed file was changed")
	}
}

// A tool a deny rule covers entirely is not even listed (and the gate
// denies it again at execution).
func TestToolsHidesDenied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), []byte(`{"permissions": {"deny": ["run_docker:*"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, err := ccrun.New(append(engines.All(), ccrun.WithProjectDir(dir))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tools, errs := rt.Tools()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{keys.ShellTool, keys.WasmTool}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if _, err := rt.Exec(context.Background(), &ccrun.Call{Image: "x:y"}); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Errorf("a hidden tool was not denied at execution: %v", err)
	}
}

// A grant for an ad-hoc module is bound to its content: the same file
// rewritten with other bytes is asked again, and the module cache never
// serves the old bytes for the new file.
func TestModuleChangedIsAskedAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mod := filepath.Join(dir, "tool.wasm")
	hello := capabilities.HelloWasm()
	if err := os.WriteFile(mod, hello, 0o644); err != nil {
		t.Fatal(err)
	}
	asked := 0
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), engines.Wasm(engines.WithWasmOptions(wasm.WithCacheDir(""))),
		ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
			asked++
			return ceiling.AlwaysThisSession, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if out, err := rt.Exec(ctx, &ccrun.Call{Module: "tool.wasm"}); err != nil || string(out.Result.Stdout) != "hello\n" {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if asked != 1 {
		t.Fatalf("asked %d times for the same module, want 1", asked)
	}
	// Other bytes (the text it prints), same path.
	changed := bytes.Replace(hello, []byte("hello\n"), []byte("HELLO\n"), 1)
	if err := os.WriteFile(mod, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := rt.Exec(ctx, &ccrun.Call{Module: "tool.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	if asked != 2 {
		t.Errorf("a changed module was not asked again (asked %d times)", asked)
	}
	if got := string(out.Result.Stdout); got != "HELLO\n" {
		t.Errorf("the changed file ran as %q: the old bytes were served", got)
	}
	if out.Request.Digest == "" {
		t.Error("no digest bound")
	}
}
