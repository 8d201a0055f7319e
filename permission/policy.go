package permission

import (
	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"

	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	"mvdan.cc/sh/v3/syntax"
)

// Mode is the default stance of the gate for calls no rule, allowlist or
// read-only detection has decided. The zero Mode is ModeDefault.
//
// The mode × class matrix (also in docs/policy.md):
//
//	mode          read   internal  write  exec  network  unknown
//	plan          allow  allow     deny   deny  deny     deny
//	default       allow  allow     ask    ask   ask      ask
//	accept-edits  allow  allow     allow  ask   ask      ask
//	trust         allow  allow     allow  allow allow    allow
//
// In every mode the ceiling still holds (trust never writes a @shell key to
// the project allowlist), deny rules still deny, and dangerous paths are
// still asked.
type Mode string

// The modes, from strictest to loosest.
const (
	ModePlan        Mode = "plan"
	ModeDefault     Mode = "default"
	ModeAcceptEdits Mode = "accept-edits"
	ModeTrust       Mode = "trust"
)

// Modes lists the modes from strictest to loosest.
var Modes = []Mode{ModePlan, ModeDefault, ModeAcceptEdits, ModeTrust}

// ParseMode reads a mode's name: plan, default, accept-edits or trust,
// exactly as written here. There are no aliases: a spelling that meant
// one mode to its writer and another to ccrun could loosen the gate (an
// "auto" read as trust), so every other spelling is an error, of class
// ccrun.ErrInvalidConfig, that lists the four. The empty string is ModeDefault
// (no mode set).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeDefault, nil
	}
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("mode %q: want %s: %w", s, modeNames, errclass.InvalidConfig)
}

// modeNames are the modes, for an error.
const modeNames = "plan, default, accept-edits or trust"

// rank orders modes, strictest first; an unknown mode ranks as plan.
func (m Mode) rank() int {
	switch m {
	case ModeDefault, "":
		return 1
	case ModeAcceptEdits:
		return 2
	case ModeTrust:
		return 3
	}
	return 0
}

// matrix is THE mode × class table. Unknown classes read as ClassUnknown.
var matrix = map[Mode]map[Class]Verdict{
	ModePlan: {ClassRead: Allow, ClassInternal: Allow, ClassWrite: Refuse,
		ClassExec: Refuse, ClassNetwork: Refuse, ClassUnknown: Refuse},
	ModeDefault: {ClassRead: Allow, ClassInternal: Allow, ClassWrite: AskUser,
		ClassExec: AskUser, ClassNetwork: AskUser, ClassUnknown: AskUser},
	ModeAcceptEdits: {ClassRead: Allow, ClassInternal: Allow, ClassWrite: Allow,
		ClassExec: AskUser, ClassNetwork: AskUser, ClassUnknown: AskUser},
	ModeTrust: {ClassRead: Allow, ClassInternal: Allow, ClassWrite: Allow,
		ClassExec: Allow, ClassNetwork: Allow, ClassUnknown: Allow},
}

// Verdict returns the matrix's answer for a call of class c in mode m. An
// empty or unknown class is ClassUnknown; an unknown mode is ModePlan.
func (m Mode) Verdict(c Class) Verdict {
	row, ok := matrix[m]
	if m == "" {
		row, ok = matrix[ModeDefault], true
	}
	if !ok {
		row = matrix[ModePlan]
	}
	v, ok := row[c]
	if !ok {
		v = row[ClassUnknown]
	}
	return v
}

// ErrDepthExceeded is the class of the error of SubAgent on a policy that
// is already a sub-agent's: sub-agents are one level deep.
var ErrDepthExceeded = errdefs.ErrPermissionDenied.WithMessage("sub-agent depth exceeded")

// MaxSubAgentDepth is how deep sub-agents nest: a sub-agent cannot derive
// another one.
const MaxSubAgentDepth = 1

