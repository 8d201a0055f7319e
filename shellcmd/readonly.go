package shellcmd

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Call is what a command runs with beside its text.
type Call struct {
	// Args are the positional parameters: $1… of the command.
	Args []string
	// Env are the variables the call adds to the environment (KEY=VALUE).
	Env []string
}

// Classification is what Classify says of a command.
type Classification struct {
	// ReadOnly: running it cannot change anything (see ReadOnly).
	ReadOnly bool
	// Reason says why it is not read-only, for the person asked.
	Reason string
	// Kernel, for a read-only command, says why its safety rests on the
	// kernel layer (Landlock: no writes, the dangerous paths hidden): it
	// runs programs its configuration names (git), reads files named in
	// a file (--files0-from) or reads whole trees (grep -r, rg, find, du,
	// tree, ls -R), where a committed symlink or a config file can take
	// it where no word of the command says. Where that layer is missing,
	// such a command is asked. Empty: the words say all it reads.
	Kernel string
}

// ReadOnly reports whether running f cannot change anything: no file is
// written, no program but the listed readers is run, nothing runs in the
// background. It is conservative on purpose: a false "no" costs a keystroke, a false "yes" is a
// hole. When it says no, reason says why, for the person asked. It is
// Classify with no positional arguments and no environment.
//
// The rules, all of which must hold:
//
//   - every statement is a plain call, or calls joined by && || | |&, or a
//     bash time keyword; no subshells, blocks, loops, conditions, functions,
//     declarations, arithmetic or [[ ]]; at most MaxReadOnlyPrograms calls;
//   - no redirection at all (every redirection is taken as a write, even
//     2>/dev/null), no background job, no coprocess;
//   - every word is literal text or quotes, or a plain positional
//     parameter ($1, "$@", ${2}) read as the call's argument (an unquoted
//     one only when its value would not be split or globbed): no other
//     $VAR, ${x@P}, $IFS, $(…), `…`, <(…), $((…)), $'…', extended globs;
//     no brace expansion ({a,b}, {1..3}, {-exec,{}}, as the interpreter
//     reads them); an unquoted glob (* ? [) is accepted only where every
//     expansion is a harmless argument (the word starts with a literal
//     character other than '-', and the program takes any number of them);
//   - a leading assignment, and a variable of the call's environment, is
//     only of LANG, LANGUAGE, LC_*, TZ, NO_COLOR, CLICOLOR, COLUMNS: no
//     variable of the table of those that change what programs run
//     (RunsPrograms: GIT_*, LD_*, PAGER, BASH_ENV, PATH…), and no other;
//   - the program is a bare name (no path) from a fixed list, and its
//     options are checked against that program's dangerous ones; a long
//     option that is a prefix of a dangerous one is dangerous (programs
//     accept abbreviations: --upload-pa is --upload-pack); operands are
//     counted as the program counts them (after --, a word starting with
//   - is an operand: uniq in -- -out writes -out);
//   - nothing hands text or a command to another interpreter or runs a
//     program ccrun's interpreter does not start itself: bash -c, sh -c,
//     eval, source, xargs, env CMD, nice, timeout, command CMD, exec,
//     find -exec, awk, python -c… are not read-only, whatever they run;
//   - inline programs, pagers (less, more, man: they have shell escapes)
//     and ps with the BSD e option (the environment of processes) are not
//     on the list: they ask.
//
// Dangerous paths (cat ~/.ssh/id_rsa) are not its business: the gate asks
// for them before it gets here (see Dangerous).
//
// A nil or empty f is not read-only. ReadOnly is safe for concurrent use.
func ReadOnly(f *syntax.File) (reason string, ok bool) {
	v := Classify(f, Call{})
	return v.Reason, v.ReadOnly
}

// ReadOnlyText is ReadOnly of src parsed with Parse; text that does not
// parse is not read-only.
func ReadOnlyText(src string) (reason string, ok bool) {
	f, parsed := parseFile(src)
	if !parsed {
		return "the command does not parse", false
	}
	return ReadOnly(f)
}

// MaxReadOnlyPrograms is the most programs a read-only command may run:
// a pipeline of thousands of cat is a fork flood, not a read.
const MaxReadOnlyPrograms = 32

