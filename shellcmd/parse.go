package shellcmd

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/containerd/errdefs"
	"mvdan.cc/sh/v3/syntax"
)

// Variant is the shell language Parse reads: Bash, as the @shell
// executor (mvdan.cc/sh/v3/interp) runs bash-like syntax.
const Variant = syntax.LangBash

// Canonical texts that no printer output can equal: the printer never
// starts its output with '#', since comments are dropped when parsing and a
// word starting with '#' is printed escaped or quoted.
const (
	// CanonicalEmpty is the canonical text (and exact key action) of a
	// command with no statement at all: empty, blank or only comments.
	CanonicalEmpty = "#empty"
	// UnparsedPrefix starts the canonical text (and exact key action) of a
	// command that does not parse; the source follows it unchanged.
	UnparsedPrefix = "#unparsed:"
)

// Limits on the text Parse parses; longer or denser text is keyed
// as unparsed. The parser, the printer and the check of the printed form
// recurse once per level of nesting, and a few hundred thousand levels
// overflow the goroutine stack, which is fatal, not a panic: an agent must
// not be able to crash the gate with ((((((…. Every level of nesting takes
// at least one operator byte, one of ( ) { } [ ] < > | & ; ! $ ` + - * / %
// = ? : , ^ ~ @ or a newline, or the word time or coproc; so bounding
// their number bounds the depth.
const (
	// MaxBytes is the longest text Parse parses: 1 MiB.
	MaxBytes = 1 << 20
	// MaxOperators is the most operator bytes (as above) the text
	// may hold: 8192, which leaves room for a here-document of a few
	// hundred lines of code. Nesting that deep parses in well under a second.
	MaxOperators = 8192
)

var operatorBytes = func() (t [256]bool) {
	for _, c := range []byte("(){}[]<>|&;!$`+-*/%=?:,^~@\n\r") {
		t[c] = true
	}
	return t
}()

// tooBig says why src is beyond the limits, or returns "".
func tooBig(src string) string {
	if len(src) > MaxBytes {
		return fmt.Sprintf("longer than %d bytes", MaxBytes)
	}
	n := strings.Count(src, "time") + strings.Count(src, "coproc")
	for i := 0; i < len(src); i++ {
		if operatorBytes[src[i]] {
			n++
		}
	}
	if n > MaxOperators {
		return fmt.Sprintf("more than %d operators", MaxOperators)
	}
	return ""
}

// ErrUnparsable is the class of Parsed.Err: the text is not a shell
// program Parse accepts.
var ErrUnparsable = errdefs.ErrInvalidArgument.WithMessage("shell command does not parse")

// Parsed is a shell command as the gate and the @shell executor see it:
// parsed once, and run from that same parse.
//
// The @shell executor must run File (with mvdan.cc/sh/v3/interp), never
// hand Source to another shell: mvdan.cc/sh reads some text unlike GNU Bash
// (an unquoted carriage return is a blank, so git\rstatus is git status),
// and only File is what was checked. A nil File (text that does not parse)
// must not run.
//
// A Parsed is not modified after Parse returns it and may then be read
// from many goroutines; File must be treated as read-only.
type Parsed struct {
	// Source is the text as given.
	Source string
	// File is the parse tree the executor runs; nil when the text does not
	// parse. For a command keyed exactly (Exact) it is the parse of
	// Canonical, so that two commands with the same canonical text run the
	// very same tree; for any other simple command it is the parse of
	// Source.
	File *syntax.File
	// Canonical is the syntax printer's output for the parse of Source,
	// without its final newline. It is CanonicalEmpty for a command with
	// no statement, and UnparsedPrefix+Source for text that does not
	// parse (see Parse).
	Canonical string
	// Compound is set for anything but one plain simple command (see
	// Parse).
	Compound bool
	// Exact is set when the command is keyed by its whole canonical text,
	// not by program and detail: every compound command, and a simple
	// command whose detail no plain word can name (see Parse).
	Exact bool
	// Program and Args are the words of a simple command (empty for a
	// compound one). Program is after quote removal. Args[i] is the
	// argument's value after quote removal when Literal[i] is set, and
	// otherwise the word as the printer writes it (e.g. "$HOME", *.go):
	// a word that expands to something not known before it runs.
	Program string
	Args    []string
	// Literal[i] reports whether Args[i] is a fully literal word: only
	// plain text and '…' or "…" quoting, with no expansion of any kind
	// (parameter, tilde, glob, brace) left in it.
	Literal []bool
	// Detail is the detail of a simple command's key (see Parse); empty
	// for none, and for a command keyed exactly.
	Detail string
	// Err says why the text does not parse (class ErrUnparsable); nil
	// otherwise.
	Err error
}

