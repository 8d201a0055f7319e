package permission

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/permission/keys"
)

func TestModeMatrix(t *testing.T) {
	t.Parallel()
	A, Q, D := Allow, AskUser, Refuse
	classes := []Class{ClassRead, ClassInternal, ClassWrite, ClassExec, ClassNetwork, ClassUnknown}
	want := map[Mode][]Verdict{
		ModePlan:        {A, A, D, D, D, D},
		ModeDefault:     {A, A, Q, Q, Q, Q},
		ModeAcceptEdits: {A, A, A, Q, Q, Q},
		ModeTrust:       {A, A, A, A, A, A},
	}
	for _, m := range Modes {
		for i, c := range classes {
			t.Run(fmt.Sprintf("%s/%s", m, c), func(t *testing.T) {
				t.Parallel()
				if got := m.Verdict(c); got != want[m][i] {
					t.Errorf("%s.Verdict(%s) = %s, want %s", m, c, got, want[m][i])
				}
				// and through a policy, for a non-shell tool
				p, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginFlags, Mode: m}}})
				if err != nil {
					t.Fatal(err)
				}
				req := &Request{Tool: "some_tool", Class: c, Permission: Ask(keys.Key{Tool: "some_tool", Action: "x"})}
				got, layer, _ := p.Decide(req)
				if got != want[m][i] || layer != LayerMode {
					t.Errorf("Decide in %s for %s = %s %s, want %s mode", m, c, got, layer, want[m][i])
				}
			})
		}
	}
	if got := ModeDefault.Verdict(""); got != AskUser {
		t.Errorf("empty class = %s, want ask (unknown)", got)
	}
	if got := Mode("bogus").Verdict(ClassWrite); got != Refuse {
		t.Errorf("unknown mode = %s, want the plan row", got)
	}
}

// TestParseMode: a mode is one of four names, exactly; every alias a
// seed or another tool used (auto and yolo for trust, edit for
// accept-edits, strict for plan) and every other spelling is an error that
// lists the four.
func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Mode{
		"plan": ModePlan, "": ModeDefault, "default": ModeDefault, "accept-edits": ModeAcceptEdits, "trust": ModeTrust,
	} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"auto", "yolo", "YOLO", "solo", "edit", "edits", "acceptEdits", "accept_edits",
		"strict", "safe", "read-only", "readonly", "balanced", "ask", "Trust", " plan", "lenient"} {
		_, err := ParseMode(bad)
		if !errors.Is(err, errclass.InvalidConfig) || !strings.Contains(fmt.Sprint(err), "want plan, default, accept-edits or trust") {
			t.Errorf("ParseMode(%q) error = %v, want errclass.InvalidConfig listing the modes", bad, err)
		}
	}
}

