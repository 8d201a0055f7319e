// Package guard enforces a @shell decision where the command runs. The
// gate decides on the text of a command; the interpreter then expands
// braces, globs, variables and positional parameters, and a program may be
// more than its words said. A Guard built from the gate's decision checks
// every program the interpreter is about to start, with its expanded argv
// and environment, and every file the script opens, against the basis of
// that decision, the deny rules and the dangerous-path table
// (internal/sensitive), as they are about to happen.
//
// What the basis allows:
//
//   - ReadOnly (nobody was asked: the command was judged read-only): every
//     program must be read-only on its expanded words and environment and
//     run from outside the project; the script writes nothing but
//     /dev/null and the terminal.
//   - Pattern (a session or project grant, an allow rule): every program's
//     key must be covered by the pattern that allowed the call, or, for a
//     compound command's exact pattern, be one of the simple commands
//     written in it, word for word, or be read-only as above.
//   - Mode (the mode allowed the call's class): every program must be
//     allowed by the mode on its own.
//   - Person (a person approved this very call): what they saw runs.
//
// In every basis, deny rules are checked on each program's expanded words,
// dangerous paths (reads of leak-class paths, writes of implant-class
// ones) that the person did not approve are refused, and git runs only
// where the repository's own configuration names no program to run (see
// gitPrograms): files that came with a repository are nobody's consent. A step outside the
// basis is asked when an approver is there (only Once is offered), and
// refused otherwise. A Guard is safe for concurrent use: the programs of a
// pipeline are checked at once, and asks are made one at a time.
package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/shell"
	"github.com/ccrun/ccrun/shellcmd"
	"github.com/containerd/errdefs"
)

// Basis is what the decision that let a call run rests on (a person, a
// grant or rule, the mode, a read-only judgement): it bounds what the
// script may do as it runs. (A caller's scope is permission.Scope.)
type Basis int

// The bases.
const (
	ReadOnly Basis = iota // nobody was asked: the command was judged read-only
	Pattern               // a grant or an allow rule: Config.Pattern
	Mode                  // the mode allowed the call's class
	Person                // a person approved this very call
)

// BasisOf returns the basis of an allow decision, and the pattern that
// allowed it for Pattern.
func BasisOf(d *permission.Decision) (Basis, keys.Pattern) {
	switch d.Layer {
	case permission.LayerApprover:
		return Person, keys.Pattern{}
	case permission.LayerProject, permission.LayerSession, permission.LayerAllowRule:
		// "PATTERN" or "PATTERN (SOURCE)"; an exact pattern's command may
		// hold " (" itself.
		if p, err := keys.ParsePattern(d.Rule); err == nil {
			return Pattern, p
		}
		if i := strings.LastIndex(d.Rule, " ("); i >= 0 {
			if p, err := keys.ParsePattern(d.Rule[:i]); err == nil {
				return Pattern, p
			}
		}
		return ReadOnly, keys.Pattern{} // fail closed: the narrowest basis
	case permission.LayerMode:
		return Mode, keys.Pattern{}
	}
	return ReadOnly, keys.Pattern{}
}

// Config is what a Guard enforces.
type Config struct {
	Basis   Basis
	Pattern keys.Pattern // for Basis Pattern
	// Policy holds the deny rules and the mode; nil: the default policy.
	Policy *permission.Policy
	// ProjectDir is the project root (programs found under it are not
	// read-only: they came with the repository); Home the home directory
	// whose credentials the dangerous-path table anchors.
	ProjectDir, Home string
	// Approved are dangerous paths a person approved for this call (the
	// Resolved of the findings they were shown); they pass.
	Approved []string
	// BaseEnv is the environment a run starts from (the filtered host
	// environment): a variable that changes what programs run is checked
	// only when the call, the capability or the script set it.
	BaseEnv []string
	// Ask asks a person about one step, offering Once; nil: nobody can be
	// asked, and a step outside the basis is refused.
	Ask func(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error)
}

// Guard checks a run's steps; see the package documentation.
type Guard struct {
	cfg         Config
	base        map[string]string
	argvs       [][]word   // for an exact run_command pattern: the simple commands written in it
	realProject string     // ProjectDir with its links resolved, once
	mu          sync.Mutex // one ask at a time
}

// New returns the Guard of cfg.
func New(cfg Config) *Guard {
	if cfg.Policy == nil {
		cfg.Policy = permission.DefaultPolicy()
	}
	g := &Guard{cfg: cfg, base: map[string]string{}}
	if cfg.ProjectDir != "" {
		g.realProject = filepath.Clean(cfg.ProjectDir)
		if real, err := filepath.EvalSymlinks(cfg.ProjectDir); err == nil {
			g.realProject = real
		}
	}
	for _, kv := range cfg.BaseEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			g.base[k] = v
		}
	}
	if cfg.Basis == Pattern && cfg.Pattern.Exact && cfg.Pattern.Tool == keys.ShellTool {
		g.argvs = writtenCommands(cfg.Pattern.Action)
	}
	return g
}

