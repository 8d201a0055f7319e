//go:build !ccrunfront

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/mcpserver"
)

// mcpCommand is `ccrun mcp`: the project's tools served over MCP, behind
// the gate, with the person asked through the client.
func (a *app) mcpCommand() *cobra.Command {
	var addr, tokenFile string
	var origins []string
	var sessionTimeout time.Duration
	var maxSessions int
	c := &cobra.Command{
		Use:   "mcp [--http ADDR [--token-file FILE]]",
		Short: "Serve the project's tools over the Model Context Protocol (stdio, or HTTP on loopback)",
		Long: `Serve this project's tools — run_command, run_wasm, run_docker, the capabilities, and
capability_create — over MCP, each call behind the same gate as ccrun exec. The project is
found as every command finds it (--project-dir, else ccrun.json or git's top level upwards),
and its files count only when trusted (ccrun trust).

When the gate asks, the person is asked through the client (MCP elicitation); a client that
cannot ask gets a denial that says how the person can allow the call. One MCP connection is
one session: a "this session" grant ends with it.

Without --http, MCP is spoken on stdin and stdout. --http ADDR serves the streamable HTTP
transport on a loopback address (127.0.0.1:8765, [::1]:8765, localhost:8765) or a unix socket
(unix:/path), and only to requests with "Authorization: Bearer TOKEN": the token is read from
--token-file, else made up and printed on stderr.`,
		Example: `  claude mcp add ccrun -- ccrun mcp
  ccrun mcp --http 127.0.0.1:8765 --token-file ~/.config/ccrun/mcp-token`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if addr == "" {
				for _, f := range []string{"token-file", "allow-origin", "session-timeout", "max-sessions"} {
					if c.Flags().Changed(f) {
						return usagef("--%s needs --http", f)
					}
				}
			}
			if maxSessions < 1 || sessionTimeout <= 0 {
				return usagef("--max-sessions and --session-timeout must be positive")
			}
			rt, err := a.runtime(nil, nil)
			if err != nil {
				return err
			}
			defer rt.Close()
			reload := func() (*ccrun.Runtime, error) { return a.runtime(nil, nil) }
			srv, err := mcpserver.New(rt, &mcpserver.Options{Version: buildVersion().Version, Reload: reload,
				AllowOrigins: origins, SessionTimeout: sessionTimeout, MaxSessions: maxSessions})
			if err != nil {
				return err
			}
			defer srv.Close()
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if addr == "" {
				err := srv.Serve(ctx, mcpserver.StdioTransport(a.io.in, a.io.out))
				if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			return a.serveHTTP(ctx, srv, addr, tokenFile)
		},
	}
	c.Flags().StringVar(&addr, "http", "", "serve the streamable HTTP transport on ADDR: a loopback host:port or unix:/path (default: stdio)")
	c.Flags().StringVar(&tokenFile, "token-file", "", "read the bearer token from FILE, readable by you alone (default: make one up and print it on stderr)")
	c.Flags().StringArrayVar(&origins, "allow-origin", nil, "with --http: serve requests from this Origin (scheme://host[:port]) besides loopback ones (repeatable)")
	c.Flags().DurationVar(&sessionTimeout, "session-timeout", mcpserver.DefaultSessionTimeout, "with --http: close a session that made no request for this long")
	c.Flags().IntVar(&maxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "with --http: the most sessions open at once; past it a new one is refused")
	return c
}

// serveHTTP serves srv on addr until ctx is done.
func (a *app) serveHTTP(ctx context.Context, srv *mcpserver.Server, addr, tokenFile string) error {
	token, made, err := bearerToken(tokenFile)
	if err != nil {
		return err
	}
	h, err := srv.Handler(token)
	if err != nil {
		return err
	}
	ln, url, err := listenLoopback(addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if made {
		fmt.Fprintf(a.io.err, "ccrun mcp: serving %s\nccrun mcp: bearer token: %s\n", url, token)
	} else {
		fmt.Fprintf(a.io.err, "ccrun mcp: serving %s (bearer token from %s)\n", url, tokenFile)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Watch(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Every call in flight stops, its process tree or container with
		// it, and is audited, before the server goes.
		_ = srv.CancelCalls(sctx)
		// The sessions' streams (a client's GET stays open) end with
		// their sessions; then nothing holds Shutdown.
		for ss := range srv.MCP().Sessions() {
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

// bearerToken reads the token from file, or makes one up (made true).
func bearerToken(file string) (token string, made bool, err error) {
	if file == "" {
		return "ccrun_" + rand.Text() + rand.Text(), true, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", false, usagef("--token-file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, usagef("--token-file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", false, usagef("--token-file %s: permissions %04o are too open: the token must be readable by you alone (chmod 600 %s)", file, perm, file)
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return "", false, usagef("--token-file: %w", err)
	}
	token = strings.TrimSpace(string(b))
	switch {
	case token == "":
		return "", false, usagef("--token-file %s: empty; the HTTP transport is never served without a token", file)
	case len(token) < 16:
		return "", false, usagef("--token-file %s: a token of %d characters is too short (at least 16)", file, len(token))
	case strings.ContainsAny(token, " \t\r\n"):
		return "", false, usagef("--token-file %s: the token holds white space", file)
	}
	return token, false, nil
}

// listenLoopback listens on addr: a unix socket (unix:/path, made for the
// current user only) or a TCP address whose host is a loopback address or
// localhost. Anything else is refused: the server runs tools on this host.
func listenLoopback(addr string) (net.Listener, string, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return nil, "", usagef("--http unix: needs a path")
		}
		path, _ = filepath.Abs(path)
		old := syscall.Umask(0o177)
		ln, err := net.Listen("unix", path)
		syscall.Umask(old)
		if err != nil {
			return nil, "", err
		}
		return ln, "unix:" + path + " (http://localhost/)", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", usagef("--http %q: want HOST:PORT on loopback or unix:/path: %w", addr, err)
	}
	switch ip := net.ParseIP(host); {
	case host == "localhost":
		host = "127.0.0.1"
	case ip == nil || !ip.IsLoopback():
		return nil, "", usagef("--http %q: %s is not a loopback address (127.0.0.1, ::1, localhost): ccrun mcp serves only this machine", addr, host)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, "", err
	}
	return ln, "http://" + ln.Addr().String() + "/", nil
}
