package shellcmd

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ReadOnly reports whether running f cannot change anything: no file is
// written, no program but the listed readers is run, nothing runs in the
// background. It is conservative on purpose (seed 003 isReadonlyBash, seed
// 002 CommandRisk): a false "no" costs a keystroke, a false "yes" is a
// hole. When it says no, reason says why, for the person asked.
//
// The rules, all of which must hold:
//
//   - every statement is a plain call, or calls joined by && || | |&, or a
//     bash time keyword; no subshells, blocks, loops, conditions, functions,
//     declarations, arithmetic or [[ ]];
//   - no redirection at all (every redirection is taken as a write, even
//     2>/dev/null), no background job, no coprocess;
//   - every word is literal text or quotes: no $VAR, ${x@P}, $IFS, $(…),
//     `…`, <(…), $((…)), $'…', extended globs; an unquoted glob (* ? [) is
//     accepted only where every expansion is a harmless argument (the word
//     starts with a literal character other than '-', and the program takes
//     any number of them); brace expansion {a,b} is refused;
//   - a leading assignment is only of LANG, LANGUAGE, LC_*, TZ, NO_COLOR,
//     CLICOLOR, COLUMNS (LD_*, GIT_*, PAGER, NODE_OPTIONS, BASH_ENV, PATH…
//     change what runs); a bare assignment (X=1 alone) is refused;
//   - the program is a bare name (no path) from a fixed list, and its
//     options are checked against that program's dangerous ones; a long
//     option that is a prefix of a dangerous one is dangerous (programs
//     accept abbreviations: --upload-pa is --upload-pack);
//   - wrappers are looked through: env (assignments as above), nice,
//     timeout, command, xargs (only for programs none of whose options is
//     dangerous, since xargs adds unseen arguments), bash/sh -c 'TEXT' and
//     eval with literal text (TEXT must itself be read-only); find with
//     -exec, -execdir, -ok, -okdir, -delete, -fprint… asks;
//   - inline programs (awk, python -c, node -e, perl -e…), pagers (less,
//     more, man: they have shell escapes) are not on the list: they ask.
//
// Dangerous paths (cat ~/.ssh/id_rsa) are not its business: the gate asks
// for them before it gets here (see DangerousPaths).
//
// A nil or empty f is not read-only. IsReadOnly is safe for concurrent use.
func ReadOnly(f *syntax.File) (ok bool, reason string) {
	if f == nil || len(f.Stmts) == 0 {
		return false, "no command"
	}
	return roStmts(f.Stmts, 0)
}

// ReadOnlyText is ReadOnly of src parsed with Parse; text that does not
// parse is not read-only.
func ReadOnlyText(src string) (ok bool, reason string) {
	f, parsed := parseFile(src)
	if !parsed {
		return false, "the command does not parse"
	}
	return ReadOnly(f)
}

func roStmts(stmts []*syntax.Stmt, depth int) (bool, string) {
	if depth > maxNesting {
		return false, "nested too deep"
	}
	for _, st := range stmts {
		if ok, why := roStmt(st, depth); !ok {
			return false, why
		}
	}
	return true, ""
}

func roStmt(st *syntax.Stmt, depth int) (bool, string) {
	switch {
	case st.Background || st.Coprocess || st.Disown:
		return false, "runs in the background"
	case len(st.Redirs) > 0:
		return false, "has a redirection (taken as a write)"
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		return roCall(c, depth)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
		default:
			return false, "has an unknown operator"
		}
		if ok, why := roStmt(c.X, depth); !ok {
			return false, why
		}
		return roStmt(c.Y, depth)
	case *syntax.TimeClause:
		if c.Stmt == nil {
			return true, ""
		}
		return roStmt(c.Stmt, depth)
	case nil:
		return false, "no command"
	default:
		return false, "is not a plain command or pipeline (subshell, block, loop, condition, function or declaration)"
	}
}

