package shellcmd

import "testing"

// SameCommand: one program however spaced, quoted or commented; never two
// programs that run differently.
func TestSameCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want bool
	}{
		{"make test && make lint", "make test && make lint", true},
		{"make test && make lint", "make   test&&make lint", true},
		{"make test && make lint", "'make' test && make lint", true},
		{"make test && make lint", `"make" \test && make 'lint'`, true},
		{"make test && make lint", "make test &&\n  make lint", true},
		{"make test && make lint", "make test && make lint # lint too", true},
		{"make test && make lint", "ma\\\nke test && make lint", true},
		{"git push; rm -rf build", "git push\nrm -rf build", true},
		{"echo 'a b' | wc", `echo a\ b|wc`, true},
		{`X='a b' make`, `X="a b" make`, true},
		{"echo hi > out", "echo hi >'out'", true},
		{"echo $(git 'rev-parse' HEAD) && true", "echo $(git rev-parse HEAD) && true", true},
		{"echo `date` && true", "echo $(date) && true", true},
		{"export A='1' && make", "export A=1 && make", true},

		{"make test && make lint", "make test && make lint x", false},
		{"make test && make lint", "make test || make lint", false},
		{"make test && make lint", "make test; make lint", false},
		{"FOO=1 make && true", "'FOO=1' make && true", false}, // an assignment, and a program named FOO=1
		{"ls * && true", "ls '*' && true", false},             // a glob, and a file named *
		{"ls ~ && true", "ls '~' && true", false},             // the home directory, and a file named ~
		{"echo {a,b} && true", "echo '{a,b}' && true", false}, // brace expansion
		{`echo "$x" && true`, "echo $x && true", false},       // word splitting
		{"cat <<EOF\na\\$b\nEOF", "cat <<'EOF'\na\\$b\nEOF", false},
		{`[[ $x =~ a.b ]]`, `[[ $x =~ 'a.b' ]]`, false}, // a regular expression, and text
		{`[[ $x == a ]]`, `[[ $x == 'a' ]]`, false},     // [[ … ]] compares as written
		{"case $x in a) true;; esac", "case $x in 'a') true;; esac", false},
		{"", "", false},
		{"   ", "# a comment", false},
		{"#unparsed:a &&", "#unparsed:b &&", false},
		{"make test &&", "make test &&", false},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			t.Parallel()
			if got := SameCommand(tt.a, tt.b); got != tt.want {
				t.Errorf("SameCommand(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := SameCommand(tt.b, tt.a); got != tt.want {
				t.Errorf("SameCommand(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

// FuzzSameCommand: a command that parses is the same command as itself and
// as its canonical text, and SameCommand never panics.
func FuzzSameCommand(f *testing.F) {
	for _, s := range []string{"make test && make lint", "'make' test&&make lint", "X='a b' make | tee log",
		"cat <<'EOF'\na\nEOF", "[[ $x =~ 'a.b' ]] && echo", "echo $(git 'rev-parse' HEAD) > out"} {
		f.Add(s, s+" ")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		SameCommand(a, b)
		p := Parse(a)
		if p.File == nil || len(p.File.Stmts) == 0 {
			return
		}
		if !SameCommand(a, a) || !SameCommand(a, p.Canonical) {
			t.Fatalf("SameCommand(%q, itself or its canonical text %q) = false", a, p.Canonical)
		}
	})
}

// FuzzPlainCanonical: the canonical text of a plain command, made without
// the printer, is the printer's output, for any text.
func FuzzPlainCanonical(f *testing.F) {
	for _, s := range []string{"make test", "git  status", "ls\t-la", "a\\\nb c", "a \\\n b", "x=1 y", "a b#c", "a #c",
		"git status &", "! a", "a=b c=d", "-a", "a  b\n", "\n\na b", "a;", "a\nb", "a:b,c@d%e+f=g", "time a", "{ a; }",
		"if", "a -- b", "./x/y.z", "A B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, err := parse(src)
		if err != nil {
			return
		}
		got, ok := plainCanonical(file)
		if !ok {
			return
		}
		want, err := printNode(file)
		if err != nil || got != want {
			t.Fatalf("%q: plainCanonical %q, the printer %q (%v)", src, got, want, err)
		}
	})
}
