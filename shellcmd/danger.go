package shellcmd

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/internal/sensitive"
)

// DangerKind says why a path is dangerous (docs/policy.md, "Dangerous
// paths").
type DangerKind string

// The kinds.
const (
	// DangerLeak: reading it puts a secret in the conversation, writing it
	// replaces a credential. Asked for reads and writes.
	DangerLeak = DangerKind(sensitive.Leak)
	// DangerImplant: one write makes something run later, every time (a
	// shell rc file, a git hook, an editor's or agent's config, ccrun's own
	// config). Asked for writes.
	DangerImplant = DangerKind(sensitive.Implant)
)

// Finding is one dangerous path a call touches.
type Finding struct {
	Given    string // as written in the call
	Resolved string // absolute, after ~, .. and symlinks
	Kind     DangerKind
	What     string // what lives there, for the person asked
}

// String says what was found, for a prompt.
func (f Finding) String() string {
	s := fmt.Sprintf("%s (%s: %s)", f.Given, f.Kind, f.What)
	if f.Resolved != "" && f.Resolved != f.Given {
		s += " → " + f.Resolved
	}
	return s
}

// The dangerous path list is internal/sensitive's table (docs/policy.md),
// the one the interpreter's handlers, the Landlock ruleset and the
// sandboxes' mounts use too.

// firstRule returns the first row of the table that covers the absolute,
// clean path p (implant-class ones only when write), or -1.
func firstRule(p string, write bool) int { return sensitive.First(p, write) }

// Target is what Dangerous scans.
type Target struct {
	// Paths are file paths a call names (tool arguments, mounts), as given.
	Paths []string
	// WritePaths says Paths may be written (any call but a read).
	WritePaths bool
	// Shell is set for a shell command: File, or Source when File is nil
	// (text that does not parse: its pieces are checked as text).
	Shell  bool
	File   *syntax.File
	Source string
	// Args are the command's positional parameters ($1…): each is checked
	// as a path, and $1, $@, $* in the words are read as them.
	Args []string
	// WriteShell says the command's words may be written to (it is not
	// read-only); redirections that write are writes regardless.
	WriteShell bool
	// Segments are Segments(File), when the caller has them; nil:
	// Dangerous computes them.
	Segments []Segment
}

// Dangerous lists the dangerous paths t touches: its Paths, and, for a
// shell command, every word of it — arguments, redirection targets,
// assignments, the text of bash -c and eval, the parts of a word around =
// and :, each brace expansion of a word as the interpreter expands it, the
// value after an option letter (-ofile) — and its positional arguments,
// taken generously: any word that could be a path is one. Paths are
// compared after expanding ~ (and $HOME), taking relative paths against
// projectDir, and resolving .. and symlinks (both the text's reading and
// the file system's are checked); an expansion that is not known before
// running stands, in a word with a /, for any one component
// (/proc/$$/environ is /proc/*/environ). Leak-class paths count for any
// access; implant-class paths for writes. Empty projectDir: the working
// directory; empty home: $HOME. It is safe for concurrent use.
func Dangerous(t Target, projectDir, home string) []Finding {
	if projectDir == "" {
		projectDir, _ = getwd()
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	d := newScan(projectDir, home, t.Args)
	for _, p := range t.Paths {
		d.check(p, t.WritePaths)
	}
	if !t.Shell {
		return d.out
	}
	for _, a := range t.Args {
		d.tokens(a, t.WriteShell)
	}
	if t.File != nil {
		d.shell(t.File, t.WriteShell, 0)
		segs := t.Segments
		if segs == nil {
			segs = Segments(t.File)
		}
		d.recursive(segs)
	} else {
		d.tokens(t.Source, true)
	}
	return d.out
}

type dangerScan struct {
	projectDir, home string
	projectPrefix    string // filepath.Clean(projectDir) + "/"
	realProject      string // projectDir with its symlinks resolved, once asked (project)
	resolvedProject  bool
	seen             map[string]bool // keys of what is in out (first): nil until one is
	args             []string        // positional parameters
	out              []Finding
	reach            *Reach // for Beyond: paths are held against it, not the table
	beyond           string // the first path outside reach
}

func newScan(projectDir, home string, args []string) dangerScan {
	return dangerScan{projectDir: projectDir, home: home, args: args,
		projectPrefix: filepath.Clean(projectDir) + "/"}
}

// first reports whether key is new to the scan, and marks it seen.
func (d *dangerScan) first(key string) bool {
	if d.seen[key] {
		return false
	}
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	d.seen[key] = true
	return true
}

// project returns projectDir with its symlinks resolved, resolving it the
// first time only.
func (d *dangerScan) project() string {
	if !d.resolvedProject {
		d.realProject, d.resolvedProject = resolve(d.projectDir), true
	}
	return d.realProject
}

func (d *dangerScan) shell(f *syntax.File, write bool, depth int) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Redirect:
			if n.Word != nil && n.Hdoc == nil {
				w := write
				switch n.Op {
				case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
					syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut, syntax.DplOut:
					w = true
				}
				d.word(n.Word, w, depth)
			}
			if n.Hdoc != nil {
				d.word(n.Hdoc, write, depth)
			}
			return n.Hdoc == nil
		case *syntax.Word:
			d.word(n, write, depth)
		}
		return true
	})
}

