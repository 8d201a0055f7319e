//lint:file-ignore ST1018 the key table holds raw look-alike and format characters on purpose

package permission

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// keyTests are commands and how they key. For a simple command want is the
// key; for a compound one it is the canonical text, keyed exactly.
var keyTests = []struct {
	src      string
	want     string
	compound bool
}{
	{"git status", `run_command:git:status`, false},
	{"git", `run_command:git`, false},
	{"git push origin main", `run_command:git:push`, false},
	{"git --no-pager log", `run_command:git:log`, false},
	{"ls", `run_command:ls`, false},
	{"git status --porcelain", `run_command:git:status`, false},
	{`"git" status`, `run_command:git:status`, false},
	{"g''it status", `run_command:git:status`, false},
	{`\git status`, `run_command:git:status`, false},
	{`'git' "status"`, `run_command:git:status`, false},
	{`g"i"t st'at'us`, `run_command:git:status`, false},
	{"./git status", `run_command:./git:status`, false},
	{"/usr/bin/git status", `run_command:/usr/bin/git:status`, false},
	{"../x/git", `run_command:../x/git`, false},
	{"git status;", `run_command:git:status`, false},
	{"  git   status  ", `run_command:git:status`, false},
	{"git status # && rm -rf /", `run_command:git:status`, false},
	{`git "~"`, `run_command:git:~`, false},
	{"git commit -m \"multi\nline\"", `run_command:git:commit`, false},
	{"rm / -rf", `run_command:rm:/`, false},
	{"git\rstatus", `run_command:git:status`, false},
	{"git status\r\n", `run_command:git:status`, false},
	{`"a=b"`, `run_command:a=b`, false},
	{"git status && git push", `git status && git push`, true},
	{"git status || true", `git status || true`, true},
	{"git status; git push", "git status\ngit push", true},
	{"git log | head", `git log | head`, true},
	{"git log |& head", `git log |& head`, true},
	{"git fetch &", `git fetch &`, true},
	{"git status\ngit push", "git status\ngit push", true},
	{"echo $(whoami)", `echo $(whoami)`, true},
	{"echo `whoami`", `echo $(whoami)`, true},
	{"diff <(ls a) <(ls b)", `diff <(ls a) <(ls b)`, true},
	{"tee >(wc -l)", `tee >(wc -l)`, true},
	{"git log > out.txt", `git log >out.txt`, true},
	{"git log >> out.txt", `git log >>out.txt`, true},
	{"git < in", `git <in`, true},
	{"git log 2>&1", `git log 2>&1`, true},
	{"git log &> out", `git log &>out`, true},
	{"cat <<< hi", `cat <<<hi`, true},
	{"cat <<EOF\nhello $HOME\nEOF", "cat <<EOF\nhello $HOME\nEOF", true},
	{"cat <<'EOF'\nhello $HOME\nEOF", "cat <<'EOF'\nhello $HOME\nEOF", true},
	{"cat <<-EOF\n\thello\n\tEOF", "cat <<-EOF\n\thello\nEOF", true},
	{"FOO=1 git status", `FOO=1 git status`, true},
	{"FOO=1", `FOO=1`, true},
	{"export FOO=1", `export FOO=1`, true},
	{"local x=1", `local x=1`, true},
	{"declare -x A=1", `declare -x A=1`, true},
	{"$GIT status", `$GIT status`, true},
	{"${GIT} status", `${GIT} status`, true},
	{`"$GIT" status`, `"$GIT" status`, true},
	{"g$X status", `g$X status`, true},
	{"(git status)", `(git status)`, true},
	{"{ git status; }", `{ git status; }`, true},
	{"if true; then git push; fi", `if true; then git push; fi`, true},
	{"for i in a b; do git $i; done", `for i in a b; do git $i; done`, true},
	{"while true; do :; done", `while true; do :; done`, true},
	{"case $x in a) git;; esac", `case $x in a) git ;; esac`, true},
	{"f() { git push; }", `f() { git push; }`, true},
	{"function f { git; }", `function f { git; }`, true},
	{"[[ -f x ]]", `[[ -f x ]]`, true},
	{"(( x = 1 ))", `((x = 1))`, true},
	{"let x=1", `let x=1`, true},
	{"time git status", `time git status`, true},
	{"! git status", `! git status`, true},
	{"coproc git status", `coproc git status`, true},
	{"echo $((1+2))", `echo $((1 + 2))`, true},
	{"echo ${x:-$(rm -rf /)}", `echo ${x:-$(rm -rf /)}`, true},
	{`echo "${x@P}"`, `echo "${x@P}"`, true},
	{"echo ${a[$i]}", `echo ${a[$i]}`, true},
	{"echo ${#x}", `echo ${#x}`, true},
	{"~/bin/git status", `~/bin/git status`, true},
	{`"~/bin/git"`, `"~/bin/git"`, true},
	{"g*t status", `g*t status`, true},
	{"gi? status", `gi? status`, true},
	{"[ -f x ]", `[ -f x ]`, true},
	{"{git,rm} x", `{git,rm} x`, true},
	{"@(git) status", `@(git) status`, true},
	{"gi\\\nt status", `git status`, true},
	{"g\u0456t status", `gіt status`, true},
	{"\u0455udo rm", `ѕudo rm`, true},
	{"g\u03b9t status", `gιt status`, true},
	{"\u0261it status", `ɡit status`, true},
	{"git\u200b status", `git​ status`, true},
	{"\u200bgit status", `​git status`, true},
	{"\u202egit status", `‮git status`, true},
	{"\x1b[2Kgit status", "\x1b[2Kgit status", true},
	{"git:status", `git:status`, true},
	{"'git status'", `'git status'`, true},
	{`git\ status`, `git\ status`, true},
	{"''", `''`, true},
	{`git "status`, `#unparsed:git "status`, true},
	{"if", `#unparsed:if`, true},
	{")", `#unparsed:)`, true},
	{"git status &&", `#unparsed:git status &&`, true},
	{"", `#empty`, true},
	{"   ", `#empty`, true},
	{"# just a comment", `#empty`, true},
	{"\n\n", `#empty`, true},
	{"ec\x00ho", "#unparsed:ec\x00ho", true},
	{"git status >/dev/null", `git status >/dev/null`, true},
	{"x=$(git status)", `x=$(git status)`, true},
	// Found by FuzzParseCommand: a lone backslash at the end is a literal
	// backslash, printed as two; one word that the printer would split in
	// two (mvdan.cc/sh v3.14.1) fails closed.
	{`0\`, `0\\`, true},
	{"a$()<()", "#unparsed:a$()<()", true},
	{"echo a$()<(ls)", "#unparsed:echo a$()<(ls)", true},
}

// exactKeyTests are simple commands keyed by their whole canonical text,
// as a compound command is: a detail position that holds a word that is
// not a plain word, a -- before it, a global option of git before it, a
// wrapper. Such a key narrows what a grant covers, never widens it.
var exactKeyTests = []struct{ src, canonical string }{
	{"git -C /tmp status", "git -C /tmp status"}, // a global option of git
	{"git --git-dir=x status", "git --git-dir=x status"},
	{"git -c core.pager=x log", "git -c core.pager=x log"},
	{"git -ccore.pager=x", "git -ccore.pager=x"},
	{"git -v", "git -v"},
	{"ls -- -x", "ls -- -x"}, // after --, -x is an operand
	{"git $HOME", "git $HOME"},
	{`git "$X" push`, `git "$X" push`},
	{"git ${X}", "git ${X}"},
	{"git 'a b'", "git 'a b'"},
	{"git *.go", "git *.go"},
	{"git ~", "git ~"},
	{"echo {a,b}", "echo {a,b}"},
	{"echo \u00ff", "echo \u00ff"},
	{"git pu$'s'h", "git pu$'s'h"},
	{"echo \x1b[31m", "echo \x1b[31m"},
	{"echo @(a|b)", "echo @(a|b)"},
	{`git \`, `git \\`},
	{"rm -rf *", "rm -rf *"},
	{"rm  'old notes.txt'", "rm 'old notes.txt'"},
	{`rm "old notes.txt"`, `rm "old notes.txt"`},
	{`eval "rm -rf /"`, `eval "rm -rf /"`}, // wrappers, whatever their words
	{"exec git", "exec git"},
	{"sudo rm -rf /", "sudo rm -rf /"},
	{"timeout 60 true", "timeout 60 true"},
	{"env CI=1 npm test", "env CI=1 npm test"},
	{"env", "env"},
	{"nice -n 5 make", "nice -n 5 make"},
	{"xargs rm", "xargs rm"},
	{"/usr/bin/sudo ls", "/usr/bin/sudo ls"},
	{"'sudo' ls", "'sudo' ls"},
	{"bash -c 'ls -la'", "bash -c 'ls -la'"},
	{"sh", "sh"},
	{"python3 -m http.server", "python3 -m http.server"},
	{"find . -name x", "find . -name x"},
	{"ls -la", "ls -la"}, // options only
	{"rm  -f", "rm -f"},
	{"sort --output=x", "sort --output=x"},
	{"rm -rf /", "rm -rf /"}, // an option before the operand
	{"kubectl -n prod get pods", "kubectl -n prod get pods"},
	{"make -C dir deploy", "make -C dir deploy"},
}

func TestParseCommandExactKeys(t *testing.T) {
	t.Parallel()
	for _, tt := range exactKeyTests {
		t.Run(shellcmd.Escape(tt.src), func(t *testing.T) {
			t.Parallel()
			c := ParseCommand(tt.src)
			want := keys.Key{Tool: keys.ShellTool, Action: tt.canonical, Exact: true}
			if c.Compound || c.Key != want || c.Canonical != tt.canonical {
				t.Fatalf("Compound %v, Key %s, Canonical %q; want simple, %s", c.Compound, c.Key, c.Canonical, want)
			}
			checkCommand(t, c)
			if again := ParseCommand(c.Canonical); again.Key != c.Key {
				t.Errorf("the canonical text keys as %s, want %s", again.Key, c.Key)
			}
		})
	}
}

func TestParseCommandKeys(t *testing.T) {
	t.Parallel()
	if len(keyTests) < 60 {
		t.Fatalf("only %d commands in keyTests, want at least 60", len(keyTests))
	}
	for _, tt := range keyTests {
		t.Run(shellcmd.Escape(tt.src), func(t *testing.T) {
			t.Parallel()
			c := ParseCommand(tt.src)
			if c.Compound != tt.compound {
				t.Fatalf("Compound = %v, want %v (key %s)", c.Compound, tt.compound, c.Key)
			}
			if c.Source != tt.src {
				t.Errorf("Source = %q, want %q", c.Source, tt.src)
			}
			if !c.Key.Valid() {
				t.Fatalf("key %#v is not valid", c.Key)
			}
			if tt.compound {
				want := keys.Key{Tool: keys.ShellTool, Action: tt.want, Exact: true}
				if c.Canonical != tt.want || c.Key != want {
					t.Fatalf("Canonical = %q, Key = %s; want %q, %s", c.Canonical, c.Key, tt.want, want)
				}
				if c.Program != "" || c.Args != nil || c.Literal != nil {
					t.Errorf("compound command has Program %q, Args %q, Literal %v; want none", c.Program, c.Args, c.Literal)
				}
			} else {
				if got := c.Key.String(); got != tt.want {
					t.Fatalf("Key = %s, want %s", got, tt.want)
				}
				if c.Key.Exact || c.Key.Action != c.Program {
					t.Errorf("simple key %#v: want not exact, action = Program %q", c.Key, c.Program)
				}
				if len(c.Args) != len(c.Literal) {
					t.Errorf("len(Args) = %d, len(Literal) = %d", len(c.Args), len(c.Literal))
				}
			}
			checkCommand(t, c)
		})
	}
}

// checkCommand checks what must hold of every Command, whatever its source.
func checkCommand(t *testing.T, c *Command) {
	t.Helper()
	k := c.Key
	if !k.Valid() || k.Tool != keys.ShellTool {
		t.Fatalf("key %#v is not a valid run_command key", k)
	}
	back, err := keys.ParseKey(k.String())
	if err != nil || back != k {
		t.Fatalf("ParseKey(%s) = %#v, %v; want %#v", k, back, err, k)
	}
	if s := shellcmd.Escape(c.Source) + shellcmd.Escape(c.Canonical) + k.String(); !printable(s) {
		t.Fatalf("shown text %q is not printable ASCII", s)
	}
	switch {
	case c.Err != nil:
		if !errors.Is(c.Err, shellcmd.ErrUnparsable) || c.File != nil || !c.Compound ||
			c.Canonical != shellcmd.UnparsedPrefix+c.Source || k.Action != c.Canonical || !k.Exact {
			t.Fatalf("unparsed command %#v is not keyed as one", c)
		}
	case c.File == nil:
		t.Fatalf("parsed command %q has no File", c.Source)
	case len(c.File.Stmts) == 0:
		if !c.Compound || c.Canonical != shellcmd.CanonicalEmpty || k.Action != shellcmd.CanonicalEmpty || !k.Exact {
			t.Fatalf("empty command %#v is not keyed as one", c)
		}
	case c.Compound || k.Exact:
		if !k.Exact || k.Action != c.Canonical || k.Detail != "" || strings.HasPrefix(c.Canonical, "#") {
			t.Fatalf("compound command %q has key %#v, canonical %q", c.Source, k, c.Canonical)
		}
		if !c.Compound && (c.Program == "" || len(c.Args) != len(c.Literal)) {
			t.Fatalf("simple command %q keyed exactly has Program %q, Args %q, Literal %v", c.Source, c.Program, c.Args, c.Literal)
		}
		// The tree that runs is the parse of the canonical text, and it is
		// the tree of the source: the printer changed nothing that runs.
		src, err := syntax.NewParser(syntax.Variant(shellcmd.Variant)).Parse(strings.NewReader(c.Source), "")
		if err != nil {
			t.Fatalf("source %q does not parse: %v", c.Source, err)
		}
		if !shellcmd.SameTree(src, c.File) {
			t.Fatalf("the parse of canonical %q differs from the parse of source %q", c.Canonical, c.Source)
		}
	default:
		if k.Exact || k.Action != c.Program || !bare(k.Action, false) || len(c.File.Stmts) != 1 ||
			strings.ContainsAny(k.Action, "~*?[") {
			t.Fatalf("simple command %q has key %#v", c.Source, k)
		}
		if k.Detail != "" && !bare(k.Detail, false) {
			t.Fatalf("simple command %q has detail %q, not bare", c.Source, k.Detail)
		}
		if !keys.MustParsePattern("run_command:*").Match(k) || !(keys.Pattern{Tool: keys.ShellTool, Action: c.Program}).Match(k) {
			t.Fatalf("simple key %s not matched by run_command:* or run_command:%s", k, c.Program)
		}
	}
	if k.Exact {
		// A compound key is matched by no wildcard, nor by any pattern
		// of a program it might be read as.
		words := strings.FieldsFunc(c.Canonical, func(r rune) bool { return !bareRune(r) })
		pats := []string{"run_command:*", "run_command:**", "run_command:*:*", "run_command:**:**"}
		for _, w := range words {
			pats = append(pats, "run_command:"+w, "run_command:"+w+":*")
		}
		for _, s := range pats {
			p, err := keys.ParsePattern(s)
			if err != nil {
				continue
			}
			if p.Match(k) {
				t.Fatalf("pattern %s matches compound key %s", s, k)
			}
		}
		if !keys.PatternOf(k).Match(k) {
			t.Fatalf("the exact pattern of %s does not match it", k)
		}
	}
}

func bareRune(r rune) bool { return r < 0x80 && bare(string(r), false) }

// bare reports whether s is written without quotes as a key's action.
func bare(s string, _ bool) bool {
	return s != "" && (keys.Key{Tool: "t", Action: s}).String() == "t:"+s
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func TestParseCommandArgs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		src     string
		program string
		args    []string
		literal []bool
	}{
		{"git status", "git", []string{"status"}, []bool{true}},
		{"git", "git", []string{}, []bool{}},
		{`g''it "a b" 'c d' e\ f "x\"y" 'x\"y'`, "git", []string{"a b", "c d", "e f", `x"y`, `x\"y`}, []bool{true, true, true, true, true}},
		{`echo $HOME "$HOME" '$HOME' \$HOME`, "echo", []string{"$HOME", `"$HOME"`, "$HOME", "$HOME"}, []bool{false, false, true, true}},
		{`echo * '*' \* ~ "~" \~ {a,b} '{a,b}'`, "echo", []string{"*", "*", "*", "~", "~", "~", "{a,b}", "{a,b}"}, []bool{false, true, true, false, true, true, false, true}},
		{`echo $'a\nb' "a\nb"`, "echo", []string{`$'a\nb'`, `a\nb`}, []bool{false, true}},
		{`echo "a\$b" "a\b" "a\\b" "a` + "`" + `"`, "", nil, nil}, // a backquote opens a command substitution
		{`echo "a\$b" "a\b" "a\\b"`, "echo", []string{"a$b", `a\b`, `a\b`}, []bool{true, true, true}},
		{"./x -v -- -y z", "./x", []string{"-v", "--", "-y", "z"}, []bool{true, true, true, true}},
	} {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			c := ParseCommand(tt.src)
			if tt.program == "" {
				if !c.Compound {
					t.Fatalf("simple, want compound")
				}
				return
			}
			if c.Compound {
				t.Fatalf("compound (%s), want simple", c.Key)
			}
			if c.Program != tt.program || !reflect.DeepEqual(c.Args, tt.args) || !reflect.DeepEqual(c.Literal, tt.literal) {
				t.Fatalf("Program, Args, Literal = %q, %q, %v; want %q, %q, %v",
					c.Program, c.Args, c.Literal, tt.program, tt.args, tt.literal)
			}
		})
	}
}

