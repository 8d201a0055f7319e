package mcpserver

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
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
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "server/discover" && refuseDiscover(w, r) {
			return
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

// statelessVersion is the first protocol version that the SDK serves over
// HTTP only statelessly, which ccrun never does (Handler).
const statelessVersion = "2026-07-28"

// refuseDiscover answers a server/discover request for a protocol version
// that the stateful HTTP transport does not serve (2026-07-28 and later)
// with the JSON-RPC error for an unsupported version, listing the versions
// served, and reports whether it did. The SDK answers it with a result
// whose supportedVersions leave the requested version out, which a client
// that reads only whether discovery succeeded (mcp-go v1.2.1) takes for
// that version, and every call after it fails; on the error, such a
// client and the Go SDK's both fall back to initialize on 2025-11-25.
// Any other request is left to the SDK (false), its body intact.
func refuseDiscover(w http.ResponseWriter, r *http.Request) bool {
	requested := r.Header.Get("Mcp-Protocol-Version")
	if requested < statelessVersion {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err != nil || json.Unmarshal(body, &req) != nil || req.Method != "server/discover" || len(req.ID) == 0 {
		return false
	}
	served := slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= statelessVersion })
	data, _ := json.Marshal(map[string]any{"supported": served, "requested": requested})
	msg := fmt.Sprintf("protocol version %q is not served over HTTP by ccrun mcp (its sessions are stateful): use %s, by initialize", requested, served[0])
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
		"error": map[string]any{"code": mcp.CodeUnsupportedProtocolVersion, "message": msg, "data": json.RawMessage(data)}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
	return true
}
