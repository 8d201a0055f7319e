// Package job holds what the three executors (runtime/shell, runtime/wasm,
// runtime/docker) share: the limits a run is held to, the mounts it sees,
// the streams it writes to, and the Result it ends with.
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
	"strings"
	"time"
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
type Mount struct {
	Host     string `json:"host"`
	Guest    string `json:"guest"`
	Writable bool   `json:"rw,omitempty"`
}

// ParseMount reads HOST:GUEST[:ro|rw] as the --mount flag takes it. The
// default mode is ro. It does not check that HOST exists.
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
			return Mount{}, fmt.Errorf("mount %q: mode %q: want ro or rw", s, parts[2])
		}
	default:
		return Mount{}, fmt.Errorf("mount %q: want HOST:GUEST[:ro|rw]", s)
	}
	m.Host, m.Guest = parts[0], parts[1]
	if m.Host == "" || m.Guest == "" {
		return Mount{}, fmt.Errorf("mount %q: want HOST:GUEST[:ro|rw], both paths non-empty", s)
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
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Result is how a run ended.
type Result struct {
	Reason   Reason        `json:"reason"`
	ExitCode int           `json:"exit_code"` // the program's code; TimeoutExit or KilledExitCode when ccrun stopped it
	Stdout   []byte        `json:"-"`         // captured, at most Limits.Output bytes
	Stderr   []byte        `json:"-"`         // captured, at most Limits.Output bytes
	Duration time.Duration `json:"duration_ns"`
	// Truncated is set when either stream went past Limits.Output.
	Truncated bool `json:"truncated,omitempty"`
	// Detail says more about an abnormal end, for a person: the trap and
	// function for a wasm trap, the OOM kill for a container.
	Detail string `json:"detail,omitempty"`
}

// OK reports whether the program exited by itself with code 0.
func (r *Result) OK() bool { return r.Reason == Exit && r.ExitCode == 0 }
