package ccrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/shellcmd"
)

// Call is one tool call. Exactly one of Command, Capability, Module,
// Image, Tool and Target names what runs.
type Call struct {
	Command    string // a shell command, run on the host by run_command
	Capability string // the name of a capability under .ccrun/capabilities/
	Module     string // a .wasm file, run by run_wasm
	Image      string // a container image, run by run_docker
	// Tool names a library tool given to New with WithTool; its input is
	// Input (libtools.go).
	Tool string
	// Target is what a call of Environment runs, as the backend registered
	// for it (WithBackend) reads it; Environment is required with it and
	// ignored otherwise.
	Target      string
	Environment ceiling.Environment // the environment of Target

	// Args are given after the capability's own arguments, to the module
	// (argv[1:]), as the container's command, or as $1… of a command.
	Args []string
	// Input is the call's parameters, a JSON object validated against the
	// capability's schema before the gate, at most 64 MiB. The tool
	// receives it on stdin when Stdin is nil, and in the CCRUN_INPUT
	// environment variable when it is at most 64 KiB (a larger variable
	// cannot reach a program: Linux caps each at 128 KiB); a larger input
	// with a Stdin of the call's own is refused.
	Input json.RawMessage
	// InputFile names the file Input was read from (ccrun exec --input
	// @FILE), as it was opened (its real path); "" when none. A file the
	// call reads on the caller's behalf is part of the decision as an
	// argument is: shown to the person asked, and a dangerous path
	// (~/.ssh, credentials) makes the call asked, Once only, even when a
	// grant would allow it. So is a Stdin that is a named file.
	InputFile string
	// Mounts add host directories (@wasm, @docker); read-only unless rw.
	Mounts []job.Mount
	// Env adds KEY=VALUE variables, given explicitly to the tool.
	Env []string
	// Limits override the capability's and the executor's defaults, field
	// by field (zero: keep).
	Limits job.Limits
	// AllowHosts are hosts a @shell or @docker call may reach besides
	// those the settings' "network" lists allow (HOST, *.DOMAIN,
	// HOST:PORT, an IP literal; what --allow-host gives): an approved
	// command, or the container, then reaches only the allowed hosts,
	// through ccrun's egress proxy. With no list in the settings they are
	// the only hosts; with one, they widen it and the prompt says so. A
	// @docker call with lists may not ask for a network bridge or host
	// (engines.DockerOptions). Runtime.Network says what a call would get.
	AllowHosts []string
	// Options are the call's options of its environment, which that
	// environment's backend reads: engines.DockerOptions (the network, the
	// pull policy) for @docker, or a Go program's own type for an
	// environment it registered (WithBackend). nil: the environment's
	// defaults. Options of another environment than the call's are
	// refused before anything is asked.
	Options EnvironmentOptions
	// Directive narrows this call (read-only, plan-only…).
	Directive permission.Directive

	Stdin  io.Reader // the program's standard input; nil: none
	Stdout io.Writer // where its output goes as it comes, besides the Result
	Stderr io.Writer // where its error output goes as it comes, besides the Result
}

// EnvironmentOptions are a call's options that one environment reads
// (Call.Options): engines.DockerOptions for @docker, or a type of a Go
// program's own for an environment it registered, whose backend reads
// them from Invocation.Options. Environment names the environment they
// are for; what they loosen the backend says (Prepared.Loosens,
// Prepared.OptionsDigest), so that it is shown, audited and bound into
// the grant's digest.
type EnvironmentOptions = backend.EnvironmentOptions

// The limits of Call.Input: in the environment, and at all.
const (
	maxInputEnv = 64 << 10
	maxInput    = 64 << 20
)

