package advice

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// TestNeverBeyondTheCeiling: for every environment (the built-in ones and
// registered ones of each ceiling) and every way a call is denied, the
// advice's answers and its grants ahead stay within the ceiling and what
// the gate offered, and what no answer allows (a rule, the mode, a
// directive, the scope) offers no answer at all.
func TestNeverBeyondTheCeiling(t *testing.T) {
	t.Parallel()
	envs := []struct {
		env  ceiling.Environment
		ceil ceiling.Grant
		key  keys.Key
	}{
		{ceiling.Shell, ceiling.AlwaysThisSession, keys.Key{Tool: keys.ShellTool, Action: "make"}},
		{ceiling.Wasm, ceiling.AlwaysThisProject, keys.Key{Tool: "capability", Action: "fmt"}},
		{ceiling.Docker, ceiling.AlwaysThisProject, keys.Key{Tool: "run_docker", Action: "busybox", Detail: "1.36"}},
		{"@toy", ceiling.AlwaysThisSession, keys.Key{Tool: "capability", Action: "boxed"}},
		{"@toyonce", ceiling.Once, keys.Key{Tool: "capability", Action: "onceonly"}},
		{"@unplaced", ceiling.Deny, keys.Key{Tool: "capability", Action: "lost"}}, // an environment ccrun cannot place
	}
	kinds := []struct {
		name  string
		layer permission.Layer
		offer func(ceiling.Grant) ceiling.Grant
		err   error
		fixed bool
	}{
		{"nobody to ask", permission.LayerApprover, same, nil, false},
		{"a person said no", permission.LayerApprover, same, nil, false},
		{"a dangerous path", permission.LayerApprover, func(ceiling.Grant) ceiling.Grant { return ceiling.Once }, nil, false},
		{"a grant above the ceiling", permission.LayerApprover, same, fmt.Errorf("x: %w", ceiling.ErrViolation), false},
		{"a deny rule", permission.LayerDenyRule, same, nil, true},
		{"a directive", permission.LayerDirective, same, nil, true},
		{"the scope", permission.LayerScope, same, nil, true},
	}
	for _, e := range envs {
		for _, k := range kinds {
			t.Run(string(e.env)+"/"+k.name, func(t *testing.T) {
				t.Parallel()
				d := Denial{
					Request:  &permission.Request{Environment: e.env},
					Decision: &permission.Decision{Verdict: permission.Refuse, Key: e.key, Layer: k.layer, Offer: k.offer(e.ceil)},
					Err:      k.err, Ceiling: e.ceil,
				}
				a := For(d)
				limit := max(min(e.ceil, d.Decision.Offer), ceiling.Once)
				text := a.Text() + a.Session
				if k.fixed {
					if !a.Fixed || len(a.Answers) != 0 || a.Session != "" || !strings.Contains(text, "change what denies it") {
						t.Errorf("%+v: want no answer, only a change of what denies it", a)
					}
					return
				}
				if a.Fixed || len(a.Answers) == 0 || a.Answers[0] != ceiling.Once || a.Max() != limit {
					t.Errorf("answers %v, want once up to %s", a.Answers, limit)
				}
				if limit < ceiling.AlwaysThisProject && (strings.Contains(text, "project") && !strings.Contains(text, "trusted project") ||
					strings.Contains(text, "--scope project")) {
					t.Errorf("advises beyond %s: %s", limit, text)
				}
				if limit < ceiling.AlwaysThisSession && (strings.Contains(text, "session") || strings.Contains(text, "with a rule")) {
					t.Errorf("advises beyond %s: %s", limit, text)
				}
				if limit == ceiling.AlwaysThisSession && a.Session != "ccrun allowlist add "+quote(keys.PatternOf(e.key).String())+" --scope session" {
					t.Errorf("session way %q", a.Session)
				}
				if limit == ceiling.AlwaysThisProject && !strings.Contains(a.Ahead, "--scope project") {
					t.Errorf("no project grant ahead: %s", text)
				}
			})
		}
	}
}

func same(g ceiling.Grant) ceiling.Grant { return g }

// TestWords: the answers as a person gives them.
func TestWords(t *testing.T) {
	t.Parallel()
	for ceil, want := range map[ceiling.Grant]string{
		ceiling.Once:              "answer once when asked",
		ceiling.AlwaysThisSession: "answer once or session when asked",
		ceiling.AlwaysThisProject: "answer once, session or project when asked",
	} {
		a := For(Denial{Request: &permission.Request{Environment: ceiling.Wasm},
			Decision: &permission.Decision{Key: keys.Key{Tool: "capability", Action: "x"}, Layer: permission.LayerApprover, Offer: ceil}, Ceiling: ceil})
		if a.Answer != want {
			t.Errorf("ceiling %s: %q, want %q", ceil, a.Answer, want)
		}
	}
	a := For(Denial{Request: &permission.Request{Environment: ceiling.Shell},
		Decision: &permission.Decision{Key: keys.Key{Tool: keys.ShellTool, Action: "it's"}, Layer: permission.LayerApprover, Offer: ceiling.AlwaysThisSession},
		Ceiling:  ceiling.AlwaysThisSession})
	if want := `ccrun allowlist add 'run_command:"it'\''s":""' --scope session`; a.Session != want {
		t.Errorf("quoted: %s, want %s", a.Session, want)
	}
}
