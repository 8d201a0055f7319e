package permission

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/permission/keys"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

type corpusEntry struct {
	Command string `json:"command"`
	Source  string `json:"source"`
}

func loadCorpus(t testing.TB, name string) []corpusEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", name, "commands.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []corpusEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return entries
}

// TestHostileCorpus: no command gathered from public reports of allowlist
// bypasses is ever auto-allowed by read-only detection.
func TestHostileCorpus(t *testing.T) {
	t.Parallel()
	entries := loadCorpus(t, "hostile")
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
		if ok, _ := IsReadOnlyText(e.Command); ok {
			t.Errorf("IsReadOnlyText(%q) = true, want false (source: %s)", e.Command, e.Source)
		}
		// and the policy never allows it silently in default mode
		p, err := NewPolicy(PolicyConfig{})
		if err != nil {
			t.Fatal(err)
		}
		req := shellRequest(e.Command)
		if v, layer, why := p.Decide(req); v == Allow {
			t.Errorf("Decide(%q) = allow (%s: %s), want ask", e.Command, layer, why)
		}
	}
}

// TestReadOnlyCorpus: everyday read-only commands are allowed without asking.
func TestReadOnlyCorpus(t *testing.T) {
	t.Parallel()
	entries := loadCorpus(t, "readonly")
	if len(entries) < 40 {
		t.Fatalf("read-only corpus has %d entries, want at least 40", len(entries))
	}
	p, err := NewPolicy(PolicyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if ok, why := IsReadOnlyText(e.Command); !ok {
			t.Errorf("IsReadOnlyText(%q) = false (%s), want true", e.Command, why)
		}
		if v, layer, why := p.Decide(shellRequest(e.Command)); v != Allow || layer != LayerReadOnly {
			t.Errorf("Decide(%q) = %s %s (%s), want allow read-only", e.Command, v, layer, why)
		}
	}
}

func TestIsReadOnlyEdges(t *testing.T) {
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
		if got, why := IsReadOnlyText(tt.cmd); got != tt.want {
			t.Errorf("IsReadOnlyText(%q) = %v (%s), want %v", tt.cmd, got, why, tt.want)
		}
	}
}

func TestIsReadOnlyNil(t *testing.T) {
	t.Parallel()
	if ok, _ := IsReadOnly(nil); ok {
		t.Error("IsReadOnly(nil) = true")
	}
}

// FuzzIsReadOnly: never panics; anything with a redirection or a
// substitution is never read-only.
func FuzzIsReadOnly(f *testing.F) {
	for _, e := range loadCorpus(f, "hostile") {
		f.Add(e.Command)
	}
	for _, e := range loadCorpus(f, "readonly") {
		f.Add(e.Command)
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
		if err != nil {
			return
		}
		ok, _ := IsReadOnly(file)
		if !ok {
			return
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Redirect:
				t.Fatalf("IsReadOnly(%q) = true with a redirection", src)
			case *syntax.ParamExp:
				if n.Param == nil || strings.Trim(n.Param.Value, "0123456789@*#") != "" || n.Param.Value == "0" {
					t.Fatalf("IsReadOnly(%q) = true with a parameter expansion that is not positional", src)
				}
			case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ArithmExp, *syntax.BraceExp:
				t.Fatalf("IsReadOnly(%q) = true with an expansion or substitution %T", src, n)
			case *syntax.Word:
				//lint:ignore SA1019 the fuzz inputs are short: the eager form is fine here
				if w, ok := splitCopy(n); ok && len(expand.Braces(w)) > 1 {
					t.Fatalf("IsReadOnly(%q) = true with a brace expansion", src)
				}
			}
			return true
		})
	})
}

func splitCopy(w *syntax.Word) (*syntax.Word, bool) {
	cp := *w
	cp.Parts = append([]syntax.WordPart(nil), w.Parts...)
	return &cp, syntax.SplitBraces(&cp)
}

func BenchmarkIsReadOnly(b *testing.B) {
	for _, src := range []string{
		"git status",
		"git log --oneline -5 | head -3 && grep -rn foo . | wc -l",
		"find . -name '*.go' -exec rm {} ;",
	} {
		f, _ := parseFile(src)
		b.Run(fmt.Sprintf("%s-len%d", strings.Fields(src)[0], len(src)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				IsReadOnly(f)
			}
		})
	}
}

// shellRequest is a run_command call of class exec as the gate builds it,
// minus the parsed command (another helper's ParseCommand).
func shellRequest(src string) *Request {
	return &Request{
		Tool:        "run_command",
		Environment: "@shell",
		Permission:  Ask(keys.Key{Tool: "run_command", Action: src, Exact: true}),
		Class:       ClassExec,
		Command:     &Command{Source: src},
	}
}