// Commands that do different things never share a compound key.
func TestCompoundKeysDistinct(t *testing.T) {
	t.Parallel()
	groups := [][]string{
		{`echo 'a  b'; x`, `echo a  b; x`, `echo "a  b"; x`, `echo a\ \ b; x`, `echo 'a b'; x`},
		{`echo '$HOME'; x`, `echo "$HOME"; x`, `echo $HOME; x`, `echo \$HOME; x`, `echo ${HOME}; x`},
		{`echo $'a\nb'; x`, `echo 'a\nb'; x`, `echo $"a\nb"; x`, "echo 'a\nb'; x", `echo "a\\nb"; x`},
		{`echo "a\"b"; x`, `echo 'a\"b'; x`, `echo a\"b; x`},
		{`echo ${x}y; z`, `echo $xy; z`, `echo "$x"y; z`},
		{`echo *; x`, `echo '*'; x`, `echo \*; x`, `echo "*"; x`},
		{`echo ~; x`, `echo '~'; x`, `echo \~; x`},
		{`echo {a,b}; x`, `echo '{a,b}'; x`, `echo a b; x`},
		{"cat <<'EOF'\n$HOME\nEOF", "cat <<EOF\n$HOME\nEOF", "cat <<\\EOF\n$HOME\nEOF"},
		{"cat <<-EOF\n\tx\nEOF", "cat <<EOF\n\tx\nEOF", "cat <<EOF\nx\nEOF"},
		{"cat <<EOF\nx \nEOF", "cat <<EOF\nx\nEOF", "cat <<EOF\n x\nEOF", "cat <<EOF\nx\t\nEOF"},
		{"cat <<EOF\n\n\nx\nEOF", "cat <<EOF\n\nx\nEOF", "cat <<EOF\nx\n\n\nEOF", "cat <<EOF\nx\n\nEOF"},
		{"cat <<EOF\n# not a comment\nEOF", "cat <<EOF\nEOF"},
		{"cat <<EOF\na\\\nb\nEOF", "cat <<EOF\nab\nEOF", "cat <<'EOF'\na\\\nb\nEOF"},
		{"cat <<EOF; x\nEOF\n", "cat <<EOF\nx\nEOF"},
		{"echo \u00e9; x", "echo e\u0301; x", "echo e; x"},
		{"g\u0456t status && x", "git status && x", "g\u03b9t status && x", "\u0261it status && x"},
		{"echo \x1b[31m && x", "echo [31m && x", "echo \\x1b[31m && x", `echo $'\x1b[31m' && x`},
		{"echo \"\u202eabc\" && x", "echo \"cba\" && x", "echo \"abc\" && x"},
		{"echo \"a\u200bb\" && x", "echo \"ab\" && x", "echo \"a\u200db\" && x"},
		{"echo \"a\nb\"; x", "echo \"a b\"; x", "echo \"a\tb\"; x", "echo \"a\rb\"; x"},
		{`echo \\; x`, `echo \; x`, `echo \\\\; x`},
		{"a && b || c", "a && (b || c)", "(a && b) || c; :", "a || b && c"},
		{"a | b && c", "a | (b && c)", "a | b; c", "a |& b && c"},
		{"x=1 y", "x=1; y", "x=1 && y", "export x=1; y"},
		{`x="a b" y`, "x=a b y", "x='a b' y"},
		{"a=(1 2); x", "a='(1 2)'; x", "a=\\(1 2\\); x"},
		{"x &", "x & :", "x; :", "(x &)"},
		{"echo $((1+2)) && x", "echo $((12)) && x", "echo $((1-2)) && x", "echo $[1*2] && x"},
		{"echo a #b\nx", "echo a \\#b; x", "echo a b; x", "echo a#b; x"},
		{"f() { a; }; f", "f() { a; }", "f; f() { a; }"},
		{"! a; x", "a; x", "! a && x"},
		{"a > b", "a >> b", "a < b", "a 2> b", "a &> b", "a >| b", "a <> b", "a >&2", "a 2>&1", "a >b 2>&1", "a 2>&1 >b"},
		{"#unparsed:echo 'a", "echo 'a", "echo 'a ", "#empty", ""},
	}
	for _, group := range groups {
		seen := map[keys.Key]string{}
		for _, src := range group {
			c := ParseCommand(src)
			checkCommand(t, c)
			if other, ok := seen[c.Key]; ok && other != src {
				if c.Key.Action == shellcmd.CanonicalEmpty && strings.TrimSpace(strings.TrimPrefix(other, "#")) != "" {
					continue // comments and nothing: both run nothing
				}
				t.Errorf("%q and %q share the key %s", other, src, c.Key)
			}
			seen[c.Key] = src
		}
	}
}

