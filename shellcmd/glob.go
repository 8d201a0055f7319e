package shellcmd

import (
	"strings"

	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// GlobOf says how the interpreter expands w when nothing but pathname
// expansion can change it: text is the word after quote removal (the word
// itself when it is fully literal, and what a glob that matches no file
// leaves), and pat, when an unquoted * ? or [ is in it, the glob pattern,
// its quoted characters escaped (so 'my dir'/*.log is my dir/*.log). ok is
// false for a word with any other expansion: a parameter, a tilde, a
// brace expansion that makes more than one word, a substitution, an
// extended glob, $'…' or $"…" quoting, a line continuation or a lone
// backslash ending it.
func GlobOf(w *syntax.Word) (pat, text string, ok bool) {
	if hasBraces(w) {
		return "", "", false
	}
	var p, t strings.Builder
	glob := false
	quoted := func(s string) {
		t.WriteString(s)
		p.WriteString(pattern.QuoteMeta(s, 0))
	}
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			s := x.Value
			for i := 0; i < len(s); i++ {
				switch c := s[i]; c {
				case '\\':
					if i+1 == len(s) || s[i+1] == '\n' {
						return "", "", false
					}
					i++
					quoted(s[i : i+1])
				case '*', '?', '[':
					glob = true
					t.WriteByte(c)
					p.WriteByte(c)
				case '~':
					return "", "", false
				default:
					quoted(s[i : i+1])
				}
			}
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", "", false
			}
			quoted(x.Value)
		case *syntax.DblQuoted:
			if x.Dollar {
				return "", "", false
			}
			for _, q := range x.Parts {
				l, isLit := q.(*syntax.Lit)
				if !isLit {
					return "", "", false
				}
				quoted(unescape(l.Value, true))
			}
		default:
			return "", "", false
		}
	}
	if !glob {
		return "", t.String(), true
	}
	return p.String(), t.String(), true
}