// safeAssign lists the variables a leading assignment may set.
func safeAssign(name string) bool {
	switch name {
	case "LANG", "LANGUAGE", "TZ", "NO_COLOR", "CLICOLOR", "COLUMNS":
		return true
	}
	return strings.HasPrefix(name, "LC_") && name != "LC_"
}

func roCall(c *syntax.CallExpr, depth int) (bool, string) {
	if len(c.Args) == 0 {
		return false, "sets shell variables"
	}
	for _, a := range c.Assigns {
		if a.Append || a.Naked || a.Index != nil || a.Array != nil || a.Name == nil || !safeAssign(a.Name.Value) {
			return false, "assigns a variable that can change what runs"
		}
		if a.Value != nil {
			if w := WordOf(a.Value); !w.Lit {
				return false, "assigns a value that is not literal"
			}
		}
	}
	argv := make([]string, len(c.Args))
	globs, risky := false, false
	for i, w := range c.Args {
		lw := WordOf(w)
		if !lw.Lit {
			return false, "has an expansion or substitution ($…, `…`, <(…))"
		}
		if strings.ContainsFunc(lw.Val, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f }) {
			return false, "has control characters"
		}
		g, brace := unquotedMeta(w)
		if brace {
			return false, "has a brace expansion"
		}
		if g {
			if i == 0 {
				return false, "has a glob in the program name"
			}
			if lw.Val == "" || lw.Val[0] == '-' || strings.ContainsAny(lw.Val[:1], "*?[") {
				risky = true
			}
			globs = true
		}
		argv[i] = lw.Val
	}
	if risky && !readers[argv[0]].any {
		return false, "has a glob that could expand to an option of " + argv[0]
	}
	return roArgv(argv, globs, depth)
}

// unquotedMeta reports unescaped glob characters and brace expansions
// ({a,b}, {1..3}) in the unquoted parts of w (quoted parts count as plain
// text, as they do for the shell).
func unquotedMeta(w *syntax.Word) (glob, brace bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		if l, ok := part.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		} else {
			b.WriteString("Q")
		}
	}
	s := b.String()
	open := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?':
			glob = true
		case '[':
			if strings.IndexByte(s[i:], ']') > 0 {
				glob = true
			}
		case '{':
			open = i
		case '}':
			if open >= 0 && strings.ContainsAny(s[open:i], ",.") {
				brace = true
			}
		}
	}
	return glob, brace
}

// roSpec says what options of a reader are dangerous.
type roSpec struct {
	any       bool     // no option writes or runs code: anything goes (and xargs may add arguments)
	denyShort string   // short options that write or run code
	denyLong  []string // long options that do (without --); their prefixes too
	maxPos    int      // >0: at most this many operands (the next would be an output file)
	check     func(args []string, globs bool, depth int) (bool, string)
}

var harmless = roSpec{any: true}

// readers is the fixed list of programs IsReadOnly accepts.
var readers = map[string]roSpec{
	"ls": harmless, "cat": harmless, "head": harmless, "tail": harmless, "wc": harmless,
	"pwd": harmless, "echo": harmless, "whoami": harmless, "id": harmless, "uname": harmless,
	"basename": harmless, "dirname": harmless, "realpath": harmless, "readlink": harmless,
	"stat": harmless, "du": harmless, "df": harmless, "true": harmless, "false": harmless,
	"which": harmless, "type": harmless, "nl": harmless, "tac": harmless, "rev": harmless,
	"cut": harmless, "tr": harmless, "comm": harmless, "diff": harmless, "cmp": harmless,
	"md5sum": harmless, "sha1sum": harmless, "sha256sum": harmless, "sha512sum": harmless,
	"b2sum": harmless, "cksum": harmless, "grep": harmless, "egrep": harmless, "fgrep": harmless,
	"seq": harmless, "printenv": harmless, "column": harmless, "fold": harmless, "od": harmless,
	"hexdump": harmless, "strings": harmless, "test": harmless, "[": harmless, "nproc": harmless,
	"uptime": harmless, "groups": harmless, "locale": harmless, "tty": harmless, "arch": harmless,
	"ps": harmless, "jq": harmless, "paste": harmless, "join": harmless, "expr": harmless,
	"cal": harmless, "sleep": harmless, "whereis": harmless, "numfmt": harmless,
	"date":   {denyShort: "s", denyLong: []string{"set"}},
	"file":   {denyShort: "C", denyLong: []string{"compile"}},
	"tree":   {denyShort: "oR", denyLong: []string{"output"}},
	"printf": {denyShort: "v"},
	"uniq":   {maxPos: 1},
	"xxd":    {maxPos: 1},
	"base64": {denyShort: "o", denyLong: []string{"output"}, maxPos: 1},
	"sort":   {denyShort: "o", denyLong: []string{"output", "compress-program"}},
	"rg":     {denyShort: "z", denyLong: []string{"pre", "pre-glob", "hostname-bin", "search-zip"}},
	"ag":     {denyLong: []string{"pager"}},
	"fd":     {denyShort: "xX", denyLong: []string{"exec", "exec-batch"}},
	"find":   {check: roFind},
	"sed":    {check: roSed},
	"git":    {check: roGit},
}