// Classify says whether f is read-only when run with call's positional
// arguments and environment (see ReadOnly for the rules), and, when it is,
// whether its safety rests on the kernel layer (Classification.Kernel). It is
// safe for concurrent use.
func Classify(f *syntax.File, call Call) Classification {
	if f == nil || len(f.Stmts) == 0 {
		return Classification{Reason: "no command"}
	}
	c := &classifier{call: call}
	for _, kv := range call.Env {
		name, _, _ := strings.Cut(kv, "=")
		if why, ok := envOK(name); !ok {
			return Classification{Reason: "the call's environment " + why}
		}
	}
	for _, st := range f.Stmts {
		if why, ok := c.stmt(st); !ok {
			return Classification{Reason: why}
		}
	}
	return Classification{ReadOnly: true, Kernel: c.kernel}
}

// ClassifyArgv is Classify of one program invocation: argv are its words
// as they are about to run (expanded), env the variables set for it beyond
// the environment the executor started from (KEY=VALUE).
func ClassifyArgv(argv []string, env []string) Classification {
	if len(argv) == 0 {
		return Classification{Reason: "no command"}
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if why, ok := envOK(name); !ok {
			return Classification{Reason: "the environment " + why}
		}
	}
	for _, a := range argv {
		if hasControl(a) {
			return Classification{Reason: "has control characters"}
		}
	}
	c := &classifier{}
	if why, ok := c.argv(argv, false); !ok {
		return Classification{Reason: why}
	}
	return Classification{ReadOnly: true, Kernel: c.kernel}
}

// ReadOnlyArgv reports whether one program invocation is read-only: argv
// are its words as they are about to run (expanded: a brace or a glob in
// them is text), env the variables set for it beyond the environment the
// executor started from (KEY=VALUE; PATH and HOME are in every
// environment, so pass the changes). It is ClassifyArgv without the
// kernel note.
func ReadOnlyArgv(argv []string, env []string) (reason string, ok bool) {
	v := ClassifyArgv(argv, env)
	return v.Reason, v.ReadOnly
}

type classifier struct {
	call     Call
	programs int
	kernel   string // the first reason its safety rests on the kernel layer
}

func (c *classifier) needsKernel(why string) {
	if c.kernel == "" {
		c.kernel = why
	}
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f })
}

func (c *classifier) stmt(st *syntax.Stmt) (string, bool) {
	switch {
	case st.Background || st.Coprocess || st.Disown:
		return "runs in the background", false
	case len(st.Redirs) > 0:
		return "has a redirection (taken as a write)", false
	}
	switch x := st.Cmd.(type) {
	case *syntax.CallExpr:
		return c.callExpr(x)
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
		default:
			return "has an unknown operator", false
		}
		if why, ok := c.stmt(x.X); !ok {
			return why, false
		}
		return c.stmt(x.Y)
	case *syntax.TimeClause:
		if x.Stmt == nil {
			return "", true
		}
		return c.stmt(x.Stmt)
	case nil:
		return "no command", false
	default:
		return "is not a plain command or pipeline (subshell, block, loop, condition, function or declaration)", false
	}
}

// SafeEnv reports whether a variable is one read-only commands are known
// to read harmlessly: LANG, LANGUAGE, LC_*, TZ, NO_COLOR, CLICOLOR,
// COLUMNS. Only these may be set for a read-only command.
func SafeEnv(name string) bool {
	switch name {
	case "LANG", "LANGUAGE", "TZ", "NO_COLOR", "CLICOLOR", "COLUMNS":
		return true
	}
	return strings.HasPrefix(name, "LC_") && name != "LC_" && validName(name)
}

// envOK says whether setting name keeps a command read-only, and if not why.
func envOK(name string) (string, bool) {
	if why, runs := RunsPrograms(name); runs {
		return "sets " + name + ", which changes what programs run (" + why + ")", false
	}
	if !SafeEnv(name) {
		return "sets " + name + ", which read-only programs are not known to ignore", false
	}
	return "", true
}