var (
	parsers  = sync.Pool{New: func() any { return &pooledParser{p: syntax.NewParser(syntax.Variant(Variant))} }}
	printers = sync.Pool{New: func() any { return syntax.NewPrinter() }}
)

// Parse parses src as a Bash program (syntax.LangBash, comments
// dropped). It never fails: text that does not parse is a compound command
// with a nil File and Err set. It is the one parser of ccrun's shell
// analysis: everything that reads shell text (the gate's keys, the
// read-only check, the rules looking inside bash -c, the dangerous-path
// scan) reads it through Parse. It is safe for concurrent use.
//
// A command is simple when it is exactly one statement that is a plain
// call: no assignment, redirection, &, !, coprocess or time; no command
// or process substitution, arithmetic expansion, or parameter expansion
// beyond a plain $name or ${name} in any word; and a program word that is
// literal text, quotes allowed, whose value after quote removal is bare
// (letters, digits and . _ / + - @ % , = #), with no ~, no line
// continuation and no control byte in its source. Its Detail is its first
// argument, an operand: a word not starting with '-'. A detail that no
// plain word can name narrows the key to the whole text, never widens it
// to every command of the program: a simple command is Exact, keyed by its
// canonical text like a compound one, when that argument is not literal
// and bare (a glob, a parameter, quoted text with blanks); when an option
// comes before it (-- included), or the command has options and no
// operand, for an option's value can take the detail's place and an
// option can change what the command does (kubectl -n prod get pods,
// make -C dir deploy, rm -rf, sort --output=FILE); git's global options
// that change nothing (--no-pager, -P…: see gitGlobal) are passed over;
// and whatever its words when the program is a wrapper, whose words name
// another program to run (Wraps: timeout, env, sudo, xargs, sh…).
// Options after the detail are not looked at. A simple command with no
// argument at all has no detail:
//
//	git status             Program git, Detail status
//	git status --short     Program git, Detail status
//	git --no-pager log     Program git, Detail log
//	./git status           Program ./git, Detail status
//	ls                     Program ls, no Detail
//	ls -la                 Exact
//	kubectl -n prod get    Exact
//	git -C dir status      Exact
//	git "$X" push          Exact
//	rm *.log               Exact
//	timeout 60 true        Exact
//
// Everything else is compound. Comments are dropped (they do not run). The
// tree a command keyed exactly runs is the parse of its canonical text,
// checked to be the tree of the source but for positions and spellings
// that run the same (`…` as $(…), $[…] as $((…)), the tabs of a <<-
// here-document): so one canonical text is one program.
//
// Text with no statement has Canonical CanonicalEmpty. Text that does not
// parse has Canonical UnparsedPrefix+SOURCE and a nil File, and so does
// text beyond MaxBytes or MaxOperators, and text the parser would misread
// or the printer misprint: text with a NUL byte (the parser silently drops
// it), and text whose printed form parses to another tree (a$()<() is one
// word, printed as two). Neither can equal a parsed command's canonical
// text: printer output never starts with '#'.
func Parse(src string) *Parsed {
	c := &Parsed{Source: src}
	if strings.IndexByte(src, 0) >= 0 {
		return c.unparsed(errors.New("NUL byte in command"))
	}
	if why := tooBig(src); why != "" {
		return c.unparsed(errors.New(why))
	}
	f, err := parse(src)
	if err != nil {
		return c.unparsed(err)
	}
	if len(f.Stmts) == 0 {
		c.File, c.Canonical, c.Compound, c.Exact = f, CanonicalEmpty, true, true
		return c
	}
	if c.Canonical, err = canonical(f); err != nil {
		return c.unparsed(err)
	}
	if c.simple(src, f) && !c.Exact {
		c.File = f
		return c
	}
	// Keyed by its whole text: a compound command, or a simple one whose
	// detail no plain word can name.
	c.File, c.Compound, c.Exact = f, !c.Exact, true
	if c.Canonical == src {
		return c // f is the parse of the canonical text already
	}
	// Run what was keyed: the parse of the canonical text. The printer is
	// meant to print a tree that parses back to itself; where it does not
	// (a$()<() prints as two words), fail closed.
	g, err := parse(c.Canonical)
	if err != nil {
		return c.unparsed(fmt.Errorf("printed form %s does not parse back: %v", shorten(c.Canonical), err))
	}
	if !SameTree(f, g) {
		return c.unparsed(fmt.Errorf("printed form %s does not mean the same", shorten(c.Canonical)))
	}
	c.File = g
	return c
}

