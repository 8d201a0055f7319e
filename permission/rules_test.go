package permission

import (
	"errors"
	"testing"

	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/internal/hostile"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"run_command:git:push": "run_command:git:push",
		"write_file":           "write_file:*",
		"run_command:git:*":    "run_command:git:*",
		`run_command:"a && b"`: `run_command:"a && b"`,
	} {
		p, err := ParseRule(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseRule(%q) = %s, %v; want %s", in, p, err, want)
		}
	}
	for _, bad := range []string{"", "run_command:", "*:x", "run_command:git status", `run_command:"unterminated`} {
		if _, err := ParseRule(bad); !errors.Is(err, keys.ErrInvalidKey) || errors.Is(err, errclass.InvalidConfig) {
			t.Errorf("ParseRule(%q) error = %v, want ErrInvalidKey alone (the caller says where it was written)", bad, err)
		}
	}
}

// A rule for a compound command is read as a command: it is kept in the
// printer's canonical form (spacing, comments, `…`), and matches the key
// ParseCommand gives every spelling of the command, quotes and all; a rule text that is not a compound command that parses stays as
// written, and CheckPattern says why it matches nothing.
func TestParseRuleCompoundSpellings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule    string
		command string // a spelling of the command the rule is meant for
		want    string // the pattern read
	}{
		{`run_command:"make test && make lint"`, "make test && make lint", `run_command:"make test && make lint"`},
		{`run_command:"make   test&&make lint"`, "make test && make lint", `run_command:"make test && make lint"`},
		{`run_command:"'make' test && make lint"`, "make test && make lint", `run_command:"'make' test && make lint"`},
		{`run_command:"\"make\" \\test  &&  make 'lint'"`, "make test && make lint", `run_command:"\"make\" \\test && make 'lint'"`},
		{`run_command:"make test &&\n  make lint"`, "make test&&make lint", `run_command:"make test &&\n\tmake lint"`},
		{`run_command:"make test && make lint # and lint"`, "make test && make lint", `run_command:"make test && make lint"`},
		{`run_command:"git push; rm -rf build"`, "git push\nrm -rf build", `run_command:"git push\nrm -rf build"`},
		{`run_command:"go test ./...|tee log"`, "go test ./... | tee log", `run_command:"go test ./... | tee log"`},
		{`run_command:"echo hi>out"`, "echo hi > out", `run_command:"echo hi >out"`},
		{`run_command:"FOO=1  make"`, "FOO=1 make", `run_command:"FOO=1 make"`},
		{`run_command:"echo $( date )"`, "echo `date`", `run_command:"echo $(date)"`},
		{`run_command:"# lint first\nmake lint&&make test"`, "make lint && make test", `run_command:"make lint && make test"`},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			t.Parallel()
			p, err := ParseRule(tt.rule)
			if err != nil {
				t.Fatalf("ParseRule(%s): %v", tt.rule, err)
			}
			if got := p.String(); got != tt.want {
				t.Errorf("ParseRule(%s) = %s, want %s", tt.rule, got, tt.want)
			}
			if k := ParseCommand(tt.command).Key; !p.Match(k) {
				t.Errorf("ParseRule(%s) = %s does not match %q, keyed %s", tt.rule, p, tt.command, k)
			}
			if err := keys.CheckPattern(p); err != nil {
				t.Errorf("CheckPattern(%s) = %v, want nil", p, err)
			}
			if again := keys.MustParsePattern(p.String()); again != p {
				t.Errorf("ParsePattern(%s) = %s: not the same pattern", p, again)
			}
		})
	}
}

// A rule that is not a compound command that parses is kept as written,
// and CheckPattern flags it with class ErrInvalidKey.
func TestParseRuleNotACommand(t *testing.T) {
	t.Parallel()
	for _, rule := range []string{
		`run_command:"make test &&"`,   // does not parse
		`run_command:"echo 'open"`,     // does not parse
		`run_command:"  "`,             // no statement
		`run_command:"git status"`,     // a simple command: run_command:git:status
		`run_command:"git"`,            // a simple command: run_command:git
		`run_command:"#unparsed:a &&"`, // a canonical text no parse prints
		`run_command:"#empty"`,
	} {
		t.Run(rule, func(t *testing.T) {
			t.Parallel()
			p, err := ParseRule(rule)
			if err != nil {
				t.Fatalf("ParseRule(%s): %v", rule, err)
			}
			if got := p.String(); got != rule {
				t.Errorf("ParseRule(%s) = %s, want it as written", rule, got)
			}
			err = keys.CheckPattern(p)
			if shellcmd.NotParsed(p.Action) {
				if err != nil {
					t.Errorf("CheckPattern(%s) = %v, want nil", p, err)
				}
				return
			}
			if !errors.Is(err, keys.ErrInvalidKey) {
				t.Errorf("CheckPattern(%s) = %v, want class ErrInvalidKey", p, err)
			}
		})
	}
	for _, rule := range []string{"run_command:git:push", "run_command:*", "write_file:src/**", `capability:"a b"`, `run_command:"x":y`} {
		if err := keys.CheckPattern(keys.MustParsePattern(rule)); err != nil {
			t.Errorf("CheckPattern(%s) = %v, want nil", rule, err)
		}
	}
}

// FuzzPolicy: the hooks never panic on any command text.
func FuzzPolicy(f *testing.F) {
	for _, e := range hostile.Corpus(f, "hostile") {
		f.Add(e.Command)
	}
	p, err := NewPolicy(PolicyConfig{ProjectDir: "/nonexistent/project", Home: "/nonexistent/home", Layers: []*Settings{{Origin: OriginUser,
		Deny: []keys.Pattern{keys.MustParsePattern("run_command:git:push")}, Ask: []keys.Pattern{keys.MustParsePattern("run_command:npm")},
		Allow: []keys.Pattern{keys.MustParsePattern("run_command:*")}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		req := shellRequest(src)
		p.DenyRule(req)
		p.Restricted(req)
		p.Decide(req)
		p.Dangerous(req)
		Warnings(req)
	})
}
