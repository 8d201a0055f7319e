// Package keys is what permission calls are asked under and grants and
// rules are written as: keys (tool:action[:detail]) and the patterns that
// match them. The permission package repeats every name here; the stores
// (permission/allowlist) and the gate both build on this package, so
// that neither imports the other's internals.
//
// Keys and patterns are values, safe for concurrent use.
package keys

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/shellcmd"
)

// The built-in tools of ccrun, the tool segment of their keys.
const (
	// ShellTool is the tool of shell commands: its keys are command keys
	// (run_command:PROGRAM[:DETAIL], or the whole canonical text of a
	// compound command, of a wrapper's, and of one whose detail is not a
	// plain word), and the ceiling of its environment is the session.
	ShellTool = "run_command"
	// WasmTool runs a WebAssembly module (@wasm); its keys name the module.
	WasmTool = "run_wasm"
	// DockerTool runs a container (@docker); its keys name the image.
	DockerTool = "run_docker"
	// CapabilityTool is the tool of every capability's key
	// (capability:NAME), whatever the capability's own tool name.
	CapabilityTool = "capability"
)

// ErrInvalidKey is the class of every error from ParseKey and ParsePattern.
var ErrInvalidKey = errdefs.ErrInvalidArgument.WithMessage("invalid permission key")

// Key names what a call asks permission for: tool:action[:detail], as in
// run_command:git:status, write_file:tests/main_test.go, capability:fmt-json.
//
// A segment is written bare when it is made only of letters, digits and
// . _ / + - @ % , = ~ #, and otherwise as a Go double-quoted ASCII string
// (strconv.QuoteToASCII), so every key prints on one line with control and
// non-ASCII characters escaped, and parses back to the same Key.
//
// A Key whose action is quoted is exact: it is matched only by a pattern of
// the very same text (for run_command: of the same command, however spaced
// or quoted), never by a wildcard. Compound shell commands key that
// way, by their whole canonical text, and so do
// wrappers (timeout 60 true) and simple commands whose detail is not a
// plain word (rm *.log):
//
//	run_command:"git status && git push"
//
// The zero Key is invalid. Keys are comparable values.
type Key struct {
	Tool   string // run_command, write_file, capability, …; always bare
	Action string // the program, the path, the capability's name, or a compound command's text
	Detail string // optional: the subcommand (the first argument, an operand)
	// Exact is set for keys matched only by the same text (compound
	// commands, wrappers, details that are not plain words, options before
	// the first operand or with none).
	Exact bool
}

// String writes k in the form ParseKey reads.
func (k Key) String() string {
	var b strings.Builder
	b.WriteString(k.Tool)
	b.WriteByte(':')
	if k.Exact || !bare(k.Action, false) {
		b.WriteString(strconv.QuoteToASCII(k.Action))
	} else {
		b.WriteString(k.Action)
	}
	if k.Detail != "" {
		b.WriteByte(':')
		writeSegment(&b, k.Detail, false)
	}
	return b.String()
}

// Valid reports whether k can be printed and parsed back to itself.
func (k Key) Valid() bool {
	if !BareTool(k.Tool) || k.Action == "" {
		return false
	}
	if !k.Exact && !bare(k.Action, false) {
		return false // a non-bare action would print quoted, i.e. as an exact key
	}
	return true
}

// ParseKey reads a key as Key.String writes it. Wildcards are not allowed in
// a key (see ParsePattern).
func ParseKey(s string) (Key, error) {
	segs, quoted, err := splitSegments(s, false)
	if err != nil {
		return Key{}, err
	}
	k := Key{Tool: segs[0], Action: segs[1], Exact: quoted[1]}
	if len(segs) == 3 {
		k.Detail = segs[2]
	}
	return k, nil
}

