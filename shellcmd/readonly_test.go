package shellcmd

import (
	"fmt"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/internal/hostile"
)

// TestReadOnlyHostileCorpus: no command gathered from public reports of
// allowlist bypasses is ever read-only.
func TestReadOnlyHostileCorpus(t *testing.T) {
	t.Parallel()
	entries := hostile.Corpus(t, "hostile")
	if len(entries) < 120 {
		t.Fatalf("hostile corpus has %d entries, want at least 120", len(entries))
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Source == "" {
			t.Errorf("%q: no source", e.Command)
		}
		if seen[e.Command] {
			t.Errorf("%q: listed twice", e.Command)
		}
		seen[e.Command] = true
		if _, ok := ReadOnlyText(e.Command); ok {
			t.Errorf("ReadOnlyText(%q) = true, want false (source: %s)", e.Command, e.Source)
		}
	}
}

// TestReadOnlyCorpus: everyday read-only commands are read-only.
func TestReadOnlyCorpus(t *testing.T) {
	t.Parallel()
	entries := hostile.Corpus(t, "readonly")
	if len(entries) < 40 {
		t.Fatalf("read-only corpus has %d entries, want at least 40", len(entries))
	}
	for _, e := range entries {
		if why, ok := ReadOnlyText(e.Command); !ok {
			t.Errorf("ReadOnlyText(%q) = false (%s), want true", e.Command, why)
		}
	}
}

func TestReadOnlyEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		want bool
	}{
		{"git log --output-indicator-new=+", true}, // not an abbreviation of --output
		{"git log --outp=x", false},
		{"ls *.go", true},      // ls has no dangerous option: any expansion is harmless
		{"sort *.txt", false},  // *.txt could expand to --compress-program=…
		{"sort ./*.txt", true}, // every expansion starts with ./
		{"find . -exec cat {} +", false},
		{"echo {}", true}, // not a brace expansion
		{"echo {a,b}", false},
		{"echo {a,\"b\"}", false},
		{"echo '{a,b}'", true},
		{"git branch --list foo", true},
		{"git branch --contains HEAD", true},
		{"git branch --contains HEAD newname", false},
		{"git config --list", true},
		{"git config user.name x", false},
		{"git config get user.name", true},
		{"sed -n '$p' f", true},
		{"sed -n '/a/,/b/p' f", true},
		{"sed 's|a|b|gI' f", true},
		{"sed 's/a/b/ge' f", false},
		{"sed -e 's/a/b/' -n f", true},
		{"sed --expression=p f", true},
		{"sed --expr=p f", false}, // abbreviations are not accepted
		{"eval 'ls -la'", false},
		{"eval ls '&&' rm x", false},
		{"bash -c 'ls > x'", false},
		{"sh -c 'bash -c \"sh -c ls\"'", false},
		{"env", true},
		{"env LC_ALL=C sort f", false},
		{"env FOO=1 ls", false},
		{"xargs -0 grep -l foo", false},
		{"xargs sed p", false},
		{"xargs -i rm cat", false},
		{"xargs -n 1 cat", false},
		{"xargs -n1 -0 -I{} wc -l {}", false},
		{"xargs --max-args 1 cat", false},
		// another interpreter's text, or a program ccrun's interpreter does not start: never read-only
		{"bash -c 'git status'", false},
		{"xargs echo", false},
		{"find . -name '*.go' | xargs wc -l", false},
		{"timeout 10 git log -1", false},
		{"nice git status", false},
		{"command git status", false},
		{"command -v go", true},
		{"LC_ALL=C sort f", true},
		{"time ls", true},
		{"! ls", true},
		{"", false},
		{"cat 'a\x01b'", false},
		{"git", false},
		{"git -P log", true},
		{"git remote show origin", false},
		{"git reflog", true},
		{"git reflog delete HEAD@{1}", false},
		{"git stash show -p", true},
		{"LC_ALL=$(id) ls", false},
		{"ls |& cat", true},
		{"rg --pretty x", true},
		{"rg --p x", false}, // a prefix of --pre
		{"date -u", true},
		{"date --s=1", false},
		{"printf '%s\\n' x", true},
	}
	for _, tt := range tests {
		if why, got := ReadOnlyText(tt.cmd); got != tt.want {
			t.Errorf("ReadOnlyText(%q) = %v (%s), want %v", tt.cmd, got, why, tt.want)
		}
	}
}

func TestReadOnlyNil(t *testing.T) {
	t.Parallel()
	if _, ok := ReadOnly(nil); ok {
		t.Error("ReadOnly(nil) = true")
	}
}

// FuzzReadOnly: never panics; anything with a redirection or a
// substitution is never read-only.
func FuzzReadOnly(f *testing.F) {
	for _, name := range []string{"hostile", "readonly"} {
		for _, e := range hostile.Corpus(f, name) {
			f.Add(e.Command)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
		if err != nil {
			return
		}
		_, ok := ReadOnly(file)
		if !ok {
			return
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Redirect:
				t.Fatalf("ReadOnly(%q) = true with a redirection", src)
			case *syntax.ParamExp:
				if n.Param == nil || strings.Trim(n.Param.Value, "0123456789@*#") != "" || n.Param.Value == "0" {
					t.Fatalf("ReadOnly(%q) = true with a parameter expansion that is not positional", src)
				}
			case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ArithmExp, *syntax.BraceExp:
				t.Fatalf("ReadOnly(%q) = true with an expansion or substitution %T", src, n)
			case *syntax.Word:
				//lint:ignore SA1019 the fuzz inputs are short: the eager form is fine here
				if w, ok := splitBraces(n); ok && len(expand.Braces(w)) > 1 {
					t.Fatalf("ReadOnly(%q) = true with a brace expansion", src)
				}
			}
			return true
		})
	})
}