// prepare validates c and builds the gate's request and the invocation:
// what every call shares here (callOf), what is its environment's by its
// backend's Prepare (and Bind, in bind).
func (r *Runtime) prepare(ctx context.Context, c *Call) (*permission.Request, *Invocation, *Prepared, error) {
	req, inv, input, err := r.callOf(c)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.Tool != "" {
		inv.Env = appendInput(inv.Env, input)
		if err := r.prepareTool(c, req, inv); err != nil {
			return nil, nil, nil, err
		}
		req.Environment = inv.Environment
		return req, inv, nil, nil
	}
	if c.Capability != "" {
		err = r.prepareCapability(c, req, inv)
	} else {
		err = adHoc(c, r.dir, inv)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if inv.Options, err = checkOptions(c.Options, inv.Environment); err != nil {
		return nil, nil, nil, err
	}
	p, err := r.prepareOn(ctx, req, inv)
	if err != nil {
		return nil, nil, nil, err
	}
	inv.Env = appendInput(inv.Env, input)
	if len(c.Input) > 0 && inv.Capability != nil {
		p.Display += "\ninput: " + string(c.Input)
	}
	req.Display, req.Command, req.Dir = p.Display, p.Command, p.Dir
	req.Loosens = append(req.Loosens, p.Loosens...)
	req.Environment = inv.Environment
	describeReach(req, inv, c)
	if err := r.describeHosts(req, inv, c); err != nil {
		return nil, nil, nil, err
	}
	return req, inv, p, nil
}

// callOf validates what every call shares — what it names, its
// environment variables, mounts and input — and starts its request and
// invocation. input is the CCRUN_INPUT variable to give the tool, or "".
func (r *Runtime) callOf(c *Call) (*permission.Request, *Invocation, string, error) {
	n := 0
	for _, s := range []string{c.Command, c.Capability, c.Module, c.Image, c.Tool, c.Target} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return nil, nil, "", fmt.Errorf("call: want exactly one of a command, a capability, a module, an image, a library tool or a target, got %d: %w", n, ErrInvalidCall)
	}
	for _, kv := range c.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, nil, "", fmt.Errorf("call: env %q: want KEY=VALUE: %w", kv, ErrInvalidCall)
		}
		if strings.HasPrefix(k, "CCRUN_") {
			return nil, nil, "", fmt.Errorf("call: env %s: CCRUN_* variables are set by ccrun itself: %w", k, ErrInvalidCall)
		}
	}
	mounts, err := r.absMounts(c.Mounts)
	if err != nil {
		return nil, nil, "", err
	}
	inv := &Invocation{
		ProjectDir: r.dir,
		Args:       append([]string(nil), c.Args...),
		Env:        append([]string(nil), c.Env...),
		Mounts:     mounts,
		Limits:     c.Limits,
		Streams:    job.Streams{Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr},
	}
	req := &permission.Request{Directive: c.Directive, Class: permission.ClassExec,
		Env: append([]string(nil), c.Env...), Args: append([]string(nil), c.Args...), Stdin: stdinSource(c.Stdin)}
	if len(c.Input) == 0 {
		return req, inv, "", nil
	}
	if !json.Valid(c.Input) {
		return nil, nil, "", fmt.Errorf("call: input is not valid JSON: %w", ErrInvalidCall)
	}
	var input string
	switch n := len(c.Input); {
	case n > maxInput:
		return nil, nil, "", fmt.Errorf("call: input of %d bytes: past the limit of %d bytes (64 MiB): %w", n, maxInput, ErrInvalidCall)
	case n <= maxInputEnv:
		input = "CCRUN_INPUT=" + string(c.Input)
	case inv.Streams.Stdin != nil:
		return nil, nil, "", fmt.Errorf("call: input of %d bytes: past what CCRUN_INPUT carries (%d bytes), so it goes on stdin, but the call gives stdin of its own: %w", n, maxInputEnv, ErrInvalidCall)
	}
	if inv.Streams.Stdin == nil {
		inv.Streams.Stdin = bytes.NewReader(c.Input)
	}
	return req, inv, input, nil
}

func appendInput(env []string, input string) []string {
	if input == "" {
		return env
	}
	return append(env, input)
}