func mustRules(t *testing.T, rules ...string) []keys.Pattern {
	t.Helper()
	var out []keys.Pattern
	for _, r := range rules {
		p, err := ParseRule(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func simpleShell(prog, detail string) *Request {
	src := prog
	if detail != "" {
		src += " " + detail
	}
	return &Request{Tool: "run_command", Environment: "@shell", Class: ClassExec,
		Permission: Ask(keys.Key{Tool: "run_command", Action: prog, Detail: detail}), Command: &Command{Source: src}}
}

func TestManagedDenyCannotBeLifted(t *testing.T) {
	t.Parallel()
	managed := &Settings{Origin: OriginManaged, Name: "/etc/ccrun/managed.json", Deny: mustRules(t, "run_command:git:push")}
	project := &Settings{Origin: OriginLocal, Name: "ccrun.local.json", Mode: ModeTrust, Allow: mustRules(t, "run_command:git:push", "run_command:*")}
	session := &Settings{Origin: OriginSession, Allow: mustRules(t, "run_command:git")}
	for _, order := range [][]*Settings{{managed, project, session}, {session, project, managed}} {
		p, err := NewPolicy(PolicyConfig{Layers: order})
		if err != nil {
			t.Fatal(err)
		}
		rule, ok := p.DenyRule(simpleShell("git", "push"))
		if !ok {
			t.Fatalf("managed deny lifted by a later allow")
		}
		if rule != "run_command:git:push (/etc/ccrun/managed.json)" {
			t.Errorf("rule = %q", rule)
		}
	}
}

func TestManagedModeCaps(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(PolicyConfig{Layers: []*Settings{
		{Origin: OriginSession, Mode: ModeTrust},
		{Origin: OriginManaged, Mode: ModeDefault},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode() != ModeDefault {
		t.Errorf("mode = %s, want default (capped)", p.Mode())
	}
	if q := p.WithMode(ModeTrust); q.Mode() != ModeDefault {
		t.Errorf("WithMode(trust) = %s, want default (capped)", q.Mode())
	}
	if q := p.WithMode(ModePlan); q.Mode() != ModePlan {
		t.Errorf("WithMode(plan) = %s, want plan", q.Mode())
	}
}

func TestModeLayerPrecedence(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(PolicyConfig{Layers: []*Settings{
		{Origin: OriginFlags, Mode: ModeAcceptEdits},
		{Origin: OriginUser, Mode: ModeTrust},
		{Origin: OriginProject, Mode: ModePlan},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode() != ModeAcceptEdits {
		t.Errorf("mode = %s, want accept-edits (flags beat project and user)", p.Mode())
	}
}

func TestDenyBeatsAskBeatsAllow(t *testing.T) {
	t.Parallel()
	allow := &Settings{Origin: OriginUser, Allow: mustRules(t, "write_file:**", "run_command:git")}
	ask := &Settings{Origin: OriginLocal, Ask: mustRules(t, "write_file:docs/**", "run_command:git:commit")}
	deny := &Settings{Origin: OriginFlags, Deny: mustRules(t, "write_file:docs/secret.md", "run_command:git:push")}
	orders := [][]*Settings{{allow, ask, deny}, {deny, ask, allow}, {ask, deny, allow}}
	for i, layers := range orders {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			p, err := NewPolicy(PolicyConfig{Layers: layers})
			if err != nil {
				t.Fatal(err)
			}
			wf := func(path string) *Request {
				return &Request{Tool: "write_file", Class: ClassWrite, Permission: Ask(keys.Key{Tool: "write_file", Action: path})}
			}
			if _, ok := p.DenyRule(wf("docs/secret.md")); !ok {
				t.Error("deny of docs/secret.md not applied")
			}
			if _, ok := p.DenyRule(wf("docs/a.md")); ok {
				t.Error("docs/a.md denied")
			}
			if v, l, _ := p.Decide(wf("docs/a.md")); v != AskUser || l != LayerAskRule {
				t.Errorf("docs/a.md = %s %s, want ask ask-rule", v, l)
			}
			if v, l, _ := p.Decide(wf("src/a.go")); v != Allow || l != LayerAllowRule {
				t.Errorf("src/a.go = %s %s, want allow allow-rule", v, l)
			}
			if _, ok := p.DenyRule(simpleShell("git", "push")); !ok {
				t.Error("git push not denied")
			}
			if v, l, _ := p.Decide(simpleShell("git", "commit")); v != AskUser || l != LayerAskRule {
				t.Errorf("git commit = %s %s, want ask", v, l)
			}
			if v, l, _ := p.Decide(simpleShell("git", "fetch")); v != Allow || l != LayerAllowRule {
				t.Errorf("git fetch = %s %s, want allow", v, l)
			}
		})
	}
}

func TestDenyInsideCompounds(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginUser,
		Deny:  mustRules(t, "run_command:git:push", "run_command:rm"),
		Allow: mustRules(t, "run_command:*")}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd  string
		deny bool
	}{
		{"git commit -m x && git push", true},
		{"echo $(git push)", true},
		{"echo `git push origin main`", true},
		{"cat <(git push)", true},
		{"git -C dir push", true},
		{"git -c x=y push", true},
		{"/usr/bin/git push", true},
		{"env X=1 git push", true},
		{"nice -n 5 git push", true},
		{"timeout 5 git push", true},
		{"xargs git push < refs", true},
		{"xargs -i git push", true}, // -i takes no separate value: err towards matching
		{"timeout -s KILL -- 5 git push", true},
		{"sudo -u me git push", true},
		{"bash -c 'git push'", true},
		{"sh -c \"cd x && git push\"", true},
		{"eval \"git push\"", true},
		{"eval \"$CMD\"", true}, // unknown text: matches every run_command deny rule
		{"$GIT push", true},     // non-literal program
		{"bash <<'EOF'\ngit push\nEOF", true},
		{"echo 'git push' | bash", true}, // a shell reading a pipe
		{"f() { git push; }; f", true},
		{"if git push; then :; fi", true},
		{"find . -exec rm {} \\;", true},
		{"git \"push\"", true},
		{"g\\it push", true},
		{"git $(echo push)", true}, // an argument that is not literal may be push
		{"alias g=git; g push", true},
		{"shopt -s expand_aliases\nalias g='git push'\ng", true},
		{"hash -p /usr/bin/git g; g push", true},
		{"trap 'git push' EXIT", true},
		{"PS4='$(git push)' bash -xc ls", true},
		{"export PROMPT_COMMAND='git push'", true},
		{"BASH_ENV=./x bash -c ls", true},
		{"bash /dev/stdin <<< 'git push'", true},
		{"bash -s <<< 'git push'", true},
		{"bash --rcfile x -c 'git push'", true},
		{"strace -f -o log git push", true},
		{"chroot / git push", true},
		{"direnv exec . git push", true},
		{"bash --norc -o pipefail -ec 'git push'", true},
		{"source <(echo git push)", true},
		{". /dev/stdin <<EOF\ngit push\nEOF", true},
		{"python3 -c 'import os; os.system(\"git push\")'", true},
		{"awk 'BEGIN{system(\"git push\")}'", true},
		{"ssh host git push", true},
		{"git -c alias.x='!git push' x", true},
		{"set -euo pipefail; make", false},
		{"shopt -s nullglob; ls", false},
		{"python3 -c 'print(1)'", false},
		{"git status && git log", false},
		{"echo git push", false},
		{"git commit -m 'do not push'", false},
		{"bash <<'EOF'\ngit status\nEOF", false},
		{"bash ./build.sh", false}, // scripts are not looked into (documented)
	}
	for _, tt := range tests {
		req := shellRequest(tt.cmd)
		if _, got := p.DenyRule(req); got != tt.deny {
			t.Errorf("DenyRule(%q) = %v, want %v", tt.cmd, got, tt.deny)
		}
	}
	// a request whose text does not parse matches run_command deny rules
	if _, ok := p.DenyRule(shellRequest("git status && (")); !ok {
		t.Error("unparsable command not denied")
	}
}

func TestAllowNeverLooksInside(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginLocal, Allow: mustRules(t, "run_command:git", "run_command:*")}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, l, _ := p.Decide(shellRequest("git status && npm publish")); v == Allow {
		t.Errorf("compound allowed by %s", l)
	}
	if v, l, _ := p.Decide(simpleShell("npm", "publish")); v != Allow || l != LayerAllowRule {
		t.Errorf("simple npm publish = %s %s, want allow by rule", v, l)
	}
	// an allow rule of the exact compound key does allow it
	exact := shellRequest("git status && npm publish")
	q, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginLocal, Allow: []keys.Pattern{keys.PatternOf(exact.Permission.Key())}}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := q.Decide(exact); v != Allow {
		t.Errorf("exact compound allow rule = %s", v)
	}
}

func TestAskRuleInsideCompound(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginUser, Mode: ModeTrust, Ask: mustRules(t, "run_command:npm:publish")}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, l, why := p.Decide(shellRequest("npm run build && npm publish")); v != AskUser || l != LayerAskRule {
		t.Errorf("= %s %s %s, want ask ask-rule", v, l, why)
	}
	if v, _, _ := p.Decide(shellRequest("npm run build")); v != Allow {
		t.Errorf("trust = %s, want allow", v)
	}
}

func TestRestricted(t *testing.T) {
	t.Parallel()
	trust, _ := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginFlags, Mode: ModeTrust}}})
	plan, _ := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginFlags, Mode: ModePlan}}})
	write := &Request{Tool: "write_file", Class: ClassWrite, Permission: Ask(keys.Key{Tool: "write_file", Action: "a.go"})}
	read := &Request{Tool: "read_file", Class: ClassRead}
	net := &Request{Tool: "web_fetch", Class: ClassNetwork, Permission: Ask(keys.Key{Tool: "web_fetch", Action: "example.com"})}
	tests := []struct {
		p      *Policy
		req    *Request
		dir    Directive
		denied bool
	}{
		{trust, write, DirectiveReadOnly, true},
		{trust, write, DirectivePlanOnly, true},
		{trust, write, DirectiveAnalyze, true},
		{trust, write, DirectiveNoEdit, true},
		{trust, net, DirectiveNoEdit, false},
		{trust, shellRequest("rm -rf x"), DirectiveNoEdit, true},
		{trust, shellRequest("git status"), DirectiveReadOnly, false},
		{trust, shellRequest("git push"), DirectiveReadOnly, true},
		{trust, read, DirectiveReadOnly, false},
		{trust, write, DirectiveNone, false},
		{trust, write, Directive("bogus"), true},
		{plan, write, DirectiveNone, true},
		{plan, read, DirectiveNone, false},
		{plan, shellRequest("git log -3"), DirectiveNone, false},
		{plan, shellRequest("make"), DirectiveNone, true},
	}
	for _, tt := range tests {
		r := *tt.req
		r.Directive = tt.dir
		if _, got := tt.p.Restricted(&r); got != tt.denied {
			t.Errorf("Restricted(%s %q, %s, mode %s) = %v, want %v", r.Tool, r.Display, tt.dir, tt.p.Mode(), got, tt.denied)
		}
	}
}

