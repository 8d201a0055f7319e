package permission_test

import (
	"context"
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// TestSessionGrantOfBareCommand: a person who answers "this session" for
// a command with no argument (make, git, git --no-pager) grants that
// command, and no command of the same program with a detail: the key of
// make has no detail, and a grant of it used to cover make deploy.
func TestSessionGrantOfBareCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		granted string
		same    []string // keyed alike: allowed without asking
		others  []string // still asked
	}{
		{"make", []string{"'make'", "make  "}, []string{"make deploy", "make -j4 test", "make test -j4", "make clean", "make -C / install"}},
		{"git", []string{"git --no-pager", "git -P"}, []string{"git push", "git push --force", "git commit", "git -C d push", "git --no-pager push"}},
		{"git --no-pager", []string{"git"}, []string{"git push --force", "git --no-pager commit"}},
		{"./deploy.sh", nil, []string{"./deploy.sh prod", "./deploy.sh -f"}},
	} {
		t.Run(shellcmd.Escape(tc.granted), func(t *testing.T) {
			t.Parallel()
			a := &answer{g: ceiling.AlwaysThisSession}
			s := allowlist.NewSessionAllowlist()
			g := &permission.Gate{Session: s, Approver: a}
			if _, err := g.Authorize(context.Background(), commandReq(tc.granted)); err != nil {
				t.Fatalf("granting %q: %v", tc.granted, err)
			}
			if es := s.Entries(); len(es) != 1 || !es[0].Pattern.NoDetail() {
				t.Fatalf("after granting %q the session holds %v, want one grant of no detail", tc.granted, es)
			}
			for _, src := range append([]string{tc.granted}, tc.same...) {
				if d := g.Decide(commandReq(src)); d.Verdict != permission.Allow || d.Layer != permission.LayerSession {
					t.Errorf("after granting %q, %q: %s at %s (%s), want allowed by the session grant", tc.granted, src, d.Verdict, d.Layer, d.Reason)
				}
			}
			for _, src := range tc.others {
				if d := g.Decide(commandReq(src)); d.Layer == permission.LayerSession || d.Verdict == permission.Allow {
					t.Errorf("after granting %q (%s), %q (key %s): %s at %s by %s, want asked", tc.granted,
						permission.ParseCommand(tc.granted).Key, src, d.Key, d.Verdict, d.Layer, d.Rule)
				}
			}
		})
	}
}

// TestRuleOfBareProgramCoversDetails: a rule a person writes as the
// program (run_command:make in settings, --allow, --session-allow, ccrun
// allowlist add) still covers every command of it keyed by program and
// detail; one written with the empty detail (run_command:make:"") covers
// the program alone.
func TestRuleOfBareProgramCoversDetails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule   string
		allow  []string
		others []string
	}{
		{"run_command:make", []string{"make", "make deploy", "make test -j4"}, []string{"make -j4 test", "makex"}},
		{"run_command:git", []string{"git", "git push", "git --no-pager log"}, []string{"git -C d push"}},
		{`run_command:make:""`, []string{"make"}, []string{"make deploy", "make test -j4"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			t.Parallel()
			p, err := permission.ParseRule(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			pol, err := permission.NewPolicy(permission.PolicyConfig{Layers: []*permission.Settings{{
				Origin: permission.OriginFlags, Name: "flags", Allow: []keys.Pattern{p}}}})
			if err != nil {
				t.Fatal(err)
			}
			s := allowlist.NewSessionAllowlist()
			if err := s.Add(allowlist.Entry{Pattern: p, Grant: ceiling.AlwaysThisSession}); err != nil {
				t.Fatal(err)
			}
			for name, g := range map[string]*permission.Gate{
				"allow rule":    {Policy: pol},
				"session grant": {Session: s},
			} {
				for _, src := range tc.allow {
					if d := g.Decide(commandReq(src)); d.Verdict != permission.Allow {
						t.Errorf("%s %s, %q (key %s): %s at %s (%s), want allowed", name, tc.rule, src, d.Key, d.Verdict, d.Layer, d.Reason)
					}
				}
				for _, src := range tc.others {
					if d := g.Decide(commandReq(src)); d.Verdict == permission.Allow {
						t.Errorf("%s %s allows %q (key %s) at %s", name, tc.rule, src, d.Key, d.Layer)
					}
				}
			}
		})
	}
}

// TestGrantOfBareKeyOtherTools: a grant of a key without detail of
// another tool is kept as before (capability:NAME, run_wasm:PATH keys
// never have a detail; run_docker:IMAGE's is a tag, and the grant is
// bound to the image's ID).
func TestGrantOfBareKeyOtherTools(t *testing.T) {
	t.Parallel()
	a := &answer{g: ceiling.AlwaysThisProject}
	proj := project(t, "")
	g := &permission.Gate{Project: proj, Approver: a}
	if _, err := g.Authorize(context.Background(), wasmReq("capability:fmt-json", digestA)); err != nil {
		t.Fatal(err)
	}
	es := proj.Entries()
	if len(es) != 1 || es[0].Pattern.String() != "capability:fmt-json" {
		t.Fatalf("project entries %v, want capability:fmt-json", es)
	}
	if d := g.Decide(wasmReq("capability:fmt-json", digestA)); d.Verdict != permission.Allow || d.Layer != permission.LayerProject {
		t.Errorf("capability:fmt-json after its grant: %s at %s", d.Verdict, d.Layer)
	}
}

// TestRuleOfNoDetailIsNotToolWide: a rule of every action without detail
// (tool:*:"") is not a rule of every call of the tool: as a deny rule it
// neither hides the tool nor denies its calls with a detail.
func TestRuleOfNoDetailIsNotToolWide(t *testing.T) {
	t.Parallel()
	pol, err := permission.NewPolicy(permission.PolicyConfig{Layers: []*permission.Settings{{
		Origin: permission.OriginFlags, Name: "flags", Deny: []keys.Pattern{keys.MustParsePattern(`note:*:""`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !pol.Visible("note", false) {
		t.Error(`deny note:*:"" hides the tool note`)
	}
	req := func(k string) *permission.Request {
		return &permission.Request{Tool: "note", Environment: ceiling.Shell, Class: permission.ClassWrite,
			Permission: permission.Ask(keys.MustParseKey(k))}
	}
	g := &permission.Gate{Policy: pol}
	if d := g.Decide(req("note:a")); d.Layer != permission.LayerDenyRule {
		t.Errorf(`note:a under deny note:*:"": %s at %s, want denied by the rule`, d.Verdict, d.Layer)
	}
	if d := g.Decide(req("note:a:b")); d.Layer == permission.LayerDenyRule {
		t.Errorf(`note:a:b under deny note:*:"": denied by %s`, d.Rule)
	}
}
