package permission

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Rule is one allow, ask or deny entry of a settings layer: a key pattern
// and where it was written (a file name, "flags", "session").
type Rule struct {
	Pattern Pattern
	Source  string
	Origin  Origin // the settings layer it came from
}

// String writes the rule as "PATTERN (SOURCE)".
func (r Rule) String() string {
	if r.Source == "" {
		return r.Pattern.String()
	}
	return r.Pattern.String() + " (" + r.Source + ")"
}

// ParseRule reads one rule as written in a settings file or on the command
// line. It is ParsePattern plus one shorthand: a bare tool name (write_file)
// stands for every call of that tool (write_file:*). A rule that cannot
// match anything is an error of class ErrInvalidConfig (and ErrInvalidKey).
func ParseRule(s string) (Pattern, error) {
	if !strings.Contains(s, ":") && bareTool(s) {
		s += ":*"
	}
	p, err := ParsePattern(s)
	if err != nil {
		return Pattern{}, fmt.Errorf("rule %q: %w: %w", s, ErrInvalidConfig, err)
	}
	return p, nil
}

// toolWide reports whether p covers every call of its tool (tool:* or tool:**).
func toolWide(p Pattern) bool {
	return !p.Exact && (p.Action == "*" || p.Action == "**") &&
		(p.Detail == "" || p.Detail == "*" || p.Detail == "**")
}

// shellTool is the name of the built-in tool that runs shell commands.
const shellTool = "run_command"

// requestKey returns the key req asks under, or the zero Key for None.
func requestKey(req *Request) Key {
	if req.Permission.IsNone() {
		return Key{}
	}
	return req.Permission.Key()
}

// isShell reports whether req runs a shell command.
func isShell(req *Request) bool {
	return req.Tool == shellTool || requestKey(req).Tool == shellTool || req.Command != nil
}

// commandFile returns the parse of req's shell command: req.Command.File
// when set, else a parse of req.Command.Source, else a parse of the action
// of an exact run_command key. ok is false when there is no command text or
// it does not parse (then nothing can be said about it: callers fail closed).
func commandFile(req *Request) (f *syntax.File, ok bool) {
	if req.Command != nil {
		if req.Command.File != nil {
			return req.Command.File, true
		}
		return parseShell(req.Command.Source)
	}
	k := requestKey(req)
	if k.Tool != shellTool {
		return nil, false
	}
	if k.Exact {
		return parseShell(k.Action)
	}
	src := k.Action
	if k.Detail != "" {
		src += " " + k.Detail
	}
	return parseShell(src)
}

// parseShell parses src as bash.
func parseShell(src string) (*syntax.File, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, false
	}
	return f, true
}

// word is one shell word as far as it can be known before running: its
// value when every part is literal.
type word struct {
	val string
	lit bool
}

// segment is one command that a shell text would run, found anywhere in
// it: in pipelines, lists, subshells, substitutions, function bodies,
// conditions, behind wrappers (env, sudo, xargs, timeout…), in the string of
// bash -c or eval, in find -exec. opaque is set when what runs cannot be
// known (a non-literal eval, a shell reading a script from a pipe).
type segment struct {
	argv   []word
	opaque bool
	// loose is set for the words of code in another language (python -c,
	// awk programs, ssh's remote command, git -c values): a rule matches
	// when its program and its detail are among the words.
	loose bool
}

func (s segment) program() (string, bool) {
	if s.opaque || len(s.argv) == 0 {
		return "", false
	}
	return s.argv[0].val, s.argv[0].lit
}

// maxSegments bounds how many commands one text is taken apart into;
// past it the rest is opaque.
const maxSegments = 4096

// maxNesting bounds how deep bash -c, eval and wrappers are looked through;
// deeper text is opaque.
const maxNesting = 8

// segments lists every command f would run, looking through wrappers and
// nested shell strings. It never fails; what it cannot see is an opaque
// segment.
func segments(f *syntax.File) []segment {
	var out []segment
	walkSegments(f, 0, &out)
	return out
}