func (c *classifier) callExpr(x *syntax.CallExpr) (string, bool) {
	if len(x.Args) == 0 {
		return "sets shell variables", false
	}
	if c.programs++; c.programs > MaxReadOnlyPrograms {
		return "runs more than " + strconv.Itoa(MaxReadOnlyPrograms) + " programs", false
	}
	for _, a := range x.Assigns {
		if a.Append || a.Naked || a.Index != nil || a.Array != nil || a.Name == nil {
			return "assigns a variable that can change what runs", false
		}
		if why, ok := envOK(a.Name.Value); !ok {
			return "assigns a variable: " + why, false
		}
		if a.Value != nil {
			if w := WordOf(a.Value); !w.Lit {
				return "assigns a value that is not literal", false
			}
		}
	}
	argv := make([]string, 0, len(x.Args))
	globs, risky := false, false
	for i, w := range x.Args {
		if hasBraces(w) {
			return "has a brace expansion", false
		}
		n := len(argv)
		var why string
		var ok bool
		if argv, why, ok = c.expand(argv, w); !ok {
			return why, false
		}
		vals := argv[n:]
		for _, v := range vals {
			if hasControl(v) {
				return "has control characters", false
			}
		}
		g := unquotedGlob(w)
		if g {
			if i == 0 {
				return "has a glob in the program name", false
			}
			if len(vals) != 1 || vals[0] == "" || vals[0][0] == '-' || strings.ContainsAny(vals[0][:1], "*?[") {
				risky = true
			}
			globs = true
		}
		if i == 0 && len(vals) != 1 {
			return "the program word is not one word", false
		}
	}
	if risky && !readers[argv[0]].any {
		return "has a glob that could expand to an option of " + argv[0], false
	}
	if risky && readers[argv[0]].check != nil {
		c.needsKernel("a glob could expand to an option of " + argv[0] + " such as -r")
	}
	return c.argv(argv, globs)
}

// hasBraces reports whether w holds a brace expansion as the interpreter
// reads it (nested {-exec,{}}, {a,{b,c}}, sequences {1..3}): whether
// expand.BracesSeq, which the interpreter runs, makes more than one word
// of it ({}, -I{} and {a} stay one word, themselves).
func hasBraces(w *syntax.Word) bool {
	cp, ok := splitBraces(w)
	return ok && manyBraces(cp)
}

// manyBraces reports whether expand.BracesSeq makes more than one word of
// cp. (Apart from hasBraces, so that the state of the range over a
// function, which goes to the heap, is made only for a word with braces.)
func manyBraces(cp *syntax.Word) bool {
	n := 0
	for _, err := range expand.BracesSeq(nil, cp) {
		if n++; n > 1 || err != nil {
			return true
		}
	}
	return false
}

// splitBraces returns a copy of w with its brace expansions parsed
// (syntax.SplitBraces), leaving w as it is; false when it has none.
func splitBraces(w *syntax.Word) (*syntax.Word, bool) {
	if !slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
		l, ok := p.(*syntax.Lit)
		return ok && strings.Contains(l.Value, "{")
	}) {
		return nil, false // a brace expansion opens in a literal part: none, and no copy
	}
	cp := *w
	cp.Parts = slices.Clone(w.Parts)
	if !syntax.SplitBraces(&cp) {
		return nil, false
	}
	return &cp, true
}

// positional returns the name of a plain positional parameter expansion
// ($1, ${2}, $@, $*, $#), or "".
func positional(p *syntax.ParamExp) string {
	if p.Param == nil || !plainParts([]syntax.WordPart{p}) {
		return ""
	}
	switch n := p.Param.Value; {
	case n == "@" || n == "*" || n == "#":
		return n
	case n != "0" && n != "" && strings.Trim(n, "0123456789") == "" && (len(n) == 1 || !p.Short):
		return n
	}
	return ""
}

// expand appends to dst the words w is when run with the call's
// positional parameters, or says why that cannot be known. A literal word
// is its value.
func (c *classifier) expand(dst []string, w *syntax.Word) ([]string, string, bool) {
	if lw := WordOf(w); lw.Lit {
		return append(dst, lw.Val), "", true
	}
	// "$@" alone: one word per argument
	if len(w.Parts) == 1 {
		if dq, ok := w.Parts[0].(*syntax.DblQuoted); ok && !dq.Dollar && len(dq.Parts) == 1 {
			if pe, ok := dq.Parts[0].(*syntax.ParamExp); ok && positional(pe) == "@" {
				return append(dst, c.call.Args...), "", true
			}
		}
	}
	var b strings.Builder
	unquoted := false
	var part func(p syntax.WordPart, quoted bool) (string, bool)
	part = func(p syntax.WordPart, quoted bool) (string, bool) {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "has $'…' quoting", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "has $\"…\" quoting", false
			}
			for _, q := range p.Parts {
				if why, ok := part(q, true); !ok {
					return why, false
				}
			}
		case *syntax.ParamExp:
			name := positional(p)
			if name == "" {
				return "has an expansion or substitution ($…, `…`, <(…))", false
			}
			if !quoted {
				unquoted = true
			}
			if name == "@" && quoted {
				return "has \"$@\" inside a longer word", false
			}
			b.WriteString(c.param(name))
		default:
			return "has an expansion or substitution ($…, `…`, <(…))", false
		}
		return "", true
	}
	for _, p := range w.Parts {
		if why, ok := part(p, false); !ok {
			return dst, why, false
		}
	}
	v := b.String()
	if unquoted && (v == "" || strings.ContainsAny(v, " \t\n*?[")) {
		return dst, "an unquoted positional parameter would be split or globbed", false
	}
	return append(dst, v), "", true
}