// MustParseKey is ParseKey for keys written in code; it panics on error.
func MustParseKey(s string) Key {
	k, err := ParseKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// Pattern is what a grant or rule is written as: a key, possibly with
// wildcards in its bare segments.
//
//   - run_command:git matches run_command:git with any detail or none (every git
//     command keyed by its program);
//   - run_command:git:"" (an empty quoted detail) matches only run_command:git with
//     no detail (git alone, git --no-pager): the grant of such a key (PatternOf);
//   - run_command:git:push matches only the detail push;
//   - run_command:git:* matches run_command:git with any detail or none;
//   - run_command:* matches every simple command;
//   - write_file:tests/** matches every path under tests/; * stops at a slash, ** does not.
//
// A pattern never matches an exact key (a compound command) unless it is
// that very key: the same text, or for run_command the same command
// however spaced or quoted (see Match).
type Pattern struct {
	Tool   string
	Action string
	Detail string
	Exact  bool // the action was quoted: this pattern is an exact key
	// literalDetail: the detail was quoted, so its * are characters, not
	// wildcards, and it matches only that very detail; with Detail "",
	// only keys without one (tool:action:"", see NoDetail).
	literalDetail bool
}

// ParsePattern reads a pattern. It fails, with class ErrInvalidKey, on text
// that is not tool:action[:detail], and on a wildcard in the tool segment.
// A detail written as the empty quoted string (run_command:make:"") is the
// pattern of no detail (NoDetail); an exact pattern has no detail to
// narrow, and reads it as none (run_command:"make":"" is run_command:"make").
// The quoted action of an exact run_command pattern is read as a command
// and kept in its canonical form (see canonicalCommand), so that
// run_command:"make   test&&make lint" is the pattern
// run_command:"make test && make lint", the key of every spelling of that
// command.
func ParsePattern(s string) (Pattern, error) {
	segs, quoted, err := splitSegments(s, true)
	if err != nil {
		return Pattern{}, err
	}
	p := Pattern{Tool: segs[0], Action: segs[1], Exact: quoted[1]}
	if len(segs) == 3 {
		p.Detail = segs[2]
		p.literalDetail = quoted[2] && (p.Detail == "" || strings.Contains(p.Detail, "*"))
	}
	if p.Exact && p.NoDetail() {
		p.literalDetail = false
	}
	if p.Tool == ShellTool && p.Exact && p.Detail == "" {
		p.Action = canonicalCommand(p.Action)
	}
	return p, nil
}

// canonicalCommand returns the action of an exact run_command pattern
// read as a command: the canonical text ParseCommand keys a compound
// command by, so that a rule matches however the command is spaced or
// quoted (make   test&&make lint and 'make' test && make lint are both
// run_command:"make test && make lint"). Text that is not a command keyed
// exactly that parses stays as written: text that does not parse, text
// with no statement, a simple command keyed run_command:PROGRAM[:DETAIL]
// (never by an exact key; rm *.log and timeout 60 true are keyed exactly),
// and the canonical texts that stand for no parsed command
// (CanonicalEmpty, UnparsedPrefix+SOURCE), which no parse prints.
// CheckPattern says why such a pattern matches nothing a command is keyed as.
func canonicalCommand(action string) string {
	if shellcmd.NotParsed(action) {
		return action
	}
	c := shellcmd.Parse(action)
	if c.File == nil || !c.Exact || c.Canonical == shellcmd.CanonicalEmpty {
		return action
	}
	return c.Canonical
}

// CheckPattern reports, with class ErrInvalidKey, an exact run_command
// pattern that no parsed command is keyed as, and so matches nothing a
// person can mean: text that does not parse as a shell command, text with
// no statement, and a simple command keyed by program and detail written
// as an exact key (git status keys as run_command:git:status; the error
// names that key).
// Such a pattern is kept as written by ParsePattern. CheckPattern returns
// nil for every other pattern.
func CheckPattern(p Pattern) error {
	if p.Tool != ShellTool || !p.Exact || p.Detail != "" || shellcmd.NotParsed(p.Action) {
		return nil
	}
	c := shellcmd.Parse(p.Action)
	k := Key{Tool: ShellTool, Action: c.Program, Detail: c.Detail} // a simple command's key
	switch {
	case c.File == nil:
		return fmt.Errorf("%s: the text does not parse as a shell command, so no command is keyed as it (%v): %w", p, c.Err, ErrInvalidKey)
	case c.Canonical == shellcmd.CanonicalEmpty:
		return fmt.Errorf("%s: the text has no command: %w", p, ErrInvalidKey)
	case !c.Exact && k.Detail == "":
		return fmt.Errorf("%s: a simple command is keyed %s (every %s command), never by an exact key: %w", p, k, shellcmd.Escape(k.Action), ErrInvalidKey)
	case !c.Exact:
		return fmt.Errorf("%s: a simple command is keyed %s, never by an exact key: %w", p, k, ErrInvalidKey)
	}
	return nil
}

// MustParsePattern is ParsePattern for patterns written in code.
func MustParsePattern(s string) Pattern {
	p, err := ParsePattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

// PatternOf returns the pattern of a grant of k: the pattern that matches k
// exactly. For a run_command key without detail (a command with no
// operand: make, git, git --no-pager) that is the pattern of no detail,
// run_command:make:"", which covers make and not make deploy: a detail
// narrows the key, so a grant of the key without one must not widen to
// every detail as the rule run_command:make, written by a person, does.
//
// The keys of other tools keep the pattern of their text, which matches
// their every detail: a capability's key (capability:NAME) and a module's
// (run_wasm:PATH) never have a detail, an image's detail is its tag and
// the grant is bound to the image's ID, and the keys of a library tool or
// a backend are their author's, whose details ccrun does not read.
func PatternOf(k Key) Pattern {
	p := Pattern{Tool: k.Tool, Action: k.Action, Detail: k.Detail, Exact: k.Exact, literalDetail: strings.Contains(k.Detail, "*")}
	if k.Tool == ShellTool && !k.Exact && k.Detail == "" {
		p.literalDetail = true
	}
	return p
}

// NoDetail reports whether p matches only keys without detail: the grant
// of a run_command key without one (PatternOf), or a pattern written with
// the empty quoted detail, run_command:make:"".
func (p Pattern) NoDetail() bool { return p.literalDetail && p.Detail == "" }

// String writes p in the form ParsePattern reads.
func (p Pattern) String() string {
	var b strings.Builder
	b.WriteString(p.Tool)
	b.WriteByte(':')
	if p.Exact {
		b.WriteString(strconv.QuoteToASCII(p.Action))
	} else {
		writeSegment(&b, p.Action, true)
	}
	if p.Detail != "" || p.NoDetail() {
		b.WriteByte(':')
		writeSegment(&b, p.Detail, !p.literalDetail) // "" is written quoted
	}
	return b.String()
}

// Match reports whether p covers k. An exact pattern matches only an
// exact key: of the same text, or, for run_command, of the same program
// spelled otherwise (make 'test' && make lint is make test && make lint;
// see shellcmd.SameCommand). A quoted detail, the empty one included,
// matches only that very detail.
func (p Pattern) Match(k Key) bool {
	if p.Tool != k.Tool {
		return false
	}
	if k.Exact || p.Exact {
		if !p.Exact || !k.Exact || p.Detail != k.Detail {
			return false
		}
		// The same text, or, for a shell command, the same program
		// however its words are quoted (shellcmd.SameCommand).
		return p.Action == k.Action || p.Tool == ShellTool && p.Detail == "" && shellcmd.SameCommand(p.Action, k.Action)
	}
	if !Glob(p.Action, k.Action) {
		return false
	}
	switch {
	case p.literalDetail: // before the empty detail: run_command:make:"" is make alone
		return k.Detail == p.Detail
	case p.Detail == "", p.Detail == "*", p.Detail == "**":
		return true
	}
	return k.Detail != "" && Glob(p.Detail, k.Detail)
}

// HasWildcard reports whether p has a * anywhere.
func (p Pattern) HasWildcard() bool {
	return !p.Exact && (strings.Contains(p.Action, "*") || strings.Contains(p.Detail, "*"))
}

// Glob matches name against pat, where * matches any run of characters but
// '/', and ** (or a pattern that is just *) matches any run at all. A run of
// more than one * is **. It takes time O(len(pat)·len(name)) whatever the
// inputs: names come from agents, and a backtracking match can be made to
// take exponential time.
func Glob(pat, name string) bool {
	if pat == "*" || pat == "**" {
		return true
	}
	if strings.IndexByte(pat, '*') < 0 {
		return pat == name
	}
	// m[j] reports whether the pattern read so far matches name[:j].
	m := make([]bool, 2*(len(name)+1))
	cur, next := m[:len(name)+1], m[len(name)+1:]
	cur[0] = true
	for i := 0; i < len(pat); {
		if pat[i] != '*' {
			next[0] = false
			for j := 1; j <= len(name); j++ {
				next[j] = cur[j-1] && name[j-1] == pat[i]
			}
			i++
		} else {
			n := i
			for n < len(pat) && pat[n] == '*' {
				n++
			}
			deep := n-i > 1
			next[0] = cur[0]
			for j := 1; j <= len(name); j++ {
				next[j] = cur[j] || next[j-1] && (deep || name[j-1] != '/')
			}
			i = n
		}
		cur, next = next, cur
	}
	return cur[len(name)]
}

func writeSegment(b *strings.Builder, s string, pattern bool) {
	if bare(s, pattern) {
		b.WriteString(s)
	} else {
		b.WriteString(strconv.QuoteToASCII(s))
	}
}

// bare reports whether s can be written without quotes.
func bare(s string, pattern bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._/+-@%,=~#", c) >= 0:
		case c == '*' && pattern:
		default:
			return false
		}
	}
	return true
}

