package permission

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// Rule is one allow, ask or deny entry of a settings layer: a key pattern
// and where it was written (a file name, "flags", "session").
type Rule struct {
	Pattern keys.Pattern
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
// stands for every call of that tool (write_file:*). A rule that does not
// read is ParsePattern's error, of class ErrInvalidKey, which names the
// rule: the caller adds where it was written (a file's position and the
// class ccrun.ErrInvalidConfig, a flag).
func ParseRule(s string) (keys.Pattern, error) {
	if !strings.Contains(s, ":") && keys.BareTool(s) {
		s += ":*"
	}
	return keys.ParsePattern(s)
}

// toolWide reports whether p covers every call of its tool (tool:* or
// tool:**; not tool:*:"", the calls without detail).
func toolWide(p keys.Pattern) bool {
	return !p.Exact && !p.NoDetail() && (p.Action == "*" || p.Action == "**") &&
		(p.Detail == "" || p.Detail == "*" || p.Detail == "**")
}

// requestKey returns the key req asks under, or the zero Key for None.
func requestKey(req *Request) keys.Key {
	if req.Permission.IsNone() {
		return keys.Key{}
	}
	return req.Permission.Key()
}

// isShell reports whether req runs a shell command.
func isShell(req *Request) bool {
	return req.Tool == keys.ShellTool || requestKey(req).Tool == keys.ShellTool || req.Command != nil
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
		return parseFile(req.Command.Source)
	}
	k := requestKey(req)
	if k.Tool != keys.ShellTool {
		return nil, false
	}
	if k.Exact {
		return parseFile(k.Action)
	}
	src := k.Action
	if k.Detail != "" {
		src += " " + k.Detail
	}
	return parseFile(src)
}

// parseFile parses src with the one guarded parser (shellcmd.Parse).
func parseFile(src string) (*syntax.File, bool) {
	p := shellcmd.Parse(src)
	return p.File, p.File != nil
}

// matchSegment reports whether pattern p (a run_command rule) covers seg,
// erring towards yes: an opaque segment or a non-literal program matches
// every run_command rule; the program matches by its text or its base name
// (/usr/bin/git is git); a detail matches when ANY argument equals it or
// any argument is not literal (it might expand to it), so flags before a
// subcommand (git -C dir push) do not hide it.
func matchSegment(p keys.Pattern, seg shellcmd.Segment) bool {
	if p.Tool != keys.ShellTool || p.Exact || seg.Unsure != "" {
		return false // an unsure segment is neither matched nor not (unsureInside)
	}
	if seg.Loose {
		return looseMatch(p, seg)
	}
	prog, lit := seg.Program()
	if !lit {
		return true
	}
	if !keys.Glob(p.Action, prog) && !keys.Glob(p.Action, path.Base(prog)) {
		return false
	}
	switch p.Detail {
	case "", "*", "**":
		return true
	}
	for _, a := range seg.Argv[1:] {
		if !a.Lit || keys.Glob(p.Detail, a.Val) {
			return true
		}
	}
	return false
}

// looseMatch: the rule's program is one of the words, and its detail
// (when it has one) another.
func looseMatch(p keys.Pattern, seg shellcmd.Segment) bool {
	found := false
	for _, w := range seg.Argv {
		if keys.Glob(p.Action, w.Val) || keys.Glob(p.Action, path.Base(w.Val)) {
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
	for _, w := range seg.Argv {
		if keys.Glob(p.Detail, w.Val) {
			return true
		}
	}
	return false
}

// matchInside reports whether a deny or ask rule covers in.req: its own
// key, every call of its tool, or, for a shell command, any command
// anywhere in it. A shell command whose text does not parse matches every
// run_command rule.
func matchInside(p keys.Pattern, in *inside) bool {
	req := in.req
	k := requestKey(req)
	if k.Tool != "" && p.Match(k) {
		return true
	}
	if toolWide(p) && (p.Tool == req.Tool || p.Tool == k.Tool) {
		return true
	}
	if p.Tool == keys.CapabilityTool && !p.Exact && k.Tool == "" && keys.Glob(p.Action, req.Tool) &&
		(p.Detail == "" || p.Detail == "*" || p.Detail == "**") {
		return true // a capability with None permission, named by its tool
	}
	if p.Tool != keys.ShellTool || !isShell(req) {
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

// unsureInside says why it cannot be told whether a run_command deny or
// ask rule covers in.req: text inside it is handed to another shell that
// may read it unlike mvdan/sh (shellcmd.Divergence). "" when it can be told.
func unsureInside(in *inside) string {
	if !isShell(in.req) {
		return ""
	}
	segs, _ := in.segments()
	for _, seg := range segs {
		if seg.Unsure != "" {
			return seg.Unsure
		}
	}
	return ""
}

// matchOwn reports whether an allow rule covers req: its own key only,
// never a command inside a compound one: a grant of git must not cover
// git pull && git push --force (README.md, "Keys").
func matchOwn(p keys.Pattern, req *Request) bool {
	k := requestKey(req)
	if k.Tool == "" {
		return toolWide(p) && p.Tool == req.Tool
	}
	return p.Match(k)
}