// param is the value of a positional parameter.
func (c *classifier) param(name string) string {
	switch name {
	case "@", "*":
		return strings.Join(c.call.Args, " ")
	case "#":
		return strconv.Itoa(len(c.call.Args))
	}
	n, err := strconv.Atoi(name)
	if err != nil || n < 1 || n > len(c.call.Args) {
		return ""
	}
	return c.call.Args[n-1]
}

// unquotedGlob reports unescaped glob characters in the unquoted parts of
// w (quoted parts count as plain text, as they do for the shell).
func unquotedGlob(w *syntax.Word) bool {
	var s string
	if l, ok := onlyLit(w); ok {
		s = l.Value // one literal part: its text, without a copy
	} else {
		var b strings.Builder
		for _, part := range w.Parts {
			if l, ok := part.(*syntax.Lit); ok {
				b.WriteString(l.Value)
			} else {
				b.WriteString("Q")
			}
		}
		s = b.String()
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if strings.IndexByte(s[i:], ']') > 0 {
				return true
			}
		}
	}
	return false
}

// onlyLit returns w's part when it is one literal part.
func onlyLit(w *syntax.Word) (*syntax.Lit, bool) {
	if len(w.Parts) != 1 {
		return nil, false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	return l, ok
}

// roSpec says what options of a reader are dangerous.
type roSpec struct {
	any       bool     // no option writes or runs code: anything goes
	denyShort string   // short options that write or run code
	denyLong  []string // long options that do (without --); their prefixes too
	maxPos    int      // >0: at most this many operands (the next would be an output file)
	check     func(args []string, globs bool) (string, bool)
	// tree is set for programs that read whole trees (find, du, tree, rg):
	// their safety rests on the kernel layer.
	tree bool
}

var harmless = roSpec{any: true}

// readers is the fixed list of programs ReadOnly accepts.
var readers = map[string]roSpec{
	"ls": {any: true, check: roLs}, "cat": harmless, "head": harmless, "tail": harmless, "wc": harmless,
	"pwd": harmless, "echo": harmless, "whoami": harmless, "id": harmless, "uname": harmless,
	"basename": harmless, "dirname": harmless, "realpath": harmless, "readlink": harmless,
	"stat": harmless, "du": {any: true, tree: true}, "df": harmless, "true": harmless, "false": harmless,
	"which": harmless, "type": harmless, "nl": harmless, "tac": harmless, "rev": harmless,
	"cut": harmless, "tr": harmless, "comm": harmless, "diff": harmless, "cmp": harmless,
	"md5sum": harmless, "sha1sum": harmless, "sha256sum": harmless, "sha512sum": harmless,
	"b2sum": harmless, "cksum": harmless, "grep": {any: true, check: roGrep}, "egrep": {any: true, check: roGrep}, "fgrep": {any: true, check: roGrep},
	"seq": harmless, "printenv": harmless, "column": harmless, "fold": harmless, "od": harmless,
	"hexdump": harmless, "strings": harmless, "test": harmless, "[": harmless, "nproc": harmless,
	"uptime": harmless, "groups": harmless, "locale": harmless, "tty": harmless, "arch": harmless,
	"ps": {check: roPs}, "jq": harmless, "paste": harmless, "join": harmless, "expr": harmless,
	"cal": harmless, "sleep": harmless, "whereis": harmless, "numfmt": harmless,
	"date":    {denyShort: "s", denyLong: []string{"set"}},
	"file":    {denyShort: "C", denyLong: []string{"compile"}},
	"tree":    {denyShort: "oR", denyLong: []string{"output"}, tree: true},
	"printf":  {denyShort: "v"},
	"uniq":    {maxPos: 1},
	"xxd":     {maxPos: 1},
	"base64":  {denyShort: "o", denyLong: []string{"output"}, maxPos: 1},
	"sort":    {denyShort: "o", denyLong: []string{"output", "compress-program"}},
	"rg":      {denyShort: "z", denyLong: []string{"pre", "pre-glob", "hostname-bin", "search-zip"}, tree: true},
	"ag":      {denyLong: []string{"pager"}, tree: true},
	"fd":      {denyShort: "xX", denyLong: []string{"exec", "exec-batch"}, tree: true},
	"find":    {check: roFind, tree: true},
	"sed":     {check: roSed},
	"git":     {check: roGit},
	"env":     {check: roEnv},
	"command": {check: roCommand},
}

func (c *classifier) argv(argv []string, globs bool) (string, bool) {
	prog := argv[0]
	if strings.Contains(prog, "/") {
		return "runs a program by path (" + prog + ")", false
	}
	spec, ok := readers[prog]
	if !ok {
		if why := interpreterWhy(prog); why != "" {
			return why, false
		}
		return prog + " is not a known read-only program", false
	}
	args := argv[1:]
	if slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--files0-from") || strings.HasPrefix(a, "--files-from")
	}) {
		c.needsKernel(prog + " reads the files a list names")
	}
	if spec.tree {
		c.needsKernel(prog + " reads whole trees, where a symlink can lead anywhere")
	}
	if why := listReader(prog, args); why != "" {
		c.needsKernel(why)
	}
	if prog == "git" {
		c.needsKernel("git runs programs its configuration names")
	}
	if spec.check != nil {
		why, ok := spec.check(args, globs)
		if ok && (prog == "grep" || prog == "egrep" || prog == "fgrep") {
			if grepRecursive(args) {
				c.needsKernel(prog + " -r reads whole trees, where a symlink can lead anywhere")
			}
		}
		if ok && prog == "ls" && (hasOpt(args, "--recursive", 'R')) {
			c.needsKernel("ls -R reads whole trees")
		}
		return why, ok
	}
	if spec.any {
		return "", true
	}
	if globs && spec.maxPos > 0 {
		return prog + " with a glob could be given an output file", false
	}
	if why, ok := denyOptions(prog, args, spec.denyShort, spec.denyLong); !ok {
		return why, false
	}
	if spec.maxPos > 0 && operands(args) > spec.maxPos {
		return prog + " is given an output file", false
	}
	if spec.maxPos > 0 && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") && strings.ContainsRune(a, '/') }) {
		// not every such program parses its options with getopt (xxd
		// takes "-/../.git/config" for its output file): an option never
		// holds a path here, so a word that does is an operand
		return prog + " is given a word that may be an output file", false
	}
	return "", true
}