func TestProjectFileCannotLoosen(t *testing.T) {
	t.Parallel()
	for _, s := range []*Settings{
		{Origin: OriginProject, Name: "ccrun.json", Mode: ModeTrust},
		{Origin: OriginProject, Name: "ccrun.json", Mode: ModeAcceptEdits},
		{Origin: OriginProject, Name: "ccrun.json", Allow: mustRules(t, "run_command:git")},
	} {
		if _, err := NewPolicy(PolicyConfig{Layers: []*Settings{s}}); !errors.Is(err, errclass.InvalidConfig) {
			t.Errorf("NewPolicy(%+v) error = %v, want errclass.InvalidConfig", s, err)
		}
	}
	// a project allow rule never allows @shell exec code (the ceiling)
	p, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginProject, Name: "ccrun.json", Allow: mustRules(t, "capability:fmt", "write_file:docs/**")}}})
	if err != nil {
		t.Fatal(err)
	}
	shellCap := &Request{Tool: "fmt", Environment: "@shell", Class: ClassExec, Permission: Ask(keys.Key{Tool: "capability", Action: "fmt"})}
	if v, _, why := p.Decide(shellCap); v == Allow {
		t.Errorf("committed allow rule allowed @shell code: %s", why)
	}
	wasmCap := *shellCap
	wasmCap.Environment = "@wasm"
	if v, l, _ := p.Decide(&wasmCap); v != Allow || l != LayerAllowRule {
		t.Errorf("@wasm capability = %s %s, want allow by rule", v, l)
	}
	noEnv := *shellCap
	noEnv.Environment = ""
	if v, _, _ := p.Decide(&noEnv); v == Allow {
		t.Error("committed allow rule allowed a call whose environment is not said")
	}
	doc := &Request{Tool: "write_file", Environment: "@shell", Class: ClassWrite, Permission: Ask(keys.Key{Tool: "write_file", Action: "docs/a.md"})}
	if v, _, _ := p.Decide(doc); v != Allow {
		t.Errorf("docs write = %s, want allow", v)
	}
}

