// Package job holds what the executors (runtime/shell, runtime/wasm,
// runtime/docker, runtime/kube) share: the limits a run is held to, the
// mounts it sees, the streams it writes to, the Supervisor that runs it to
// its end (start, wait, stop, drain, classify), and the Result it ends with.
//
// A non-zero exit of the program that ran is not an error: it is a Result
// with Reason Exit and that ExitCode. An executor returns an error only when
// it could not run the program at all (bad module, missing image, no daemon).
//
// Types here are plain values; an *Output is safe for concurrent writes.
package job

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/sensitive"
)

// Reason says why a run ended.
type Reason string

// The reasons a run ends.
const (
	Exit      Reason = "exit"      // the program exited by itself; see ExitCode
	Timeout   Reason = "timeout"   // Limits.Timeout ran out; the program was killed
	Memory    Reason = "memory"    // the program went past Limits.Memory
	OutputCap Reason = "output"    // the program wrote more than Limits.Output; it was stopped
	Cancelled Reason = "cancelled" // the caller's context was cancelled; the program was killed
	Refused   Reason = "refused"   // a check where the program runs refused a step (exit RefusedExit); see Detail
)

// Defaults for Limits fields left at zero. Each executor applies them.
const (
	DefaultTimeout = 10 * time.Minute // long enough for a build, short enough that a hang ends
	DefaultMemory  = 256 << 20        // 256 MiB: generous for a tool, far from the host's size
	DefaultOutput  = 4 << 20          // 4 MiB per stream: more than an agent can read anyway
	DefaultPids    = 256              // room for a build, none for a fork bomb
	DefaultCPUs    = 1.0              // one core of the host's two
	MinMemory      = 6 << 20          // below this no container runtime starts reliably
	KilledExitCode = 137              // the exit code reported for a killed program (128+SIGKILL)
	TimeoutExit    = 124              // the exit code reported on timeout, as timeout(1) does
	RefusedExit    = 77               // the exit code reported when a step was refused where it runs (EX_NOPERM)
)

// Limits bound a run. A zero field means the default named beside it; a
// negative Timeout or Output means no limit (for trusted callers only).
type Limits struct {
	Timeout time.Duration // wall clock; default DefaultTimeout
	Memory  int64         // bytes; default DefaultMemory (not enforced by runtime/shell)
	Output  int64         // bytes per stream (stdout, stderr); default DefaultOutput
	Pids    int64         // processes (runtime/docker only); default DefaultPids
	CPUs    float64       // cores (runtime/docker only); default DefaultCPUs
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Output == 0 {
		l.Output = DefaultOutput
	}
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.CPUs == 0 {
		l.CPUs = DefaultCPUs
	}
	return l
}

// Mount makes a host directory visible to a sandboxed program at Guest.
// It is read-only unless Writable is set.
//
// Under a writable mount the paths of the dangerous-path table
// (internal/sensitive: .git/hooks, .git/config, .envrc, ccrun.local.json,
// .ccrun/, editor settings, keys...) stay read-only, at any depth, unless
// Implants names them: the sandbox cannot plant what the host runs later.
type Mount struct {
	Host     string `json:"host"`         // the host directory
	Guest    string `json:"guest"`        // the absolute path the run sees it at
	Writable bool   `json:"rw,omitempty"` // the run may write there; default read-only
	// Implants are the protected paths, relative to Host and slash-
	// separated (".git/hooks", "sub/.envrc"), that a writable mount may
	// change all the same: each and everything under it. Default none. A
	// manifest names them explicitly; the prompt shows them and offers
	// only Once.
	Implants []string `json:"implants,omitempty"`
}

// CheckImplants refuses an Implants entry that is empty, absolute, not
// clean, climbs with "..", or names no protected path: ErrInvalidMount.
func (m Mount) CheckImplants() error {
	for _, p := range m.Implants {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
			return fmt.Errorf("mount %s: implant %q: want a clean relative path: %w", m, p, ErrInvalidMount)
		}
		if _, ok := sensitive.Under(p); !ok {
			return fmt.Errorf("mount %s: implant %q is not a protected path: %w", m, p, ErrInvalidMount)
		}
	}
	return nil
}

// ErrInvalidMount is the class of a Mount that cannot be used as given.
var ErrInvalidMount = errdefs.ErrInvalidArgument.WithMessage("invalid mount")

// Protected reports whether rel, a path relative to Host and slash-
// separated, is one a sandbox may not change through a writable m: a row
// of the dangerous-path table covers it, at any depth, and Implants does
// not name it or a directory above it. The row says why.
func (m Mount) Protected(rel string) (sensitive.Row, bool) {
	rel = strings.Trim(path.Clean("/"+rel), "/")
	row, ok := sensitive.Under(rel)
	return m.exempt(rel, row, ok)
}