// maxBraces bounds how many brace expansions of one word are checked; a
// word with more is a finding of its own.
const maxBraces = 1024

func (d *dangerScan) word(w *syntax.Word, write bool, depth int) {
	if cp, ok := splitBraces(w); ok {
		// check every word the interpreter makes of it (~/.s{s,{}}h/id_rsa)
		n := 0
		for ew, err := range expand.BracesSeq(nil, cp) {
			if n++; n > maxBraces || err != nil {
				s := d.render(w)
				if d.first("braces\x00" + s) {
					d.out = append(d.out, Finding{Given: s, Kind: DangerLeak,
						What: "a brace expansion too large to check (it may name any path)"})
				}
				break
			}
			d.tokens(d.render(ew), write)
		}
	}
	s := d.render(w)
	d.tokens(s, write)
	// a word that is itself shell text (bash -c, eval): look at its words too
	if depth < maxNesting && strings.ContainsAny(s, " \t\n;|&<>") {
		if f, ok := parseFile(s); ok {
			d.shell(f, write, depth+1)
		}
	}
}

// tokens checks s whole and each piece of it between blanks, quotes,
// shell operators, = , and :.
func (d *dangerScan) tokens(s string, write bool) {
	d.check(s, write)
	for t := range strings.FieldsFuncSeq(s, func(r rune) bool {
		return strings.ContainsRune(" \t\n\r'\"`;|&<>()=:,@", r)
	}) {
		if t != s {
			d.check(t, write)
		}
		// an option's attached value: -ofile, -T{}, --x (checked whole above)
		if len(t) > 2 && t[0] == '-' && t[1] != '-' {
			d.check(t[2:], write)
		}
	}
}

// recursive finds programs that read whole trees (grep -r, rg, find, tar,
// cp -r, rsync…) given the home directory or one above it: the keys and
// credentials in it would be read too.
func (d *dangerScan) recursive(segs []Segment) {
	home := filepath.Clean(d.home)
	for _, seg := range segs {
		prog, lit := seg.Program()
		if !lit {
			continue
		}
		var buf [8]string // on the stack: most commands have no more words
		args := buf[:0]
		for _, a := range seg.Argv[1:] {
			args = append(args, a.Val)
		}
		switch path.Base(prog) {
		case "ps":
			// ps e reads /proc/PID/environ of every process: their secrets
			if why, ok := roPs(args, false); !ok {
				if d.first("environ\x00ps") {
					d.out = append(d.out, Finding{Given: prog + " " + strings.Join(args, " "), Resolved: "/proc/*/environ",
						Kind: DangerLeak, What: "another process's environment (its secrets): " + why})
				}
			}
			continue
		case "grep", "egrep", "fgrep", "zgrep":
			if !hasOpt(args, "--recursive", 'r') && !hasOpt(args, "--dereference-recursive", 'R') {
				continue
			}
		case "cp", "scp":
			if !hasOpt(args, "--recursive", 'r') && !hasOpt(args, "", 'R') && !hasOpt(args, "--archive", 'a') {
				continue
			}
		case "rg", "ag", "ack", "find", "fd", "tar", "zip", "7z", "rsync", "rclone", "git":
		default:
			continue
		}
		for _, a := range args {
			if a == "" || strings.HasPrefix(a, "-") {
				continue
			}
			p := a
			if p == "~" || strings.HasPrefix(p, "~/") {
				p = filepath.Join(d.home, strings.TrimPrefix(p, "~"))
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(d.projectDir, p)
			}
			r := resolve(p)
			if home != "" && home != "/" && (r == home || strings.HasPrefix(home, strings.TrimSuffix(r, "/")+"/")) {
				if d.first("tree\x00" + r) {
					d.out = append(d.out, Finding{Given: a, Resolved: r, Kind: DangerLeak,
						What: "the home directory, read as a whole tree (keys and credentials are in it)"})
				}
			}
		}
	}
}