func init() {
	// wrappers look up readers themselves: set here to break the cycle
	for name, check := range map[string]func([]string, bool, int) (bool, string){
		"xargs": roXargs, "env": roEnv, "nice": roNice, "timeout": roTimeout,
		"command": roCommand, "bash": roShellC, "sh": roShellC, "eval": roEval,
	} {
		readers[name] = roSpec{check: check}
	}
}

func roArgv(argv []string, globs bool, depth int) (bool, string) {
	if depth > maxNesting {
		return false, "nested too deep"
	}
	prog := argv[0]
	if strings.Contains(prog, "/") {
		return false, "runs a program by path (" + prog + ")"
	}
	spec, ok := readers[prog]
	if !ok {
		return false, prog + " is not a known read-only program"
	}
	args := argv[1:]
	if spec.check != nil {
		return spec.check(args, globs, depth)
	}
	if spec.any {
		return true, ""
	}
	if globs && spec.maxPos > 0 {
		return false, prog + " with a glob could be given an output file"
	}
	if ok, why := denyOptions(prog, args, spec.denyShort, spec.denyLong); !ok {
		return false, why
	}
	if spec.maxPos > 0 {
		pos := 0
		for _, a := range args {
			if a == "-" || !strings.HasPrefix(a, "-") {
				pos++
			}
		}
		if pos > spec.maxPos {
			return false, prog + " is given an output file"
		}
	}
	return true, ""
}

// denyOptions checks every word that looks like an option (a value that
// happens to look like one is checked too: that only errs towards asking).
func denyOptions(prog string, args []string, denyShort string, denyLong []string) (bool, string) {
	for _, a := range args {
		if a == "-" || a == "--" || !strings.HasPrefix(a, "-") {
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[2:], "=")
			for _, d := range denyLong {
				if strings.HasPrefix(d, name) {
					return false, prog + " " + a + " can write files or run a program"
				}
			}
			continue
		}
		if strings.ContainsAny(a[1:], denyShort) && denyShort != "" {
			return false, prog + " " + a + " can write files or run a program"
		}
	}
	return true, ""
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

func roFind(args []string, globs bool, depth int) (bool, string) {
	for _, a := range args {
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if slices.Contains(findPrimaries, a) || (strings.HasPrefix(a, "-newer") && len(a) == 8) {
			continue
		}
		switch a {
		case "-exec", "-execdir", "-ok", "-okdir":
			return false, "find " + a + " runs a command"
		case "-delete", "-fls", "-fprint", "-fprint0", "-fprintf":
			return false, "find " + a + " writes or deletes files"
		}
		return false, "find " + a + " is not a known read-only option"
	}
	return true, ""
}