// PolicyConfig builds a Policy (NewPolicy).
type PolicyConfig struct {
	// Layers are the settings layers, any order (each says which it is);
	// nil entries are skipped. No layers: mode default, no rules.
	Layers []*Settings
	// ProjectDir is the project's directory: relative paths in calls are
	// taken against it. Empty: the current directory.
	ProjectDir string
	// Home is the user's home directory, for ~ in paths. Empty: $HOME.
	Home string
	// Scope is the caller's scope. Default: ScopeFull.
	Scope Scope
	// Unconfined says the kernel layer (Landlock) is missing on this
	// machine: read-only commands whose safety rests on it (git, which runs
	// what its configuration names; file lists; recursive reads such as
	// grep -r, rg, find — shellcmd.Classification.Kernel) are then asked instead
	// of auto-allowed. Default false: the caller runs read-only commands
	// under Landlock.
	Unconfined bool
}

// Policy is the merged settings of every layer and the hooks the gate
// calls at its steps 1, 2, 3, 5 and 8 (Gate; docs/policy.md). A Policy is
// immutable and safe for concurrent use; WithMode and SubAgent return new
// ones.
type Policy struct {
	mode       Mode
	capMode    Mode // the managed layer's mode: nothing looser; "" none
	allow      []Rule
	ask        []Rule
	deny       []Rule
	scope      Scope
	depth      int
	projectDir string
	home       string
	unconfined bool
}

// NewPolicy merges the layers. Lists merge across layers (deny beats ask beats
// allow whatever the order or layer); the mode is the one of the most
// specific layer that sets it (session, then flags, local, project, user),
// capped by the managed layer's mode: a managed "plan" makes every looser
// mode plan. A layer that does not say which it is is an error of class
// ccrun.ErrInvalidConfig.
func NewPolicy(cfg PolicyConfig) (*Policy, error) {
	p := &Policy{mode: ModeDefault, scope: cfg.Scope, projectDir: cfg.ProjectDir, home: cfg.Home, unconfined: cfg.Unconfined}
	best := -1
	for _, s := range cfg.Layers {
		if s == nil {
			continue
		}
		order, ok := originOrder[s.Origin]
		if !ok {
			return nil, fmt.Errorf("settings %s: unknown origin %q: %w", s.Name, s.Origin, errclass.InvalidConfig)
		}
		if s.Origin == OriginManaged {
			if s.Mode != "" && (p.capMode == "" || s.Mode.rank() < p.capMode.rank()) {
				p.capMode = s.Mode
			}
		} else if s.Mode != "" && order >= best {
			p.mode, best = s.Mode, order
		}
		src := s.Name
		if src == "" {
			src = string(s.Origin)
		}
		if s.Origin == OriginProject {
			if err := s.checkProject(); err != nil {
				return nil, err
			}
		}
		for _, pat := range s.Allow {
			p.allow = append(p.allow, Rule{Pattern: pat, Source: src, Origin: s.Origin})
		}
		for _, pat := range s.Ask {
			p.ask = append(p.ask, Rule{Pattern: pat, Source: src, Origin: s.Origin})
		}
		for _, pat := range s.Deny {
			p.deny = append(p.deny, Rule{Pattern: pat, Source: src, Origin: s.Origin})
		}
	}
	p.mode = p.capped(p.mode)
	return p, nil
}

func (p *Policy) capped(m Mode) Mode {
	if p.capMode != "" && m.rank() > p.capMode.rank() {
		return p.capMode
	}
	return m
}

// Mode returns the mode in force (after the managed cap).
func (p *Policy) Mode() Mode { return p.mode }

// Scope returns the caller's scope.
func (p *Policy) Scope() Scope { return p.scope }

// Depth returns 0 for a top-level policy, 1 for a sub-agent's.
func (p *Policy) Depth() int { return p.depth }

// Rules returns copies of the merged allow, ask and deny lists.
func (p *Policy) Rules() (allow, ask, deny []Rule) {
	return append([]Rule(nil), p.allow...), append([]Rule(nil), p.ask...), append([]Rule(nil), p.deny...)
}