// listReader says why prog, given args, reads files that no word of the
// command names — recursively, or from a list or a response file — so that
// only the kernel can keep it from a dangerous path; "" when it does not.
func listReader(prog string, args []string) string {
	switch prog {
	case "diff":
		if hasOpt(args, "--recursive", 'r') || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--from-file") || strings.HasPrefix(a, "--to-file") }) {
			return "diff -r reads whole trees, where a symlink can lead anywhere"
		}
	case "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum":
		if hasOpt(args, "--check", 'c') {
			return prog + " -c reads the files a list names"
		}
	case "file":
		if hasOpt(args, "--files-from", 'f') {
			return "file -f reads the files a list names"
		}
	case "strings":
		// binutils read more arguments from @FILE (a response file)
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "@") }) {
			return "strings reads arguments from a @file"
		}
	}
	return ""
}

// operands counts the operands of args as a GNU program reads them: a
// word not starting with -, the word -, and every word after --.
func operands(args []string) int {
	n := 0
	for i, a := range args {
		if a == "--" {
			return n + len(args) - i - 1
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			n++
		}
	}
	return n
}

// interpreterWhy says why a program that runs another's text or command is
// not read-only, or "".
func interpreterWhy(prog string) string {
	switch prog {
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "rbash", "fish", "yash", "tcsh", "csh", "eval", "source", ".":
		return prog + " runs shell text ccrun does not interpret itself"
	case "xargs", "parallel", "nice", "timeout", "nohup", "setsid", "stdbuf", "ionice", "chrt", "taskset",
		"exec", "builtin", "sudo", "doas", "watch", "flock", "strace", "ltrace", "time":
		return prog + " runs a program ccrun's interpreter does not see"
	case "awk", "gawk", "mawk", "nawk", "python", "python2", "python3", "perl", "ruby", "node", "nodejs",
		"deno", "bun", "php", "lua", "Rscript", "tclsh", "osascript", "pwsh", "powershell":
		return prog + " runs code in another language"
	case "less", "more", "most", "man", "vi", "vim", "nvim", "view", "emacs", "nano":
		return prog + " has shell escapes"
	}
	return ""
}