// render renders w as well as can be told before running: $HOME and ~ as
// the home directory, positional parameters as the call's arguments, other
// expansions as * in a word that holds a / (any one path component:
// /proc/$$/environ is /proc/*/environ) and as nothing elsewhere.
func (d *dangerScan) render(w *syntax.Word) string {
	if len(w.Parts) == 1 { // one literal part: its text, without a copy
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			return unescape(p.Value, false)
		case *syntax.SglQuoted:
			return p.Value
		}
	}
	var b strings.Builder
	unknown := ""
	if d.hasSlash(w) {
		unknown = "*"
	}
	var part func(p syntax.WordPart)
	part = func(p syntax.WordPart) {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				part(q)
			}
		case *syntax.ParamExp:
			switch name := positional(p); {
			case p.Param != nil && p.Param.Value == "HOME" && p.Exp == nil && p.Repl == nil && p.Slice == nil:
				b.WriteString(d.home)
			case name != "":
				b.WriteString((&classifier{call: Call{Args: d.args}}).param(name))
			default:
				b.WriteString(unknown)
			}
		case *syntax.BraceExp:
			for i, e := range p.Elems {
				if i > 0 {
					b.WriteByte(',')
				}
				for _, q := range e.Parts {
					part(q)
				}
			}
		default: // command substitution, arithmetic…
			b.WriteString(unknown)
		}
	}
	for _, p := range w.Parts {
		part(p)
	}
	return b.String()
}

// hasSlash reports whether a literal part of w holds a /.
func (d *dangerScan) hasSlash(w *syntax.Word) bool {
	if lits := !slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.Lit)
		return !ok
	}); lits { // literal parts only: no walk
		return slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
			return strings.Contains(p.(*syntax.Lit).Value, "/")
		})
	}
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if l, ok := n.(*syntax.Lit); ok && strings.Contains(l.Value, "/") {
			found = true
		}
		return !found
	})
	return found
}

func (d *dangerScan) check(given string, write bool) {
	given = strings.TrimSpace(given)
	if given == "" || strings.ContainsRune(given, 0) {
		return
	}
	p := given
	switch {
	case p == "~":
		p = d.home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(d.home, p[2:])
	case strings.HasPrefix(p, "file://"):
		p = strings.TrimPrefix(p, "file://")
	}
	joined := !filepath.IsAbs(p)
	if joined {
		p = join(d.projectDir, p) // clean, as Join leaves it
	}
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		if d.reach != nil {
			// what the glob can match lies beneath its literal directory
			if dir := filepath.Dir(p[:i+1]); d.beyond == "" && (d.reach.outside(dir) || d.reach.outside(resolve(dir))) {
				d.beyond = given
			}
			return
		}
		d.glob(given, p, write)
		return
	}
	lexical := p
	if !joined {
		lexical = filepath.Clean(p)
	}
	var physical string
	if rest, ok := strings.CutPrefix(lexical, d.projectPrefix); ok {
		if cleanAbs(d.projectDir) && cleanAbs(lexical) && noLinks(lexical) {
			physical = lexical // no link in the project's path nor past it: one system call
		} else {
			physical = resolveFrom(d.project(), rest) // the project's own path resolved once
		}
	} else {
		physical = resolve(p)
	}
	if d.reach != nil {
		if d.beyond == "" && (d.reach.outside(lexical) || d.reach.outside(physical)) {
			d.beyond = given
		}
		return
	}
	for n, cand := range []string{lexical, physical} {
		if n == 1 && cand == lexical {
			break // the same row, and the same key: seen
		}
		i := firstRule(filepath.ToSlash(cand), write)
		if i < 0 {
			continue
		}
		r := sensitive.Table()[i]
		if !d.first(string(r.Kind) + "\x00" + physical) {
			continue
		}
		d.out = append(d.out, Finding{Given: given, Resolved: physical, Kind: DangerKind(r.Kind), What: r.What})
	}
}

// maxGlob bounds how many expansions of one glob are checked.
const maxGlob = 1000

// glob checks what a glob would expand to, as bash would (a * or ? does
// not match a leading dot unless the pattern's component starts with
// one). A glob that expands to nothing is checked as text: a rule whose
// name it could match counts (cat ~/.aw?/credentials before the file
// exists; a write tool's literal path with a * in it), and so is one too
// wide to expand (more than two glob components, or one under / or a
// top-level directory).
func (d *dangerScan) glob(given, pattern string, write bool) {
	pattern = filepath.Clean(pattern)
	pcomps := strings.Split(pattern, string(filepath.Separator))
	fixed, globs := 0, 0
	for _, c := range pcomps {
		if strings.ContainsAny(c, "*?[") {
			globs++
		} else if globs == 0 {
			fixed++
		}
	}
	var matches []string
	err := filepath.ErrBadPattern
	if fixed >= 3 && globs <= 2 { // "", and two real directories: not a walk of the whole disk
		matches, err = filepath.Glob(pattern)
	}
	n := 0
	for _, m := range matches {
		mcomps := strings.Split(m, string(filepath.Separator))
		if len(mcomps) != len(pcomps) || hiddenByGlob(pcomps, mcomps) {
			continue
		}
		if n++; n > maxGlob {
			break
		}
		d.check(m, write)
	}
	if err != nil || n == 0 {
		// nothing there (yet): compare the pattern's components with the rules' names
		for _, r := range sensitive.Table() {
			if (r.Kind == sensitive.Implant && !write) || !r.MatchPattern(pcomps[1:]) {
				continue
			}
			if d.first(string(r.Kind) + "\x00" + pattern) {
				d.out = append(d.out, Finding{Given: given, Resolved: pattern, Kind: DangerKind(r.Kind), What: r.What})
			}
		}
	}
}

