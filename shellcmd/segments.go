package shellcmd

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// parseFile parses src with Parse, the one guarded parser: text beyond its
// limits, with a NUL byte, or that the printer would misprint is not
// parsed.
func parseFile(src string) (*syntax.File, bool) {
	p := Parse(src)
	return p.File, p.File != nil
}

// Word is one shell word as far as it can be known before running.
type Word struct {
	Val string // the value after quote removal (of the literal parts only, when not Lit)
	Lit bool   // every part is literal text or quotes: Val is the word's value
}

// Segment is one command that a shell text would run, found anywhere in
// it: in pipelines, lists, subshells, substitutions, function bodies,
// conditions, behind wrappers (env, sudo, xargs, timeout…), in the string
// of bash -c or eval, in find -exec.
type Segment struct {
	Argv []Word
	// Opaque is set when what runs cannot be known (a non-literal eval, a
	// shell reading a script from a pipe, text nested too deep): a rule
	// must take it as running anything.
	Opaque bool
	// Loose is set for the words of code in another language (python -c,
	// awk programs, ssh's remote command, git -c values): a rule matches
	// when its program and its detail are among the words.
	Loose bool
	// Unsure says why the text this segment stands for may be read by the
	// shell that runs it unlike mvdan/sh reads it (a carriage return, a
	// non-ASCII byte, $'…' handed to bash -c; bash syntax handed to sh):
	// a rule can neither be said to match it nor not to, so the call is
	// asked. Such a segment is also Opaque.
	Unsure string
}

// Program returns the segment's program word, and whether it is literal;
// "", false for an opaque segment.
func (s Segment) Program() (string, bool) {
	if s.Opaque || len(s.Argv) == 0 {
		return "", false
	}
	return s.Argv[0].Val, s.Argv[0].Lit
}

// maxSegments bounds how many commands one text is taken apart into;
// past it the rest is opaque.
const maxSegments = 4096

// maxNesting bounds how deep bash -c, eval and wrappers are looked through;
// deeper text is opaque.
const maxNesting = 8

// Segments lists every command f would run, looking through wrappers and
// nested shell strings. It never fails; what it cannot see is an opaque
// segment.
func Segments(f *syntax.File) []Segment {
	var out []Segment
	walkSegments(f, 0, &out)
	return out
}

func walkSegments(node syntax.Node, depth int, out *[]Segment) {
	if depth > maxNesting {
		*out = append(*out, Segment{Opaque: true})
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
		argv := make([]Word, len(call.Args))
		for i, w := range call.Args {
			argv[i] = WordOf(w)
		}
		expandArgv(argv, st, depth, out)
		return true // substitutions inside the words are walked too
	})
}

