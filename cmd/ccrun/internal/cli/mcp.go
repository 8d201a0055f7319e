package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun"
)

// mcpOptions are `ccrun mcp`'s flags.
type mcpOptions struct {
	http           string        // --http ADDR; "": stdio
	httpGiven      bool          // --http was given (an empty ADDR is an error then)
	httpOnly       []string      // the flags given that go with --http alone
	tokenFile      string        // --token-file
	origins        []string      // --allow-origin, repeated
	sessionTimeout time.Duration // --session-timeout
	maxSessions    int           // --max-sessions
}

// mcpCommand is `ccrun mcp`: the project's tools served over MCP, behind
// the gate, with the person asked through the client. It parses its flags
// into mcpOptions and calls runF with them (nil: runMCP).
func (a *app) mcpCommand(runF func(context.Context, *mcpOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runMCP
	}
	o := &mcpOptions{}
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
			o.httpGiven = c.Flags().Changed("http")
			o.httpOnly = nil
			for _, f := range []string{"token-file", "allow-origin", "session-timeout", "max-sessions"} {
				if c.Flags().Changed(f) {
					o.httpOnly = append(o.httpOnly, f)
				}
			}
			return runF(c.Context(), o)
		},
	}
	c.Flags().StringVar(&o.http, "http", "", "serve the streamable HTTP transport on ADDR: a loopback host:port or unix:/path (default: stdio)")
	c.Flags().StringVar(&o.tokenFile, "token-file", "", "read the bearer token from FILE, readable by you alone (default: make one up and print it on stderr)")
	c.Flags().StringArrayVar(&o.origins, "allow-origin", nil, "with --http: serve requests from this Origin (scheme://host[:port]) besides loopback ones (repeatable)")
	c.Flags().DurationVar(&o.sessionTimeout, "session-timeout", a.eng.MCPDefaults.SessionTimeout, "with --http: close a session that made no request for this long")
	c.Flags().IntVar(&o.maxSessions, "max-sessions", a.eng.MCPDefaults.MaxSessions, "with --http: the most sessions open at once; past it a new one is refused")
	return c
}

// runMCP serves the project's tools over MCP until the client goes or a
// signal comes.
func (a *app) runMCP(ctx context.Context, o *mcpOptions) error {
	if o.httpGiven {
		if _, _, err := httpAddr(o.http); err != nil {
			return err
		}
	}
	if o.http == "" && len(o.httpOnly) > 0 {
		return usagef("--%s needs --http", o.httpOnly[0])
	}
	if o.maxSessions < 1 || o.sessionTimeout <= 0 {
		return usagef("--max-sessions and --session-timeout must be positive")
	}
	rt, err := a.runtime(nil, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	reload := func() (*ccrun.Runtime, error) { return a.runtime(nil, nil) }
	srv, err := a.eng.MCP(rt, reload, MCPOptions{Version: buildVersion().Version,
		AllowOrigins: o.origins, SessionTimeout: o.sessionTimeout, MaxSessions: o.maxSessions})
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.http == "" {
		err := srv.Serve(ctx, a.io.in, a.io.out)
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	return a.serveHTTP(ctx, srv, o.http, o.tokenFile)
}

// serveHTTP serves srv on addr until ctx is done.
func (a *app) serveHTTP(ctx context.Context, srv MCPServer, addr, tokenFile string) error {
	token, made, err := bearerToken(tokenFile)
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
	return srv.ServeHTTP(ctx, ln, token)
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

// listenLoopback listens on addr, as httpAddr reads it.
func listenLoopback(addr string) (net.Listener, string, error) {
	network, address, err := httpAddr(addr)
	if err != nil {
		return nil, "", err
	}
	if network == "unix" {
		old := syscall.Umask(0o177) // the socket is the current user's alone
		ln, err := net.Listen("unix", address)
		syscall.Umask(old)
		if err != nil {
			return nil, "", fmt.Errorf("--http %s: %w", addr, err)
		}
		return ln, "unix:" + address + " (http://localhost/)", nil
	}
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, "", fmt.Errorf("--http %s: %w", addr, err)
	}
	return ln, "http://" + ln.Addr().String() + "/", nil
}

// httpAddr reads the value of --http: a unix socket (unix:/path) or a TCP
// address whose host is a loopback address or localhost (read as
// 127.0.0.1). Anything else is refused, with what to give instead: the
// server runs tools on this host.
func httpAddr(addr string) (network, address string, err error) {
	const only = "ccrun mcp serves only on loopback"
	if addr == "" {
		return "", "", usagef("--http: empty address; give a loopback HOST:PORT (127.0.0.1:8765, [::1]:8765) or unix:/path, or leave --http out to serve stdio")
	}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return "", "", usagef("--http unix: needs a path: unix:/path/to/socket")
		}
		path, err := filepath.Abs(path)
		if err != nil {
			return "", "", usagef("--http %s: %w", addr, err)
		}
		return "unix", path, nil
	}
	if scheme, rest, ok := strings.Cut(addr, "://"); ok {
		return "", "", usagef("--http %s: give the address without %s://: --http %s", addr, scheme, strings.TrimSuffix(rest, "/"))
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		switch ip := net.ParseIP(addr); {
		case isPort(addr):
			return "", "", usagef("--http %s: no host given; %s: use 127.0.0.1:%s or [::1]:%s", addr, only, addr, addr)
		case ip != nil && ip.To4() == nil:
			return "", "", usagef("--http %s: an IPv6 address goes in brackets, before the port: [::1]:8765", addr)
		case !strings.Contains(addr, ":") || strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]"):
			return "", "", usagef("--http %s: no port given: use %s:8765 (:0 picks a free port)", addr, addr)
		}
		return "", "", usagef("--http %s: want HOST:PORT on loopback (127.0.0.1:8765, [::1]:8765) or unix:/path", addr)
	}
	ip := net.ParseIP(host)
	switch {
	case host == "":
		return "", "", usagef("--http %s: no host given; %s: use 127.0.0.1:%s or [::1]:%s", addr, only, port, port)
	case strings.EqualFold(host, "localhost"):
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		return "", "", usagef("--http %s: %s means every network interface; %s: use 127.0.0.1:%s or [::1]:%s", addr, host, only, port, port)
	case ip == nil:
		return "", "", usagef("--http %s: %s is a host name, and the only name taken is localhost; %s: use 127.0.0.1:%s or [::1]:%s", addr, host, only, port, port)
	case !ip.IsLoopback():
		return "", "", usagef("--http %s: %s is not a loopback address; %s: use 127.0.0.1:%s or [::1]:%s", addr, host, only, port, port)
	}
	if !isPort(port) {
		given, _, _ := net.SplitHostPort(addr)
		return "", "", usagef("--http %s: port %q is not a number from 0 to 65535 (0 picks a free port): use %s", addr, port, net.JoinHostPort(given, "8765"))
	}
	return "tcp", net.JoinHostPort(host, port), nil
}

// isPort reports whether s is a TCP port number, 0 to 65535.
func isPort(s string) bool {
	_, err := strconv.ParseUint(s, 10, 16)
	return err == nil
}
