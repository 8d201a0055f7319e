package keys

import (
	"errors"
	"strings"
	"testing"
)

func TestKeyStringRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  Key
		want string
	}{
		{Key{Tool: "run_command", Action: "git"}, "run_command:git"},
		{Key{Tool: "run_command", Action: "git", Detail: "status"}, "run_command:git:status"},
		{Key{Tool: "run_command", Action: "./git", Detail: "push"}, "run_command:./git:push"},
		{Key{Tool: "run_command", Action: "/usr/bin/git"}, "run_command:/usr/bin/git"},
		{Key{Tool: "write_file", Action: "tests/main_test.go"}, "write_file:tests/main_test.go"},
		{Key{Tool: "capability", Action: "fmt-json"}, "capability:fmt-json"},
		{Key{Tool: "run_command", Action: "a.b_c/d+e-f@g%h,i=j~k#l"}, "run_command:a.b_c/d+e-f@g%h,i=j~k#l"},
		{Key{Tool: "run_command", Action: "git status && git push", Exact: true}, `run_command:"git status && git push"`},
		{Key{Tool: "run_command", Action: "git", Exact: true}, `run_command:"git"`},
		{Key{Tool: "run_command", Action: "a=b", Exact: true}, `run_command:"a=b"`},
		{Key{Tool: "run_command", Action: "g\u0456t status", Exact: true}, `run_command:"g\u0456t status"`},
		{Key{Tool: "run_command", Action: "echo \x1b[31mred\x00", Exact: true}, `run_command:"echo \x1b[31mred\x00"`},
		{Key{Tool: "run_command", Action: "echo \xff\xfe", Exact: true}, `run_command:"echo \xff\xfe"`},
		{Key{Tool: "run_command", Action: "cat <<EOF\na\"b\\c\nEOF", Exact: true}, `run_command:"cat <<EOF\na\"b\\c\nEOF"`},
		{Key{Tool: "run_command", Action: "a:b", Exact: true}, `run_command:"a:b"`},
		{Key{Tool: "run_command", Action: "git", Detail: "a b"}, `run_command:git:"a b"`},
		{Key{Tool: "run_command", Action: "git", Detail: "*"}, `run_command:git:"*"`},
		{Key{Tool: "run_command", Action: "git", Detail: "a:b"}, `run_command:git:"a:b"`},
		{Key{Tool: "run_command", Action: "x", Detail: "y", Exact: true}, `run_command:"x":y`},
		{Key{Tool: "t-1.x_y", Action: "a"}, "t-1.x_y:a"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			if !tt.key.Valid() {
				t.Fatalf("%#v.Valid() = false, want true", tt.key)
			}
			got := tt.key.String()
			if got != tt.want {
				t.Fatalf("String() = %s, want %s", got, tt.want)
			}
			for i := 0; i < len(got); i++ {
				if got[i] < 0x20 || got[i] >= 0x7f {
					t.Fatalf("String() = %q has a byte that is not printable ASCII", got)
				}
			}
			back, err := ParseKey(got)
			if err != nil {
				t.Fatalf("ParseKey(%s): %v", got, err)
			}
			if back != tt.key {
				t.Fatalf("ParseKey(%s) = %#v, want %#v", got, back, tt.key)
			}
			// A key is also a pattern that matches itself.
			p, err := ParsePattern(got)
			if err != nil {
				t.Fatalf("ParsePattern(%s): %v", got, err)
			}
			if !p.Match(tt.key) {
				t.Fatalf("ParsePattern(%s).Match(itself) = false", got)
			}
			// The grant of a key: the same text, or for a shell command
			// with no detail, that text with the empty detail (no other).
			want := p.String()
			if tt.key.Tool == ShellTool && !tt.key.Exact && tt.key.Detail == "" {
				want += `:""`
			}
			if pk := PatternOf(tt.key); !pk.Match(tt.key) || pk.String() != want {
				t.Fatalf("PatternOf(%s) = %s, matches=%v; want %s, matching", got, pk, pk.Match(tt.key), want)
			}
		})
	}
}

func TestParseKeyErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"",
		"git",
		"run_command",
		"run_command:",
		"run_command::",
		"run_command::status",
		":git",
		"run command:git",
		"run_command:git:push:x",
		"run_command:git:",
		`run_command:"unterminated`,
		`run_command:""`,
		`run_command:git:""`,
		`run_command:"a"b`,
		`run_command:"a"` + "\n",
		`"run_command":git`,
		"run_command:git*",
		"run_command:*",
		"run_command:git:*",
		"run_command:g it",
		"run_command:g\u0456t",      // Cyrillic і, unquoted
		"run_command:git\x1b[0m",    // ANSI escape, unquoted
		"run_command:git\u200b",     // zero-width space, unquoted
		"run_command:\u202egit",     // RTL override, unquoted
		"run_command:git\n",         // newline
		"run_command:git:sta tus",   // space in detail
		"run_command:" + "\"a\nb\"", // raw newline inside quotes
		"*:git",
		"run_command\x00:git",
		"ru\u0274_command:git",
	} {
		t.Run(strings.ToValidUTF8(in, "?"), func(t *testing.T) {
			t.Parallel()
			k, err := ParseKey(in)
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ParseKey(%q) = %#v, %v; want an error of class ErrInvalidKey", in, k, err)
			}
		})
	}
}

func TestParsePatternErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "*", "*:git", "run_*:git", "run_command", "run_command:", "run_command:git:*:*",
		"run_command:g it*", `run_command:"unterminated`, `run_command:""`, "run_command:*:",
		"run_command:g\u0456t*",
	} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePattern(in)
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ParsePattern(%q) = %#v, %v; want an error of class ErrInvalidKey", in, p, err)
			}
		})
	}
}

func TestKeyValid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		key  Key
		want bool
	}{
		{Key{}, false},
		{Key{Tool: "run_command"}, false},
		{Key{Action: "git"}, false},
		{Key{Tool: "run command", Action: "git"}, false},
		{Key{Tool: "run_command:x", Action: "git"}, false},
		{Key{Tool: "run_command", Action: "git status"}, false}, // not bare and not exact
		{Key{Tool: "run_command", Action: "*"}, false},
		{Key{Tool: "run_command", Action: "", Exact: true}, false},
		{Key{Tool: "run_command", Action: "git status", Exact: true}, true},
		{Key{Tool: "run_command", Action: "git"}, true},
		{Key{Tool: "run_command", Action: "git", Detail: "what ever"}, true},
	} {
		if got := tt.key.Valid(); got != tt.want {
			t.Errorf("%#v.Valid() = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestPatternRoundTrip(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"run_command:git",
		"run_command:git:push",
		"run_command:git:*",
		"run_command:*",
		"run_command:*:*",
		"run_command:g*",
		"write_file:tests/**",
		"write_file:src/*/x.go",
		`run_command:"git status && git push"`,
		`run_command:"*"`,
		`run_command:git:"a b"`,
	} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePattern(in)
			if err != nil {
				t.Fatalf("ParsePattern(%s): %v", in, err)
			}
			if got := p.String(); got != in {
				t.Fatalf("ParsePattern(%s).String() = %s", in, got)
			}
		})
	}
}

