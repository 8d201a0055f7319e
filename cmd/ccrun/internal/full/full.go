// Package full is what only the whole ccrun links: the @wasm and @docker
// engines (package engines), the helper processes' plumbing and the
// engines' housekeeping (internal/housekeep), the Docker client doctor
// asks, and the MCP server. Engines gives them to the CLI (cli.Engines),
// which the whole main (cmd/ccrun) runs with them; the front
// (cmd/ccrun/front) imports neither this package nor what it links.
package full

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/client"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/cmd/ccrun/internal/cli"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/housekeep"
	"github.com/ccrun/ccrun/mcpserver"
)

// Engines returns the whole ccrun's engines, for cli.Main.
func Engines() *cli.Engines {
	return &cli.Engines{
		ServeHelper:     housekeep.Serve,
		Options:         options,
		CompileProgress: housekeep.WithCompileProgress,
		CheckImage:      checkImage,
		DockerOptions:   dockerOptions,
		Helpers: cli.Helpers{WorkerEnv: housekeep.WasmWorkerEnv, WorkerParentEnv: housekeep.WasmWorkerParentEnv,
			ServerEnv: housekeep.WasmServerEnv, RefillArg: housekeep.RefillArg},
		WasmSockets: housekeep.CollectWasmSockets,
		Sites:       housekeep.GCSites,
		Collect:     housekeep.CollectAt,
		Garbage:     housekeep.GarbageAt,
		DockerInfo:  dockerInfo,
		EngineInfo:  engineInfo,
		MCP:         newMCP,
		MCPDefaults: cli.MCPOptions{SessionTimeout: mcpserver.DefaultSessionTimeout, MaxSessions: mcpserver.DefaultMaxSessions},
	}
}

// options returns the engines of a Runtime of the CLI, @wasm's and
// @docker's (package engines), with the run's choices: pull progress on a
// terminal, the detached refill of a warm container pool, the warm @wasm
// server, exec's --engine and --wasm-worker, the one-shot @wasm guest.
func options(c cli.EngineChoices) []ccrun.Option {
	var opts []engines.Option
	if c.Progress != nil {
		opts = append(opts, housekeep.PullProgress(c.Progress))
	}
	if c.Exe != "" {
		opts = append(opts, housekeep.DetachedRefill(c.Exe))
		if c.WasmServer {
			opts = append(opts, housekeep.WasmServer(c.Exe, c.Dir))
		}
	}
	if c.DockerEngine != "" {
		opts = append(opts, engines.WithDockerEngine(c.DockerEngine))
	}
	if c.WasmWorker != "" {
		opts = append(opts, housekeep.WasmWorker(c.WasmWorker))
	} else if c.OneShot != nil {
		opts = append(opts, housekeep.WasmOneShot(c.OneShot))
	}
	return engines.All(opts...)
}

// dockerOptions are a call's @docker options: --network, --pull.
func dockerOptions(network, pull string) ccrun.EnvironmentOptions {
	return engines.DockerOptions{Network: network, Pull: pull}
}

// checkImage refuses an image reference the engine could not read: it
// wants a name (with a registry, a tag or a digest) or an image ID.
func checkImage(ref string) error {
	_, err := reference.ParseAnyReference(ref)
	return err
}

// dockerInfo connects as @docker does (runtime/docker.New: the
// environment's engine, the API version negotiated), then asks the
// version.
func dockerInfo(ctx context.Context) cli.DockerReport {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	host, err := housekeep.DockerHost(ctx)
	if err != nil {
		return cli.DockerReport{Error: err.Error()}
	}
	d := cli.DockerReport{Reachable: true, Host: host}
	if c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation()); err == nil {
		defer c.Close()
		if v, err := c.ServerVersion(ctx); err == nil {
			d.Version, d.APIVersion = v.Version, v.APIVersion
		}
	}
	return d
}

// engineInfo finds the @docker engine as a Runtime would (flag, managed
// then user settings) and, for Kubernetes, asks the cluster.
func engineInfo(ctx context.Context, flag string) cli.EngineReport {
	engine, from, opts, err := engines.DefaultDockerEngine()
	if flag != "" {
		engine, from, opts, err = flag, "flag", nil, nil
	}
	r := cli.EngineReport{Engine: engine, From: from}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if engine != engines.EngineKubernetes {
		r.Answers = true // the docker engine's line says whether it does
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := housekeep.ClusterInfo(ctx, opts...)
	r.Cluster = &c
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Answers = true
	r.NetworkPolicy = "unknown: network none is a NetworkPolicy, enforced only if the cluster's network plugin enforces policies"
	return r
}

// mcpServer is package mcpserver's server, as `ccrun mcp` serves it.
type mcpServer struct{ *mcpserver.Server }

func newMCP(rt *ccrun.Runtime, reload func() (*ccrun.Runtime, error), o cli.MCPOptions) (cli.MCPServer, error) {
	srv, err := mcpserver.New(rt, &mcpserver.Options{Version: o.Version, Reload: reload,
		AllowOrigins: o.AllowOrigins, SessionTimeout: o.SessionTimeout, MaxSessions: o.MaxSessions})
	if err != nil {
		return nil, err
	}
	return mcpServer{srv}, nil
}

func (s mcpServer) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.Server.Serve(ctx, mcpserver.StdioTransport(in, out))
}

// ServeHTTP serves the streamable HTTP transport on ln until ctx is done.
func (s mcpServer) ServeHTTP(ctx context.Context, ln net.Listener, token string) error {
	h, err := s.Handler(token)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go s.Watch(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Every call in flight stops, its process tree or container with
		// it, and is audited, before the server goes.
		_ = s.CancelCalls(sctx)
		// The sessions' streams (a client's GET stays open) end with
		// their sessions; then nothing holds Shutdown.
		for ss := range s.MCP().Sessions() {
			_ = ss.Close()
		}
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped // Serve returns at once on Shutdown: wait for the calls' end
	return nil
}
