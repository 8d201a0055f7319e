package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/enginerecord"
	"github.com/ccrun/ccrun/runtime/job"
)

// Engines is what only the whole ccrun links: package engines (@wasm's and
// @docker's), the helper processes' plumbing, the engines' housekeeping
// (gc, doctor's engine lines) and the MCP server, whose libraries' package
// init a process that only runs @shell would pay. The whole main
// (cmd/ccrun) gives Main the one package full makes; the front
// (cmd/ccrun/front) gives none, and then the CLI has only the commands
// handoff.Serves lets through, which need none of it. The CLI's code is
// the same in both: every use of the engines goes through this value.
type Engines struct {
	// ServeHelper serves a helper process ccrun started with args (a
	// @wasm worker, the warm @wasm server, the detached refill of a warm
	// container pool) and returns its exit code and true; false when
	// args are not a helper's.
	ServeHelper func(args []string) (code int, ok bool)
	// Options returns the engines' options for a Runtime of the CLI.
	Options func(EngineChoices) []ccrun.Option
	// CompileProgress makes ctx report a @wasm module's compilation to
	// show.
	CompileProgress func(ctx context.Context, show func(module string, compiling bool)) context.Context
	// CheckImage says why the engine could not read an image reference
	// (nil: it could), before the engine is called.
	CheckImage func(ref string) error
	// DockerOptions are the @docker options of a call (ccrun.Call.Options)
	// with exec's --network and --pull.
	DockerOptions func(network, pull string) ccrun.EnvironmentOptions

	// Helpers names how ccrun marks its helper processes (gc ends the
	// orphaned ones).
	Helpers Helpers

	// WasmSockets removes the sockets of @wasm servers that were killed
	// and returns their paths.
	WasmSockets func() ([]string, error)
	// Sites returns the engines and clusters gc visits (kube: also the
	// kubeconfig's cluster); the error says what could not be read.
	Sites func(kube bool) ([]enginerecord.Site, error)
	// Collect removes what ccrun left at site (with pool, the idle
	// warm-pool containers too) and returns their ids, "pod NAME" for a
	// pod; Garbage lists what Collect would remove.
	Collect, Garbage func(ctx context.Context, site enginerecord.Site, pool bool) ([]string, error)

	// DockerInfo says whether the Docker Engine answers, and its version.
	DockerInfo func(ctx context.Context) DockerReport
	// EngineInfo says where a @docker call would run with --engine flag
	// ("": as the settings say).
	EngineInfo func(ctx context.Context, flag string) EngineReport

	// MCP makes the MCP server of rt (reload: the Runtime of a reloaded
	// project).
	MCP func(rt *ccrun.Runtime, reload func() (*ccrun.Runtime, error), o MCPOptions) (MCPServer, error)
	// MCPDefaults are the defaults of `ccrun mcp --session-timeout` and
	// `--max-sessions`.
	MCPDefaults MCPOptions
}

// EngineChoices are what a run of the CLI chose for the engines.
type EngineChoices struct {
	Dir          string    // the project
	Progress     io.Writer // pull progress, on a terminal; nil: none
	Exe          string    // this executable, for the helpers it starts; "": none
	DockerEngine string    // exec --engine; "": as the settings say
	WasmWorker   string    // the executable a @wasm worker starts (exec --wasm-worker)
	WasmServer   bool      // send a @wasm guest to the project's warm server
	// OneShot, when set, runs a @wasm guest as this process's one call
	// and ends the process with OneShot's code once it is reported.
	OneShot func(*job.Result)
}

// Helpers names the marks of ccrun's helper processes.
type Helpers struct {
	WorkerEnv       string // "1" in a @wasm worker's environment
	WorkerParentEnv string // a worker's parent pid
	ServerEnv       string // "0" opts the CLI out of the warm @wasm server
	RefillArg       string // the first argument of a detached refill
}

// DockerReport is what doctor says of the Docker Engine.
type DockerReport struct {
	Reachable  bool   `json:"reachable"`             // it answered
	Host       string `json:"host,omitempty"`        // where it is (DOCKER_HOST, or the default socket)
	Version    string `json:"version,omitempty"`     // the engine's version
	APIVersion string `json:"api_version,omitempty"` // the API version negotiated
	Error      string `json:"error,omitempty"`       // why it did not answer
}