// roXargs accepts xargs running a program none of whose options is
// dangerous, since xargs adds arguments nobody has seen. Only options whose
// form is certain are accepted (not -i, -l, -e, whose value is optional).
func roXargs(args []string, globs bool, depth int) (bool, string) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
		a := args[i]
		i++
		switch {
		case a == "--":
			goto command
		case a == "-0" || a == "--null" || a == "-r" || a == "--no-run-if-empty" || a == "-t" || a == "--verbose" || a == "-x" || a == "--exit":
		case len(a) == 2 && strings.ContainsRune("nLPdIsE", rune(a[1])):
			i++ // the value is the next word
		case len(a) > 2 && a[1] != '-' && strings.ContainsRune("nLPdIsE", rune(a[1])):
			// the value is attached
		case slices.ContainsFunc([]string{"--max-args=", "--max-lines=", "--max-procs=", "--delimiter=", "--replace=", "--max-chars=", "--eof="}, func(p string) bool { return strings.HasPrefix(a, p) }):
		default:
			return false, "xargs " + a + " is not accepted"
		}
	}
command:
	if i >= len(args) {
		return true, "" // xargs echo
	}
	prog := args[i]
	spec, ok := readers[prog]
	if !ok || !spec.any {
		return false, "xargs runs " + prog + " with arguments nobody has seen"
	}
	return true, ""
}

func wordsOf(args []string) []Word {
	ws := make([]Word, len(args))
	for i, a := range args {
		ws[i] = Word{Val: a, Lit: true}
	}
	return ws
}

func valsOf(ws []Word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Val
	}
	return out
}

func roEnv(args []string, globs bool, depth int) (bool, string) {
	i := 0
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			return false, "env " + a + " is not accepted"
		}
		name, _, found := strings.Cut(a, "=")
		if !found {
			break
		}
		if !safeAssign(name) {
			return false, "env sets " + name + ", which can change what runs"
		}
		i++
	}
	if i == len(args) {
		return true, "" // prints the environment
	}
	return roArgv(args[i:], globs, depth+1)
}

func roNice(args []string, globs bool, depth int) (bool, string) {
	rest := valsOf(skipFlags(wordsOf(args), "n", "adjustment"))
	if len(rest) == 0 {
		return true, ""
	}
	return roArgv(rest, globs, depth+1)
}

func roTimeout(args []string, globs bool, depth int) (bool, string) {
	rest := valsOf(skipFlags(wordsOf(args), "sk", "signal kill-after"))
	if len(rest) < 2 {
		return false, "timeout without a command"
	}
	return roArgv(rest[1:], globs, depth+1)
}

func roCommand(args []string, globs bool, depth int) (bool, string) {
	if len(args) > 0 && (args[0] == "-v" || args[0] == "-V") {
		return true, ""
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return false, "command with options"
	}
	return roArgv(args, globs, depth+1)
}

func roShellC(args []string, globs bool, depth int) (bool, string) {
	if len(args) != 2 || args[0] != "-c" {
		return false, "a shell is run other than as sh -c 'TEXT'"
	}
	return roNested(args[1], depth)
}

func roEval(args []string, globs bool, depth int) (bool, string) {
	return roNested(strings.Join(args, " "), depth)
}

func roNested(text string, depth int) (bool, string) {
	f, ok := parseFile(text)
	if !ok || len(f.Stmts) == 0 {
		return false, "nested shell text does not parse"
	}
	return roStmts(f.Stmts, depth+1)
}

// roSed accepts sed printing: -n -E -r -s -u -z --posix … and scripts made
// of addresses and the commands p d q Q = l n N P D g G h H x and s///
// with flags among g p i I m M and digits. Any w W r R e command or flag,
// -i, -f, blocks, abbreviated long options: ask.
func roSed(args []string, globs bool, depth int) (bool, string) {
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
						return false, "sed --expression without a script"
					}
					i++
					val = args[i]
				}
				scripts = append(scripts, val)
			default:
				return false, "sed " + a + " is not a known read-only option"
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
							return false, "sed -" + string(a[j]) + " without a value"
						}
						i++
						val = args[i]
					}
					if a[j] == 'e' {
						haveE = true
						scripts = append(scripts, val)
					}
				default:
					return false, "sed -" + string(a[j]) + " can write files or run a program"
				}
				break
			}
		}
	}
	if !haveE {
		if len(operands) == 0 {
			return false, "sed without a script"
		}
		scripts, operands = operands[:1], operands[1:]
	}
	_ = operands
	for _, s := range scripts {
		if !sedPrintOnly(s) {
			return false, "the sed script may write files or run commands"
		}
	}
	return true, ""
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