func (c *Parsed) unparsed(err error) *Parsed {
	*c = Parsed{
		Source:    c.Source,
		Canonical: UnparsedPrefix + c.Source,
		Compound:  true,
		Exact:     true,
		Err:       fmt.Errorf("%s: %v: %w", shorten(c.Source), err, ErrUnparsable),
	}
	return c
}

// shorten escapes s for an error message, cut after 200 bytes.
func shorten(s string) string {
	if len(s) > 200 {
		return Escape(s[:200]) + "..."
	}
	return Escape(s)
}

// pooledParser is a parser and the reader it reads from, reused
// together.
type pooledParser struct {
	p *syntax.Parser
	r strings.Reader
}

// parse parses src with a pooled parser. A panic in the parser is an
// error (the command is then keyed as unparsed), and that parser is not
// reused.
func parse(src string) (f *syntax.File, err error) {
	pp := parsers.Get().(*pooledParser)
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("parser panicked: %v", r)
			return
		}
		pp.r.Reset("") // the pool holds no command's text
		parsers.Put(pp)
	}()
	pp.r.Reset(src)
	return pp.p.Parse(&pp.r, "")
}

// printNode prints n with a pooled printer, without a final newline. A
// panic in the printer is an error, and that printer is not reused.
func printNode(n syntax.Node) (_ string, err error) {
	p := printers.Get().(*syntax.Printer)
	var b strings.Builder
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("printer panicked: %v", r)
			return
		}
		printers.Put(p)
	}()
	if err := p.Print(&b, n); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// canonical is printNode(f): for a plain command (plainCanonical) its
// words joined by blanks, as the printer writes them; for anything else
// the printer's output.
func canonical(f *syntax.File) (string, error) {
	if s, ok := plainCanonical(f); ok {
		return s, nil
	}
	return printNode(f)
}

// plainCanonical is the printer's output for f when f is one statement
// of one line that is a call of words of plain text only (letters, digits
// and . _ / + - @ % , = :), with nothing else in or around it: the
// words, each as written, joined by one blank. FuzzPlainCanonical holds
// it to the printer's output.
func plainCanonical(f *syntax.File) (string, bool) {
	if len(f.Stmts) != 1 || len(f.Last) > 0 {
		return "", false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || st.Disown || len(st.Redirs) > 0 || len(st.Comments) > 0 {
		return "", false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return "", false
	}
	line := call.Args[0].Pos().Line()
	n := len(call.Args) - 1
	for _, w := range call.Args {
		if len(w.Parts) != 1 || w.Pos().Line() != line || w.End().Line() != line {
			return "", false
		}
		l, ok := w.Parts[0].(*syntax.Lit)
		if !ok || l.Value == "" {
			return "", false
		}
		for i := 0; i < len(l.Value); i++ {
			if !plainByte[l.Value[i]] {
				return "", false
			}
		}
		n += len(l.Value)
	}
	if len(call.Args) == 1 {
		return call.Args[0].Parts[0].(*syntax.Lit).Value, true
	}
	var b strings.Builder
	b.Grow(n)
	for i, w := range call.Args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.Parts[0].(*syntax.Lit).Value)
	}
	return b.String(), true
}