func TestPatternMatch(t *testing.T) {
	t.Parallel()
	keys := map[string]Key{
		"git":          {Tool: "run_command", Action: "git"},
		"git status":   {Tool: "run_command", Action: "git", Detail: "status"},
		"git push":     {Tool: "run_command", Action: "git", Detail: "push"},
		"./git push":   {Tool: "run_command", Action: "./git", Detail: "push"},
		"/bin/git":     {Tool: "run_command", Action: "/bin/git"},
		"gitk":         {Tool: "run_command", Action: "gitk"},
		"ls":           {Tool: "run_command", Action: "ls", Detail: "-la"},
		"compound":     {Tool: "run_command", Action: "git status && git push", Exact: true},
		"compound git": {Tool: "run_command", Action: "git", Exact: true},
		"write":        {Tool: "write_file", Action: "tests/a/b_test.go"},
		"write top":    {Tool: "write_file", Action: "tests/x.go"},
	}
	tests := []struct {
		pattern string
		match   []string // the names of keys it matches; it matches no other
	}{
		{"run_command:git", []string{"git", "git status", "git push"}},
		{"run_command:git:push", []string{"git push"}},
		{"run_command:git:status", []string{"git status"}},
		{"run_command:git:*", []string{"git", "git status", "git push"}},
		{"run_command:git:**", []string{"git", "git status", "git push"}},
		{"run_command:git:p*", []string{"git push"}},
		{"run_command:*", []string{"git", "git status", "git push", "./git push", "/bin/git", "gitk", "ls"}},
		{"run_command:**", []string{"git", "git status", "git push", "./git push", "/bin/git", "gitk", "ls"}},
		{"run_command:*:push", []string{"git push", "./git push"}},
		{"run_command:git*", []string{"git", "git status", "git push", "gitk"}},
		{"run_command:*git", []string{"git", "git status", "git push"}},
		{"run_command:**git", []string{"git", "git status", "git push", "./git push", "/bin/git"}},
		{"run_command:./git", []string{"./git push"}},
		{"run_command:/bin/*", []string{"/bin/git"}},
		{"run_command:ls:-la", []string{"ls"}},
		{`run_command:"git status && git push"`, []string{"compound"}},
		{`run_command:"git"`, []string{"compound git"}},
		{`run_command:"git status"`, nil},
		{`run_command:"*"`, nil},
		{"write_file:tests/*", []string{"write top"}},
		{"write_file:tests/**", []string{"write", "write top"}},
		{"write_file:tests/*/*", []string{"write"}},
		{"write_file:tests/*/*/*", nil},
		{"write_file:tests/*/b_test.go", []string{"write"}},
		{"write_file:tests/a/*", []string{"write"}},
		{"write_file:**_test.go", []string{"write"}},
		{"write_file:*", []string{"write", "write top"}},
		{"capability:*", nil},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			p := MustParsePattern(tt.pattern)
			want := map[string]bool{}
			for _, name := range tt.match {
				want[name] = true
			}
			for name, k := range keys {
				if got := p.Match(k); got != want[name] {
					t.Errorf("%s.Match(%s) = %v, want %v", tt.pattern, k, got, want[name])
				}
			}
		})
	}
}

// A compound (exact) key is matched by no wildcard pattern, whatever its
// text, and by an exact pattern only of the same command (not of one with
// an argument more).
func TestExactKeyNeverMatchedByWildcard(t *testing.T) {
	t.Parallel()
	wild := []string{
		"run_command:*", "run_command:**", "run_command:*:*", "run_command:git", "run_command:git:*",
		"run_command:git:status", "run_command:g*", "run_command:*:**",
	}
	for _, action := range []string{"git", "git status", "*", "git:status", "git status && rm -rf /", "a=b"} {
		k := Key{Tool: "run_command", Action: action, Exact: true}
		for _, w := range wild {
			if MustParsePattern(w).Match(k) {
				t.Errorf("%s matches exact key %s", w, k)
			}
		}
		other := Key{Tool: "run_command", Action: action + " x", Exact: true}
		if PatternOf(other).Match(k) {
			t.Errorf("%s matches %s", PatternOf(other), k)
		}
		// Another tool's exact keys are text, not commands: a space counts.
		spaced := Key{Tool: "other", Action: action + " ", Exact: true}
		if PatternOf(spaced).Match(Key{Tool: "other", Action: action, Exact: true}) {
			t.Errorf("%s matches %s", PatternOf(spaced), k)
		}
		if (Pattern{Tool: "other", Action: action, Exact: true}).Match(k) {
			t.Errorf("a pattern of another tool matches %s", k)
		}
	}
}

func TestHasWildcard(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"run_command:git":          false,
		"run_command:git:push":     false,
		"run_command:git:*":        true,
		"run_command:*":            true,
		"write_file:a/**":          true,
		`run_command:"*"`:          false,
		`run_command:"git && ls"`:  false,
		`run_command:"git *":push`: false,
	} {
		if got := MustParsePattern(in).HasWildcard(); got != want {
			t.Errorf("%s.HasWildcard() = %v, want %v", in, got, want)
		}
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pat, name string
		want      bool
	}{
		{"*", "", true},
		{"*", "a/b", true},
		{"**", "a/b", true},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"a*", "a/b", false},
		{"a**", "a/b", true},
		{"a***", "a/b", true},
		{"*b", "a/b", false},
		{"**b", "a/b", true},
		{"a*c", "abc", true},
		{"a*c", "abd", false},
		{"a*b*c", "axbyc", true},
		{"a*b*c", "axbyd", false},
		{"a/*/c", "a/b/c", true},
		{"a/*/c", "a/b/d/c", false},
		{"a/**/c", "a/b/d/c", true},
		{"a/**", "a/", true},
		{"", "", true},
		{"", "a", false},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 200), false},
		{"**a**a**a**a**a**a**a**a**a**a**b", strings.Repeat("a/", 200), false},
	} {
		if got := Glob(tt.pat, tt.name); got != tt.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tt.pat, tt.name, got, tt.want)
		}
	}
}

