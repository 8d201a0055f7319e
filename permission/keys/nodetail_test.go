package keys

import (
	"errors"
	"testing"
)

// TestGrantOfBareCommandIsBare: the grant made of a shell command with no
// argument (make, git, git --no-pager) covers that command, and no
// command of the program with a detail (make deploy, git push); a rule
// written as the same text (run_command:make) still covers every detail.
// The grant prints as run_command:make:"" and reads back to itself.
func TestGrantOfBareCommandIsBare(t *testing.T) {
	t.Parallel()
	sh := func(action, detail string) Key { return Key{Tool: ShellTool, Action: action, Detail: detail} }
	for _, tc := range []struct {
		granted Key
		want    string // the grant as written
		others  []Key  // not covered by the grant, covered by the rule of the program
	}{
		{sh("make", ""), `run_command:make:""`, []Key{sh("make", "deploy"), sh("make", "test"), sh("make", "*")}},
		{sh("git", ""), `run_command:git:""`, []Key{sh("git", "push"), sh("git", "status")}},
		{sh("./x.sh", ""), `run_command:./x.sh:""`, []Key{sh("./x.sh", "deploy")}},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			g := PatternOf(tc.granted)
			if got := g.String(); got != tc.want {
				t.Fatalf("PatternOf(%s) = %s, want %s", tc.granted, got, tc.want)
			}
			back, err := ParsePattern(g.String())
			if err != nil {
				t.Fatalf("ParsePattern(%s): %v", g, err)
			}
			if back != g || !back.Equal(g) || back.String() != tc.want {
				t.Fatalf("ParsePattern(%s) = %#v, want %#v", g, back, g)
			}
			if !back.NoDetail() || !g.NoDetail() {
				t.Errorf("%s.NoDetail() = false", g)
			}
			rule := MustParsePattern("run_command:" + tc.granted.Action)
			if rule.NoDetail() || rule == g {
				t.Errorf("the rule %s reads as the grant %s", rule, g)
			}
			for _, p := range []Pattern{g, back, rule} {
				if !p.Match(tc.granted) {
					t.Errorf("%s does not cover %s", p, tc.granted)
				}
			}
			for _, k := range tc.others {
				for _, p := range []Pattern{g, back} {
					if p.Match(k) {
						t.Errorf("the grant %s of %s covers %s", p, tc.granted, k)
					}
				}
				if !rule.Match(k) {
					t.Errorf("the rule %s does not cover %s", rule, k)
				}
			}
			// Nor does the grant cover any other program, nor the same
			// program keyed by its whole text.
			for _, k := range []Key{sh(tc.granted.Action+"x", ""), {Tool: ShellTool, Action: tc.granted.Action, Exact: true},
				{Tool: "other", Action: tc.granted.Action}} {
				if g.Match(k) {
					t.Errorf("the grant %s covers %s", g, k)
				}
			}
		})
	}
}