// word is one word of a command written in an exact pattern, as the
// interpreter expands it: text, or for a glob the file names its pattern
// matches (or text, when it matches none).
type word struct {
	text string
	pat  string         // the glob pattern; "" for a literal word
	re   *regexp.Regexp // pat compiled; nil for a literal word
}

// matches reports whether name is one a glob word can expand to: not
// empty, the pattern matches it, * and ? stopping at '/', and no
// component of it starts with '.' where the pattern's does not (a glob
// reaches a dotfile only when its pattern names the dot).
func (w word) matches(name string) bool {
	if w.re == nil || name == "" || !w.re.MatchString(name) {
		return false
	}
	pats := strings.Split(w.pat, "/")
	for i, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") && (i >= len(pats) || !strings.HasPrefix(strings.TrimPrefix(pats[i], `\`), ".")) {
			return false
		}
	}
	return true
}

// writtenCommands returns the words of every simple command written in
// the shell text src whose words are literal or globs (shellcmd.GlobOf):
// what a rule of that very text says may run. Nil when src does not parse.
func writtenCommands(src string) [][]word {
	c := permission.ParseCommand(src)
	if c.File == nil {
		return nil
	}
	var out [][]word
	syntax.Walk(c.File, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		words := make([]word, len(call.Args))
		for i, w := range call.Args {
			pat, text, ok := shellcmd.GlobOf(w)
			if !ok {
				return true // a parameter, a tilde, braces: not known before it runs
			}
			words[i] = word{text: text}
			if pat != "" {
				expr, err := pattern.Regexp(pat, pattern.Filenames|pattern.EntireString|pattern.NoGlobStar)
				if err != nil {
					return true
				}
				words[i].pat, words[i].re = pat, regexp.MustCompile(expr)
			}
		}
		out = append(out, words)
		return true
	})
	return out
}

// written reports whether argv is what one of the commands written in the
// exact pattern that allowed the call expands to: its literal words word
// for word, each glob as one or more names it matches, or as itself when
// it matched nothing.
func (g *Guard) written(argv []string) bool {
	for _, words := range g.argvs {
		if expandsTo(words, argv) {
			return true
		}
	}
	return false
}

// expandsTo reports whether words expand to argv, in time
// O(len(words)·len(argv)).
func expandsTo(words []word, argv []string) bool {
	// ok[j]: the words so far expand to argv[:j]
	ok := make([]bool, len(argv)+1)
	next := make([]bool, len(argv)+1)
	ok[0] = true
	for _, w := range words {
		run := false // a run of matches of w, started where ok held, ends here
		next[0] = false
		for j := 1; j <= len(argv); j++ {
			a := argv[j-1]
			run = w.re != nil && w.matches(a) && (ok[j-1] || run)
			next[j] = run || ok[j-1] && a == w.text
		}
		ok, next = next, ok
	}
	return ok[len(argv)]
}

// Shell returns the checks in the form the @shell executor takes.
func (g *Guard) Shell() *shell.Guard {
	return &shell.Guard{Exec: g.Exec, Open: g.Open}
}

// Refusal is the error of a refused step. Its text says what was refused
// and how to allow it.
type Refusal struct {
	What   string // the program with its words, or the file, escaped
	Reason string
	Hint   string // how to allow it, for the person
}

// Error says what was refused at execution and why, and how to allow
// it when there is a way.
func (r *Refusal) Error() string {
	s := "refused at execution: " + r.What + ": " + r.Reason
	if r.Hint != "" {
		s += " (" + r.Hint + ")"
	}
	return s
}

// Is makes a Refusal of class ccrun.ErrPermissionDenied.
func (r *Refusal) Is(target error) bool { return target == errdefs.ErrPermissionDenied }

// Exec checks one program before it starts.
func (g *Guard) Exec(ctx context.Context, p shell.Program) error {
	text, err := quote(p.Argv)
	if err != nil {
		return &Refusal{What: shellcmd.Escape(strings.Join(p.Argv, " ")), Reason: err.Error()}
	}
	cmd := permission.ParseCommand(text)
	req := &permission.Request{Tool: keys.ShellTool, Environment: ceiling.Shell, Permission: permission.Ask(cmd.Key),
		Class: permission.ClassExec, Command: cmd, Display: text, Dir: p.Dir, Env: g.added(p.Env)}
	what := shellcmd.Escape(text)
	if rule, ok := g.cfg.Policy.DenyRule(req); ok {
		return &Refusal{What: what, Reason: "denied by rule " + rule}
	}
	if found := g.dangerous(permission.DangerousPaths(req, p.Dir, g.cfg.Home)); len(found) > 0 {
		return g.ask(ctx, req, "touches a dangerous path: "+found[0].String())
	}
	if filepath.Base(p.Path) == "git" {
		// Whoever allowed git did not see what the repository's files
		// make it run.
		if why := gitPrograms(ctx, p, g.cfg.Basis == Person); why != "" {
			return g.ask(ctx, req, why)
		}
	}
	if g.cfg.Basis != Person {
		// Variables that make a program run other code (BASH_ENV, LD_PRELOAD,
		// GIT_SSH_COMMAND…), set by the call, a capability or the script:
		// whoever allowed the program did not see that code.
		for _, kv := range req.Env {
			name, _, _ := strings.Cut(kv, "=")
			if why, ok := shellcmd.RunsPrograms(name); ok {
				return g.ask(ctx, req, fmt.Sprintf("%s is set (%s)", name, why))
			}
		}
	}
	why := ""
	switch g.cfg.Basis {
	case Person:
		return nil
	case Pattern:
		if g.cfg.Pattern.Match(cmd.Key) || g.written(p.Argv) {
			return nil // its key, or for a compound rule one of its commands as written
		}
		why = g.readOnly(ctx, p, req)
		if why != "" {
			why = fmt.Sprintf("%s is not covered by %s, and %s", cmd.Key, g.cfg.Pattern, why)
		}
	case Mode:
		v, _, reason := g.cfg.Policy.Decide(req)
		if v == permission.Allow {
			return nil
		}
		why = reason
	default:
		why = g.readOnly(ctx, p, req)
		if why != "" {
			why = "the command was allowed as read-only, but " + why
		}
	}
	if why == "" {
		return nil
	}
	return g.ask(ctx, req, why)
}