// denyOptions checks every word that looks like an option (a value that
// happens to look like one is checked too: that only errs towards asking).
func denyOptions(prog string, args []string, denyShort string, denyLong []string) (string, bool) {
	for _, a := range args {
		if a == "--" {
			break // the rest are operands
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[2:], "=")
			for _, d := range denyLong {
				if strings.HasPrefix(d, name) {
					return prog + " " + a + " can write files or run a program", false
				}
			}
			continue
		}
		if strings.ContainsAny(a[1:], denyShort) && denyShort != "" {
			return prog + " " + a + " can write files or run a program", false
		}
	}
	return "", true
}

// findPrimaries are the find options and tests that neither write nor run.
var findPrimaries = []string{
	"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
	"-type", "-xtype", "-maxdepth", "-mindepth", "-size", "-empty", "-perm", "-user", "-group",
	"-uid", "-gid", "-nouser", "-nogroup", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
	"-newer", "-anewer", "-cnewer", "-used", "-links", "-inum", "-samefile", "-lname", "-ilname",
	"-readable", "-writable", "-executable", "-true", "-false", "-print", "-print0", "-printf",
	"-ls", "-prune", "-quit", "-not", "-and", "-or", "-a", "-o", "-depth", "-follow", "-xdev",
	"-mount", "-noleaf", "-daystart", "-regextype", "-fstype", "-L", "-H", "-P", "-O0", "-O1",
	"-O2", "-O3", "-ignore_readdir_race", "-noignore_readdir_race", "-nowarn", "-warn",
}

func roFind(args []string, globs bool) (string, bool) {
	for _, a := range args {
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if slices.Contains(findPrimaries, a) || (strings.HasPrefix(a, "-newer") && len(a) == 8) {
			continue
		}
		switch a {
		case "-exec", "-execdir", "-ok", "-okdir":
			return "find " + a + " runs a command", false
		case "-delete", "-fls", "-fprint", "-fprint0", "-fprintf":
			return "find " + a + " writes or deletes files", false
		case "-files0-from":
			continue // GNU find 4.9: reads the starting points from a file (kernel layer)
		}
		return "find " + a + " is not a known read-only option", false
	}
	return "", true
}

// roLs: ls has no option that writes or runs.
func roLs(args []string, globs bool) (string, bool) { return "", true }

// roGrep: grep has no option that writes or runs; -r reads trees.
func roGrep(args []string, globs bool) (string, bool) { return "", true }

func grepRecursive(args []string) bool {
	return hasOpt(args, "--recursive", 'r') || hasOpt(args, "--dereference-recursive", 'R') ||
		slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--directories") || strings.HasPrefix(a, "-d") })
}

// roPs refuses the BSD e option (ps e, ps axeww: the environment of every
// process, with the secrets the executor's filter held back) and -o/--format
// columns that could show it.
func roPs(args []string, globs bool) (string, bool) {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'e') {
			return "ps " + a + " shows the environment of processes", false
		}
		if strings.HasPrefix(a, "--") && strings.Contains(a, "env") {
			return "ps " + a + " may show the environment of processes", false
		}
	}
	return "", true
}

// roEnv accepts env with no argument (it prints the environment, already
// filtered); env running a program is not read-only.
func roEnv(args []string, globs bool) (string, bool) {
	if len(args) == 0 {
		return "", true
	}
	return "env runs a program ccrun's interpreter does not see", false
}

// roCommand accepts command -v/-V (a lookup); command running a program
// is not read-only.
func roCommand(args []string, globs bool) (string, bool) {
	if len(args) > 0 && (args[0] == "-v" || args[0] == "-V") {
		return "", true
	}
	return "command runs a program ccrun's interpreter does not see", false
}