// Printing a compound command's tree and parsing it back gives the same
// key: a person who grants the exact key and an agent that sends back the
// canonical text meet.
func TestCanonicalIsStable(t *testing.T) {
	t.Parallel()
	for _, tt := range keyTests {
		c := ParseCommand(tt.src)
		if !c.Compound || c.Err != nil || c.File == nil || len(c.File.Stmts) == 0 {
			continue
		}
		again := ParseCommand(c.Canonical)
		if again.Compound && again.Key != c.Key {
			t.Errorf("ParseCommand(%q).Key = %s, ParseCommand(its canonical %q).Key = %s", tt.src, c.Key, c.Canonical, again.Key)
		}
	}
}

// The patterns of every form against simple and compound keys made by
// ParseCommand.
func TestParseCommandMatching(t *testing.T) {
	t.Parallel()
	cmds := []string{
		"git status", "git push origin main", "git", "git -v", "./git push", "gitk", "git $X",
		"git status && git push", "git push; rm -rf /", "git push | tee log", "FOO=1 git push",
		"git push > log", "$(echo git) push", "g\u0456t push",
	}
	tests := []struct {
		pattern string
		match   []string
	}{
		// git -v (a global option) and git $X (a detail not known before
		// it runs) key exactly: no wildcard covers them.
		{"run_command:git", []string{"git status", "git push origin main", "git"}},
		{"run_command:git:push", []string{"git push origin main"}},
		{"run_command:git:*", []string{"git status", "git push origin main", "git"}},
		{"run_command:*", []string{"git status", "git push origin main", "git", "./git push", "gitk"}},
		{`run_command:"git -v"`, []string{"git -v"}},
		{`run_command:"git  $X"`, []string{"git $X"}},
		{"run_command:*:push", []string{"git push origin main", "./git push"}},
		{"run_command:./git", []string{"./git push"}},
		{`run_command:"git status && git push"`, []string{"git status && git push"}},
		{`run_command:"git push; rm -rf /"`, []string{"git push; rm -rf /"}}, // read as a command: ; is the canonical newline
		{`run_command:"git push\nrm -rf /"`, []string{"git push; rm -rf /"}},
		{`run_command:"git push"`, nil},
		{`run_command:"FOO=1 git push"`, []string{"FOO=1 git push"}},
		{`run_command:"git push >log"`, []string{"git push > log"}},
		{`run_command:"g\u0456t push"`, []string{"g\u0456t push"}},
		{"run_command:git:status", []string{"git status"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			p := keys.MustParsePattern(tt.pattern)
			want := map[string]bool{}
			for _, m := range tt.match {
				want[m] = true
			}
			for _, src := range cmds {
				k := ParseCommand(src).Key
				if got := p.Match(k); got != want[src] {
					t.Errorf("%s.Match(%s) (from %q) = %v, want %v", tt.pattern, k, src, got, want[src])
				}
			}
		})
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"git status", "git status"},
		{`a "b" 'c' $d`, `a "b" 'c' $d`},
		{`a\b`, `a\\b`},
		{"a\nb\tc\rd", `a\nb\tc\rd`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x00\x7f", `\x00\x7f`},
		{"g\u0456t", `g\u0456t`},
		{"\u202egit\u200b", `\u202egit\u200b`},
		{"\U0001F600", `\U0001f600`},
		{"\xff\xfe", `\xff\xfe`},
		{"\ufffd", `\ufffd`},
		{"", ""},
	} {
		if got := shellcmd.Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	// Escape is one to one: the escaped text reads back with strconv.
	for _, s := range []string{"a\\x1b", "a\x1b", `\u0456`, "\u0456", "\xff", `\xff`, "\"'`"} {
		back, err := strconv.Unquote(`"` + strings.ReplaceAll(shellcmd.Escape(s), `"`, `\"`) + `"`)
		if err != nil || back != s {
			t.Errorf("Escape(%q) = %s reads back as %q, %v", s, shellcmd.Escape(s), back, err)
		}
	}
}

func TestParseCommandConcurrent(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, tt := range keyTests {
				c := ParseCommand(tt.src)
				if c.Compound != tt.compound {
					t.Errorf("ParseCommand(%q).Compound = %v, want %v", tt.src, c.Compound, tt.compound)
				}
			}
		})
	}
	wg.Wait()
}