func walkSegments(node syntax.Node, depth int, out *[]segment) {
	if depth > maxNesting {
		*out = append(*out, segment{opaque: true})
		return
	}
	syntax.Walk(node, func(n syntax.Node) bool {
		if a, ok := n.(*syntax.Assign); ok {
			codeAssign(a, depth, out)
			return true
		}
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		argv := make([]word, len(call.Args))
		for i, w := range call.Args {
			argv[i] = wordOf(w)
		}
		expandArgv(argv, st, depth, out)
		return true // substitutions inside the words are walked too
	})
}

// expandArgv records argv as a segment and, when it is a wrapper, the
// command it runs.
func expandArgv(argv []word, st *syntax.Stmt, depth int, out *[]segment) {
	if depth > maxNesting {
		*out = append(*out, segment{opaque: true})
		return
	}
	if len(argv) == 0 {
		return
	}
	if len(*out) >= maxSegments {
		*out = append(*out, segment{opaque: true})
		return
	}
	*out = append(*out, segment{argv: argv})
	if !argv[0].lit {
		return
	}
	prog := path.Base(argv[0].val)
	args := argv[1:]
	switch prog {
	case "env":
		i := 0
	envLoop:
		for i < len(args) {
			a := args[i]
			switch {
			case !a.lit:
				*out = append(*out, segment{opaque: true})
				return
			case a.val == "-S" || a.val == "--split-string" || strings.HasPrefix(a.val, "--split-string=") || (strings.HasPrefix(a.val, "-S") && len(a.val) > 2):
				s := strings.TrimPrefix(strings.TrimPrefix(a.val, "--split-string="), "-S")
				if (a.val == "-S" || a.val == "--split-string") && i+1 < len(args) {
					s = args[i+1].val
				}
				nestedText(s, depth, out)
				return
			case a.val == "-u" || a.val == "--unset" || a.val == "-C" || a.val == "--chdir":
				i += 2
				continue
			case a.val == "--":
				i++
				continue
			case strings.HasPrefix(a.val, "-"):
				i++
				continue
			case strings.Contains(a.val, "="):
				i++
				continue
			}
			break envLoop
		}
		wrapped(args[min(i, len(args)):], st, depth, out)
	case "nice":
		wrapper(args, skipFlags(args, "n", "adjustment"), st, depth, out)
	case "timeout":
		rest := skipFlags(args, "sk", "signal kill-after")
		if len(rest) > 0 {
			rest = rest[1:] // the duration
		}
		wrapper(args, rest, st, depth, out)
	case "nohup", "setsid", "time", "builtin", "unbuffer", "caffeinate":
		wrapper(args, skipFlags(args, "", ""), st, depth, out)
	case "command":
		if len(args) > 0 && (args[0].val == "-v" || args[0].val == "-V") {
			return
		}
		wrapper(args, skipFlags(args, "", ""), st, depth, out)
	case "exec":
		wrapper(args, skipFlags(args, "a", ""), st, depth, out)
	case "stdbuf":
		wrapper(args, skipFlags(args, "ioe", "input output error"), st, depth, out)
	case "ionice":
		wrapper(args, skipFlags(args, "cnpP", "class classdata pid pgid uid"), st, depth, out)
	case "chrt", "taskset":
		wrapper(args, skipPositional(skipFlags(args, "", ""), 1), st, depth, out)
	case "sudo", "doas", "run0", "pkexec":
		wrapper(args, skipFlags(args, "ugCDhprtUTc", "user group close-from chdir host prompt role type other-user command-timeout"), st, depth, out)
	case "xargs":
		wrapper(args, skipFlags(args, "aEdIiLlnPs", "arg-file eof delimiter replace max-lines max-args max-procs max-chars process-slot-var"), st, depth, out)
	case "watch":
		rest := skipFlags(args, "nd", "interval differences")
		nestedText(joinVals(rest), depth, out)
	case "flock":
		wrapper(args, skipPositional(skipFlags(args, "wEc", "wait timeout conflict-exit-code command"), 1), st, depth, out)
	case "chroot", "strace", "ltrace", "valgrind", "unshare", "nsenter", "firejail", "bwrap",
		"systemd-run", "proxychains", "proxychains4", "torsocks", "gtimeout", "catchsegv", "direnv",
		"sg", "newgrp", "fakeroot", "faketime", "dbus-run-session", "xvfb-run", "with-contenv":
		// wrappers whose options are not modelled: a command may start at any
		// word after their options
		rest := skipFlags(args, "", "")
		for k, w := range rest {
			if k >= 8 {
				break
			}
			if w.lit && !strings.HasPrefix(w.val, "-") {
				wrapped(rest[k:], st, depth, out)
			}
		}
	case "find":
		for i := 0; i < len(args); i++ {
			switch args[i].val {
			case "-exec", "-execdir", "-ok", "-okdir":
				j := i + 1
				for j < len(args) && args[j].val != ";" && args[j].val != "+" {
					j++
				}
				expandArgv(args[i+1:j], st, depth+1, out)
				i = j
			}
		}
	case "eval":
		for _, a := range args {
			if !a.lit {
				*out = append(*out, segment{opaque: true})
				return
			}
		}
		nestedText(joinVals(args), depth, out)
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "rbash", "fish", "yash", "tcsh", "csh":
		shellArgs(prog, args, st, depth, out)
	case "alias", "hash", "enable", "fc", "shopt":
		// can make a later word run something else (alias g=git; g push)
		if prog == "shopt" && !slices.ContainsFunc(args, func(a word) bool { return !a.lit || a.val == "expand_aliases" }) {
			return // shopt -s nullglob … changes nothing about what runs
		}
		*out = append(*out, segment{opaque: true})
	case "trap":
		if len(args) > 0 && args[0].val != "-l" && args[0].val != "-p" {
			if !args[0].lit {
				*out = append(*out, segment{opaque: true})
				return
			}
			nestedText(args[0].val, depth, out)
		}
	case "source", ".":
		if len(args) == 0 {
			return
		}
		if !args[0].lit {
			*out = append(*out, segment{opaque: true})
		} else if isStdin(args[0].val) {
			shellArgs("sh", nil, st, depth, out)
		}
	case "python", "python2", "python3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua",
		"Rscript", "osascript", "pwsh", "powershell", "tclsh", "jshell", "awk", "gawk", "mawk", "nawk",
		"sed", "ssh", "parallel", "su", "runuser", "script", "expect", "tmux", "screen":
		// code in another language, or a command run elsewhere: its words
		for _, a := range args {
			if !a.lit {
				*out = append(*out, segment{opaque: true})
				return
			}
		}
		looseWords(joinVals(args), out)
	case "git":
		for i, a := range args {
			if (a.val == "-c" || a.val == "--config-env") && i+1 < len(args) {
				looseWords(args[i+1].val, out)
			} else if strings.HasPrefix(a.val, "-c") && len(a.val) > 2 || strings.HasPrefix(a.val, "--config-env=") {
				looseWords(a.val, out)
			}
		}
	}
}