func BenchmarkReadOnly(b *testing.B) {
	for _, src := range []string{
		"git status",
		"git log --oneline -5 | head -3 && grep -rn foo . | wc -l",
		"find . -name '*.go' -exec rm {} ;",
	} {
		f, _ := parseFile(src)
		b.Run(fmt.Sprintf("%s-len%d", strings.Fields(src)[0], len(src)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ReadOnly(f)
			}
		})
	}
}

func TestReadOnlyArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		env  []string
		want bool
	}{
		{[]string{"git", "status"}, nil, true},
		{[]string{"cat", "a b", "{x,y}"}, nil, true}, // expanded words: a brace is text
		{[]string{"ls", "-la"}, []string{"LC_ALL=C"}, true},
		{[]string{"git", "status"}, []string{"GIT_CONFIG_COUNT=1"}, false},
		{[]string{"bash", "-c", "true"}, []string{"BASH_ENV=x.sh"}, false},
		{[]string{"ls"}, []string{"LD_PRELOAD=/tmp/x.so"}, false},
		{[]string{"rg", "x"}, []string{"RIPGREP_CONFIG_PATH=/tmp/rc"}, false},
		{[]string{"cat", "x"}, []string{"PATH=/tmp"}, false},
		{[]string{"rm", "x"}, nil, false},
		{[]string{"cat", "a\rb"}, nil, false},
		{nil, nil, false},
	}
	for _, tt := range tests {
		if why, got := ReadOnlyArgv(tt.argv, tt.env); got != tt.want {
			t.Errorf("ReadOnlyArgv(%q, %q) = %v (%s), want %v", tt.argv, tt.env, got, why, tt.want)
		}
	}
}

func TestRunsPrograms(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"GIT_CONFIG_COUNT", "GIT_SSH_COMMAND", "BASH_ENV", "ENV", "LD_PRELOAD",
		"PAGER", "GIT_PAGER", "LESSOPEN", "LESSCLOSE", "RIPGREP_CONFIG_PATH", "PYTHONSTARTUP", "NODE_OPTIONS",
		"PERL5OPT", "RUBYOPT", "IFS", "PATH", "PS4", "PROMPT_COMMAND", "EDITOR", "VISUAL", "SSH_ASKPASS",
		"MANPAGER", "BASH_FUNC_ls%%", "", "1X", "a-b",
		// make and the build tools it drives
		"MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "CC", "CXX", "LD", "CARGO_BUILD_RUSTC_WRAPPER",
		"CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER", "RUSTFLAGS", "CGO_CFLAGS", "GOENV", "GOTOOLCHAIN",
		"npm_config_script_shell", "NPM_CONFIG_NODE_OPTIONS", "KUBECONFIG", "DOCKER_CONFIG", "AWS_CONFIG_FILE",
		"VIMINIT", "EXINIT"} {
		if why, ok := RunsPrograms(name); !ok || why == "" {
			t.Errorf("RunsPrograms(%q) = %q, %v; want a reason, true", name, why, ok)
		}
	}
	for _, name := range []string{"LANG", "LC_ALL", "TZ", "NO_COLOR", "COLUMNS", "FOO"} {
		if why, ok := RunsPrograms(name); ok {
			t.Errorf("RunsPrograms(%q) = %q, true; want false", name, why)
		}
	}
}

// A command that sets a variable make reads options from is not read-only:
// MAKEFLAGS='--eval=$(shell CMD)' runs CMD in any make, make -n included.
func TestMakeflagsNotReadOnly(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{
		`MAKEFLAGS='--eval=$(shell touch pwned)' make -n`,
		`env MAKEFLAGS='--eval=$(shell touch pwned)' make -n`,
		`GNUMAKEFLAGS=--eval=x make -q`,
		`MAKEFILES=evil.mk make -n`,
	} {
		if _, ok := ReadOnlyText(cmd); ok {
			t.Errorf("%s: read-only, want not", cmd)
		}
	}
}

// Without the kernel layer the static reading is all there is: a command
// that reads files no word of it names (recursively, from a list, from a
// response file), or writes an output file through an option-looking word,
// is not auto-allowed; the same programs on plain files are.
func TestStaticClassesWithoutKernel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd        string
		readOnly   bool // judged read-only at all
		needKernel bool // only if the kernel layer holds
	}{
		{"xxd -r -p payload.hex -/../.git/config", false, false},
		{"uniq in -/out", false, false},
		{"diff -rN ~ EMPTY", true, true},
		{"diff --recursive a b", true, true},
		{"sha256sum -c sums.txt", true, true},
		{"file -f names.txt", true, true},
		{"strings @notes.txt", true, true},
		{"xxd file", true, false},
		{"diff a b", true, false},
		{"strings bin", true, false},
	} {
		f, err := syntax.NewParser().Parse(strings.NewReader(c.cmd), "")
		if err != nil {
			t.Fatal(err)
		}
		v := Classify(f, Call{})
		if v.ReadOnly != c.readOnly || c.readOnly && (v.Kernel != "") != c.needKernel {
			t.Errorf("%s: %+v; want read-only %v, needs the kernel %v", c.cmd, v, c.readOnly, c.needKernel)
		}
	}
}