// plainByte are the bytes of a plain word (plainCanonical).
var plainByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range []byte("._/+-@%,=:") {
		t[c] = true
	}
	return t
}()

// simple fills in c as a simple command if f is one.
func (c *Parsed) simple(src string, f *syntax.File) bool {
	if len(f.Stmts) != 1 {
		return false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || st.Disown || len(st.Redirs) > 0 {
		return false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return false
	}
	prog := call.Args[0]
	from, to := prog.Pos().Offset(), prog.End().Offset()
	if from >= to || to > uint(len(src)) {
		return false
	}
	raw := src[from:to]
	for i := 0; i < len(raw); i++ {
		if raw[i] < 0x20 || raw[i] >= 0x7f {
			return false // line continuation, NUL or other hidden byte
		}
	}
	name, ok := literal(prog)
	if !ok || !Bare(name) || strings.IndexByte(name, '~') >= 0 {
		return false
	}
	args := make([]string, len(call.Args)-1)
	lit := make([]bool, len(args))
	for i, w := range call.Args[1:] {
		if !plainWord(w) {
			return false
		}
		args[i], lit[i] = literal(w)
		if !lit[i] {
			var err error
			if args[i], err = printNode(w); err != nil {
				return false
			}
		}
	}
	c.Program, c.Args, c.Literal = name, args, lit
	c.Detail, c.Exact = detailOf(name, args, lit)
	return true
}

// plainWord reports whether w runs nothing when expanded: only text,
// quotes, extended globs and plain parameter expansions.
func plainWord(w *syntax.Word) bool {
	return plainParts(w.Parts)
}

func plainParts(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted, *syntax.ExtGlob:
		case *syntax.DblQuoted:
			if !plainParts(p.Parts) {
				return false
			}
		case *syntax.ParamExp:
			// $x and ${x} only: indexes and operators hold arithmetic and
			// words that may run code; Bash evaluates some of them from
			// the variable's value (${x@P}, ${a[$i]}).
			if p.Excl || p.Length || p.Width || p.IsSet || p.Flags != nil ||
				p.NestedParam != nil || p.Index != nil || p.Modifiers != nil ||
				p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil ||
				p.Split != 0 || p.GlobSubst != 0 || p.RcExpand != 0 {
				return false
			}
		default: // command, process and arithmetic substitution, and anything new
			return false
		}
	}
	return true
}

// literal returns the value of w after quote removal when w is fully
// literal: plain text and '…' or "…" quoting only, and no unquoted
// character that expands (* ? [ { ~).
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if !unquote(&b, p.Value, false) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || !unquote(&b, l.Value, true) {
					return "", false
				}
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unquote removes backslash quoting from the source text of a literal,
// unquoted or inside double quotes, and reports false when an unquoted
// character in it would expand.
func unquote(b *strings.Builder, s string, dbl bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			n := s[i+1]
			if !dbl || strings.IndexByte("$`\"\\\n", n) >= 0 {
				i++
				if n != '\n' {
					b.WriteByte(n)
				}
				continue
			}
		}
		if !dbl && strings.IndexByte("*?[{~", c) >= 0 {
			return false
		}
		if !dbl && c == '\\' { // a lone trailing backslash
			return false
		}
		b.WriteByte(c)
	}
	return true
}

// Escape returns s for showing to a person on one line: printable ASCII
// is kept as is, except the backslash, written \\; every other character
// is escaped as in a Go string literal (\n, \t, \x1b, \u0456, \U0001f600),
// and so is each byte that is not valid UTF-8 (\xff). Two different
// strings never escape to the same text. Escape is for display only; it
// is not shell quoting.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			if c == '\\' {
				b.WriteString(`\\`)
			} else {
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, `\x%02x`, c)
			i++
			continue
		}
		q := strconv.QuoteRuneToASCII(r)
		b.WriteString(q[1 : len(q)-1])
		i += n
	}
	return b.String()
}