// readOnly says why one program is not read-only ("" when it is).
func (g *Guard) readOnly(ctx context.Context, p shell.Program, req *permission.Request) string {
	if req.Command.File == nil {
		return "its words do not parse"
	}
	if why, ok := shellcmd.ReadOnlyArgv(p.Argv, req.Env); !ok {
		return why
	}
	if g.realProject != "" && within(g.realProject, p.Path) {
		return fmt.Sprintf("%s is a program of the project (%s), not of the system", shellcmd.Escape(p.Argv[0]), shellcmd.Escape(p.Path))
	}
	return ""
}

// Open checks a file the script itself opens.
func (g *Guard) Open(ctx context.Context, path string, flag int) error {
	write := flag&(os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC) != 0
	class := permission.ClassRead
	if write {
		class = permission.ClassWrite
	}
	req := &permission.Request{Tool: "open", Environment: ceiling.Shell, Permission: permission.Ask(keys.Key{Tool: "open", Action: "file"}),
		Class: class, Paths: []string{path}, Display: path}
	if found := g.dangerous(permission.DangerousPaths(req, "/", g.cfg.Home)); len(found) > 0 {
		return g.ask(ctx, req, "touches a dangerous path: "+found[0].String())
	}
	if write && g.cfg.Basis == ReadOnly && !terminalOrNull(path) {
		return g.ask(ctx, req, "writes "+shellcmd.Escape(path)+", and the command was allowed as read-only")
	}
	return nil
}

// dangerous drops the findings a person approved.
func (g *Guard) dangerous(found []shellcmd.Finding) []shellcmd.Finding {
	out := found[:0:0]
	for _, f := range found {
		ok := false
		for _, a := range g.cfg.Approved {
			if f.Resolved == a || f.Given == a {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, f)
		}
	}
	return out
}

// ask puts one step to the person, Once only; with nobody to ask, or any
// answer but Once or more, the step is refused.
func (g *Guard) ask(ctx context.Context, req *permission.Request, why string) error {
	what := shellcmd.Escape(req.Display)
	hint := "it runs only if a person approves this step; run the call at a terminal, or write a command whose words say what it does"
	if g.cfg.Ask == nil {
		return &Refusal{What: what, Reason: why, Hint: hint}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	d := &permission.Decision{Verdict: permission.AskUser, Key: req.Permission.Key(), Layer: LayerExecution,
		Reason: "at execution: " + why, Offer: ceiling.Once}
	grant, err := g.cfg.Ask(ctx, &permission.Prompt{Request: req, Decision: d})
	if err != nil {
		return &Refusal{What: what, Reason: why + "; nobody answered: " + err.Error()}
	}
	if grant < ceiling.Once {
		return &Refusal{What: what, Reason: why + "; denied by the person asked"}
	}
	return nil
}

// LayerExecution is the layer of a decision taken where the command runs.
const LayerExecution permission.Layer = "execution"

// added returns the variables of env that the base environment does not
// hold with that value: what the call, the capability or the script set.
func (g *Guard) added(env []string) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if bv, ok := g.base[k]; !ok || bv != v {
			out = append(out, kv)
		}
	}
	return out
}

// quote writes argv as shell words that parse back to exactly argv.
func quote(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("no program")
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			return "", fmt.Errorf("word %d cannot be quoted: %w", i, err)
		}
		words[i] = q
	}
	return strings.Join(words, " "), nil
}

// within reports whether the program file p is under dir (resolved
// already), its links resolved.
func within(dir, p string) bool {
	p = filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// terminalOrNull reports whether a write to path goes nowhere but the
// bit bucket, the terminal or ccrun's own output.
func terminalOrNull(path string) bool {
	// Not /dev/fd/N nor /proc/self/fd/N: opening those opens the file
	// behind the descriptor again, with the new flags.
	switch path {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	return false
}