func roGit(args []string, globs bool, depth int) (bool, string) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if !slices.Contains(gitGlobal, args[i]) {
			return false, "git " + args[i] + " can change what git runs"
		}
		i++
	}
	if i == len(args) {
		return false, "git without a subcommand"
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
			return true, ""
		case len(rest) == 2 && rest[0] == "get-url" && !strings.HasPrefix(rest[1], "-"):
			return true, ""
		}
		return false, "git remote other than listing"
	case "stash":
		if len(rest) > 0 && (rest[0] == "list" || rest[0] == "show") {
			return denyOptions("git stash", rest[1:], "", gitDiffDeny)
		}
		return false, "git stash other than list or show"
	case "worktree":
		if len(rest) > 0 && rest[0] == "list" {
			return true, ""
		}
		return false, "git worktree other than list"
	case "reflog":
		if len(rest) == 0 || rest[0] == "show" || (strings.HasPrefix(rest[0], "-") && !slices.ContainsFunc(rest, func(a string) bool { return a == "expire" || a == "delete" })) {
			return denyOptions("git reflog", rest, "", gitDiffDeny)
		}
		return false, "git reflog other than show"
	case "config":
		return gitConfigRead(rest)
	}
	return false, "git " + sub + " is not a known read-only subcommand"
}

// gitListOnly accepts git branch / git tag listing: no operand unless
// -l/--list is given, and only the listed options.
func gitListOnly(sub string, args []string, flags, valued []string) (bool, string) {
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
				return false, "git " + sub + " " + a + " can change branches or tags"
			}
			if !hasVal && name != "--color" && name != "--column" && name != "--abbrev" {
				i++
			}
		default:
			operands++
		}
	}
	if operands > 0 && !list {
		return false, "git " + sub + " NAME creates a " + sub
	}
	return true, ""
}

func gitConfigRead(args []string) (bool, string) {
	if len(args) > 0 && (args[0] == "list" || args[0] == "get") {
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "-") && !slices.Contains([]string{"--show-origin", "--show-scope", "--global", "--local", "--system", "--name-only", "-z", "--null", "--all"}, a) {
				return false, "git config " + a + " is not a known read-only option"
			}
		}
		return true, ""
	}
	reading := false
	for _, a := range args {
		switch a {
		case "--get", "--get-all", "--get-regexp", "--list", "-l":
			reading = true
		case "--show-origin", "--show-scope", "--global", "--local", "--system", "--name-only", "-z", "--null":
		default:
			if strings.HasPrefix(a, "-") {
				return false, "git config " + a + " is not a known read-only option"
			}
		}
	}
	if !reading {
		return false, "git config without --get or --list may set a value"
	}
	return true, ""
}

// ReadOnlyArgv reports whether one program invocation is read-only: argv
// are its words as they are about to run (expanded), env the variables set
// for it beyond the environment the executor started from (KEY=VALUE). It
// applies ReadOnly's rules to one simple command, and the rules of an
// assignment to every variable of env (RunsPrograms and the few variables
// read-only commands are known to ignore).
func ReadOnlyArgv(argv []string, env []string) (ok bool, reason string) {
	if len(argv) == 0 {
		return false, "no command"
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if why, runs := RunsPrograms(name); runs {
			return false, "the environment sets " + name + " (" + why + ")"
		}
	}
	for _, a := range argv {
		if strings.ContainsFunc(a, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f }) {
			return false, "has control characters"
		}
	}
	return roArgv(argv, false, 0)
}
