// Package capabilities reads, checks and digests ccrun capabilities: tools
// an agent defines as a directory .ccrun/capabilities/<name>/ holding a
// capability.json manifest and its artifact (a script, a .wasm module, the
// reference to an image, or the target of an environment a Go program
// registered, which its backend reads).
//
// A manifest is checked against the JSON Schema the project publishes
// (capability.schema.json, returned by Schema), then by rules no schema
// can say: paths stay inside the capability's directory or the project,
// the name equals the directory's, the parameters are themselves a valid
// schema. Every problem is reported, each naming the file, the line and
// column and the field (a JSON pointer such as /limits/memory); a manifest
// is only ever read, never rewritten.
//
// A Capability carries a Digest over its manifest and every file of its
// directory. The gate binds a project grant to it, so a capability that
// changed since it was approved is asked about again. The digest is
// sha256:<hex> of a versioned header followed by one record per entry of
// the directory, in order of relative path: a kind (directory, file,
// executable file, symbolic link), the path, and the contents or the
// link's text, each length-prefixed, so that no two trees share a digest.
// A link leading outside the directory, a FIFO, a socket or a device makes
// the capability invalid. Verify and ReadModule check, right before a run,
// that the files are still those of the digest.
//
// Errors come in classes (ErrInvalidManifest, ErrNotFound, ErrInvalidInput,
// ErrChanged, ErrInvalidArgument), tested with errors.Is. A manifest's
// problems are listed in a *ManifestError, one *FieldError each, written
//
//	.ccrun/capabilities/fmt-json/capability.json:7:14: /limits/memory: size "64XB": want …
//
// This package knows nothing of executors: it turns a directory into plain
// data (a Manifest, a Tool, a permission key) that the root package wires
// to one. Loaded values are read-only and safe for concurrent use.
package capabilities

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/runtime/job"
)

// ManifestFile is the manifest's name inside a capability's directory.
const ManifestFile = "capability.json"

// MaxManifestSize is the most of a capability.json that is read: 1 MiB.
// A larger file is an error, not truncated.
const MaxManifestSize = 1 << 20

// Network is a @docker capability's network: none (the default), bridge
// or host. Anything but none loosens the sandbox.
type Network string

// The networks a manifest may name.
const (
	NetworkNone   Network = "none"
	NetworkBridge Network = "bridge"
	NetworkHost   Network = "host"
)

// Manifest is a capability.json. Fields are as the schema describes them;
// Parse and Load fill it only from a manifest that passed every check.
type Manifest struct {
	Schema      string              `json:"$schema,omitempty"` // for editors; ignored
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Environment ceiling.Environment `json:"environment"`
	Entry       Entry               `json:"entry"`
	// Parameters is the JSON Schema of the call's input. Empty means
	// {"type": "object"} (see ParametersOrDefault).
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Mounts are host directories the tool sees (@wasm, @docker only).
	// Host is relative to the project root; read-only unless Writable.
	Mounts []job.Mount `json:"mounts,omitempty"`
	// Limits bound a run; a zero field takes the executor's default.
	Limits Limits `json:"limits,omitzero"`
	// Env is the environment given to the tool, on top of what the
	// executor itself passes (nothing, for @wasm and @docker).
	Env map[string]string `json:"env,omitempty"`
	// Network is @docker's network; "" means NetworkNone.
	Network Network `json:"network,omitempty"`
	// Pool asks for pre-created, single-use containers (@docker only).
	Pool bool `json:"pool,omitempty"`
	// Hosts limits a @shell or @docker capability's network to named
	// hosts, through ccrun's egress proxy; nil: the network the settings
	// give (@docker: Network, unless the settings name hosts). A @docker
	// manifest with Hosts keeps Network none.
	Hosts *Hosts `json:"hosts,omitempty"`
}

// Hosts is a manifest's "hosts": {"allow": [...], "deny": [...]}, entries
// as in the settings' "network" member (HOST, *.DOMAIN, HOST:PORT, an IP
// literal): the hosts the tool may reach, on top of those the settings
// allow, and those it may not. Being in the manifest, they are in its
// digest: changing them asks again.
type Hosts struct {
	Allow []string `json:"allow,omitempty"` // the hosts the tool may reach besides the settings'
	Deny  []string `json:"deny,omitempty"`  // the hosts it may not reach
}