// WithMode returns a copy of p in mode m (a person switched modes), still
// capped by the managed layer: the mode it returns may be stricter than m.
func (p *Policy) WithMode(m Mode) *Policy {
	q := *p
	q.mode = p.capped(m)
	return &q
}

// SubAgent returns the policy of a sub-agent derived from p's caller: scope
// read-only (it sees only None-permission tools; any other call is denied
// at step 1), mode plan, p's deny and ask rules inherited, no allow rules.
// A sub-agent cannot derive another: on a sub-agent's policy SubAgent fails
// with ErrDepthExceeded.
func (p *Policy) SubAgent() (*Policy, error) {
	if p.depth >= MaxSubAgentDepth {
		return nil, fmt.Errorf("sub-agent at depth %d: cannot derive another (max %d): %w", p.depth, MaxSubAgentDepth, ErrDepthExceeded)
	}
	q := *p
	q.depth = p.depth + 1
	q.scope = ScopeReadOnly
	q.mode = ModePlan
	q.allow = nil
	q.ask = append([]Rule(nil), p.ask...)
	q.deny = append([]Rule(nil), p.deny...)
	return &q, nil
}

// Visible reports whether a tool is listed to the caller at all: its scope
// sees it (none: the tool's permission is None), and no deny rule covers
// every call of it (tool:* — or capability:NAME for a capability named
// NAME). The gate denies such a tool again at execution: deny is applied
// twice, in case the tool was registered after the list was made.
func (p *Policy) Visible(tool string, none bool) bool {
	if !p.scope.Sees(none) {
		return false
	}
	for _, r := range p.deny {
		pat := r.Pattern
		if toolWide(pat) && pat.Tool == tool {
			return false
		}
		if pat.Tool == keys.CapabilityTool && !pat.Exact && keys.Glob(pat.Action, tool) &&
			(pat.Detail == "" || pat.Detail == "*" || pat.Detail == "**") {
			return false
		}
	}
	return true
}

// InScope is the gate's step 1: whether req's tool is within the caller's
// scope. When not, reason says why (the gate denies with LayerScope).
func (p *Policy) InScope(req *Request) (reason string, ok bool) {
	if p.scope.Sees(req.Permission.IsNone()) {
		return "", true
	}
	return fmt.Sprintf("%s is outside the %s scope (only tools that never ask are visible)", req.Tool, p.scope), false
}

// DenyRule is the gate's step 2: the first deny rule, of any layer, that
// covers req — its own key, every call of its tool, or, for a shell
// command, any command anywhere inside it (substitutions, pipelines,
// bash -c, eval, wrappers such as sudo or xargs). A command word that is
// not literal, a non-literal eval, a shell reading an unseen script, or
// text that does not parse matches every run_command deny rule. rule is
// written "PATTERN (SOURCE)".
func (p *Policy) DenyRule(req *Request) (rule string, ok bool) {
	return p.denyRule(&inside{req: req})
}

func (p *Policy) denyRule(in *inside) (rule string, ok bool) {
	for _, r := range p.deny {
		if matchInside(r.Pattern, in) {
			return r.String(), true
		}
	}
	return "", false
}

// DenyUnsure is the gate's step 2 for what it cannot tell: when no deny
// rule covers req but text inside it is handed to another shell that may
// read it unlike mvdan/sh reads it (bash -c $'…\r…', a non-ASCII blank,
// bash syntax given to sh: shellcmd.Divergence), a run_command deny rule
// can be said neither to match nor not to. The gate then asks, offering
// Once only. rule is the first run_command deny rule, why says what was
// found.
func (p *Policy) DenyUnsure(req *Request) (rule, why string, ok bool) {
	return p.denyUnsure(&inside{req: req})
}

func (p *Policy) denyUnsure(in *inside) (rule, why string, ok bool) {
	for _, r := range p.deny {
		if r.Pattern.Tool != keys.ShellTool || r.Pattern.Exact {
			continue
		}
		u := unsureInside(in)
		if u == "" {
			return "", "", false
		}
		return r.String(), "cannot tell whether deny rule " + r.String() + " covers it: text handed to another shell holds " + u, true
	}
	return "", "", false
}