func TestVisibleAndScope(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginUser, Deny: mustRules(t, "web_fetch", "capability:evil-*", "run_command:git:push")}}})
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]bool{"web_fetch": false, "evil-tool": false, "run_command": true, "read_file": true} {
		if got := p.Visible(tool, false); got != want {
			t.Errorf("Visible(%s) = %v, want %v", tool, got, want)
		}
	}
	// denied again at execution
	if _, ok := p.DenyRule(&Request{Tool: "web_fetch", Class: ClassNetwork, Permission: Ask(keys.Key{Tool: "web_fetch", Action: "example.com"})}); !ok {
		t.Error("hidden tool not denied at execution")
	}
	if _, ok := p.DenyRule(&Request{Tool: "evil-tool", Class: ClassRead}); !ok {
		t.Error("hidden None capability not denied at execution")
	}
}

func TestSubAgent(t *testing.T) {
	t.Parallel()
	parent, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginUser, Mode: ModeTrust, Deny: mustRules(t, "web_fetch")}}})
	if err != nil {
		t.Fatal(err)
	}
	child, err := parent.SubAgent()
	if err != nil {
		t.Fatal(err)
	}
	write := &Request{Tool: "write_file", Class: ClassWrite, Permission: Ask(keys.Key{Tool: "write_file", Action: "a.go"})}
	if _, ok := child.InScope(write); ok {
		t.Error("sub-agent may call a write tool")
	}
	if child.Visible("write_file", false) {
		t.Error("sub-agent sees a write tool")
	}
	if _, ok := child.InScope(&Request{Tool: "read_file", Class: ClassRead}); !ok {
		t.Error("sub-agent may not read")
	}
	if child.Visible("web_fetch", true) {
		t.Error("sub-agent sees a tool its parent denies")
	}
	if _, err := child.SubAgent(); !errors.Is(err, ErrDepthExceeded) {
		t.Errorf("depth-2 SubAgent error = %v, want ErrDepthExceeded", err)
	}
	if _, ok := parent.InScope(write); !ok {
		t.Error("the parent lost its scope")
	}
}

