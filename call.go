package ccrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/shell"
)

// The built-in tools. A capability is a tool of its own name.
const (
	ToolRunCommand = "run_command" // Call.Command, @shell
	ToolRunWasm    = "run_wasm"    // Call.Module, @wasm
	ToolRunDocker  = "run_docker"  // Call.Image, @docker
)

// Call is one tool call. Exactly one of Command, Capability, Module and
// Image names what runs.
type Call struct {
	Command    string // a shell command, run on the host by run_command
	Capability string // the name of a capability under .ccrun/capabilities/
	Module     string // a .wasm file, run by run_wasm
	Image      string // a container image, run by run_docker
	// Tool names a library tool given to New with WithTool; its input is
	// Input (libtools.go).
	Tool string

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
	// Mounts add host directories (@wasm, @docker); read-only unless rw.
	Mounts []job.Mount
	// Env adds KEY=VALUE variables, given explicitly to the tool.
	Env []string
	// Limits override the capability's and the executor's defaults, field
	// by field (zero: keep).
	Limits job.Limits
	// Network loosens a run_docker call's network ("" or "none": none).
	Network string
	// Pull is the @docker pull policy: "missing" (the default), "never" or
	// "always".
	Pull string
	// Directive narrows this call (read-only, plan-only…).
	Directive permission.Directive

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// The limits of Call.Input: in the environment, and at all.
const (
	maxInputEnv = 64 << 10
	maxInput    = 64 << 20
)

// Invocation is a call made ready for an executor: what runs, where, with
// what. Executors must not change it.
type Invocation struct {
	Environment ceiling.Environment
	Tool        string
	// Command is the parsed shell command (@shell): the same parse tree
	// the key came from.
	Command *permission.Command
	// Capability is set when the call runs a capability.
	Capability *capabilities.Capability
	Module     []byte            // @wasm: the module's bytes
	ModuleSum  [sha256.Size]byte // @wasm: sha256 of Module
	ModuleName string            // @wasm: argv[0]
	Image      string            // @docker
	Args       []string
	Dir        string // working directory: on the host (@shell) or in the container (@docker)
	Env        []string
	Mounts     []job.Mount
	Limits     job.Limits
	Network    string
	Pull       string
	Pool       bool
	Streams    job.Streams
	// Guard (@shell) enforces the gate's decision where the command runs:
	// every program and every file the script opens is checked (see
	// internal/guard). Set by Exec once the gate has allowed the call; an
	// Executor of @shell must pass it on.
	Guard *shell.Guard
	// Confine (@shell), when set, runs the command under the kernel's
	// confinement (Landlock): set by Exec for a command nobody approved as
	// such (see shellConfinement).
	Confine *shell.Confinement

	lib *libCall // the library tool the call runs, with its input (libtools.go); nil otherwise
}

// prepare validates c and builds the gate's request and the invocation.
func (r *Runtime) prepare(c *Call) (*permission.Request, *Invocation, error) {
	n := 0
	for _, s := range []string{c.Command, c.Capability, c.Module, c.Image, c.Tool} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return nil, nil, fmt.Errorf("call: want exactly one of a command, a capability, a module, an image or a library tool, got %d: %w", n, ErrInvalidCall)
	}
	for _, kv := range c.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("call: env %q: want KEY=VALUE: %w", kv, ErrInvalidCall)
		}
		if strings.HasPrefix(k, "CCRUN_") {
			return nil, nil, fmt.Errorf("call: env %s: CCRUN_* variables are set by ccrun itself: %w", k, ErrInvalidCall)
		}
	}
	mounts, err := r.absMounts(c.Mounts)
	if err != nil {
		return nil, nil, err
	}
	inv := &Invocation{
		Args:    append([]string(nil), c.Args...),
		Env:     append([]string(nil), c.Env...),
		Mounts:  mounts,
		Limits:  c.Limits,
		Network: c.Network,
		Pull:    c.Pull,
		Streams: job.Streams{Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr},
	}
	req := &permission.Request{Directive: c.Directive, Class: permission.ClassExec,
		Env: append([]string(nil), c.Env...), Args: append([]string(nil), c.Args...), Stdin: stdinSource(c.Stdin)}
	if len(c.Input) > 0 {
		if !json.Valid(c.Input) {
			return nil, nil, fmt.Errorf("call: input is not valid JSON: %w", ErrInvalidCall)
		}
		switch n := len(c.Input); {
		case n > maxInput:
			return nil, nil, fmt.Errorf("call: input of %d bytes: past the limit of %d bytes (64 MiB): %w", n, maxInput, ErrInvalidCall)
		case n <= maxInputEnv:
			inv.Env = append(inv.Env, "CCRUN_INPUT="+string(c.Input))
		case inv.Streams.Stdin != nil:
			return nil, nil, fmt.Errorf("call: input of %d bytes: past what CCRUN_INPUT carries (%d bytes), so it goes on stdin, but the call gives stdin of its own: %w", n, maxInputEnv, ErrInvalidCall)
		}
		if inv.Streams.Stdin == nil {
			inv.Streams.Stdin = bytes.NewReader(c.Input)
		}
	}
	if c.Pull != "" && (c.Command != "" || c.Module != "" || c.Tool != "") {
		return nil, nil, fmt.Errorf("call: a pull policy applies to @docker only: %w", ErrInvalidCall)
	}
	switch {
	case c.Command != "":
		if strings.TrimSpace(c.Command) == "" {
			return nil, nil, fmt.Errorf("call: the command is empty: %w", ErrInvalidCall)
		}
		if len(c.Mounts) > 0 {
			return nil, nil, fmt.Errorf("call: mounts do not apply to @shell (it sees the whole host): %w", ErrInvalidCall)
		}
		if c.Limits.Memory != 0 || c.Limits.Pids != 0 || c.Limits.CPUs != 0 {
			return nil, nil, fmt.Errorf("call: memory, pids and cpus limits do not apply to @shell (the host does not enforce them): %w", ErrInvalidCall)
		}
		cmd := permission.ParseCommand(c.Command)
		if cmd.File == nil {
			return nil, nil, fmt.Errorf("call: the command does not parse as a shell command, so it cannot run: %s: %w", permission.Escape(c.Command), ErrInvalidCall)
		}
		inv.Environment, inv.Tool, inv.Command, inv.Dir = ceiling.Shell, ToolRunCommand, cmd, r.dir
		req.Tool, req.Command, req.Display, req.Dir = ToolRunCommand, cmd, c.Command, r.dir
		req.Permission = permission.Ask(cmd.Key)
		if len(c.Args) > 0 || len(c.Env) > 0 {
			// A grant kept for the session covers these arguments and this
			// environment, not any: they are part of what the person saw.
			req.Digest = contentDigest([]byte(c.Command), nil, "", c.Args, c.Env)
		}
	case c.Tool != "":
		if err := r.prepareTool(c, req, inv); err != nil {
			return nil, nil, err
		}
	case c.Capability != "":
		if err := r.prepareCapability(c, req, inv); err != nil {
			return nil, nil, err
		}
	case c.Module != "":
		path := c.Module
		if !filepath.IsAbs(path) {
			path = filepath.Join(r.dir, path)
		}
		mod, sum, err := r.modules.read(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("call: module: %w: %w", err, ErrNotFound)
		} else if err != nil {
			return nil, nil, fmt.Errorf("call: module: %w", err)
		}
		if err := r.modules.check(mod, sum); err != nil {
			// refused before anyone is asked: a grant for it would be a grant for nothing
			return nil, nil, fmt.Errorf("call: module %s: %w", r.rel(path), err)
		}
		inv.Environment, inv.Tool, inv.Module, inv.ModuleName = ceiling.Wasm, ToolRunWasm, mod, filepath.Base(path)
		inv.ModuleSum = sum
		req.Tool = ToolRunWasm
		req.Permission = permission.Ask(pathKey(ToolRunWasm, r.rel(path)))
		req.Digest = contentDigest(inv.ModuleSum[:], mounts, "", nil, nil)
		req.Display = strings.Join(append([]string{r.rel(path)}, c.Args...), " ")
	case c.Image != "":
		if m := c.Limits.Memory; m > 0 && m < job.MinMemory {
			// refused before the engine is reached or anyone is asked
			return nil, nil, fmt.Errorf("call: memory limit %d bytes is below the %d bytes a container needs to start: %w", m, job.MinMemory, ErrInvalidCall)
		}
		inv.Environment, inv.Tool, inv.Image = ceiling.Docker, ToolRunDocker, c.Image
		req.Tool = ToolRunDocker
		req.Permission = permission.Ask(imageKey(c.Image))
		req.Digest = contentDigest([]byte(c.Image), mounts, c.Network, nil, nil)
		req.Display = strings.Join(append([]string{c.Image}, c.Args...), " ")
		if c.Network != "" && c.Network != "none" {
			req.Class = permission.ClassNetwork
		}
	}
	req.Environment = inv.Environment
	home, _ := os.UserHomeDir()
	for _, m := range inv.Mounts {
		line, found := describeMount(m, home)
		req.Mounts = append(req.Mounts, line)
		req.Dangerous = append(req.Dangerous, found...)
		req.Paths = append(req.Paths, m.Host)
		if m.Writable && c.Capability == "" {
			req.Loosens = append(req.Loosens, "writable mount "+m.String())
		}
	}
	if c.Network != "" && c.Network != "none" {
		req.Loosens = append(req.Loosens, "network: "+c.Network)
	}
	return req, inv, nil
}