// roSed accepts sed printing: -n -E -r -s -u -z --posix … and scripts made
// of addresses and the commands p d q Q = l n N P D g G h H x and s///
// with flags among g p i I m M and digits. Any w W r R e command or flag,
// -i, -f, blocks, abbreviated long options: ask.
func roSed(args []string, globs bool) (string, bool) {
	var scripts, operands []string
	haveE := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case a == "-" || !strings.HasPrefix(a, "-"):
			operands = append(operands, a)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			switch name {
			case "quiet", "silent", "regexp-extended", "separate", "unbuffered", "null-data", "posix", "debug", "sandbox":
			case "line-length":
				if !hasVal {
					i++
				}
			case "expression":
				haveE = true
				if !hasVal {
					if i+1 >= len(args) {
						return "sed --expression without a script", false
					}
					i++
					val = args[i]
				}
				scripts = append(scripts, val)
			default:
				return "sed " + a + " is not a known read-only option", false
			}
		default:
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'n', 'E', 'r', 's', 'u', 'z':
					continue
				case 'e', 'l':
					val := a[j+1:]
					if val == "" {
						if i+1 >= len(args) {
							return "sed -" + string(a[j]) + " without a value", false
						}
						i++
						val = args[i]
					}
					if a[j] == 'e' {
						haveE = true
						scripts = append(scripts, val)
					}
				default:
					return "sed -" + string(a[j]) + " can write files or run a program", false
				}
				break
			}
		}
	}
	if !haveE {
		if len(operands) == 0 {
			return "sed without a script", false
		}
		scripts, operands = operands[:1], operands[1:]
	}
	_ = operands
	for _, s := range scripts {
		if !sedPrintOnly(s) {
			return "the sed script may write files or run commands", false
		}
	}
	return "", true
}

// sedPrintOnly reports whether a sed script is made only of the commands
// roSed accepts.
func sedPrintOnly(script string) bool {
	for _, cmd := range strings.FieldsFunc(script, func(r rune) bool { return r == ';' || r == '\n' }) {
		s := strings.TrimSpace(cmd)
		if s == "" {
			continue
		}
		s, ok := sedAddress(s)
		if !ok {
			return false
		}
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "!") {
			s = strings.TrimSpace(s[1:])
		}
		if s == "" {
			return false
		}
		switch s[0] {
		case 'p', 'd', 'q', 'Q', '=', 'l', 'n', 'N', 'P', 'D', 'g', 'G', 'h', 'H', 'x':
			rest := strings.TrimSpace(s[1:])
			if s[0] == 'q' || s[0] == 'Q' || s[0] == 'l' {
				rest = strings.TrimLeft(rest, "0123456789")
			}
			if rest != "" {
				return false
			}
		case 's':
			if !sedSubst(s[1:]) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// sedAddress strips a leading address (N, $, /re/, and a range of two).
func sedAddress(s string) (string, bool) {
	one := func(s string) (string, bool) {
		switch {
		case s == "":
			return s, true
		case s[0] == '$':
			return s[1:], true
		case s[0] >= '0' && s[0] <= '9':
			return strings.TrimLeft(s, "0123456789"), true
		case s[0] == '/':
			i := sedDelim(s[1:], '/')
			if i < 0 {
				return "", false
			}
			rest := s[i+2:]
			rest = strings.TrimLeft(rest, "I") // case-insensitive address
			return rest, true
		}
		return s, true
	}
	s, ok := one(s)
	if !ok {
		return "", false
	}
	if strings.HasPrefix(s, ",") {
		return one(s[1:])
	}
	return s, true
}

// sedDelim finds the next unescaped delim in s.
func sedDelim(s string, delim byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case delim:
			return i
		case '\n':
			return -1
		}
	}
	return -1
}

// sedSubst checks the rest of an s command: DELIM re DELIM repl DELIM flags.
func sedSubst(s string) bool {
	if s == "" || s[0] == '\\' || s[0] == '\n' || s[0] == ' ' {
		return false
	}
	d := s[0]
	s = s[1:]
	i := sedDelim(s, d)
	if i < 0 {
		return false
	}
	s = s[i+1:]
	j := sedDelim(s, d)
	if j < 0 {
		return false
	}
	flags := s[j+1:]
	for k := 0; k < len(flags); k++ {
		if !strings.ContainsRune("gpiImM0123456789", rune(flags[k])) {
			return false // e (run), w (write) and anything unknown
		}
	}
	return true
}

// gitGlobal are the git options before the subcommand that change nothing
// about what runs. -c, -C, --config-env, --exec-path, --git-dir,
// --work-tree, --namespace, -p/--paginate (forces a pager) … ask.
var gitGlobal = []string{"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
	"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects",
	"--no-lazy-fetch", "--no-advice"}

