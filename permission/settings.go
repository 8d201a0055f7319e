package permission

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/errclass"
	"github.com/ccrun/ccrun/internal/jsonpos"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
)

// Origin names a settings layer. Rules of every origin merge; the origin
// only decides which mode wins and what a layer may say.
type Origin string

// The settings layers, from least to most specific. The managed policy is
// apart: it caps the mode and its rules merge like any other's (and since
// deny beats ask beats allow, a project cannot lift a managed deny).
const (
	OriginManaged Origin = "managed" // a system file: /etc/ccrun/managed.json
	OriginUser    Origin = "user"    // $XDG_CONFIG_HOME/ccrun/config.json
	OriginProject Origin = "project" // ccrun.json, committed
	OriginLocal   Origin = "local"   // ccrun.local.json, not committed
	OriginFlags   Origin = "flags"   // the command line
	OriginSession Origin = "session" // set while running
)

var originOrder = map[Origin]int{
	OriginManaged: 0, OriginUser: 1, OriginProject: 2, OriginLocal: 3, OriginFlags: 4, OriginSession: 5,
}

// Settings is one layer's settings, as read from a file or built from flags.
//
// The file format (ccrun.json, ccrun.local.json, the user config, the
// managed policy) is a JSON object with these members, all optional:
//
//	{
//	  "$schema": "…",                       // ignored
//	  "mode": "default",                    // see ParseMode
//	  "permissions": {
//	    "allow": ["write_file:docs/**"],
//	    "ask":   ["run_command:npm:publish"],
//	    "deny":  ["run_command:git:push", "web_fetch"]
//	  },
//	  "allowlist": { … },                   // the project allowlist: kept raw here
//	  "env": {"pass": ["NAME", …]},         // the runtime's: kept raw here
//	  "flags": "no-loosening",              // see NoLoosening
//	  "docker": {"engine": "kubernetes", …} // the runtime's; managed and user files only
//	  "network": {"allow": […], "deny": […]} // hosts approved commands reach; not in ccrun.json
//	}
//
// Any other member, at the top or in "permissions", a duplicated member, a
// rule that is not a valid pattern, or an unknown mode is an error of class
// ccrun.ErrInvalidConfig naming the file, line and column. The published JSON
// Schema of the format is schema/ccrun.schema.json.
type Settings struct {
	Origin Origin
	// Name is where the settings come from (a path, "flags"), for messages.
	Name string
	// Mode is the layer's mode; "" when it does not set one.
	Mode Mode
	// Allow, Ask and Deny are the layer's rules.
	Allow, Ask, Deny []keys.Pattern
	// Allowlist is the raw "allowlist" member; nil when absent.
	Allowlist json.RawMessage
	// Env is the raw "env" member; nil when absent.
	Env json.RawMessage
	// Docker is the "docker" member, parsed (managed and user files
	// only); nil when absent.
	Docker *DockerSettings
	// Network is the "network" member, parsed (not in a committed
	// project file); nil when absent.
	Network *NetworkSettings
	// NoLoosening is set by "flags": "no-loosening": the command line may
	// not loosen the gate (--approve, --mode above default, --allow,
	// --session-allow, --trust-digest are refused), so that a harness can
	// hand `ccrun exec` to an agent. Any layer may set it, a project file
	// too (it only tightens); no layer can unset it (see LoosenLock).
	NoLoosening bool
	// AuditRequired is set by "audit": "required" (managed and user
	// files only): a call whose decision line cannot be written to the
	// audit log is refused rather than run with a note.
	AuditRequired bool
	// Sandbox is "shell": {"sandbox": …} (managed and user files only):
	// SandboxOn, SandboxOff or SandboxRequired; "" when the layer does
	// not say. Writable is "shell": {"writable": […]}: directories an
	// approved @shell command may write besides the project (caches:
	// ~/.cache/go-build, ~/go/pkg/mod, ~/.npm), absolute or ~/-relative.
	Sandbox  string
	Writable []string

	data []byte // the text parsed, for OpenProject
}