// codeAssign looks at assignments to variables whose value the shell runs
// or sources: PS0-PS4 and PROMPT_COMMAND are parsed, BASH_ENV and ENV name a
// file nobody has seen.
func codeAssign(a *syntax.Assign, depth int, out *[]segment) {
	if a.Name == nil {
		return
	}
	switch a.Name.Value {
	case "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND":
		if a.Value == nil {
			return
		}
		if w := wordOf(a.Value); w.lit {
			nestedText(w.val, depth, out)
			return
		}
		*out = append(*out, segment{opaque: true})
	case "BASH_ENV", "ENV", "BASH_LOADABLES_PATH", "PROMPT_COMMANDS":
		*out = append(*out, segment{opaque: true})
	}
}

// looseWords records text in another language as a loose segment.
func looseWords(text string, out *[]segment) {
	var argv []word
	for _, t := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '+' || r == ':' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		argv = append(argv, word{val: t, lit: true})
	}
	if len(argv) > 0 {
		*out = append(*out, segment{argv: argv, loose: true})
	}
}

// isStdin reports whether a script argument names the standard input.
func isStdin(s string) bool {
	switch s {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return true
	}
	return false
}

// wrapper records the command a wrapper runs: rest, where the wrapper's
// options end as far as skipFlags can tell, and, to err towards matching,
// a command starting at every word before it that was taken as an
// option's value (xargs -i git push: -i takes no separate value).
func wrapper(args, rest []word, st *syntax.Stmt, depth int, out *[]segment) {
	wrapped(rest, st, depth, out)
	for k, w := range args[:len(args)-len(rest)] {
		if w.lit && !strings.HasPrefix(w.val, "-") {
			wrapped(args[k:], st, depth, out)
		}
	}
}