// prepareOn has inv's backend prepare it, and takes from what it says
// only what cannot widen the gate: the key and digest of an ad-hoc call
// (a capability keeps its own), the binding of either to the call's
// options (Prepared.OptionsDigest), a network's class (which asks more; a
// capability's too), a shell command only from @shell.
func (r *Runtime) prepareOn(ctx context.Context, req *permission.Request, inv *Invocation) (*Prepared, error) {
	b, err := r.backend(ctx, inv.Environment)
	if err != nil {
		return nil, err
	}
	p, err := b.Prepare(ctx, inv)
	if err != nil {
		return nil, refusedCall(err)
	}
	if p == nil {
		return nil, fmt.Errorf("call: %s: the backend prepared nothing: %w", inv.Environment, ErrInvalidCall)
	}
	if p.Command != nil && inv.Environment != ceiling.Shell {
		// the policy's reading of a shell command (read-only…) holds only
		// where ccrun's guard and kernel confinement enforce it
		return nil, fmt.Errorf("call: %s: only a backend of @shell prepares a shell command: %w", inv.Environment, ErrInvalidCall)
	}
	if p.Network {
		req.Class = permission.ClassNetwork
	}
	if inv.Capability != nil {
		// the capability's, bound to what the call's options change: a
		// Binder binds it further
		req.Digest = backend.BindOptions(req.Digest, p.OptionsDigest)
		p.Digest = req.Digest
		return p, nil
	}
	if !p.Key.Valid() {
		return nil, fmt.Errorf("call: %s: the backend's key %q is not valid: %w", inv.Environment, p.Key, ErrInvalidCall)
	}
	if err := checkKey(inv.Environment, p.Key); err != nil {
		return nil, err
	}
	if inv.Tool == "" {
		inv.Tool = p.Key.Tool
	}
	p.Digest = backend.BindOptions(p.Digest, p.OptionsDigest)
	req.Tool, req.Permission, req.Digest = inv.Tool, permission.Ask(p.Key), p.Digest
	return p, nil
}

// describeReach adds to req what the call reaches past its environment's
// defaults: the mounts (shown, their dangerous paths found, writable ones
// loosening) and the files ccrun reads for it. What the call's options
// loosen (a network) its backend says (Prepared.Loosens).
func describeReach(req *permission.Request, inv *Invocation, c *Call) {
	home, _ := os.UserHomeDir()
	own := len(inv.Mounts) - len(c.Mounts) // the call's own mounts follow a capability's
	for i, m := range inv.Mounts {
		line, found := describeMount(m, home)
		if m.Writable && inv.Environment == ceiling.Docker && os.Geteuid() == 0 {
			// runtime/docker's default user for a caller that is root
			line += ", written as uid 65534 on the Docker Engine (ccrun runs as root): it must be writable by uid 65534"
		}
		req.Mounts = append(req.Mounts, line)
		req.Dangerous = append(req.Dangerous, found...)
		req.Paths = append(req.Paths, m.Host)
		if m.Writable && i >= own {
			// a capability's own are among its manifest's loosenings
			req.Loosens = append(req.Loosens, "writable mount "+m.String())
		}
	}
	// Files ccrun reads on the call's behalf: what they are, and whether
	// they are secrets, is checked on what was opened.
	read := []string{c.InputFile}
	if f, ok := c.Stdin.(*os.File); ok && f != nil && f != os.Stdin {
		if real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err == nil && filepath.IsAbs(real) {
			read = append(read, real)
		} else if f.Name() != "" {
			read = append(read, f.Name())
		}
	}
	for _, p := range read {
		if p == "" {
			continue
		}
		found := permission.DangerousPaths(&permission.Request{Class: permission.ClassRead, Paths: []string{p}}, inv.ProjectDir, home)
		req.Dangerous = append(req.Dangerous, found...)
	}
	if c.InputFile != "" {
		req.Stdin = strings.TrimSpace(req.Stdin + " input from file " + c.InputFile)
	}
}

// checkOptions refuses options o of another environment than env, the
// call's, before anything is asked or reached; a nil o (a nil pointer
// too) is none.
func checkOptions(o EnvironmentOptions, env ceiling.Environment) (EnvironmentOptions, error) {
	if isNil(o) {
		return nil, nil
	}
	if got := o.Environment(); got != env {
		return nil, fmt.Errorf("call: options of %s given to a call of %s: they apply to %s calls only; drop them, or give options of %s: %w",
			got, env, got, env, ErrInvalidCall)
	}
	return o, nil
}

