package shellcmd

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func TestGlobOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		word, pat, text string
		ok              bool
	}{
		{"a.log", "", "a.log", true},
		{"'a b'", "", "a b", true},
		{`"a\"b"`, "", `a"b`, true},
		{`a\ b`, "", "a b", true},
		{"*.log", "*.log", "*.log", true},
		{"'my dir'/*.log", "my dir/*.log", "my dir/*.log", true},
		{"'*'.log", "", "*.log", true},
		{`\*.log`, "", "*.log", true},
		{"'a*'*", `a\**`, "a**", true},
		{"[ab].log", "[ab].log", "[ab].log", true},
		{"{}", "", "{}", true},
		{"-I{}", "", "-I{}", true},
		{"{a,b}.log", "", "", false},
		{"~/x", "", "", false},
		{"$X", "", "", false},
		{`"$X"`, "", "", false},
		{"$'a'", "", "", false},
		{"@(a|b)", "", "", false},
		{"$(x)", "", "", false},
	} {
		f, err := syntax.NewParser(syntax.Variant(Variant)).Parse(strings.NewReader("x "+tt.word), "")
		if err != nil {
			t.Fatalf("%s: %v", tt.word, err)
		}
		w := f.Stmts[0].Cmd.(*syntax.CallExpr).Args[1]
		pat, text, ok := GlobOf(w)
		if pat != tt.pat || text != tt.text || ok != tt.ok {
			t.Errorf("GlobOf(%s) = %q, %q, %v; want %q, %q, %v", tt.word, pat, text, ok, tt.pat, tt.text, tt.ok)
		}
	}
}