// checkProject enforces what a committed project file may not say: it is
// written by whoever wrote the repository, so it may not loosen the mode
// past default, nor allow shell commands (a @shell grant never outlives
// the session: the ceiling).
func (s *Settings) checkProject() error {
	if s.Mode.rank() > ModeDefault.rank() {
		return fmt.Errorf("%s: mode %s may not be set in a committed project file (use ccrun.local.json, the user config or --mode): %w", s.Name, s.Mode, errclass.InvalidConfig)
	}
	for _, p := range s.Allow {
		if p.Tool == keys.ShellTool {
			return fmt.Errorf("%s: allow rule %s: a committed project file cannot allow shell commands (the @shell ceiling is the session; use ccrun.local.json or the user config): %w", s.Name, p, errclass.InvalidConfig)
		}
	}
	return nil
}

var knownTop = []string{"$schema", "allowlist", "mode", "permissions", "env", "flags", "docker", "audit", "shell", "network"}

// The values of "shell": {"sandbox": …}: approved @shell commands run in
// the workspace tier (on, the default), with the person's full rights
// (off), or only in the workspace tier, refused where the kernel cannot
// give it (required).
const (
	SandboxOn       = "on"
	SandboxOff      = "off"
	SandboxRequired = "required"
)

// ParseSettings reads a settings file's content. name is used in errors.
func ParseSettings(data []byte, name string, origin Origin) (*Settings, error) {
	if _, ok := originOrder[origin]; !ok {
		return nil, fmt.Errorf("%s: unknown origin %q: %w", name, origin, errclass.InvalidConfig)
	}
	s := &Settings{Origin: origin, Name: name, data: data}
	top, err := jsonpos.Parse(data)
	if err != nil {
		return nil, jsonError(name, err)
	}
	members, err := objectMembers(data, top, name)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		at := jsonpos.Position(data, m.At)
		if !slices.Contains(knownTop, m.Name) {
			return nil, fmt.Errorf("%s:%s: unknown member %q (want one of %s; rules go under \"permissions\"): %w",
				name, at, m.Name, strings.Join(knownTop, ", "), errclass.InvalidConfig)
		}
		raw, valAt := m.Value.Raw, jsonpos.Position(data, m.Value.Start)
		switch m.Name {
		case "mode":
			str, ok := m.Value.Text()
			if !ok {
				return nil, fmt.Errorf("%s:%s: mode must be a string: %w", name, valAt, errclass.InvalidConfig)
			}
			mode, err := ParseMode(str)
			if err != nil {
				return nil, fmt.Errorf("%s:%s: %w", name, valAt, err)
			}
			s.Mode = mode
		case "allowlist":
			s.Allowlist = raw
		case "env":
			s.Env = raw
			if _, err := parseEnv(data, m.Value, name); err != nil {
				return nil, err
			}
		case "flags":
			if str, _ := m.Value.Text(); str != "no-loosening" {
				return nil, fmt.Errorf("%s:%s: flags: want \"no-loosening\" (nothing can lift it): %w", name, valAt, errclass.InvalidConfig)
			}
			s.NoLoosening = true
		case "audit":
			if str, _ := m.Value.Text(); str != "required" {
				return nil, fmt.Errorf("%s:%s: audit: want \"required\": %w", name, valAt, errclass.InvalidConfig)
			}
			if origin != OriginManaged && origin != OriginUser {
				return nil, fmt.Errorf("%s:%s: audit: set in the managed policy or the user config, not in a project file: %w", name, valAt, errclass.InvalidConfig)
			}
			s.AuditRequired = true
		case "shell":
			if s.Sandbox, s.Writable, err = parseShell(data, m.Value, name, origin); err != nil {
				return nil, err
			}
		case "network":
			if s.Network, err = parseNetwork(data, m.Value, name, origin); err != nil {
				return nil, err
			}
		case "docker":
			if s.Docker, err = parseDocker(data, m.Value, name, origin); err != nil {
				return nil, err
			}
		case "permissions":
			if err := s.parsePermissions(data, m.Value, name); err != nil {
				return nil, err
			}
		}
	}
	if origin == OriginProject {
		if err := s.checkProject(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// DockerSettings is the "docker" member of a managed or user settings
// file: where @docker tools run. {"docker": {"engine": "kubernetes",
// "namespace": "ccrun", "context": "…", "kubeconfig": "…", "pool": 4,
// "pull_secrets": ["regcred"]}}.
type DockerSettings struct {
	// Engine is "docker" (the local Docker Engine; "" says the same) or
	// "kubernetes" (pods through a Kubernetes API server).
	Engine string `json:"engine"`
	// Namespace, Context and Kubeconfig say which cluster and namespace
	// (runtime/kube's options); "" the kubeconfig's own.
	Namespace  string `json:"namespace,omitempty"`
	Context    string `json:"context,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Pool is how many warm pods to keep; 0 none.
	Pool int `json:"pool,omitempty"`
	// PullSecrets name docker-registry secrets of the namespace: the
	// imagePullSecrets of every pod, and the credentials of ccrun's own
	// registry reads (runtime/kube's WithPullSecrets).
	PullSecrets []string `json:"pull_secrets,omitempty"`
}

// parseDocker reads the "docker" member v of the file name: the one
// reading of it, strict (exact member names, each once, of its type), each
// error at its line and column. In a project's own files it is an error
// rather than a member silently ignored: where a tool runs is not the
// repository's choice.
func parseDocker(data []byte, v *jsonpos.Value, name string, origin Origin) (*DockerSettings, error) {
	bad := func(off int, format string, args ...any) error {
		return fmt.Errorf("%s:%s: docker%s: %w", name, jsonpos.Position(data, off), fmt.Sprintf(format, args...), errclass.InvalidConfig)
	}
	if origin == OriginProject || origin == OriginLocal {
		return nil, bad(v.Start, ": the @docker engine is chosen in the managed policy or the user config, not in a project file")
	}
	ms, err := members(v, bad, `{"engine": "docker"|"kubernetes", "namespace", "context", "kubeconfig", "pool", "pull_secrets"}`)
	if err != nil {
		return nil, err
	}
	d := &DockerSettings{}
	for _, m := range ms {
		val := m.Value
		text, isText := val.Text()
		switch m.Name {
		case "engine", "namespace", "context", "kubeconfig":
			if !isText {
				return nil, bad(val.Start, ".%s: want a string", m.Name)
			}
		}
		switch m.Name {
		case "engine":
			if text != "" && text != "docker" && text != "kubernetes" {
				return nil, bad(val.Start, ".engine %q: want docker or kubernetes", text)
			}
			d.Engine = text
		case "namespace":
			d.Namespace = text
		case "context":
			d.Context = text
		case "kubeconfig":
			d.Kubeconfig = text
		case "pool":
			n, ok := val.Token.(json.Number)
			pool, err := n.Int64()
			if !ok || err != nil || pool < 0 || pool > 1<<20 {
				return nil, bad(val.Start, ".pool %s: want a whole number, 0 or more", val.Raw)
			}
			d.Pool = int(pool)
		case "pull_secrets":
			if val.Kind != jsonpos.Array {
				return nil, bad(val.Start, ".pull_secrets: want a list of secret names")
			}
			for _, el := range val.Elems {
				name, ok := el.Text()
				if !ok || !secretName(name) {
					return nil, bad(el.Start, ".pull_secrets %s: want the name of a secret of the namespace (lower-case letters, digits, '-' and '.', at most 253)", el.Raw)
				}
				d.PullSecrets = append(d.PullSecrets, name)
			}
		default:
			return nil, bad(m.At, ": unknown member %q (want engine, namespace, context, kubeconfig, pool or pull_secrets)", m.Name)
		}
	}
	return d, nil
}

// secretName says whether n is a Kubernetes object name (a DNS-1123
// subdomain), as a Secret's must be.
func secretName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return false
			}
		}
	}
	return true
}

func (s *Settings) parsePermissions(data []byte, v *jsonpos.Value, name string) error {
	members, err := objectMembers(data, v, name)
	if err != nil {
		return err
	}
	for _, m := range members {
		var dst *[]keys.Pattern
		switch m.Name {
		case "allow":
			dst = &s.Allow
		case "ask":
			dst = &s.Ask
		case "deny":
			dst = &s.Deny
		default:
			return fmt.Errorf("%s:%s: unknown member %q of permissions (want allow, ask, deny): %w",
				name, jsonpos.Position(data, m.At), m.Name, errclass.InvalidConfig)
		}
		if m.Value.Kind != jsonpos.Array {
			return fmt.Errorf("%s:%s: want a JSON array of rules: %w", name, jsonpos.Position(data, m.Value.Start), errclass.InvalidConfig)
		}
		for _, e := range m.Value.Elems {
			str, ok := e.Text()
			if !ok {
				return fmt.Errorf("%s:%s: a %s rule must be a string: %w", name, jsonpos.Position(data, e.Start), m.Name, errclass.InvalidConfig)
			}
			p, err := ParseRule(str)
			if err != nil {
				return fmt.Errorf("%s:%s: %s rule %w: %w", name, jsonpos.Position(data, e.Start), m.Name, err, errclass.InvalidConfig)
			}
			*dst = append(*dst, p)
		}
	}
	return nil
}

// LoadSettings reads the settings file at path. A missing file is an error
// that errors.Is(err, fs.ErrNotExist). A project's own files (OriginProject,
// OriginLocal) are read as allowlist.ReadProjectFile does: no symbolic link, no file
// of another user.
func LoadSettings(path string, origin Origin) (*Settings, error) {
	var data []byte
	var err error
	if origin == OriginProject || origin == OriginLocal {
		data, err = allowlist.ReadProjectFile(path)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	return ParseSettings(data, path, origin)
}

// EnvPass returns the names of the "env": {"pass": [...]} member: host
// variables that reach @shell tools although the default filter holds them
// back. A malformed env member is an error of class ccrun.ErrInvalidConfig.
func (s *Settings) EnvPass() ([]string, error) {
	if len(s.Env) == 0 {
		return nil, nil
	}
	v, err := jsonpos.Parse(s.Env)
	if err != nil {
		return nil, jsonError(s.Name+": env", err)
	}
	return parseEnv(s.Env, v, s.Name)
}

// parseEnv reads the "env" member v of the file name: {"pass": ["NAME",
// …]}, the one reading of it, strict as the published schema is (exact
// member names, each once, each name a non-empty string), each error at
// its line and column.
func parseEnv(data []byte, v *jsonpos.Value, name string) ([]string, error) {
	bad := func(off int, format string, args ...any) error {
		return fmt.Errorf("%s:%s: env%s: %w", name, jsonpos.Position(data, off), fmt.Sprintf(format, args...), errclass.InvalidConfig)
	}
	ms, err := members(v, bad, `{"pass": ["NAME", …]}`)
	if err != nil {
		return nil, err
	}
	var pass []string
	for _, m := range ms {
		if m.Name != "pass" {
			return nil, bad(m.At, `: unknown member %q (want {"pass": ["NAME", …]})`, m.Name)
		}
		if m.Value.Kind != jsonpos.Array {
			return nil, bad(m.Value.Start, ".pass: want an array of variable names")
		}
		for _, e := range m.Value.Elems {
			text, ok := e.Text()
			if !ok || text == "" {
				return nil, bad(e.Start, ".pass: want a variable name, got %s", e.Raw)
			}
			pass = append(pass, text)
		}
	}
	return pass, nil
}

// parseShell reads the "shell" member v of the file name: {"sandbox":
// "on"|"off"|"required", "writable": ["DIR", …]}, the one reading of it,
// strict as the published schema is (exact member names, each once, of
// their type), each error at its line and column. A project's own files
// may not say it: how approved commands are confined is the person's, or
// the administrator's, choice.
func parseShell(data []byte, v *jsonpos.Value, name string, origin Origin) (sandbox string, writable []string, err error) {
	bad := func(off int, format string, args ...any) error {
		return fmt.Errorf("%s:%s: shell%s: %w", name, jsonpos.Position(data, off), fmt.Sprintf(format, args...), errclass.InvalidConfig)
	}
	if origin != OriginManaged && origin != OriginUser {
		return "", nil, bad(v.Start, ": the sandbox of approved commands is set in the managed policy or the user config, not in a project file")
	}
	ms, err := members(v, bad, `{"sandbox": "on"|"off"|"required", "writable": ["DIR", …]}`)
	if err != nil {
		return "", nil, err
	}
	for _, m := range ms {
		switch m.Name {
		case "sandbox":
			text, ok := m.Value.Text()
			switch {
			case !ok:
				return "", nil, bad(m.Value.Start, `.sandbox: want "on", "off" or "required", got %s`, m.Value.Raw)
			case text != SandboxOn && text != SandboxOff && text != SandboxRequired:
				return "", nil, bad(m.Value.Start, `: sandbox %q: want "on", "off" or "required"`, text)
			}
			sandbox = text
		case "writable":
			if m.Value.Kind != jsonpos.Array {
				return "", nil, bad(m.Value.Start, ".writable: want an array of directories")
			}
			for _, e := range m.Value.Elems {
				w, ok := e.Text()
				if !ok || (!filepath.IsAbs(w) && !strings.HasPrefix(w, "~/")) {
					return "", nil, bad(e.Start, ": writable %s: want an absolute path or one starting with ~/", e.Raw)
				}
				writable = append(writable, w)
			}
		default:
			return "", nil, bad(m.At, ": unknown member %q (want sandbox or writable)", m.Name)
		}
	}
	return sandbox, writable, nil
}

// Loosens lists, one line each, what s loosens past the defaults: a mode
// above default, every allow rule, every allowlist entry and every name of
// env.pass, each prefixed with the file's base name. Deny and ask rules, a
// stricter mode and the flags lock only tighten and are not listed. The
// lines are what `ccrun trust` shows and what its digest covers
// (Loosening).
func (s *Settings) Loosens() ([]string, error) {
	file := filepath.Base(s.Name)
	var out []string
	if s.Mode.rank() > ModeDefault.rank() {
		out = append(out, fmt.Sprintf("%s: mode %s", file, s.Mode))
	}
	for _, p := range s.Allow {
		out = append(out, fmt.Sprintf("%s: allow rule %s", file, p))
	}
	if len(s.Allowlist) > 0 && (s.Origin == OriginProject || s.Origin == OriginLocal) {
		entries, err := allowlist.ProjectEntries(s.Name, s.text())
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if ignoredEntry(e) == "" {
				out = append(out, fmt.Sprintf("%s: allowlist %s", file, e))
			}
		}
	}
	pass, err := s.EnvPass()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	for _, n := range pass {
		out = append(out, fmt.Sprintf("%s: env.pass %s", file, strconv.QuoteToASCII(n)))
	}
	return out, nil
}

// Ignored lists, one line each, what s says that would loosen but the gate
// never counts, with why: a project allowlist entry past its environment's
// ceiling (a @shell key granted for the project). Loosens leaves these out,
// and so does the digest `ccrun trust` records: trusting the files does
// not make them count.
func (s *Settings) Ignored() ([]string, error) {
	if len(s.Allowlist) == 0 || s.Origin != OriginProject && s.Origin != OriginLocal {
		return nil, nil
	}
	entries, err := allowlist.ProjectEntries(s.Name, s.text())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if why := ignoredEntry(e); why != "" {
			out = append(out, fmt.Sprintf("%s: allowlist %s: ignored: %s", filepath.Base(s.Name), e, why))
		}
	}
	return out, nil
}

// ignoredEntry says why the gate never counts the project allowlist entry
// e (its grant is past its environment's ceiling), or "".
func ignoredEntry(e allowlist.Entry) string {
	env := e.Environment
	if e.Pattern.Tool == keys.ShellTool {
		env = ceiling.Shell
	}
	if env == "" {
		return ""
	}
	if err := ceiling.Check(env, e.Pattern.String(), e.Grant); err != nil {
		return err.Error()
	}
	return ""
}

// text is the text s was parsed from; for a Settings built by hand, a
// document of its allowlist alone.
func (s *Settings) text() []byte {
	if s.data != nil {
		return s.data
	}
	return []byte(`{"allowlist": ` + string(s.Allowlist) + `}`)
}

// Untrusted returns a copy of s that keeps only what tightens: deny and
// ask rules, a mode no looser than default, the flags lock. It is what an
// untrusted project's files count for.
func (s *Settings) Untrusted() *Settings {
	t := &Settings{Origin: s.Origin, Name: s.Name, Ask: slices.Clone(s.Ask), Deny: slices.Clone(s.Deny), NoLoosening: s.NoLoosening}
	if s.Mode.rank() <= ModeDefault.rank() {
		t.Mode = s.Mode
	}
	return t
}

// AuditRequired reports whether a layer says "audit": "required", and
// names the first that does.
func AuditRequired(layers []*Settings) (by string, required bool) {
	for _, s := range layers {
		if s != nil && s.AuditRequired {
			return s.Name, true
		}
	}
	return "", false
}

// ShellSandbox is what the layers say of the sandbox of approved @shell
// commands (SandboxOn when none does), and which layer said it: the
// managed policy first (it locks the user's choice), then the user
// config; writable are the directories both name, ~ expanded with home.
func ShellSandbox(layers []*Settings, home string) (sandbox, by string, writable []string) {
	sandbox = SandboxOn
	for _, o := range []Origin{OriginManaged, OriginUser} {
		for _, s := range layers {
			if s == nil || s.Origin != o {
				continue
			}
			if s.Sandbox != "" && by == "" {
				sandbox, by = s.Sandbox, s.Name
			}
			for _, w := range s.Writable {
				if rest, ok := strings.CutPrefix(w, "~/"); ok {
					if home == "" {
						continue
					}
					w = filepath.Join(home, rest)
				}
				writable = append(writable, filepath.Clean(w))
			}
		}
	}
	return sandbox, by, writable
}

// LooserThan reports whether m lets more through than o (ModeTrust is
// looser than ModeDefault, which is looser than ModePlan).
func (m Mode) LooserThan(o Mode) bool { return m.rank() > o.rank() }

// FileMode is the mode the file layers give, before any flag or session
// layer: the most specific layer's that sets one (local, project, user),
// capped by the managed layer's, else ModeDefault. It is what a flag may
// only tighten while the layers lock loosening (LoosensPast).
func FileMode(files []*Settings) Mode {
	mode, best := ModeDefault, -1
	var capMode Mode
	for _, s := range files {
		if s == nil || s.Mode == "" {
			continue
		}
		switch order := originOrder[s.Origin]; {
		case s.Origin == OriginManaged:
			if capMode == "" || capMode.LooserThan(s.Mode) {
				capMode = s.Mode
			}
		case s.Origin == OriginFlags || s.Origin == OriginSession:
		case order >= best:
			mode, best = s.Mode, order
		}
	}
	if capMode != "" && mode.LooserThan(capMode) {
		mode = capMode
	}
	return mode
}

// LoosensPast lists what the layer s (the command line's, a session's)
// loosens past the file layers: every line of Loosens but its mode, and
// its mode when it is looser than the files' (FileMode). Under
// "flags": "no-loosening" such a layer may only tighten: --mode default
// over a configured plan loosens, --mode plan never does.
func (s *Settings) LoosensPast(files []*Settings) ([]string, error) {
	lines, err := s.Loosens()
	if err != nil {
		return nil, err
	}
	out := lines[:0:0]
	prefix := filepath.Base(s.Name) + ": mode "
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	if base := FileMode(files); s.Mode != "" && s.Mode.LooserThan(base) {
		out = append([]string{fmt.Sprintf("%s: mode %s (the settings give %s)", filepath.Base(s.Name), s.Mode, base)}, out...)
	}
	return out, nil
}

// LoosenLock reports whether any of the layers sets "flags":
// "no-loosening", and names the first that does. No layer can lift it.
func LoosenLock(layers []*Settings) (by string, locked bool) {
	for _, s := range layers {
		if s != nil && s.NoLoosening {
			return s.Name, true
		}
	}
	return "", false
}

// DefaultManagedPath is where the managed policy is read from unless
// Locations says otherwise.
const DefaultManagedPath = "/etc/ccrun/managed.json"

// Locations are the settings files of the four file layers. An empty
// field skips that layer.
type Locations struct {
	Managed string // default DefaultManagedPath
	User    string // default $XDG_CONFIG_HOME/ccrun/config.json (os.UserConfigDir)
	Project string // default PROJECT/ccrun.json
	Local   string // default PROJECT/ccrun.local.json
}

// DefaultLocations returns the usual files for a project directory.
func DefaultLocations(projectDir string) Locations {
	loc := Locations{
		Managed: DefaultManagedPath,
		Project: filepath.Join(projectDir, "ccrun.json"),
		Local:   filepath.Join(projectDir, "ccrun.local.json"),
	}
	if dir := os.Getenv("XDG_CONFIG_HOME"); dir != "" && filepath.IsAbs(dir) {
		loc.User = filepath.Join(dir, "ccrun", "config.json")
	} else if dir, err := os.UserConfigDir(); err == nil {
		loc.User = filepath.Join(dir, "ccrun", "config.json")
	}
	return loc
}

// LoadLayers reads every file of loc that exists, in the order managed,
// user, project, local. A file that exists but cannot be read or parsed is
// an error: a broken managed policy must not silently vanish.
func LoadLayers(loc Locations) ([]*Settings, error) {
	var out []*Settings
	for _, l := range []struct {
		path   string
		origin Origin
	}{{loc.Managed, OriginManaged}, {loc.User, OriginUser}, {loc.Project, OriginProject}, {loc.Local, OriginLocal}} {
		if l.path == "" {
			continue
		}
		s, err := LoadSettings(l.path, l.origin)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// FlagSettings builds the command line's layer: --mode and repeated
// --allow, --ask, --deny values. Errors name the flag and the value once,
// and are of class ErrInvalidArgument (a bad rule: ErrInvalidKey): a
// mistyped flag is a usage error, not one of a configuration file.
func FlagSettings(mode string, allow, ask, deny []string) (*Settings, error) {
	s := &Settings{Origin: OriginFlags, Name: "flags"}
	if mode != "" {
		if !slices.Contains(Modes, Mode(mode)) {
			return nil, fmt.Errorf("--mode %q: want %s: %w", mode, modeNames, errdefs.ErrInvalidArgument)
		}
		s.Mode = Mode(mode)
	}
	for _, l := range []struct {
		flag string
		in   []string
		out  *[]keys.Pattern
	}{{"--allow", allow, &s.Allow}, {"--ask", ask, &s.Ask}, {"--deny", deny, &s.Deny}} {
		for _, r := range l.in {
			p, err := ParseRule(r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", l.flag, err)
			}
			*l.out = append(*l.out, p)
		}
	}
	return s, nil
}

// objectMembers returns the members of v, which must be an object that
// names no member twice.
func objectMembers(data []byte, v *jsonpos.Value, name string) ([]jsonpos.Member, error) {
	if v.Kind != jsonpos.Object {
		return nil, fmt.Errorf("%s:%s: want a JSON object: %w", name, jsonpos.Position(data, v.Start), errclass.InvalidConfig)
	}
	seen := make(map[string]bool, len(v.Members))
	for _, m := range v.Members {
		if seen[m.Name] {
			return nil, fmt.Errorf("%s:%s: member %q given twice: %w", name, jsonpos.Position(data, m.At), m.Name, errclass.InvalidConfig)
		}
		seen[m.Name] = true
	}
	return v.Members, nil
}

// members returns the members of v, the object a settings member holds
// (docker, network, env, shell), each name once; bad places an error
// under the member's name, want says what v must be when it is no object.
func members(v *jsonpos.Value, bad func(off int, format string, args ...any) error, want string) ([]jsonpos.Member, error) {
	if v.Kind != jsonpos.Object {
		return nil, bad(v.Start, ": want %s", want)
	}
	seen := make(map[string]bool, len(v.Members))
	for _, m := range v.Members {
		if seen[m.Name] {
			return nil, bad(m.At, ": member %q given twice", m.Name)
		}
		seen[m.Name] = true
	}
	return v.Members, nil
}

// jsonError places a syntax error of the file name.
func jsonError(name string, err error) error {
	var je *jsonpos.Error
	if errors.As(err, &je) {
		return fmt.Errorf("%s:%d:%d: malformed JSON: %s: %w", name, je.Line, je.Column, je.Msg, errclass.InvalidConfig)
	}
	return fmt.Errorf("%s: malformed JSON: %v: %w", name, err, errclass.InvalidConfig)
}