// wrapped records the command a wrapper runs.
func wrapped(rest []word, st *syntax.Stmt, depth int, out *[]segment) {
	if len(rest) == 0 {
		return
	}
	expandArgv(rest, st, depth+1, out)
}

// shellArgs looks into a shell started with -c STRING, or reading a script
// from a here-document or here-string; a shell reading an unseen script is
// opaque.
func shellArgs(prog string, args []word, st *syntax.Stmt, depth int, out *[]segment) {
	if prog == "busybox" {
		if len(args) > 0 && (args[0].val == "sh" || args[0].val == "ash" || args[0].val == "bash") {
			shellArgs("sh", args[1:], st, depth, out)
		}
		return
	}
	// -c anywhere (in a cluster such as -ec, after --rcfile FILE…): the next
	// word is code. Looking past the first operand errs towards matching.
	for i, a := range args {
		if !a.lit {
			*out = append(*out, segment{opaque: true})
			return
		}
		if len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && strings.Contains(a.val, "c") {
			if i+1 >= len(args) {
				return
			}
			if !args[i+1].lit {
				*out = append(*out, segment{opaque: true})
				return
			}
			nestedText(args[i+1].val, depth, out)
			return
		}
	}
	for i, a := range args {
		if a.val == "--" {
			if i+1 < len(args) && !isStdin(args[i+1].val) {
				return // a script file: not looked into
			}
			break
		}
		if a.val == "-s" {
			break // commands from the standard input
		}
		if strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
			continue
		}
		if i > 0 {
			switch args[i-1].val {
			case "-o", "+o", "-O", "+O", "--rcfile", "--init-file":
				continue // an option's value, not a script
			}
		}
		if isStdin(a.val) {
			break // the script is the standard input
		}
		return // a script file: what it runs is not seen (nor is any file's)
	}
	// No -c, no script: the shell reads its script from stdin, which is
	// seen only when it is a literal here-document or here-string.
	seen := false
	for _, r := range st.Redirs {
		var w *syntax.Word
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			w = r.Hdoc
		case syntax.WordHdoc:
			w = r.Word
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
			seen = false
			continue
		default:
			continue
		}
		if w == nil {
			seen = false
			continue
		}
		lw := wordOf(w)
		if !lw.lit {
			seen = false
			continue
		}
		nestedText(lw.val, depth, out)
		seen = true
	}
	if !seen {
		*out = append(*out, segment{opaque: true}) // a pipe, a file, a terminal
	}
}

// nestedText parses text as shell and walks it one level deeper.
func nestedText(text string, depth int, out *[]segment) {
	f, ok := parseShell(text)
	if !ok {
		*out = append(*out, segment{opaque: true})
		return
	}
	walkSegments(f, depth+1, out)
}

func joinVals(ws []word) string {
	vals := make([]string, len(ws))
	for i, w := range ws {
		vals[i] = w.val
	}
	return strings.Join(vals, " ")
}

// skipFlags drops leading options of a wrapper. withArg lists the short
// options that take a value; longWithArg the long ones (space separated).
// It stops at the first non-option word or after "--".
func skipFlags(args []word, withArg, longWithArg string) []word {
	longs := strings.Fields(longWithArg)
	i := 0
	for i < len(args) {
		v := args[i].val
		if !args[i].lit || v == "-" || !strings.HasPrefix(v, "-") {
			break
		}
		if v == "--" {
			i++
			break
		}
		i++
		if strings.HasPrefix(v, "--") {
			name := strings.TrimPrefix(v, "--")
			if strings.Contains(name, "=") {
				continue
			}
			for _, l := range longs {
				if strings.HasPrefix(l, name) { // abbreviations too
					i++
					break
				}
			}
			continue
		}
		// a cluster of short options: the first that takes a value ends it
		for j := 1; j < len(v); j++ {
			if strings.IndexByte(withArg, v[j]) >= 0 {
				if j == len(v)-1 {
					i++ // the value is the next word
				}
				break
			}
			if v[j] >= '0' && v[j] <= '9' { // nice -5, xargs -n1: a numeric value
				break
			}
		}
	}
	return args[min(i, len(args)):]
}