// Entry says what runs. Which fields apply depends on the environment:
//
//   - @shell: Command, a shell command run from the project root (or
//     Workdir, relative to it), with the capability's directory first on
//     PATH (so "run.sh" runs the capability's own script) and
//     CCRUN_CAPABILITY_DIR set to it. A literal program word keeps the
//     policy's view of the command precise.
//   - @wasm: Module, the .wasm file relative to the capability's directory,
//     and Args, given after the module's name and before the call's own.
//   - @docker: Image, and Argv (written "command": [...] in JSON) to run in
//     it, in Workdir (an absolute path in the container) when set.
//   - an environment a Go program adds (ccrun.WithBackend): Target, what runs as the environment's backend
//     reads the target of an ad-hoc call (ccrun passes it on unread), and
//     Args, given before the call's own. A relative path in Target is the
//     backend's to resolve; the grant is bound to the capability's
//     directory (Digest), so what Target names outside it is bound only if
//     the backend binds it.
type Entry struct {
	Module  string
	Args    []string
	Command string
	Argv    []string
	Image   string
	Workdir string
	Target  string
}

type entryJSON struct {
	Module  string          `json:"module,omitempty"`
	Args    []string        `json:"args,omitempty"`
	Command json.RawMessage `json:"command,omitempty"`
	Image   string          `json:"image,omitempty"`
	Workdir string          `json:"workdir,omitempty"`
	Target  string          `json:"target,omitempty"`
}

// UnmarshalJSON reads "command" as Command when it is a string and as Argv
// when it is an array.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Entry{Module: j.Module, Args: j.Args, Image: j.Image, Workdir: j.Workdir, Target: j.Target}
	if len(j.Command) > 0 {
		if j.Command[0] == '[' {
			return json.Unmarshal(j.Command, &e.Argv)
		}
		return json.Unmarshal(j.Command, &e.Command)
	}
	return nil
}