// effectiveClass is req's class, with a read-only shell command read. A
// command whose safety rests on the kernel layer is not read on a policy
// that is Unconfined, nor one that names a path beyond its reach (beyond);
// why then says so, and kernelOnly says whether only the kernel layer could
// have contained it (a recursive read, a file list: asked in trust mode
// too, since it would run unconfined).
func (p *Policy) effectiveClass(in *inside) (c Class, ro bool, why string, kernelOnly bool) {
	if e := &in.class; e.pol == p {
		return e.c, e.ro, e.why, e.kernelOnly
	}
	c, ro, why, kernelOnly = p.readClass(in)
	in.class = effective{pol: p, c: c, ro: ro, why: why, kernelOnly: kernelOnly}
	return c, ro, why, kernelOnly
}

// readClass is effectiveClass, not kept.
func (p *Policy) readClass(in *inside) (c Class, ro bool, why string, kernelOnly bool) {
	req := in.req
	c = req.Class
	if c == "" {
		c = ClassUnknown
	}
	if isShell(req) && (c == ClassExec || c == ClassUnknown) {
		if f, ok := in.commandFile(); ok {
			v := in.classify(f)
			switch {
			case v.ReadOnly && v.Kernel != "" && p.unconfined:
				return c, false, "read-only, but " + v.Kernel + ", and this machine has no kernel layer (Landlock) to contain it", true
			case v.ReadOnly:
				if given := p.beyond(req, f); given != "" {
					why = "read-only, but it names " + shellcmd.Escape(given) + ", outside the project in a home directory, which a command that nobody approved does not read"
					if v.Kernel != "" {
						why += " (and " + v.Kernel + ")"
					}
					return c, false, why, v.Kernel != ""
				}
				return ClassRead, true, "", false
			}
		}
	}
	return c, false, "", false
}

// ReadOnlyCall reports whether the policy takes req as a read-only shell
// command: read-only by its text, and naming no path outside the reach of
// one (a home directory beyond the project: shellcmd.Beyond).
func (p *Policy) ReadOnlyCall(req *Request) bool {
	_, ro, _, _ := p.effectiveClass(&inside{req: req})
	return ro
}

// beyond returns the first path a read-only command names in a home
// directory (its own, /home, /root) outside the project, the call's
// directory and git's user configuration (shellcmd.Beyond): the kernel
// layer hides those from a command run unasked, so it is asked instead.
func (p *Policy) beyond(req *Request, f *syntax.File) string {
	home := p.home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	project := p.projectDir
	if project == "" {
		project, _ = os.Getwd()
	}
	dir := req.Dir
	if dir == "" || !filepath.IsAbs(dir) {
		dir = project
	}
	return shellcmd.Beyond(f, req.Args, dir, home, shellcmd.ReachOf(home, os.Getenv("XDG_CONFIG_HOME"), project, dir))
}

// Restricted is the gate's step 3: whether the call's directive or plan
// mode forbids it. read-only, plan-only and analyze-only (and plan mode)
// allow only read and internal calls (a read-only shell command is a read);
// do-not-edit forbids writes, shell commands that are not read-only and
// unknown calls. An unknown directive forbids everything but reads. When
// ok, reason says why (the gate denies with LayerDirective).
func (p *Policy) Restricted(req *Request) (reason string, ok bool) {
	return p.restricted(&inside{req: req})
}

func (p *Policy) restricted(in *inside) (reason string, ok bool) {
	req := in.req
	c, _, _, _ := p.effectiveClass(in)
	readish := c == ClassRead || c == ClassInternal
	switch req.Directive {
	case DirectiveNone:
	case DirectiveReadOnly, DirectivePlanOnly, DirectiveAnalyze:
		if !readish {
			return fmt.Sprintf("directive %s allows only reads (this call is %s)", req.Directive, c), true
		}
	case DirectiveNoEdit:
		if c == ClassWrite || c == ClassExec || c == ClassUnknown {
			return fmt.Sprintf("directive %s forbids %s calls", req.Directive, c), true
		}
	default:
		if c != ClassRead {
			return fmt.Sprintf("unknown directive %q allows only reads", req.Directive), true
		}
	}
	if p.mode == ModePlan && !readish {
		return fmt.Sprintf("plan mode allows only reads (this call is %s)", c), true
	}
	return "", false
}