func skipPositional(args []word, n int) []word {
	if len(args) < n {
		return nil
	}
	return args[n:]
}

// literal returns w's value after quote removal, and whether it is known
// before running (only literal text and quotes; $'…' counts as unknown).
func wordOf(w *syntax.Word) word {
	var b strings.Builder
	lit := true
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				lit = false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				lit = false
			}
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescape(l.Value, true))
				} else {
					lit = false
				}
			}
		default:
			lit = false
		}
	}
	return word{val: b.String(), lit: lit}
}

// unescape removes the backslashes the shell removes: every one outside
// quotes, and inside double quotes only before $ ` " \ and newline.
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		if dquoted && !strings.ContainsRune("$`\"\\\n", rune(next)) {
			b.WriteByte(c)
			continue
		}
		i++
		if next != '\n' {
			b.WriteByte(next)
		}
	}
	return b.String()
}

// matchSegment reports whether pattern p (a run_command rule) covers seg,
// erring towards yes: an opaque segment or a non-literal program matches
// every run_command rule; the program matches by its text or its base name
// (/usr/bin/git is git); a detail matches when ANY argument equals it or
// any argument is not literal (it might expand to it), so flags before a
// subcommand (git -C dir push) do not hide it.
func matchSegment(p Pattern, seg segment) bool {
	if p.Tool != shellTool || p.Exact {
		return false
	}
	if seg.loose {
		return looseMatch(p, seg)
	}
	prog, lit := seg.program()
	if !lit {
		return true
	}
	if !glob(p.Action, prog) && !glob(p.Action, path.Base(prog)) {
		return false
	}
	switch p.Detail {
	case "", "*", "**":
		return true
	}
	for _, a := range seg.argv[1:] {
		if !a.lit || glob(p.Detail, a.val) {
			return true
		}
	}
	return false
}

// looseMatch: the rule's program is one of the words, and its detail
// (when it has one) another.
func looseMatch(p Pattern, seg segment) bool {
	found := false
	for _, w := range seg.argv {
		if glob(p.Action, w.val) || glob(p.Action, path.Base(w.val)) {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	switch p.Detail {
	case "", "*", "**":
		return true
	}
	for _, w := range seg.argv {
		if glob(p.Detail, w.val) {
			return true
		}
	}
	return false
}

// inside holds what deny and ask rules look at in a request, computed once.
type inside struct {
	req    *Request
	done   bool
	parsed bool
	segs   []segment
}

func (in *inside) segments() ([]segment, bool) {
	if !in.done {
		in.done = true
		if f, ok := commandFile(in.req); ok {
			in.parsed, in.segs = true, segments(f)
		}
	}
	return in.segs, in.parsed
}

// matchInside reports whether a deny or ask rule covers in.req: its own
// key, every call of its tool, or, for a shell command, any command
// anywhere in it. A shell command whose text does not parse matches every
// run_command rule.
func matchInside(p Pattern, in *inside) bool {
	req := in.req
	k := requestKey(req)
	if k.Tool != "" && p.Match(k) {
		return true
	}
	if toolWide(p) && (p.Tool == req.Tool || p.Tool == k.Tool) {
		return true
	}
	if p.Tool == "capability" && !p.Exact && k.Tool == "" && glob(p.Action, req.Tool) &&
		(p.Detail == "" || p.Detail == "*" || p.Detail == "**") {
		return true // a capability with None permission, named by its tool
	}
	if p.Tool != shellTool || !isShell(req) {
		return false
	}
	segs, ok := in.segments()
	if !ok {
		return true
	}
	for _, seg := range segs {
		if matchSegment(p, seg) {
			return true
		}
	}
	return false
}

// matchOwn reports whether an allow rule covers req: its own key only,
// never a command inside a compound one (seed 000 ADR 0036).
func matchOwn(p Pattern, req *Request) bool {
	k := requestKey(req)
	if k.Tool == "" {
		return toolWide(p) && p.Tool == req.Tool
	}
	return p.Match(k)
}