// adHoc sets the environment, tool and target of a call that names what
// it runs (not a capability, not a library tool).
func adHoc(c *Call, dir string, inv *Invocation) error {
	switch {
	case c.Command != "":
		inv.Environment, inv.Tool, inv.Target = ceiling.Shell, keys.ShellTool, c.Command
	case c.Module != "":
		path := c.Module
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		inv.Environment, inv.Tool, inv.Target = ceiling.Wasm, keys.WasmTool, path
	case c.Image != "":
		inv.Environment, inv.Tool, inv.Target = ceiling.Docker, keys.DockerTool, c.Image
	case c.Environment.Builtin():
		return fmt.Errorf("call: a target of %s: name a command, a module or an image instead: %w", c.Environment, ErrInvalidCall)
	default: // its backend, if r has one (backend)
		inv.Environment, inv.Target = c.Environment, c.Target
	}
	return nil
}

// bind lets a Binder bind the grant to content before the gate asks
// anyone, from what is on this machine only, and carries what it bound
// into req. A call the gate refuses whatever its digest is left as it is
// (no engine reached). When what runs must be fetched (Prepared.Fetch),
// the person asked is told so and from where; fetch fetches it once the
// call is allowed.
func (r *Runtime) bind(ctx context.Context, req *permission.Request, inv *Invocation, p *Prepared) error {
	bi, err := r.binder(ctx, inv, p)
	if bi == nil || err != nil {
		return err
	}
	if r.gate.Decide(req).Verdict == permission.Refuse {
		return nil // no grant can change a refusal: no need to ask the engine
	}
	if err := bi.Bind(ctx, inv, p); err != nil {
		return err
	}
	req.Digest, req.Display = p.Digest, p.Display
	if p.Fetch != "" {
		req.Display += "\n" + p.Fetch
	}
	return nil
}

// binder is the Binder of inv's backend, or nil.
func (r *Runtime) binder(ctx context.Context, inv *Invocation, p *Prepared) (Binder, error) {
	if p == nil {
		return nil, nil
	}
	b, err := r.backend(ctx, inv.Environment)
	if err != nil {
		return nil, err
	}
	bi, _ := b.(Binder)
	return bi, nil
}

// fetch has inv's Binder fetch what Bind found missing, and carries the
// binding to what arrived into req. It runs only for a call the gate
// allowed, or the person allowed, and before a grant is kept.
func (r *Runtime) fetch(ctx context.Context, req *permission.Request, inv *Invocation, p *Prepared) error {
	bi, err := r.binder(ctx, inv, p)
	if err != nil {
		return err
	}
	if bi == nil {
		return fmt.Errorf("call: %s: the backend said it must fetch %q but is no Binder: %w", inv.Environment, p.Fetch, ErrInvalidCall)
	}
	if err := bi.Fetch(ctx, inv, p); err != nil {
		return err
	}
	req.Digest, req.Display = p.Digest, p.Display
	p.Fetch, p.Unbound = "", false
	return nil
}

func (r *Runtime) prepareCapability(c *Call, req *permission.Request, inv *Invocation) error {
	capa, err := r.capability(c.Capability)
	if err != nil {
		return err
	}
	input := c.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if err := capa.ValidateInput(input); err != nil {
		return refusedCall(err)
	}
	m := &capa.Manifest
	mounts, err := capa.Mounts()
	if err != nil {
		return err
	}
	inv.Environment, inv.Tool, inv.Capability = m.Environment, m.Name, capa
	if !m.Environment.Builtin() {
		// the generic entry, which the backend reads as an ad-hoc call's
		inv.Target = m.Entry.Target
		inv.Args = append(slices.Clone(m.Entry.Args), inv.Args...)
	}
	inv.Mounts = append(mounts, inv.Mounts...)
	inv.Limits = overlay(m.Limits.Job(), c.Limits)
	inv.Network = string(m.Network) // the backend's Prepare may change it (Invocation.Options)
	env := make([]string, 0, len(m.Env)+1)
	for k, v := range m.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	inv.Env = append(env, inv.Env...)
	req.Tool, req.Class, req.Digest = m.Name, capa.Class(), capa.Digest
	if len(inv.Mounts) > len(mounts) {
		// the call's own mounts, past the manifest's: the capability's
		// digest does not cover them, so neither does a grant of it
		own := make([]string, 0, len(inv.Mounts)-len(mounts))
		for _, mt := range inv.Mounts[len(mounts):] {
			own = append(own, mt.String())
		}
		req.Digest = backend.BindOptions(req.Digest, "mounts "+strings.Join(own, "\x00"))
	}
	req.Permission = permission.Ask(capa.Key())
	req.Loosens = append(req.Loosens, m.Loosens()...)
	return nil
}

