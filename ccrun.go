// Package ccrun runs the tools an AI agent calls, each in the environment
// the tool declares — @shell on the host, @wasm in wazero, @docker in a
// container — behind one permission gate whose trust ceiling depends on
// that environment.
//
// A Runtime is built once per project with New; its Exec runs one call
// through the pipeline
//
//	validating → [gate] → awaiting_approval? → scheduled → executing → success | error | cancelled
//
// publishing every transition to subscribers and appending each decision
// and execution to the project's audit log. No tool code runs before the
// gate has said yes.
//
// New runs @shell. The engines of @wasm (wazero) and @docker (the Docker
// Engine, or Kubernetes) are backends a Runtime is given, as any other
// (WithBackend): package github.com/ccrun/ccrun/engines has them, and
// ccrun.New(append(opts, engines.All()...)...) runs all three. A program
// that runs @shell alone links none of the engines' libraries.
//
// A Runtime is safe for concurrent use.
package ccrun

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/audit"
	"github.com/ccrun/ccrun/internal/projectdir"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/runtime/shell"
)

// Runtime runs calls for one project. Build it with New.
//
// A Runtime is a view of one project's state (shared): New makes the state
// and the Runtime of the agent that built it; SubAgent makes another view
// of the same state, with its own narrowing. What is the project's — the
// directory, the settings files and trust, the backends, the library
// tools, the audit log, the call ids, the subscribers — is reached only
// through the one shared value both point to, so no method of a sub-agent
// can read a state of its own that is empty: it has none. What is the
// agent's is the gate its calls pass (its policy) and its narrowing.
type Runtime struct {
	*shared
	gate   *permission.Gate // this agent's: the project's, or a sub-agent's copy with its narrowed policy
	narrow narrowing
}

// narrowing is what a Runtime's agent may do less than the agent that
// built the project's Runtime; the zero narrowing is that agent's.
type narrowing struct {
	// subAgent: a sub-agent (SubAgent) grants nothing (Grant) and releases
	// nothing (Close): the state and what it started are the parent's.
	subAgent bool
}

// shared is one project's state: what a Runtime and its sub-agents see
// alike, one value they all point to.
type shared struct {
	dir      string
	audit    *audit.Log
	envPass  []string
	bus      bus
	ids      atomic.Uint64 // call ids, for every agent of the project (nextID)
	idOnce   sync.Once     // idBase is made on the first call
	idBase   string        // random, per Runtime: ids are unique across processes
	mu       sync.Mutex
	backends map[ceiling.Environment]Backend                                // started (backend.go)
	makers   map[ceiling.Environment]func(context.Context) (Backend, error) // WithBackend and the built-in ones; fixed once New returns
	closers  []func() error
	noAudit  bool
	auditLog string
	layers   []*permission.Settings
	libs     []*libTool // WithTool (libtools.go)

	// workspace trust (config.go)
	files       []*permission.Settings // the file layers, as trust left them
	trust       TrustState
	trustDigest string
	trustDir    string
	trustDirSet bool
}

// Option configures a Runtime.
type Option func(*Runtime) error

// WithProjectDir sets the project root: where ccrun.json, .ccrun/ and the
// capabilities are, and the working directory of @shell calls. It must be
// a directory of the current user that others cannot write into
// (allowlist.CheckProjectDir). Default: the project of the current
// directory: the nearest directory upwards holding a ccrun.json, else
// git's top level (never above it), else the current directory itself.
func WithProjectDir(dir string) Option {
	return func(r *Runtime) error {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("project dir %s: %w", dir, err)
		}
		r.dir = abs
		return nil
	}
}

// WithApprover sets who answers when the gate asks. Default: nobody, so
// every ask is a deny (what a CI run wants). An approver that is also a
// permission.UnconfinedApprover may offer a person to run an approved
// @shell command once outside the workspace tier, as a choice of its own
// (permission.Decision.OfferUnconfined); any other approver's approval runs
// the command in the tier.
func WithApprover(a permission.Approver) Option {
	return func(r *Runtime) error { r.gate.Approver = a; return nil }
}

// WithSession sets the session allowlist. Default: a fresh in-memory one,
// which lasts as long as the Runtime.
func WithSession(s *allowlist.SessionAllowlist) Option {
	return func(r *Runtime) error { r.gate.Session = s; return nil }
}

// WithPolicy sets the policy layer (modes, rules). Default: the policy of
// the project's settings files, or none when they hold no policy.
func WithPolicy(p *permission.Policy) Option {
	return func(r *Runtime) error { r.gate.Policy = p; return nil }
}