// gitDiffDeny are options of log, diff, show… that write a file or run a
// configured program.
var gitDiffDeny = []string{"output", "ext-diff", "textconv", "filters", "open-files-in-pager", "exec", "upload-pack", "receive-pack"}

func roGit(args []string, globs bool) (string, bool) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if !slices.Contains(gitGlobal, args[i]) {
			return "git " + args[i] + " can change what git runs", false
		}
		i++
	}
	if i == len(args) {
		return "git without a subcommand", false
	}
	sub, rest := args[i], args[i+1:]
	switch sub {
	case "status", "rev-parse", "ls-files", "ls-tree", "merge-base", "name-rev", "for-each-ref",
		"show-ref", "count-objects", "rev-list", "check-ignore", "check-attr", "var", "version",
		"show-branch", "cherry", "describe", "whatchanged", "shortlog", "log", "show", "diff",
		"blame", "annotate", "range-diff", "grep", "diff-tree", "diff-files", "diff-index", "cat-file":
		short := ""
		if sub == "grep" {
			short = "O"
		}
		return denyOptions("git "+sub, rest, short, gitDiffDeny)
	case "branch":
		return gitListOnly("branch", rest, []string{"-a", "-r", "-v", "-vv", "--verbose", "--all", "--remotes",
			"--show-current", "--no-color", "--no-column", "-i", "--ignore-case", "--no-abbrev"},
			[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "--color", "--abbrev", "--column"})
	case "tag":
		return gitListOnly("tag", rest, []string{"-i", "--ignore-case", "--no-color", "--no-column"},
			[]string{"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "--color", "--column"})
	case "remote":
		switch {
		case len(rest) == 0, len(rest) == 1 && (rest[0] == "-v" || rest[0] == "--verbose"):
			return "", true
		case len(rest) == 2 && rest[0] == "get-url" && !strings.HasPrefix(rest[1], "-"):
			return "", true
		}
		return "git remote other than listing", false
	case "stash":
		if len(rest) > 0 && (rest[0] == "list" || rest[0] == "show") {
			return denyOptions("git stash", rest[1:], "", gitDiffDeny)
		}
		return "git stash other than list or show", false
	case "worktree":
		if len(rest) > 0 && rest[0] == "list" {
			return "", true
		}
		return "git worktree other than list", false
	case "reflog":
		if len(rest) == 0 || rest[0] == "show" || (strings.HasPrefix(rest[0], "-") && !slices.ContainsFunc(rest, func(a string) bool { return a == "expire" || a == "delete" })) {
			return denyOptions("git reflog", rest, "", gitDiffDeny)
		}
		return "git reflog other than show", false
	case "config":
		return gitConfigRead(rest)
	}
	return "git " + sub + " is not a known read-only subcommand", false
}

// gitListOnly accepts git branch / git tag listing: no operand unless
// -l/--list is given, and only the listed options.
func gitListOnly(sub string, args []string, flags, valued []string) (string, bool) {
	list := false
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-l" || a == "--list":
			list = true
		case strings.HasPrefix(a, "-n") && sub == "tag" && strings.Trim(a[2:], "0123456789") == "":
		case slices.Contains(flags, a):
		case strings.HasPrefix(a, "-"):
			name, _, hasVal := strings.Cut(a, "=")
			if !slices.Contains(valued, name) {
				return "git " + sub + " " + a + " can change branches or tags", false
			}
			if !hasVal && name != "--color" && name != "--column" && name != "--abbrev" {
				i++
			}
		default:
			operands++
		}
	}
	if operands > 0 && !list {
		return "git " + sub + " NAME creates a " + sub, false
	}
	return "", true
}

func gitConfigRead(args []string) (string, bool) {
	if len(args) > 0 && (args[0] == "list" || args[0] == "get") {
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "-") && !slices.Contains([]string{"--show-origin", "--show-scope", "--global", "--local", "--system", "--name-only", "-z", "--null", "--all"}, a) {
				return "git config " + a + " is not a known read-only option", false
			}
		}
		return "", true
	}
	reading := false
	for _, a := range args {
		switch a {
		case "--get", "--get-all", "--get-regexp", "--list", "-l":
			reading = true
		case "--show-origin", "--show-scope", "--global", "--local", "--system", "--name-only", "-z", "--null":
		default:
			if strings.HasPrefix(a, "-") {
				return "git config " + a + " is not a known read-only option", false
			}
		}
	}
	if !reading {
		return "git config without --get or --list may set a value", false
	}
	return "", true
}