// TestNoDetailPatterns: what a person may write with a quoted empty
// detail, and what it matches.
func TestNoDetailPatterns(t *testing.T) {
	t.Parallel()
	keys := map[string]Key{
		"make":         {Tool: ShellTool, Action: "make"},
		"make deploy":  {Tool: ShellTool, Action: "make", Detail: "deploy"},
		"git":          {Tool: ShellTool, Action: "git"},
		"git push":     {Tool: ShellTool, Action: "git", Detail: "push"},
		"exact make":   {Tool: ShellTool, Action: "make", Exact: true},
		"compound":     {Tool: ShellTool, Action: "make && make deploy", Exact: true},
		"docker":       {Tool: "run_docker", Action: "ubuntu"},
		"docker tag":   {Tool: "run_docker", Action: "ubuntu", Detail: "22.04"},
		"write":        {Tool: "write_file", Action: "a.go"},
		"write detail": {Tool: "write_file", Action: "a.go", Detail: "x"},
	}
	for _, tc := range []struct {
		pattern, want string // as written, as printed
		match         []string
	}{
		{`run_command:make:""`, `run_command:make:""`, []string{"make"}},
		{`run_command:*:""`, `run_command:*:""`, []string{"make", "git"}},
		{`run_command:g*:""`, `run_command:g*:""`, []string{"git"}},
		{`run_docker:ubuntu:""`, `run_docker:ubuntu:""`, []string{"docker"}},
		{`write_file:a.go:""`, `write_file:a.go:""`, []string{"write"}},
		// An exact pattern has no detail to narrow: the quotes are dropped.
		{`run_command:"make":""`, `run_command:"make"`, []string{"exact make"}},
		{`run_command:"make&&make  deploy":""`, `run_command:"make && make deploy"`, []string{"compound"}},
		// The rules of every detail are unchanged.
		{`run_command:make`, `run_command:make`, []string{"make", "make deploy"}},
		{`run_command:make:*`, `run_command:make:*`, []string{"make", "make deploy"}},
		{`run_docker:ubuntu`, `run_docker:ubuntu`, []string{"docker", "docker tag"}},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePattern(tc.pattern)
			if err != nil {
				t.Fatalf("ParsePattern(%s): %v", tc.pattern, err)
			}
			if got := p.String(); got != tc.want {
				t.Fatalf("ParsePattern(%s).String() = %s, want %s", tc.pattern, got, tc.want)
			}
			if back := MustParsePattern(p.String()); back != p {
				t.Fatalf("%s does not read back to itself: %#v, want %#v", p, back, p)
			}
			want := map[string]bool{}
			for _, name := range tc.match {
				want[name] = true
			}
			for name, k := range keys {
				if got := p.Match(k); got != want[name] {
					t.Errorf("%s.Match(%s) = %v, want %v", p, k, got, want[name])
				}
			}
		})
	}
}

// TestNoDetailErrors: a key never has an empty detail, and an empty
// action is not one, quoted or not.
func TestNoDetailErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`run_command:make:""`, `run_command:"make":""`} {
		if k, err := ParseKey(in); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKey(%s) = %#v, %v; want ErrInvalidKey (a key without detail is written without it)", in, k, err)
		}
	}
	for _, in := range []string{`run_command:"":""`, `run_command::""`, `run_command:make:"":""`, `run_command:make:""x`, `run_command:make:"" `} {
		if p, err := ParsePattern(in); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParsePattern(%s) = %#v, %v; want ErrInvalidKey", in, p, err)
		}
	}
}

// TestGrantsOfOtherTools: a grant of a key without detail of another tool
// than run_command keeps matching every detail, as before, and prints as
// before (capability:NAME and run_wasm:PATH keys never have one; an image
// key's detail is its tag, and the grant is bound to the image's ID).
func TestGrantsOfOtherTools(t *testing.T) {
	t.Parallel()
	for _, k := range []Key{
		{Tool: "capability", Action: "fmt-json"},
		{Tool: "run_wasm", Action: "tools/x.wasm"},
		{Tool: "run_docker", Action: "ubuntu"},
		{Tool: "write_file", Action: "a.go"},
	} {
		p := PatternOf(k)
		if p.String() != k.String() || p.NoDetail() {
			t.Errorf("PatternOf(%s) = %s (NoDetail %v), want %s", k, p, p.NoDetail(), k)
		}
		if d := (Key{Tool: k.Tool, Action: k.Action, Detail: "x"}); !p.Match(d) {
			t.Errorf("PatternOf(%s) does not cover %s", k, d)
		}
	}
	// A key keyed exactly, or with a detail, gets no empty detail.
	for _, k := range []Key{
		{Tool: ShellTool, Action: "make", Exact: true},
		{Tool: ShellTool, Action: "make && make deploy", Exact: true},
		{Tool: ShellTool, Action: "make", Detail: "test"},
	} {
		if p := PatternOf(k); p.NoDetail() || p.String() != k.String() {
			t.Errorf("PatternOf(%s) = %s (NoDetail %v), want %s", k, p, p.NoDetail(), k)
		}
	}
}