// globRef is the backtracking matcher glob replaced (exponential time on
// some inputs), kept as a reference for FuzzGlob.
func globRef(pat, name string) bool {
	if pat == "*" || pat == "**" {
		return true
	}
	for len(pat) > 0 {
		if pat[0] != '*' {
			if len(name) == 0 || name[0] != pat[0] {
				return false
			}
			pat, name = pat[1:], name[1:]
			continue
		}
		deep := strings.HasPrefix(pat, "**")
		pat = strings.TrimLeft(pat, "*")
		for i := 0; i <= len(name); i++ {
			if globRef(pat, name[i:]) {
				return true
			}
			if i < len(name) && name[i] == '/' && !deep {
				return false
			}
		}
		return false
	}
	return len(name) == 0
}

func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"*", "a/b"}, {"a*b", "axb"}, {"a/**/c", "a/b/c"}, {"*a*b", "aab"}, {"**/x", "a/b/x"}, {"a*/b", "ax/b"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		if len(pat) > 16 || len(name) > 32 {
			t.Skip() // the reference is exponential
		}
		if got, want := Glob(pat, name), globRef(pat, name); got != want {
			t.Fatalf("Glob(%q, %q) = %v, reference says %v", pat, name, got, want)
		}
	})
}

// A quoted detail is literal: its * are characters, not wildcards.
func TestQuotedDetailIsLiteral(t *testing.T) {
	t.Parallel()
	p := MustParsePattern(`run_command:git:"a b*"`)
	if p.Match(Key{Tool: "run_command", Action: "git", Detail: "a bc"}) {
		t.Error(`run_command:git:"a b*" matched detail "a bc"`)
	}
	if !p.Match(Key{Tool: "run_command", Action: "git", Detail: "a b*"}) {
		t.Error(`run_command:git:"a b*" did not match its own detail`)
	}
	if got := MustParsePattern(`run_command:git:"x*"`).String(); got != `run_command:git:"x*"` {
		t.Errorf("String() = %s, want the detail kept quoted", got)
	}
	if MustParsePattern(`run_command:git:"*"`).Match(Key{Tool: "run_command", Action: "git", Detail: "push"}) {
		t.Error(`a quoted "*" detail matched any detail`)
	}
	// The pattern of a key matches only that key's detail.
	k := Key{Tool: "t", Action: "a", Detail: "x*"}
	if PatternOf(k).Match(Key{Tool: "t", Action: "a", Detail: "xy"}) {
		t.Error("PatternOf a key with * in its detail matched another detail")
	}
}

// TestNetKey: a connection's key prints as net:HOST:PORT, parses back, and
// is matched by a rule of the host (any port) or of a wildcard domain.
func TestNetKey(t *testing.T) {
	k := NetKey("registry.npmjs.org", 443)
	if k.String() != "net:registry.npmjs.org:443" {
		t.Fatalf("NetKey: %s", k)
	}
	if back, err := ParseKey(k.String()); err != nil || back != k {
		t.Fatalf("ParseKey(%s): %v, %v", k, back, err)
	}
	for pat, want := range map[string]bool{"net:registry.npmjs.org": true, "net:*.npmjs.org": true, "net:registry.npmjs.org:443": true,
		"net:registry.npmjs.org:80": false, "net:npmjs.org": false, "run_command:registry.npmjs.org": false} {
		if got := MustParsePattern(pat).Match(k); got != want {
			t.Errorf("%s matches %s: %v, want %v", pat, k, got, want)
		}
	}
	if k6 := NetKey("2001:db8::1", 443); k6.String() != `net:"2001:db8::1":443` {
		t.Errorf("an IPv6 host: %s", k6)
	}
}