func hiddenByGlob(pcomps, mcomps []string) bool {
	for i := range pcomps {
		if strings.HasPrefix(mcomps[i], ".") && !strings.HasPrefix(pcomps[i], ".") {
			return true
		}
	}
	return false
}

// resolve returns p with every symlink of its existing part followed and
// .. taken on the real directories, as the kernel would; the part that does
// not exist is joined lexically.
func resolve(p string) string { return resolveFrom("/", p) }

// resolveFrom is resolve for a path p below base, where base is already
// resolved (no symlink in it): only the components past base are looked at.
// It builds the path it walks in a buffer on the stack and asks the kernel
// about each component where it lies (lstatLink); it gives what
// resolveSlow gives (FuzzResolveFrom). Where the whole path is clean and
// the kernel meets no link on it (noLinks), it is the answer, without the
// walk.
func resolveFrom(base, p string) string {
	if !cleanAbs(base) {
		return resolveSlow(base, p)
	}
	if full := strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(p, "/"); cleanAbs(full) && noLinks(full) {
		return full
	}
	var buf [1024]byte
	cur := append(buf[:0], base...) // clean and absolute throughout
	rest := filepath.ToSlash(p)
	links := 0
	for rest != "" {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			if i := bytes.LastIndexByte(cur, '/'); i > 0 {
				cur = cur[:i]
			} else {
				cur = cur[:1]
			}
			continue
		}
		n := len(cur)
		if n > 1 {
			cur = append(cur, '/')
		}
		cur = append(cur, c...)
		link, err := false, error(syscall.EINVAL) // a NUL: os.Lstat refuses the name
		if strings.IndexByte(c, 0) < 0 {
			link, err = lstatLink(cur)
		}
		if err != nil {
			return filepath.Clean(string(cur) + "/" + rest)
		}
		if !link {
			continue
		}
		links++
		if links > 40 {
			return filepath.Clean(string(cur) + "/" + rest)
		}
		target, err := os.Readlink(string(cur))
		if err != nil {
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(string(cur[:n]), target)
		}
		// splice the target's components in place of this one
		rest = target + "/" + rest
		cur = append(cur[:0], '/')
	}
	return string(cur)
}

// cleanAbs reports whether p is absolute and filepath.Clean(p) == p,
// without building the clean path: no empty, . or .. component and no
// final slash, but for / itself.
func cleanAbs(p string) bool {
	if p == "" || p[0] != '/' || filepath.Separator != '/' {
		return false
	}
	if p == "/" {
		return true
	}
	for rest := p[1:]; ; {
		c, after, more := strings.Cut(rest, "/")
		if c == "" || c == "." || c == ".." {
			return false
		}
		if !more {
			return true
		}
		rest = after
	}
}

// join is filepath.Join(dir, p) for a non-empty p, without cleaning
// again what is clean: dir+"/"+p when dir is clean and absolute and p a
// plain relative path.
func join(dir, p string) string {
	if cleanAbs(dir) && p != "" && p[0] != '/' && cleanAbs("/"+p) {
		if dir == "/" {
			return "/" + p
		}
		return dir + "/" + p
	}
	return filepath.Join(dir, p)
}

// resolveSlow is resolveFrom for any base, one string per component.
func resolveSlow(base, p string) string {
	comps := strings.Split(filepath.ToSlash(p), "/")
	cur := base
	links := 0
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Clean(filepath.Join(append([]string{next}, comps[i+1:]...)...))
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		if links > 40 {
			return filepath.Clean(filepath.Join(append([]string{next}, comps[i+1:]...)...))
		}
		target, err := os.Readlink(next)
		if err != nil {
			cur = next
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		} else {
			cur = "/"
		}
		// splice the target's components in place of this one
		rest := append(strings.Split(filepath.ToSlash(target), "/"), comps[i+1:]...)
		comps, i, cur = rest, -1, "/"
	}
	return cur
}