// WithSettings adds settings layers (CLI flags, a session's) on top of the
// files New reads: the managed policy, the user's config, ccrun.json and
// ccrun.local.json (the project's two counting in full only when trusted,
// see TrustState). Ignored when WithPolicy is given. A flags layer that
// loosens anything while a file sets "flags": "no-loosening" makes New
// fail with ErrPermissionDenied.
func WithSettings(layers ...*permission.Settings) Option {
	return func(r *Runtime) error { r.layers = append(r.layers, layers...); return nil }
}

// WithAuditLog sets the audit log's path; "" turns the log off. Default:
// <project>/.ccrun/audit.jsonl for a project given by WithProjectDir or
// found (a directory holding ccrun.json or .git); when none is found, the
// one in $XDG_STATE_HOME/ccrun/ (~/.local/state/ccrun/ when unset): a run
// outside any project writes into no directory it was not given.
func WithAuditLog(path string) Option {
	return func(r *Runtime) error {
		r.auditLog, r.noAudit = path, path == ""
		return nil
	}
}

// WithEnvPass lets the named host variables reach @shell tools on top of
// the default list (see runtime/shell.FilterEnv), as the project's
// "env": {"pass": [...]} does. Default: none beyond the default list.
func WithEnvPass(names ...string) Option {
	return func(r *Runtime) error { r.envPass = append(r.envPass, names...); return nil }
}

// New builds a Runtime. It reads the settings files and the project's trust
// record (a malformed file is an error of class ErrInvalidConfig,
// naming file, line and column; a file or project directory of another user
// is refused) and nothing else: executors start on first use.
func New(opts ...Option) (*Runtime, error) {
	r := &Runtime{
		shared: &shared{
			backends: map[ceiling.Environment]Backend{},
			makers:   map[ceiling.Environment]func(context.Context) (Backend, error){},
		},
		gate: &permission.Gate{},
	}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	givenDir := r.dir != ""
	if !givenDir {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if r.dir, err = projectdir.Find(wd); err != nil {
			return nil, err
		}
	} else if err := allowlist.CheckProjectDir(r.dir); err != nil {
		return nil, err
	}
	if err := r.loadFiles(); err != nil {
		return nil, err
	}
	if r.gate.Policy == nil {
		// Without the kernel layer, the read-only commands whose safety
		// rests on it (git, recursive reads, file lists) are asked.
		_, noKernel := shell.ConfineAvailable()
		pol, err := permission.NewPolicy(permission.PolicyConfig{Layers: append(slices.Clip(r.files), r.layers...), ProjectDir: r.dir,
			Unconfined: noKernel != nil})
		if err != nil {
			return nil, err
		}
		r.gate.Policy = pol
	}
	if r.gate.Session == nil {
		r.gate.Session = allowlist.NewSessionAllowlist()
	}
	// A person asked about an approved @shell command may run it once
	// outside the workspace tier (UnconfinedApprover).
	r.gate.Sandboxed = r.unconfinable
	if !r.noAudit {
		if r.auditLog == "" {
			r.auditLog = defaultAuditLog(r.dir, givenDir)
		}
		r.audit = audit.Open(r.auditLog)
	}
	r.builtinBackends()
	return r, nil
}

// ProjectDir is the project root.
func (r *Runtime) ProjectDir() string { return r.dir }

// Subscribe calls f with every state transition of every call, in order,
// on the goroutine running the call: of every agent of the project, a
// sub-agent's calls as its parent's, whichever Runtime f was given to (as
// they share the audit log). It returns a function that stops it;
// f may call it from inside itself. After cancel returns, f sees no event
// published later.
func (r *Runtime) Subscribe(f func(Event)) (cancel func()) { return r.bus.subscribe(f) }

// Close releases the backends (the wasm runtime, the Docker client) and
// the audit log. A sub-agent's releases nothing: they are its parent's.
func (r *Runtime) Close() error {
	if r.narrow.subAgent {
		return nil
	}
	r.mu.Lock()
	closers := r.closers
	r.closers = nil
	r.mu.Unlock()
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i]())
	}
	errs = append(errs, r.audit.Close())
	return errors.Join(errs...)
}

// nextID names a call: "c", a number counting the Runtime's calls, "-",
// and 13 random base32 characters (65 bits) drawn once per Runtime, so
// that an id names one call in the audit log for ever, whatever other
// process, connection or Runtime wrote to it. A sub-agent shares its
// parent's, as it shares the audit log.
func (r *shared) nextID() string {
	r.idOnce.Do(func() { r.idBase = rand.Text()[:13] })
	return "c" + strconv.FormatUint(r.ids.Add(1), 10) + "-" + r.idBase
}
