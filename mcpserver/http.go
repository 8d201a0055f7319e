package mcpserver

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrNoToken: Handler was asked to serve without a bearer token.
var ErrNoToken = errors.New("the HTTP transport needs a bearer token")

// DefaultSessionTimeout is how long an HTTP session may go without a
// request before it is closed, unless Options.SessionTimeout says
// otherwise.
const DefaultSessionTimeout = 5 * time.Minute

// DefaultMaxSessions is how many HTTP sessions a Server keeps open at
// once, unless Options.MaxSessions says otherwise.
const DefaultMaxSessions = 100

// Handler serves the streamable HTTP transport, stateful (each client's
// Mcp-Session-Id is one connection, with its own session allowlist;
// ccrun never serves the stateless mode, where questions to the person
// and cancellation are lost on older protocols), to requests that carry
// "Authorization: Bearer <token>"; any other request gets 401 and reaches
// nothing. A request whose Origin header is not a loopback origin
// (http or https, 127.0.0.1, localhost or [::1], any port) nor one of
// Options.AllowOrigins gets 403, as the MCP specification requires of a
// server (a web page the person visits could otherwise call it); a
// request without Origin is not from a browser and passes. The SDK's
// protection against DNS rebinding stays on. A session idle for
// Options.SessionTimeout is closed; past Options.MaxSessions open
// sessions, a new one is refused with 503 and the open ones go on. An
// empty token is refused (ErrNoToken): the endpoint is never open. Run
// Watch beside it so that list changes are noticed.
func (s *Server) Handler(token string) (http.Handler, error) {
	if strings.TrimSpace(token) == "" {
		return nil, ErrNoToken
	}
	timeout := s.opts.SessionTimeout
	if timeout == 0 {
		timeout = DefaultSessionTimeout
	} else if timeout < 0 {
		timeout = 0 // the SDK's "never"
	}
	max := s.opts.MaxSessions
	if max <= 0 {
		max = DefaultMaxSessions
	}
	allowed := map[string]bool{}
	for _, o := range s.opts.AllowOrigins {
		allowed[normOrigin(o)] = true
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Logger: s.opts.Logger, SessionTimeout: timeout})
	want := []byte("Bearer " + token)
	var newMu sync.Mutex // one new session at a time, so that the cap holds
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ccrun"`)
			msg := "ccrun mcp: a bearer token is required (Authorization: Bearer <token>)"
			if got != "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="ccrun", error="invalid_token"`)
				msg = "ccrun mcp: the bearer token is wrong (not the one ccrun mcp printed or read from --token-file)"
			}
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
		if o, ok := r.Header["Origin"]; ok {
			if len(o) != 1 || !loopbackOrigin(o[0]) && !allowed[normOrigin(o[0])] {
				http.Error(w, fmt.Sprintf("ccrun mcp: Origin %q refused: only loopback origins (http://127.0.0.1, http://localhost, http://[::1], any port) and those given with --allow-origin may call this server",
					strings.Join(o, ", ")), http.StatusForbidden)
				return
			}
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			newMu.Lock()
			defer newMu.Unlock()
			if n := s.sessions(); n >= max {
				http.Error(w, fmt.Sprintf("ccrun mcp: %d sessions are open, the most this server keeps (--max-sessions); a new one is refused until one ends or has been idle for %s", n, timeout),
					http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	}), nil
}

// sessions counts the open sessions of s.
func (s *Server) sessions() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// loopbackOrigin reports whether o is the origin of a page served from
// this machine's loopback: http or https, host 127.0.0.1, localhost or
// [::1], any port, nothing else ("null", another host, a host that merely
// begins with 127.0.0.1).
func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "127.0.0.1", "localhost", "::1":
	default:
		return false
	}
	if p := u.Port(); p != "" {
		for _, c := range p {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return strings.HasPrefix(u.Host, "[") == (u.Hostname() == "::1")
}

// normOrigin is an origin as compared with Options.AllowOrigins: lower
// case, without a trailing slash.
func normOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}