// Nesting deep enough to overflow the stack (fatal, not a panic) is keyed
// as unparsed before it reaches the parser; nesting within the limits
// parses.
func TestParseCommandDeepNesting(t *testing.T) {
	t.Parallel()
	shapes := []struct{ open, mid, close string }{
		{"(", "x", ")"},
		{"$(", "x", ")"},
		{"{ ", "x", ";}"},
		{"\"$(", "x", ")\""},
		{"x && ", "x", ""},
		{"x | ", "x", ""},
		{"time ", "x", ""},
		{"coproc ", "x", ""},
		{"echo $((1+", "1", "))"},
		{"[[ ! ", "x ]]", ""},
		{"${x:-", "x", "}"},
		{"if\n", "x\nthen\nx\nfi", "\nthen\nx\nfi"},
		{"f() ", "{ x; }", ""},
		{"echo `echo ", "x", "`"},
	}
	for _, sh := range shapes {
		t.Run(shellcmd.Escape(sh.open), func(t *testing.T) {
			t.Parallel()
			deep := strings.Repeat(sh.open, 200000) + sh.mid + strings.Repeat(sh.close, 200000)
			c := ParseCommand(deep)
			if !errors.Is(c.Err, shellcmd.ErrUnparsable) || c.File != nil || c.Key.Action != shellcmd.UnparsedPrefix+deep {
				t.Fatalf("200000 levels of %q: Err = %v, want unparsed", sh.open, c.Err)
			}
			ok := strings.Repeat(sh.open, 500) + sh.mid + strings.Repeat(sh.close, 500)
			if c := ParseCommand(ok); c.Err != nil && strings.Contains(c.Err.Error(), "operators") {
				t.Fatalf("500 levels of %q: %v", sh.open, c.Err)
			}
		})
	}
	if c := ParseCommand(strings.Repeat("x", shellcmd.MaxBytes+1)); c.Err == nil {
		t.Errorf("a command of %d bytes parsed", shellcmd.MaxBytes+1)
	}
	within := strings.Repeat("(", shellcmd.MaxOperators/2) + "x" + strings.Repeat(")", shellcmd.MaxOperators/2)
	if c := ParseCommand(within); c.Err != nil || !c.Compound {
		t.Errorf("%d nested subshells: %v, want a compound command", shellcmd.MaxOperators/2, c.Err)
	}
	body := strings.Repeat("func f(a, b int) { return g(a) }\n", 100)
	if c := ParseCommand("cat <<'EOF' >f.go\n" + body + "EOF"); c.Err != nil {
		t.Errorf("a here-document of 100 lines of code: %v", c.Err)
	}
}