func (r *Runtime) prepareCapability(c *Call, req *permission.Request, inv *Invocation) error {
	capa, err := capabilities.Find(r.dir, c.Capability)
	if err != nil {
		return err
	}
	input := c.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if err := capa.ValidateInput(input); err != nil {
		return err
	}
	m := &capa.Manifest
	t := capa.Tool()
	mounts, err := capa.Mounts()
	if err != nil {
		return err
	}
	inv.Environment, inv.Tool, inv.Capability = m.Environment, m.Name, capa
	inv.Mounts = append(mounts, inv.Mounts...)
	inv.Limits = overlay(m.Limits.Job(), c.Limits)
	inv.Pool = m.Pool
	if m.Network != "" && c.Network == "" {
		inv.Network = string(m.Network)
	}
	env := make([]string, 0, len(m.Env)+1)
	for k, v := range m.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	inv.Env = append(env, inv.Env...)
	req.Tool, req.Class, req.Digest = m.Name, t.Class, capa.Digest
	req.Permission = permission.Ask(capa.Key())
	req.Loosens = append(req.Loosens, m.Loosens()...)
	switch m.Environment {
	case ceiling.Shell:
		cmd := permission.ParseCommand(m.Entry.Command)
		if cmd.File == nil {
			return fmt.Errorf("capability %s: entry command does not parse: %w", m.Name, capabilities.ErrInvalidManifest)
		}
		inv.Command = cmd
		inv.Dir = capa.Project
		if m.Entry.Workdir != "" {
			inv.Dir = filepath.Join(capa.Project, m.Entry.Workdir)
		}
		// The capability's own files come first on PATH, so its entry can name
		// them with a literal program word (run.sh) that the policy can read.
		path := os.Getenv("PATH")
		if v, ok := m.Env["PATH"]; ok { // the manifest's own PATH, shown when approved
			path = v
		}
		if path == "" {
			path = shell.DefaultPath
		}
		inv.Env = append(inv.Env, "CCRUN_CAPABILITY_DIR="+capa.Dir, "PATH="+capa.Dir+string(os.PathListSeparator)+path)
		req.Command = cmd
		req.Display = m.Entry.Command
	case ceiling.Wasm:
		// The bytes that run are the bytes of the digest the gate sees.
		mod, err := capa.ReadModule()
		if err != nil {
			return err
		}
		sum := sha256.Sum256(mod)
		if err := r.modules.check(mod, sum); err != nil {
			return fmt.Errorf("capability %s: module %s: %w", m.Name, m.Entry.Module, err)
		}
		inv.Module, inv.ModuleName, inv.ModuleSum = mod, m.Entry.Module, sum
		inv.Args = append(append([]string(nil), m.Entry.Args...), inv.Args...)
		req.Display = strings.Join(append([]string{m.Entry.Module}, inv.Args...), " ")
	case ceiling.Docker:
		inv.Image, inv.Dir = m.Entry.Image, m.Entry.Workdir
		inv.Args = append(append([]string(nil), m.Entry.Argv...), inv.Args...)
		req.Display = strings.Join(append([]string{m.Entry.Image}, inv.Args...), " ")
	}
	if len(c.Input) > 0 {
		req.Display += "\ninput: " + string(c.Input)
	}
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
func (r *Runtime) rel(path string) string {
	if rel, err := filepath.Rel(r.dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

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

// pathKey keys a file the call runs: tool:path (quoted, and so exact, when
// the path is not plain).
func pathKey(tool, path string) permission.Key {
	k := permission.Key{Tool: tool, Action: filepath.ToSlash(path)}
	if !k.Valid() {
		k.Exact = true
	}
	return k
}

// imageKey keys an image as run_docker:NAME[:TAG], so run_docker:NAME:* and
// run_docker:NAME cover every tag of NAME.
func imageKey(image string) permission.Key {
	k := permission.Key{Tool: ToolRunDocker, Action: image}
	if i := strings.LastIndexByte(image, ':'); i > 0 && !strings.Contains(image[i:], "/") {
		k.Action, k.Detail = image[:i], image[i+1:]
	}
	if !k.Valid() || (k.Detail != "" && !(permission.Key{Tool: "t", Action: k.Detail}).Valid()) {
		k = permission.Key{Tool: ToolRunDocker, Action: image, Exact: true}
	}
	return k
}

// contentDigest binds an ad-hoc grant to what runs (the content, or its
// sha256), what it may reach, and, for @shell, the arguments and
// environment it is given. A sandboxed tool's grant covers any arguments
// (they cannot reach past the sandbox), and the prompt says so; a shell
// grant covers only what the person saw.
func contentDigest(content []byte, mounts []job.Mount, network string, args, env []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "content %d\n", len(content))
	h.Write(content)
	for _, m := range mounts {
		fmt.Fprintf(h, "\nmount %q", m.String())
	}
	fmt.Fprintf(h, "\nnetwork %q", network)
	for _, a := range args {
		fmt.Fprintf(h, "\narg %q", a)
	}
	for _, e := range env {
		fmt.Fprintf(h, "\nenv %q", e)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
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
func describeMount(m job.Mount, home string) (string, []permission.Finding) {
	mode := "ro"
	if m.Writable {
		mode = "rw"
	}
	var found []permission.Finding
	src := m.Host
	real, dangerous, err := m.Dangerous(home)
	switch {
	case err != nil:
		src += " (" + err.Error() + ")"
	case real != filepath.Clean(m.Host):
		src += " → " + real
	}
	if dangerous {
		found = append(found, permission.Finding{Given: m.Host, Resolved: real, Kind: permission.DangerLeak,
			What: "a mount that holds the home directory or the system's keys and credentials"})
	}
	line := fmt.Sprintf("%s at %s (%s)", src, m.Guest, mode)
	if m.Writable && len(m.Implants) > 0 {
		line += ", may change the protected paths " + strings.Join(m.Implants, ", ")
		for _, p := range m.Implants {
			found = append(found, permission.Finding{Given: filepath.Join(m.Host, p), Kind: permission.DangerImplant,
				What: "a protected path the sandbox may change (code the host may run later)"})
		}
	}
	return line, found
}
