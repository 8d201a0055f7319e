package shellcmd

import (
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzClassify: for any text and positional argument, Classify, Dangerous
// and Warnings never panic; a read-only verdict has no redirection, no
// brace expansion and no program another program starts; and the argument
// is always checked as a path (an argument naming ~/.ssh is a finding).
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"cat \"$1\"", "cat $1", "ls \"$@\"", "find . {-exec,{}} ';'",
		"sort {-o,x}", "echo {1..3}", "bash -c 'ls'", "git -C d status", "uniq a -- -b", "ps axe"} {
		f.Add(s, "README.md")
	}
	f.Fuzz(func(t *testing.T, src, arg string) {
		p := Parse(src)
		v := Classify(p.File, Call{Args: []string{arg}})
		found := Dangerous(Target{Shell: true, File: p.File, Source: src, Args: []string{"~/.ssh/id_rsa", arg}}, "/nonexistent/p", "/nonexistent/h")
		if len(found) == 0 {
			t.Fatalf("Dangerous(%q) with argument ~/.ssh/id_rsa found nothing", src)
		}
		Warnings(p.File, src)
		if !v.ReadOnly {
			return
		}
		syntax.Walk(p.File, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Redirect:
				t.Fatalf("Classify(%q) read-only with a redirection", src)
			case *syntax.Word:
				if hasBraces(n) {
					t.Fatalf("Classify(%q) read-only with a brace expansion", src)
				}
			case *syntax.CallExpr:
				if len(n.Args) > 0 {
					if w := WordOf(n.Args[0]); w.Lit && interpreterWhy(w.Val) != "" {
						t.Fatalf("Classify(%q) read-only running %s", src, w.Val)
					}
				}
			}
			return true
		})
	})
}