// absMounts makes host paths absolute against the project root.
func (r *Runtime) absMounts(ms []job.Mount) ([]job.Mount, error) {
	out := make([]job.Mount, 0, len(ms))
	for _, m := range ms {
		if m.Host == "" || m.Guest == "" {
			return nil, fmt.Errorf("call: mount %s: want HOST:GUEST: %w", m, ErrInvalidCall)
		}
		if !filepath.IsAbs(m.Host) {
			m.Host = filepath.Join(r.dir, m.Host)
		}
		if !strings.HasPrefix(m.Guest, "/") {
			return nil, fmt.Errorf("call: mount %s: the guest path must be absolute: %w", m, ErrInvalidCall)
		}
		if _, err := os.Stat(m.Host); err != nil {
			// refused before anyone is asked
			return nil, fmt.Errorf("call: mount %s: %w: %w", m, ErrInvalidCall, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// rel shows path relative to the project when it is inside it.
func (r *Runtime) rel(path string) string { return backend.Rel(r.dir, path) }

// overlay returns base with every non-zero field of over.
func overlay(base, over job.Limits) job.Limits {
	if over.Timeout != 0 {
		base.Timeout = over.Timeout
	}
	if over.Memory != 0 {
		base.Memory = over.Memory
	}
	if over.Output != 0 {
		base.Output = over.Output
	}
	if over.Pids != 0 {
		base.Pids = over.Pids
	}
	if over.CPUs != 0 {
		base.CPUs = over.CPUs
	}
	return base
}

// stdinSource says where a call's stdin comes from, for the person asked:
// a named file, or nothing to say.
func stdinSource(in io.Reader) string {
	if f, ok := in.(*os.File); ok && f != nil && f.Name() != "" && f != os.Stdin {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return "file " + f.Name()
		}
	}
	return ""
}

// describeMount renders a mount for the person asked — the source as given
// and where it really points, the guest path, ro or rw, the protected
// paths it may change — and returns what makes it a dangerous-path call:
// a source that holds the home directory or the system's secrets, a
// protected path a writable mount is let change. Either is asked, Once
// only.
func describeMount(m job.Mount, home string) (string, []shellcmd.Finding) {
	mode := "ro"
	if m.Writable {
		mode = "rw"
	}
	var found []shellcmd.Finding
	src := m.Host
	real, dangerous, err := m.Dangerous(home)
	switch {
	case err != nil:
		src += " (" + err.Error() + ")"
	case real != filepath.Clean(m.Host):
		src += " → " + real
	}
	if dangerous {
		found = append(found, shellcmd.Finding{Given: m.Host, Resolved: real, Kind: shellcmd.DangerLeak,
			What: "a mount that holds the home directory or the system's keys and credentials"})
	}
	line := fmt.Sprintf("%s at %s (%s)", src, m.Guest, mode)
	if m.Writable && m.Repository() {
		line += ", a git repository: its history stays writable (HEAD, refs, objects: the sandbox may add or rewrite commits), its configuration and hooks do not"
	}
	if m.Writable && len(m.Implants) > 0 {
		line += ", may change the protected paths " + strings.Join(m.Implants, ", ")
		for _, p := range m.Implants {
			found = append(found, shellcmd.Finding{Given: filepath.Join(m.Host, p), Kind: shellcmd.DangerImplant,
				What: "a protected path the sandbox may change (code the host may run later)"})
		}
	}
	return line, found
}