// BareTool reports whether s is a tool name as a pattern writes it bare:
// letters, digits, _ - and . only.
func BareTool(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// splitSegments cuts s into 2 or 3 segments, unquoting quoted ones.
func splitSegments(s string, pattern bool) (segs []string, quoted []bool, err error) {
	bad := func(why string) error {
		return fmt.Errorf("%s: %s (want tool:action[:detail], e.g. run_command:git:status): %w",
			strconv.QuoteToASCII(s), why, ErrInvalidKey)
	}
	rest := s
	for len(rest) > 0 || len(segs) == 0 {
		if len(segs) == 3 {
			return nil, nil, bad("more than three segments")
		}
		if len(segs) > 0 && len(segs) < 3 && rest == "" {
			break
		}
		var seg string
		var q bool
		if strings.HasPrefix(rest, `"`) && len(segs) > 0 {
			prefix, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, nil, bad("unterminated or malformed quoted segment")
			}
			seg, _ = strconv.Unquote(prefix)
			switch {
			case seg != "":
			case !pattern && len(segs) == 2:
				return nil, nil, bad("empty quoted detail (a key without detail is written without it)")
			case !pattern || len(segs) != 2:
				return nil, nil, bad("empty quoted segment")
			}
			rest, q = rest[len(prefix):], true
		} else {
			i := strings.IndexByte(rest, ':')
			if i < 0 {
				i = len(rest)
			}
			seg, rest = rest[:i], rest[i:]
			switch {
			case len(segs) == 0 && !BareTool(seg):
				return nil, nil, bad("the tool, before the first colon, must be letters, digits, _ - .")
			case len(segs) > 0 && !bare(seg, pattern):
				if seg == "" {
					return nil, nil, bad("empty segment")
				}
				return nil, nil, bad(fmt.Sprintf("segment %s needs quotes", strconv.QuoteToASCII(seg)))
			}
		}
		segs, quoted = append(segs, seg), append(quoted, q)
		if rest == "" {
			break
		}
		if rest[0] != ':' {
			return nil, nil, bad("text after a quoted segment")
		}
		rest = rest[1:]
		if rest == "" {
			return nil, nil, bad("trailing colon")
		}
	}
	if len(segs) < 2 {
		return nil, nil, bad("missing action")
	}
	return segs, quoted, nil
}

// MarshalText writes k as String does, so keys are strings in JSON.
func (k Key) MarshalText() ([]byte, error) {
	if k == (Key{}) {
		return nil, nil
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a key as ParseKey does.
func (k *Key) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*k = Key{}
		return nil
	}
	v, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// MarshalText writes p as String does.
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a pattern as ParsePattern does.
func (p *Pattern) UnmarshalText(b []byte) error {
	v, err := ParsePattern(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Equal reports whether p and q are the same pattern.
func (p Pattern) Equal(q Pattern) bool { return p == q }