// expandArgv records argv as a segment and, when it is a wrapper, the
// command it runs.
func expandArgv(argv []Word, st *syntax.Stmt, depth int, out *[]Segment) {
	if depth > maxNesting {
		*out = append(*out, Segment{Opaque: true})
		return
	}
	if len(argv) == 0 {
		return
	}
	if len(*out) >= maxSegments {
		*out = append(*out, Segment{Opaque: true})
		return
	}
	*out = append(*out, Segment{Argv: argv})
	if !argv[0].Lit {
		return
	}
	prog := path.Base(argv[0].Val)
	args := argv[1:]
	switch prog {
	case "env":
		i := 0
	envLoop:
		for i < len(args) {
			a := args[i]
			switch {
			case !a.Lit:
				*out = append(*out, Segment{Opaque: true})
				return
			case a.Val == "-S" || a.Val == "--split-string" || strings.HasPrefix(a.Val, "--split-string=") || (strings.HasPrefix(a.Val, "-S") && len(a.Val) > 2):
				s := strings.TrimPrefix(strings.TrimPrefix(a.Val, "--split-string="), "-S")
				if (a.Val == "-S" || a.Val == "--split-string") && i+1 < len(args) {
					s = args[i+1].Val
				}
				nestedText("env", s, depth, out)
				return
			case a.Val == "-u" || a.Val == "--unset" || a.Val == "-C" || a.Val == "--chdir":
				i += 2
				continue
			case a.Val == "--":
				i++
				continue
			case strings.HasPrefix(a.Val, "-"):
				i++
				continue
			case strings.Contains(a.Val, "="):
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
		if len(args) > 0 && (args[0].Val == "-v" || args[0].Val == "-V") {
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
		nestedText("sh", joinVals(rest), depth, out)
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
			if w.Lit && !strings.HasPrefix(w.Val, "-") {
				wrapped(rest[k:], st, depth, out)
			}
		}
	case "find":
		for i := 0; i < len(args); i++ {
			switch args[i].Val {
			case "-exec", "-execdir", "-ok", "-okdir":
				j := i + 1
				for j < len(args) && args[j].Val != ";" && args[j].Val != "+" {
					j++
				}
				expandArgv(args[i+1:j], st, depth+1, out)
				i = j
			}
		}
	case "eval":
		for _, a := range args {
			if !a.Lit {
				*out = append(*out, Segment{Opaque: true})
				return
			}
		}
		nestedText("", joinVals(args), depth, out)
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "rbash", "fish", "yash", "tcsh", "csh":
		shellArgs(prog, args, st, depth, out)
	case "alias", "hash", "enable", "fc", "shopt":
		// can make a later word run something else (alias g=git; g push)
		if prog == "shopt" && !slices.ContainsFunc(args, func(a Word) bool { return !a.Lit || a.Val == "expand_aliases" }) {
			return // shopt -s nullglob … changes nothing about what runs
		}
		*out = append(*out, Segment{Opaque: true})
	case "trap":
		if len(args) > 0 && args[0].Val != "-l" && args[0].Val != "-p" {
			if !args[0].Lit {
				*out = append(*out, Segment{Opaque: true})
				return
			}
			nestedText("", args[0].Val, depth, out)
		}
	case "source", ".":
		if len(args) == 0 {
			return
		}
		if !args[0].Lit {
			*out = append(*out, Segment{Opaque: true})
		} else if isStdin(args[0].Val) {
			shellArgs("sh", nil, st, depth, out)
		}
	case "python", "python2", "python3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua",
		"Rscript", "osascript", "pwsh", "powershell", "tclsh", "jshell", "awk", "gawk", "mawk", "nawk",
		"sed", "ssh", "parallel", "su", "runuser", "script", "expect", "tmux", "screen":
		// code in another language, or a command run elsewhere: its words
		for _, a := range args {
			if !a.Lit {
				*out = append(*out, Segment{Opaque: true})
				return
			}
		}
		looseWords(joinVals(args), out)
	case "git":
		for i, a := range args {
			if (a.Val == "-c" || a.Val == "--config-env") && i+1 < len(args) {
				looseWords(args[i+1].Val, out)
			} else if strings.HasPrefix(a.Val, "-c") && len(a.Val) > 2 || strings.HasPrefix(a.Val, "--config-env=") {
				looseWords(a.Val, out)
			}
		}
	}
}

// codeAssign looks at assignments to variables whose value the shell runs
// or sources: PS0-PS4 and PROMPT_COMMAND are parsed, BASH_ENV and ENV name a
// file nobody has seen.
func codeAssign(a *syntax.Assign, depth int, out *[]Segment) {
	if a.Name == nil {
		return
	}
	switch a.Name.Value {
	case "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND":
		if a.Value == nil {
			return
		}
		if w := WordOf(a.Value); w.Lit {
			nestedText("", w.Val, depth, out)
			return
		}
		*out = append(*out, Segment{Opaque: true})
	case "BASH_ENV", "ENV", "BASH_LOADABLES_PATH", "PROMPT_COMMANDS":
		*out = append(*out, Segment{Opaque: true})
	}
}

// looseWords records text in another language as a loose segment.
func looseWords(text string, out *[]Segment) {
	var argv []Word
	for _, t := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '+' || r == ':' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		argv = append(argv, Word{Val: t, Lit: true})
	}
	if len(argv) > 0 {
		*out = append(*out, Segment{Argv: argv, Loose: true})
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
func wrapper(args, rest []Word, st *syntax.Stmt, depth int, out *[]Segment) {
	wrapped(rest, st, depth, out)
	for k, w := range args[:len(args)-len(rest)] {
		if w.Lit && !strings.HasPrefix(w.Val, "-") {
			wrapped(args[k:], st, depth, out)
		}
	}
}

// wrapped records the command a wrapper runs.
func wrapped(rest []Word, st *syntax.Stmt, depth int, out *[]Segment) {
	if len(rest) == 0 {
		return
	}
	expandArgv(rest, st, depth+1, out)
}

// shellArgs looks into a shell started with -c STRING, or reading a script
// from a here-document or here-string; a shell reading an unseen script is
// opaque.
func shellArgs(prog string, args []Word, st *syntax.Stmt, depth int, out *[]Segment) {
	if prog == "busybox" {
		if len(args) > 0 && (args[0].Val == "sh" || args[0].Val == "ash" || args[0].Val == "bash") {
			shellArgs("sh", args[1:], st, depth, out)
		}
		return
	}
	// -c anywhere (in a cluster such as -ec, after --rcfile FILE…): the next
	// word is code. Looking past the first operand errs towards matching.
	for i, a := range args {
		if !a.Lit {
			*out = append(*out, Segment{Opaque: true})
			return
		}
		if len(a.Val) > 1 && a.Val[0] == '-' && a.Val[1] != '-' && strings.Contains(a.Val, "c") {
			if i+1 >= len(args) {
				return
			}
			if !args[i+1].Lit {
				*out = append(*out, Segment{Opaque: true})
				return
			}
			nestedText(prog, args[i+1].Val, depth, out)
			return
		}
	}
	for i, a := range args {
		if a.Val == "--" {
			if i+1 < len(args) && !isStdin(args[i+1].Val) {
				return // a script file: not looked into
			}
			break
		}
		if a.Val == "-s" {
			break // commands from the standard input
		}
		if strings.HasPrefix(a.Val, "-") || strings.HasPrefix(a.Val, "+") {
			continue
		}
		if i > 0 {
			switch args[i-1].Val {
			case "-o", "+o", "-O", "+O", "--rcfile", "--init-file":
				continue // an option's value, not a script
			}
		}
		if isStdin(a.Val) {
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
		lw := WordOf(w)
		if !lw.Lit {
			seen = false
			continue
		}
		nestedText(prog, lw.Val, depth, out)
		seen = true
	}
	if !seen {
		*out = append(*out, Segment{Opaque: true}) // a pipe, a file, a terminal
	}
}

// nestedText parses text as shell and walks it one level deeper. prog is
// the program that reads it: "" for ccrun's own interpreter (eval, trap,
// prompt strings), else another shell, whose reading of the text may
// differ from mvdan/sh's (Divergence): then an Unsure segment is recorded
// beside what mvdan/sh reads.
func nestedText(prog, text string, depth int, out *[]Segment) {
	if prog != "" {
		if why := Divergence(prog, text); why != "" {
			*out = append(*out, Segment{Opaque: true, Unsure: why})
		}
	}
	f, ok := parseFile(text)
	if !ok {
		*out = append(*out, Segment{Opaque: true})
		return
	}
	walkSegments(f, depth+1, out)
}

func joinVals(ws []Word) string {
	vals := make([]string, len(ws))
	for i, w := range ws {
		vals[i] = w.Val
	}
	return strings.Join(vals, " ")
}

// skipFlags drops leading options of a wrapper. withArg lists the short
// options that take a value; longWithArg the long ones (space separated).
// It stops at the first non-option word or after "--".
func skipFlags(args []Word, withArg, longWithArg string) []Word {
	longs := strings.Fields(longWithArg)
	i := 0
	for i < len(args) {
		v := args[i].Val
		if !args[i].Lit || v == "-" || !strings.HasPrefix(v, "-") {
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

func skipPositional(args []Word, n int) []Word {
	if len(args) < n {
		return nil
	}
	return args[n:]
}

// WordOf returns w's value after quote removal, and whether it is known
// before running (only literal text and quotes; $'…' counts as unknown).
func WordOf(w *syntax.Word) Word {
	if l, ok := onlyLit(w); ok { // its text, without a copy
		return Word{Val: unescape(l.Value, false), Lit: true}
	}
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
	return Word{Val: b.String(), Lit: lit}
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

// Divergence says why text handed to the shell prog (bash -c TEXT, sh -c,
// watch, env -S, a here-document fed to a shell) may be read by that shell
// unlike mvdan/sh reads it, or "" when it is read the same. The set:
//
//   - a shell whose language is not bash (zsh, fish, csh, tcsh, ksh,
//     mksh, yash, pwsh): everything;
//   - a control character (\r is a blank to mvdan/sh and part of a word to
//     bash, so "echo x\r#;rm f" runs rm in bash only), DEL;
//   - a non-ASCII byte (bash's blanks and word characters follow the
//     locale: U+00A0 and other blanks);
//   - $'…' and $"…" quoting (escapes such as \c, \u, \x and \0 are cut at
//     different lengths; $"…" is translated);
//   - backquotes (the backslashes inside them are read twice, differently);
//   - extended globs @( !( +( *( ?( (bash reads them only with extglob on,
//     which the text itself can turn on before a later line);
//   - for sh, dash, ash and busybox sh: bash syntax they read otherwise
//     (&> is & then >, |&, <<<, [[ ]], (( )), <( ), >( ), ;&, ;;&, function,
//     coproc, select);
//   - for env -S: quotes, backslashes, $ and # (env's own splitting rules).
func Divergence(prog, text string) string {
	switch prog {
	case "zsh", "fish", "csh", "tcsh", "ksh", "mksh", "yash", "pwsh", "powershell", "rc", "es", "nu", "xonsh", "elvish":
		return prog + " is not bash: its text follows other rules"
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c < 0x20 && c != '\t' && c != '\n', c == 0x7f:
			return "a control character (\\r is a blank to mvdan/sh, part of a word to bash)"
		case c >= 0x80:
			return "a non-ASCII character (bash reads blanks and word characters by the locale)"
		}
	}
	switch {
	case strings.Contains(text, "$'") || strings.Contains(text, `$"`):
		return "$'…' or $\"…\" quoting (escapes are read differently)"
	case strings.Contains(text, "`"):
		return "backquotes (the backslashes inside them are read differently)"
	}
	for _, g := range []string{"@(", "!(", "+(", "*(", "?("} {
		if strings.Contains(text, g) {
			return "an extended glob " + g + "…) (bash reads it only with extglob on)"
		}
	}
	switch prog {
	case "sh", "dash", "ash", "busybox":
		for _, b := range []string{"&>", "|&", "<<<", "[[", "((", "<(", ">(", ";&", "function", "coproc", "select"} {
			if strings.Contains(text, b) {
				return "bash syntax " + b + " (sh reads it otherwise)"
			}
		}
	case "env":
		if strings.ContainsAny(text, "'\"\\$#") {
			return "env -S quoting (env splits by its own rules)"
		}
	}
	return ""
}