// MarshalJSON writes Command or Argv as "command".
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Module: e.Module, Args: e.Args, Image: e.Image, Workdir: e.Workdir, Target: e.Target}
	var err error
	switch {
	case e.Argv != nil:
		j.Command, err = json.Marshal(e.Argv)
	case e.Command != "":
		j.Command, err = json.Marshal(e.Command)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// Limits are a manifest's bounds. A zero field takes the executor's default
// (job.Limits.WithDefaults); a manifest cannot ask for no limit.
type Limits struct {
	Timeout Duration `json:"timeout,omitzero"` // wall clock, a Go duration ("30s")
	Memory  Size     `json:"memory,omitzero"`  // bytes, "64MiB" (@wasm, @docker)
	Output  Size     `json:"output,omitzero"`  // bytes per stream (stdout, stderr)
	Pids    int64    `json:"pids,omitempty"`   // processes (@docker)
	CPUs    float64  `json:"cpus,omitempty"`   // cores (@docker)
}

// Job returns l as the executors take it. Zero fields stay zero, so that
// the executor applies its defaults.
func (l Limits) Job() job.Limits {
	return job.Limits{
		Timeout: time.Duration(l.Timeout),
		Memory:  int64(l.Memory),
		Output:  int64(l.Output),
		Pids:    l.Pids,
		CPUs:    l.CPUs,
	}
}

// ParametersOrDefault returns Parameters, or {"type":"object"} when empty.
func (m *Manifest) ParametersOrDefault() json.RawMessage {
	if len(m.Parameters) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return m.Parameters
}

// NetworkOrDefault returns Network, or NetworkNone when empty.
func (m *Manifest) NetworkOrDefault() Network {
	if m.Network == "" {
		return NetworkNone
	}
	return m.Network
}

// Loosens lists, for the person asked to approve, what the manifest loosens
// from its sandbox's defaults: every mount (the default is no host file at
// all; rw ones can change files), a network other than none, limits above
// the defaults, and for @shell (and an environment a Go program
// registered, which may run on the host) the variables in Env that change
// what a program runs (LD_PRELOAD, BASH_ENV, PATH, …). Values are escaped. nil
// means nothing is loosened.
func (m *Manifest) Loosens() []string {
	var out []string
	for _, mt := range m.Mounts {
		if mt.Writable {
			out = append(out, fmt.Sprintf("mount rw: %s -> %s (the tool can change these files)", show(mt.Host), show(mt.Guest)))
			for _, p := range mt.Implants {
				out = append(out, fmt.Sprintf("mount rw: %s -> %s may change the protected path %s (code the host may run later; only once can allow it)",
					show(mt.Host), show(mt.Guest), show(p)))
			}
		} else {
			out = append(out, fmt.Sprintf("mount ro: %s -> %s (the tool can read these files)", show(mt.Host), show(mt.Guest)))
		}
	}
	if n := m.NetworkOrDefault(); n != NetworkNone {
		out = append(out, fmt.Sprintf("network: %s (the tool can reach the network)", show(string(n))))
	}
	if h := m.Hosts; h != nil {
		out = append(out, hostsLines(h)...)
	}
	l := m.Limits
	if d := time.Duration(l.Timeout); d > job.DefaultTimeout {
		out = append(out, fmt.Sprintf("limits.timeout: %s (default %s)", d, job.DefaultTimeout))
	}
	if l.Memory > job.DefaultMemory {
		out = append(out, fmt.Sprintf("limits.memory: %s (default %s)", FormatSize(int64(l.Memory)), FormatSize(job.DefaultMemory)))
	}
	if l.Output > job.DefaultOutput {
		out = append(out, fmt.Sprintf("limits.output: %s (default %s)", FormatSize(int64(l.Output)), FormatSize(job.DefaultOutput)))
	}
	if l.Pids > job.DefaultPids {
		out = append(out, fmt.Sprintf("limits.pids: %d (default %d)", l.Pids, job.DefaultPids))
	}
	if l.CPUs > job.DefaultCPUs {
		out = append(out, fmt.Sprintf("limits.cpus: %g (default %g)", l.CPUs, job.DefaultCPUs))
	}
	if !m.Environment.Sandboxed() {
		names := make([]string, 0, len(m.Env))
		for k := range m.Env {
			if changesWhatRuns(k) {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		for _, k := range names {
			out = append(out, fmt.Sprintf("env %s=%s (changes what programs run)", show(k), show(m.Env[k])))
		}
	}
	return out
}

// changesWhatRuns reports whether a variable can make a program run other
// code than it would: the dynamic loader's, the shells' start-up files,
// the search path.
func changesWhatRuns(name string) bool {
	switch name {
	case "PATH", "BASH_ENV", "ENV", "IFS", "PS4", "SHELLOPTS", "BASHOPTS", "CDPATH", "GCONV_PATH",
		"PYTHONPATH", "PYTHONSTARTUP", "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS",
		"GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL", "PROMPT_COMMAND":
		return true
	}
	return strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_") || strings.HasPrefix(name, "BASH_FUNC_")
}

// show returns s as is when it is plain printable ASCII without spaces or
// quotes, and Go-quoted (ASCII only) otherwise.
func show(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.QuoteToASCII(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// localPath checks that p is a relative, slash-separated path that stays
// where it starts: not absolute, no "..", no backslash, no NUL. It returns
// the cleaned path.
func localPath(p string) (string, string) {
	switch {
	case p == "":
		return "", "empty path"
	case strings.ContainsRune(p, 0):
		return "", "path contains a NUL byte"
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", "absolute path; want a path relative to its base, inside it"
	case strings.ContainsRune(p, '\\'):
		return "", "backslash in path; want / as separator"
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", `".." in path; want a path that stays inside its base`
		}
	}
	c := path.Clean(p)
	if c == "." {
		return ".", ""
	}
	return c, ""
}

// guestPath checks an absolute path inside a sandbox.
func guestPath(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "want an absolute path"
	case strings.ContainsRune(p, 0):
		return "path contains a NUL byte"
	case strings.ContainsRune(p, ':'):
		return "':' in a guest path is not allowed (it separates fields of --mount)"
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." || el == "." {
			return fmt.Sprintf("%q in path; want a clean absolute path", el)
		}
	}
	if path.Clean(p) != p {
		return fmt.Sprintf("want the clean form %s", show(path.Clean(p)))
	}
	return ""
}

// hostsLines is what a manifest's hosts show when asking.
func hostsLines(h *Hosts) []string {
	quote := func(list []string) string {
		out := make([]string, len(list))
		for i, e := range list {
			out[i] = show(e)
		}
		return strings.Join(out, ", ")
	}
	var out []string
	if len(h.Allow) > 0 {
		out = append(out, fmt.Sprintf("network: may reach %s (through ccrun's proxy; no other host unless the settings allow it)", quote(h.Allow)))
	} else {
		out = append(out, "network: only the hosts the settings allow (through ccrun's proxy)")
	}
	if len(h.Deny) > 0 {
		out = append(out, fmt.Sprintf("network: never %s", quote(h.Deny)))
	}
	return out
}