func ExamplePolicy_SubAgent() {
	parent, _ := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginUser, Mode: ModeTrust}}})
	child, _ := parent.SubAgent()

	write := &Request{Tool: "write_file", Class: ClassWrite,
		Permission: Ask(keys.MustParseKey("write_file:main.go"))}
	reason, ok := child.InScope(write)
	fmt.Println(ok, reason)

	read := &Request{Tool: "read_file", Class: ClassRead, Permission: None()}
	_, ok = child.InScope(read)
	fmt.Println(ok, child.Mode())

	_, err := child.SubAgent()
	fmt.Println(err)
	// Output:
	// false write_file is outside the read-only scope (only tools that never ask are visible)
	// true plan
	// sub-agent at depth 1: cannot derive another (max 1): sub-agent depth exceeded
}

func ExamplePolicy_Decide() {
	local, _ := ParseSettings([]byte(`{
  "mode": "default",
  "permissions": {"deny": ["run_command:git:push"], "ask": ["run_command:npm:publish"]}
}`), "ccrun.local.json", OriginLocal)
	p, _ := NewPolicy(PolicyConfig{Layers: []*Settings{local}})

	for _, cmd := range []string{"git log --oneline -5", "git commit -m x && git push", "npm test && npm publish", "make"} {
		req := &Request{Tool: "run_command", Class: ClassExec, Command: &Command{Source: cmd},
			Permission: Ask(keys.Key{Tool: "run_command", Action: cmd, Exact: true})}
		if rule, denied := p.DenyRule(req); denied {
			fmt.Printf("%-28s deny  (%s)\n", cmd, rule)
			continue
		}
		v, layer, _ := p.Decide(req)
		fmt.Printf("%-28s %-5s (%s)\n", cmd, v, layer)
	}
	// Output:
	// git log --oneline -5         allow (read-only)
	// git commit -m x && git push  deny  (run_command:git:push (ccrun.local.json))
	// npm test && npm publish      ask   (ask-rule)
	// make                         ask   (mode)
}

func BenchmarkDecide(b *testing.B) {
	p, err := NewPolicy(PolicyConfig{Layers: []*Settings{{Origin: OriginUser,
		Deny:  []keys.Pattern{keys.MustParsePattern("run_command:git:push"), keys.MustParsePattern("run_command:rm")},
		Ask:   []keys.Pattern{keys.MustParsePattern("run_command:npm:publish")},
		Allow: []keys.Pattern{keys.MustParsePattern("run_command:go")}}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, src := range []string{"git status", "go test ./... && git log --oneline -5 | head"} {
		req := shellRequest(src)
		f, _ := parseFile(src)
		req.Command.File = f
		b.Run(fmt.Sprintf("len%d", len(src)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.DenyRule(req)
				p.Decide(req)
			}
		})
	}
}