// Dangerous is the gate's step 5: the dangerous paths req touches (see
// DangerousPaths), taken against the policy's project and home
// directories. Any finding means: ask, offering Once only (AskDangerous).
func (p *Policy) Dangerous(req *Request) []shellcmd.Finding {
	return dangerousPaths(&inside{req: req}, p.projectDir, p.home)
}

// Decide is the gate's step 8, for a call that no earlier step decided:
//
//  1. ask rules, of any layer, looking inside compound commands like deny
//     rules do: ask (LayerAskRule) — ask beats allow;
//  2. allow rules, matching the call's own key only (never a command
//     inside a compound one): allow (LayerAllowRule);
//  3. read-only detection, for a shell command in a mode whose matrix would
//     not simply allow exec: a read-only command is a read (LayerReadOnly);
//  4. the mode × class matrix (LayerMode).
//
// why is the rule ("PATTERN (SOURCE)") for rule layers, else a reason.
func (p *Policy) Decide(req *Request) (v Verdict, layer Layer, why string) {
	return p.decide(&inside{req: req})
}

func (p *Policy) decide(in *inside) (v Verdict, layer Layer, why string) {
	req := in.req
	for _, r := range p.ask {
		if matchInside(r.Pattern, in) {
			return AskUser, LayerAskRule, r.String()
		}
		if r.Pattern.Tool == keys.ShellTool && !r.Pattern.Exact && unsureInside(in) != "" {
			return AskUser, LayerAskRule, r.String() // cannot tell: asked
		}
	}
	note := ""
	for _, r := range p.allow {
		if !matchOwn(r.Pattern, req) {
			continue
		}
		if r.Origin == OriginProject && !req.Environment.Sandboxed() && req.Class != ClassRead && req.Class != ClassInternal && req.Class != ClassWrite {
			// a committed file cannot trust host code for good (the ceiling);
			// an environment not said is taken as the host
			note = "; allow rule " + r.String() + " is in the committed project file and cannot allow @shell code (ceiling)"
			continue
		}
		return Allow, LayerAllowRule, r.String()
	}
	class := req.Class
	if class == "" {
		class = ClassUnknown
	}
	if p.mode.Verdict(class) != Allow {
		c, ro, why, _ := p.effectiveClass(in)
		if ro {
			if v := p.mode.Verdict(c); v == Allow {
				return Allow, LayerReadOnly, "a read-only command" + note
			}
		}
		if why != "" {
			note += "; " + why
		}
	}
	v = p.mode.Verdict(class)
	if v == Allow && p.mode == ModeTrust && isShell(req) {
		// trust mode allows everything but clearly destructive commands
		if w := in.Warnings(); len(w) > 0 {
			return AskUser, LayerMode, fmt.Sprintf("mode %s asks for destructive commands: %s%s", p.mode, strings.Join(w, "; "), note)
		}
		// What only the kernel layer could contain (a recursive read through
		// a symlink to the home directory, a file list naming a key) is
		// asked in trust mode too when there is no kernel layer.
		// So is such a command that names a home directory beyond the
		// project: it would run unconfined (ReadOnlyCall).
		if _, _, why, kernelOnly := p.effectiveClass(in); kernelOnly {
			return AskUser, LayerMode, fmt.Sprintf("mode %s: %s", p.mode, why)
		}
	}
	return v, LayerMode, fmt.Sprintf("mode %s: %s calls %s%s", p.mode, class, verb(v), note)
}

func verb(v Verdict) string {
	switch v {
	case Allow:
		return "are allowed"
	case AskUser:
		return "ask"
	}
	return "are denied"
}
