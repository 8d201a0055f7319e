package ccrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend/toy"
	"github.com/ccrun/ccrun/internal/runtimehook"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// TestSubAgentSeesTheProject walks every exported method of a sub-agent's
// Runtime, found by reflection so that a method added later is walked
// too, and checks that it sees its parent's project: the same directory,
// settings, trust, allowlist, environments and backends, library tools,
// capabilities, audit log and subscribers. A method the sub-agent is
// narrowed in (it grants nothing, releases nothing, derives no further
// sub-agent, is offered fewer tools), or whose effect is what shows the
// state is shared, has its own check (special); every other one is
// called on both Runtimes with the same arguments and must return the
// same. A method whose parameter type the test cannot make fails the
// test, naming the type to add.
func TestSubAgentSeesTheProject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// a state no default has: rules and grants the project loosens by, a
	// new environment with a capability of it, a library tool, a variable
	// passed, an audit log of its own
	write("ccrun.json", `{"permissions": {"allow": ["run_toy:b.toy"], "ask": ["run_command:rm"]},
		"allowlist": {"run_wasm:a.wasm": "AlwaysThisProject", "run_wasm:gone.wasm": "AlwaysThisProject"}}`)
	write("a.toy", "a toy\n")
	if _, err := capabilities.ScaffoldTarget(dir, "hello", toy.Environment, (&toy.Backend{}).Scaffold("hello")); err != nil {
		t.Fatal(err)
	}
	probe := ccrun.Tool{Name: "probe", Description: "prints what it is given", Class: permission.ClassRead,
		Permission: func(json.RawMessage) (permission.Permission, error) { return permission.None(), nil },
		Execute: func(_ context.Context, in json.RawMessage, stdout, _ io.Writer) error {
			_, err := fmt.Fprintf(stdout, "probe %s", in)
			return err
		}}
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	parent, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(auditLog),
		ccrun.WithBackend(toy.Environment, ceiling.AlwaysThisSession, toy.New), ccrun.WithTool(probe), ccrun.WithEnvPass("PROBE_VAR"))
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	sub, err := parent.SubAgent()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	shellOutcome, err := parent.Check(ctx, &ccrun.Call{Command: "make test"})
	if err != nil {
		t.Fatal(err)
	}
	// the arguments of the methods walked alike, by type
	args := map[reflect.Type]reflect.Value{
		reflect.TypeFor[*ccrun.Outcome]():      reflect.ValueOf(shellOutcome),
		reflect.TypeFor[context.Context]():     reflect.ValueOf(ctx),
		reflect.TypeFor[*ccrun.Call]():         reflect.ValueOf(&ccrun.Call{Tool: "probe", Input: json.RawMessage(`{"n":1}`)}),
		reflect.TypeFor[ccrun.CallOptions]():   reflect.ValueOf(ccrun.CallOptions{}),
		reflect.TypeFor[keys.Pattern]():        reflect.ValueOf(keys.MustParsePattern("capability:hello")),
		reflect.TypeFor[ceiling.Environment](): reflect.ValueOf(toy.Environment),
		reflect.TypeFor[ceiling.Grant]():       reflect.ValueOf(ceiling.AlwaysThisSession),
		reflect.TypeFor[string]():              reflect.ValueOf("probe"),
		reflect.TypeFor[json.RawMessage]():     reflect.ValueOf(json.RawMessage(`{"n":1}`)),
	}

	special := map[string]func(t *testing.T){
		"Grant": func(t *testing.T) {
			if _, err := sub.Grant(ctx, keys.MustParsePattern("run_toy:a.toy"), ceiling.AlwaysThisSession); !errors.Is(err, ccrun.ErrPermissionDenied) {
				t.Errorf("a sub-agent granted: %v; want ErrPermissionDenied", err)
			}
		},
		"SubAgent": func(t *testing.T) {
			if _, err := sub.SubAgent(); !errors.Is(err, permission.ErrDepthExceeded) {
				t.Errorf("a sub-agent's sub-agent: %v; want ErrDepthExceeded", err)
			}
		},
		"Close": func(t *testing.T) {
			if err := sub.Close(); err != nil {
				t.Fatal(err)
			}
			// the parent's backends and log are still open
			out, err := parent.Exec(ctx, &ccrun.Call{Tool: "probe"})
			if err != nil || string(out.Result.Stdout) != "probe {}" {
				t.Errorf("the parent after its sub-agent's Close: %v %+v", err, out)
			}
		},
		"Subscribe": func(t *testing.T) {
			var fromParent, fromSub []string
			stopSub := sub.Subscribe(func(e ccrun.Event) { fromSub = append(fromSub, e.Call) })
			stopParent := parent.Subscribe(func(e ccrun.Event) { fromParent = append(fromParent, e.Call) })
			for _, rt := range []*ccrun.Runtime{parent, sub} {
				if _, err := rt.Exec(ctx, &ccrun.Call{Tool: "probe"}); err != nil {
					t.Fatal(err)
				}
			}
			stopSub()
			stopParent()
			if !slices.Equal(fromParent, fromSub) || len(slices.Compact(slices.Clone(fromParent))) != 2 {
				t.Errorf("the parent's subscriber saw %q, the sub-agent's %q; want both calls, the same events", fromParent, fromSub)
			}
		},
		"Revoke": func(t *testing.T) {
			// the sub-agent removes from the parent's allowlist
			if removed, err := sub.Revoke("run_wasm:gone.wasm"); !removed {
				t.Errorf("Revoke on the sub-agent: %v, %v; want the parent's entry removed", removed, err)
			}
			al, _ := runtimehook.Lint(parent)
			if slices.ContainsFunc(al.Entries, func(e runtimehook.AllowlistEntry) bool { return e.Pattern.String() == "run_wasm:gone.wasm" }) {
				t.Error("the parent still has the entry its sub-agent revoked")
			}
		},
		"Scaffold": func(t *testing.T) {
			// the parent's @toy backend writes it, into the parent's project
			made, err := sub.Scaffold(ctx, "made-by-sub", toy.Environment)
			if err != nil || filepath.Dir(made) != filepath.Join(dir, filepath.FromSlash(capabilities.Dir)) {
				t.Fatalf("Scaffold on the sub-agent: %q, %v", made, err)
			}
		},
		"Tools": func(t *testing.T) {
			// fewer (its scope), none the parent lacks, the same errors
			pt, perrs := parent.Tools()
			st, serrs := sub.Tools()
			for _, tl := range st {
				if !slices.ContainsFunc(pt, func(p ccrun.Tool) bool { return p.Name == tl.Name }) {
					t.Errorf("the sub-agent is offered %s, which its parent is not", tl.Name)
				}
			}
			if fmt.Sprint(perrs) != fmt.Sprint(serrs) {
				t.Errorf("Tools' errors: the parent's %v, the sub-agent's %v", perrs, serrs)
			}
		},
	}

	rtType := reflect.TypeOf(sub)
	if rtType.NumMethod() < 10 {
		t.Fatalf("Runtime has %d exported methods: the walk sees too few", rtType.NumMethod())
	}
	for i := range rtType.NumMethod() {
		m := rtType.Method(i)
		t.Run(m.Name, func(t *testing.T) {
			if check, ok := special[m.Name]; ok {
				check(t)
				return
			}
			in := []reflect.Value{}
			for j := 1; j < m.Type.NumIn(); j++ {
				a, ok := args[m.Type.In(j)]
				if !ok {
					t.Fatalf("%s takes a %s: give this test a value of it (args) or a check of its own (special)", m.Name, m.Type.In(j))
				}
				in = append(in, a)
			}
			want := comparable(reflect.ValueOf(parent).Method(i).Call(in))
			got := comparable(reflect.ValueOf(sub).Method(i).Call(in))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the sub-agent's\n\t%#v\nthe parent's\n\t%#v", m.Name, got, want)
			}
		})
	}
	// what the MCP server records of a capability an agent wrote through
	// a sub-agent is in the parent's audit log
	caps, _ := sub.Capabilities()
	if len(caps) == 0 {
		t.Fatal("the sub-agent loads no capability")
	}
	if err := runtimehook.CapabilityWritten(sub, caps[0], "the test", false); err != nil {
		t.Fatal(err)
	}
	// the sub-agent's calls are in the parent's audit log
	data, err := os.ReadFile(auditLog)
	if !bytes.Contains(data, []byte("written through the test")) {
		t.Error("the sub-agent's record of a capability written is not in the parent's audit log")
	}
	if n := bytes.Count(data, []byte(`"tool":"probe"`)); err != nil || n < 4 {
		t.Errorf("the audit log holds %d records of probe (%v); want those of the parent's and the sub-agent's calls", n, err)
	}
}

// comparable turns what a method returned into what two agents' calls
// can be compared by: an error by its text, a capability (loaded again
// by each) by its directory and digest, an Outcome without its call id
// and duration (each call has its own).
func comparable(out []reflect.Value) []any {
	var vs []any
	for _, v := range out {
		switch x := v.Interface().(type) {
		case error:
			vs = append(vs, x.Error())
		case *capabilities.Capability:
			vs = append(vs, x.Dir+" "+x.Digest)
		case []*capabilities.Capability:
			var names []string
			for _, c := range x {
				names = append(names, c.Dir+" "+c.Digest)
			}
			vs = append(vs, names)
		case *ccrun.Outcome:
			if x == nil {
				vs = append(vs, nil)
				continue
			}
			o := *x
			o.ID = ""
			if o.Result != nil {
				r := *o.Result
				r.Duration = 0
				o.Result = &r
			}
			vs = append(vs, o)
		default:
			vs = append(vs, v.Interface())
		}
	}
	return vs
}