// ProtectedIn is Protected with git's view of the tree fsys (the mount's
// source, or what it will hold): rel is protected too when git reads it as
// configuration or code by what the tree holds (sensitive.Git: a .git that
// is not a directory, the config or hooks of a directory git takes for a
// repository under any name, the entry that would make one). Implants
// exempt it as they exempt a row. What a sandbox may not change through a
// writable m: the @wasm guard, the @docker sweep and the Kubernetes
// copy-back ask it.
func (m Mount) ProtectedIn(fsys sensitive.FS, rel string) (sensitive.Row, bool) {
	rel = strings.Trim(path.Clean("/"+rel), "/")
	row, ok := sensitive.Under(rel)
	if !ok && rel != "" {
		row, ok = sensitive.Git(fsys, rel)
	}
	return m.exempt(rel, row, ok)
}

// exempt returns row, ok unless Implants names rel or a directory above
// it.
func (m Mount) exempt(rel string, row sensitive.Row, ok bool) (sensitive.Row, bool) {
	if !ok {
		return sensitive.Row{}, false
	}
	for _, p := range m.Implants {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return sensitive.Row{}, false
		}
	}
	return row, true
}

// Repository reports whether the mount's source is a git repository's
// working tree (it holds .git) or a repository itself (sensitive.GitDir):
// a writable mount of it lets a sandbox change the repository's history
// (HEAD, refs, objects), though not git's configuration or hooks
// (ProtectedIn). The prompt says so.
func (m Mount) Repository() bool {
	root, err := os.OpenRoot(m.Host)
	if err != nil {
		return false
	}
	defer root.Close()
	if _, err := root.Lstat(".git"); err == nil {
		return true
	}
	return sensitive.GitDir(root, ".")
}

// Resolved returns Host made absolute with every symbolic link resolved:
// the directory the sandbox really sees, for the prompt.
func (m Mount) Resolved() (string, error) {
	abs, err := filepath.Abs(m.Host)
	if err != nil {
		return "", fmt.Errorf("mount %s: %w", m, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("mount %s: %w", m, err)
	}
	return real, nil
}

// Dangerous reports whether the mount's resolved source holds the
// home-anchored or absolute locations of the dangerous-path table: it is
// home, an ancestor of home, / or /etc (sensitive.Contains). Such a mount
// hands the sandbox keys and credentials: the gate asks, Once only. The
// resolved source is returned for the prompt.
func (m Mount) Dangerous(home string) (real string, dangerous bool, err error) {
	real, err = m.Resolved()
	if err != nil {
		return "", false, err
	}
	if home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
	}
	return real, sensitive.Contains(filepath.ToSlash(real), filepath.ToSlash(home)), nil
}

// ParseMount reads HOST:GUEST[:ro|rw] as the --mount flag takes it. The
// default mode is ro. It does not check that HOST exists. An error names
// s; the caller says where s was written (a flag, a tool's argument).
func ParseMount(s string) (Mount, error) {
	parts := strings.Split(s, ":")
	var m Mount
	switch len(parts) {
	case 2:
	case 3:
		switch parts[2] {
		case "ro":
		case "rw":
			m.Writable = true
		default:
			return Mount{}, fmt.Errorf("%q: mode %q: want ro or rw", s, parts[2])
		}
	default:
		return Mount{}, fmt.Errorf("%q: want HOST:GUEST[:ro|rw]", s)
	}
	m.Host, m.Guest = parts[0], parts[1]
	if m.Host == "" || m.Guest == "" {
		return Mount{}, fmt.Errorf("%q: want HOST:GUEST[:ro|rw], both paths non-empty", s)
	}
	return m, nil
}

// String writes m back in the form ParseMount reads.
func (m Mount) String() string {
	mode := "ro"
	if m.Writable {
		mode = "rw"
	}
	return m.Host + ":" + m.Guest + ":" + mode
}

// Streams is where a run reads its input and streams its output. Nil fields
// mean: no input (an empty stdin), output only kept in the Result.
type Streams struct {
	Stdin  io.Reader // the run's standard input
	Stdout io.Writer // where its output is copied as it comes
	Stderr io.Writer // where its error output is copied as it comes
}

// Result is how a run ended.
type Result struct {
	Reason   Reason        `json:"reason"`      // why it ended: Exit, Timeout, Memory, OutputCap…
	ExitCode int           `json:"exit_code"`   // the program's code; TimeoutExit or KilledExitCode when ccrun stopped it
	Stdout   []byte        `json:"-"`           // captured, at most Limits.Output bytes
	Stderr   []byte        `json:"-"`           // captured, at most Limits.Output bytes
	Duration time.Duration `json:"duration_ns"` // from the start to the end of the run
	// Truncated is set when either stream went past Limits.Output.
	Truncated bool `json:"truncated,omitempty"`
	// Detail says more about an abnormal end, for a person: the trap and
	// function for a wasm trap, the OOM kill for a container.
	Detail string `json:"detail,omitempty"`
}

// OK reports whether the program exited by itself with code 0.
func (r *Result) OK() bool { return r.Reason == Exit && r.ExitCode == 0 }