// EngineReport says where a @docker call would run: the engine, what
// chose it, and for Kubernetes the cluster and whether it answers.
type EngineReport struct {
	Engine  string       `json:"engine"`            // "docker" or "kubernetes"
	From    string       `json:"from"`              // "default", "flag" or the settings file
	Cluster *ctr.Cluster `json:"cluster,omitempty"` // for Kubernetes: the cluster, as far as it answered
	Answers bool         `json:"answers"`           // the engine answered
	Error   string       `json:"error,omitempty"`   // why it did not, or why it could not be chosen
	// NetworkPolicy is whether network "none" is enforced; ccrun cannot
	// tell from the API whether the network plugin enforces policies.
	NetworkPolicy string `json:"network_policy,omitempty"`
}

// MCPOptions are the MCP server's: `ccrun mcp`'s flags.
type MCPOptions struct {
	Version        string        // ccrun's version, told the clients
	AllowOrigins   []string      // --allow-origin: the Origins served besides loopback ones
	SessionTimeout time.Duration // --session-timeout
	MaxSessions    int           // --max-sessions
}

// MCPServer is the MCP server `ccrun mcp` serves.
type MCPServer interface {
	// Serve speaks MCP on in and out until ctx is done or in ends.
	Serve(ctx context.Context, in io.Reader, out io.Writer) error
	// ServeHTTP serves the streamable HTTP transport on ln, to requests
	// with the bearer token alone, until ctx is done; then every call in
	// flight stops, audited, before it returns.
	ServeHTTP(ctx context.Context, ln net.Listener, token string) error
	// Close closes the Runtimes a reload gave the server (not the one
	// it was given, which the caller closes).
	Close() error
}

// checkImage refuses an image reference the engine could not read; the
// front refuses every one. It is the guard behind handing such a command
// over: a mistake in handoff.Serves is an error, not a quieter run.
func (a *app) checkImage(ref string) error {
	if a.eng == nil {
		return fmt.Errorf("this ccrun is the front (the gate and @shell only): %w", ccrun.ErrInvalidCall)
	}
	if err := a.eng.CheckImage(ref); err != nil {
		return usagef("--docker %q: not an image reference (want NAME[:TAG][@DIGEST], such as busybox:1.36, or an image ID): %v", ref, err)
	}
	return nil
}

// dockerOptions are the @docker options of --network and --pull, made by
// the engines (nil: neither given); the front, which hands both flags
// over, makes none.
func (a *app) dockerOptions(network, pull string) (ccrun.EnvironmentOptions, error) {
	if network == "" && pull == "" {
		return nil, nil
	}
	if a.eng == nil {
		return nil, fmt.Errorf("--network and --pull: this ccrun is the front (the gate and @shell only): %w", ccrun.ErrInvalidCall)
	}
	return a.eng.DockerOptions(network, pull), nil
}

// execEngines takes exec's choices for the @docker and @wasm engines:
// --engine, --wasm-worker, and in ccrun's own main the one-shot @wasm
// guest and the warm server. runtimeEngines gives them to the Runtime.
func (a *app) execEngines(engine string, worker bool) error {
	if a.eng == nil {
		return nil // the front runs @shell alone
	}
	a.choices.DockerEngine = engine
	if worker {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		a.choices.WasmWorker = exe
	} else if a.oneShotProcess {
		// This process runs one call and exits: a @wasm guest runs
		// here at full speed, and a limit that stops it returns at
		// once (the guest goes with the process). Should reporting
		// it then hang, the hook ends the process with its code.
		a.choices.OneShot = func(r *job.Result) { os.Exit(exitCode(r, nil)) }
		// And the guest goes first to the project's warm server,
		// which has the module compiled already (off with
		// CCRUN_WASM_SERVER=0).
		a.choices.WasmServer = os.Getenv(a.eng.Helpers.ServerEnv) != "0"
	}
	return nil
}

// runtimeEngines returns the engines of every Runtime of the CLI, @wasm's
// and @docker's, with their options: pull progress on a terminal, the
// detached refill of a warm container pool, the warm @wasm server, and
// exec's choices (execEngines). None in the front.
func (a *app) runtimeEngines(dir string) []ccrun.Option {
	if a.eng == nil {
		return nil
	}
	c := a.choices
	c.Dir = dir
	if isTerminal(a.io.err) {
		c.Progress = a.io.err
	}
	c.Exe, _ = os.Executable()
	return a.eng.Options(c)
}

// withCompileProgress shows a @wasm module's compilation on st.
func (a *app) withCompileProgress(ctx context.Context, st *status) context.Context {
	if a.eng == nil {
		return ctx
	}
	return a.eng.CompileProgress(ctx, st.compile)
}