var (
	posType   = reflect.TypeFor[syntax.Pos]()
	redirType = reflect.TypeFor[syntax.Redirect]()
	litType   = reflect.TypeFor[syntax.Lit]()

	// Fields that only say how a node was spelled: `…` or $(…), $[…] or $((…)).
	spellingFields = map[reflect.Type]int{
		reflect.TypeFor[syntax.CmdSubst]():  fieldIndex[syntax.CmdSubst]("Backquotes"),
		reflect.TypeFor[syntax.ArithmExp](): fieldIndex[syntax.ArithmExp]("Bracket"),
	}
)

// SameTree reports whether two syntax trees are the same but for what does
// not change what runs: the positions of their nodes, `…` written $(…),
// $[…] written $((…)), the tabs a <<- here-document strips, and a lone
// backslash ending the text (a literal backslash) written as two.
func SameTree(a, b *syntax.File) bool {
	return sameValue(reflect.ValueOf(a), reflect.ValueOf(b), false)
}

// SameCommand reports whether the commands a and b, each of which parses
// to at least one statement, are one program however they are spaced,
// quoted or commented: their trees are the same as SameTree compares
// them, except that a fully literal word (see literal: text and '…' or
// "…" quoting, nothing that expands) matches a fully literal word of the
// same value where only the value reaches what runs — a word of a simple
// command, the value of an assignment, the target of a redirection other
// than a here-document. Elsewhere (a here-document's delimiter, whose
// quoting says whether its body expands; [[ … ]], where a quoted =~
// operand is not a regular expression; case and parameter-expansion
// patterns) words compare as SameTree compares them. Text that does not
// parse, has no statement, or is a canonical text no parse prints
// (NotParsed) is the same as nothing. make 'test' && make lint and "make" test&&make lint are one
// program; cat <<'EOF' and cat <<EOF are not.
func SameCommand(a, b string) bool {
	if NotParsed(a) || NotParsed(b) {
		return false
	}
	pa, pb := Parse(a), Parse(b)
	if pa.File == nil || pb.File == nil || len(pa.File.Stmts) == 0 || len(pb.File.Stmts) == 0 {
		return false
	}
	return sameValue(reflect.ValueOf(pa.File), reflect.ValueOf(pb.File), true)
}

// NotParsed reports whether s is one of the canonical texts that stand
// for no parsed command: CanonicalEmpty, or UnparsedPrefix and a source.
// Such a text is a key's text, never a command to read.
func NotParsed(s string) bool {
	return s == CanonicalEmpty || strings.HasPrefix(s, UnparsedPrefix)
}

// sameWord compares two words of a place where only their values reach
// what runs: by value when both are fully literal.
func sameWord(a, b *syntax.Word) bool {
	if a == nil || b == nil {
		return a == b
	}
	va, oka := literal(a)
	vb, okb := literal(b)
	if oka && okb {
		return va == vb
	}
	return sameValue(reflect.ValueOf(a), reflect.ValueOf(b), true)
}

// sameWords is sameWord over the words of a simple command.
func sameWords(a, b []*syntax.Word) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameWord(a[i], b[i]) {
			return false
		}
	}
	return true
}

var (
	callType   = reflect.TypeFor[syntax.CallExpr]()
	assignType = reflect.TypeFor[syntax.Assign]()
	testType   = reflect.TypeFor[syntax.TestClause]()
)

// sameValue compares two values of a syntax tree as SameTree says; words
// reports whether literal words compare by value where SameCommand says.
func sameValue(a, b reflect.Value, words bool) bool {
	if a.Type() != b.Type() {
		return false
	}
	if words && a.Kind() == reflect.Struct && a.CanAddr() && b.CanAddr() {
		switch a.Type() {
		case callType:
			ca, cb := a.Addr().Interface().(*syntax.CallExpr), b.Addr().Interface().(*syntax.CallExpr)
			return sameValue(reflect.ValueOf(ca.Assigns), reflect.ValueOf(cb.Assigns), true) && sameWords(ca.Args, cb.Args)
		case assignType:
			ca, cb := *a.Addr().Interface().(*syntax.Assign), *b.Addr().Interface().(*syntax.Assign)
			if !sameWord(ca.Value, cb.Value) {
				return false
			}
			ca.Value, cb.Value = nil, nil
			return sameFields(reflect.ValueOf(&ca).Elem(), reflect.ValueOf(&cb).Elem(), true)
		case redirType:
			ra, rb := *a.Addr().Interface().(*syntax.Redirect), *b.Addr().Interface().(*syntax.Redirect)
			if ra.Op != rb.Op {
				return false
			}
			if ra.Op != syntax.Hdoc && ra.Op != syntax.DashHdoc {
				if !sameWord(ra.Word, rb.Word) {
					return false
				}
				ra.Word, rb.Word = nil, nil
				return sameFields(reflect.ValueOf(&ra).Elem(), reflect.ValueOf(&rb).Elem(), true)
			}
		case testType:
			words = false // [[ … ]]: quoting changes what a pattern or =~ operand means
		}
	}
	switch a.Type() {
	case posType:
		return true
	case litType:
		va, vb := a.Field(litValue).String(), b.Field(litValue).String()
		return va == vb || evenBackslashes(va) == evenBackslashes(vb)
	case redirType:
		if !a.CanAddr() || !b.CanAddr() {
			return false
		}
		ra, rb := a.Addr().Interface().(*syntax.Redirect), b.Addr().Interface().(*syntax.Redirect)
		if ra.Op == syntax.DashHdoc && rb.Op == syntax.DashHdoc && ra.Hdoc != nil && rb.Hdoc != nil {
			ca, cb := *ra, *rb
			ca.Hdoc, cb.Hdoc = stripTabs(ra.Hdoc), stripTabs(rb.Hdoc)
			a, b = reflect.ValueOf(&ca).Elem(), reflect.ValueOf(&cb).Elem()
		}
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem(), words)
	case reflect.Struct:
		return sameFields(a, b, words)
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i), words) {
				return false
			}
		}
		return true
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.String:
		return a.String() == b.String()
	}
	return false // a kind syntax trees do not hold today: fail closed
}

// sameFields compares the fields of two structs of one type that say what
// runs (fieldsOf).
func sameFields(a, b reflect.Value, words bool) bool {
	for _, i := range fieldsOf(a.Type()) {
		if !sameValue(a.Field(i), b.Field(i), words) {
			return false
		}
	}
	return true
}

// evenBackslashes doubles the last of an odd run of backslashes ending s, as
// the printer does to keep a literal backslash at the end of a file one.
func evenBackslashes(s string) string {
	if n := len(s) - len(strings.TrimRight(s, `\`)); n%2 == 1 {
		return s + `\`
	}
	return s
}

var (
	litValue     = fieldIndex[syntax.Lit]("Value")
	structFields sync.Map // reflect.Type → []int
)

// fieldsOf returns the indexes of the fields of struct type t that say
// what runs: not positions, not spellings.
func fieldsOf(t reflect.Type) []int {
	if f, ok := structFields.Load(t); ok {
		return f.([]int)
	}
	skip, ok := spellingFields[t]
	if !ok {
		skip = -1
	}
	var idx []int
	for i := range t.NumField() {
		if i != skip && t.Field(i).Type != posType {
			idx = append(idx, i)
		}
	}
	structFields.Store(t, idx)
	return idx
}

func fieldIndex[T any](name string) int {
	f, ok := reflect.TypeFor[T]().FieldByName(name)
	if !ok {
		panic("shellcmd: no field " + name)
	}
	return f.Index[0]
}

// stripTabs returns a copy of a <<- here-document body with the tabs that
// start its lines removed, as Bash reads it.
func stripTabs(w *syntax.Word) *syntax.Word {
	c := &syntax.Word{}
	start := true
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			c.Parts = append(c.Parts, p)
			start = false
			continue
		}
		var b strings.Builder
		for i := 0; i < len(l.Value); i++ {
			if start && l.Value[i] == '\t' {
				continue
			}
			start = l.Value[i] == '\n'
			b.WriteByte(l.Value[i])
		}
		c.Parts = append(c.Parts, &syntax.Lit{Value: b.String()})
	}
	return c
}

// Bare reports whether s is non-empty and made only of letters, digits and
// . _ / + - @ % , = ~ #: a word that needs no quoting to be read as itself
// in a key.
func Bare(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._/+-@%,=~#", c) >= 0:
		default:
			return false
		}
	}
	return true
}
