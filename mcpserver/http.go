package mcpserver

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrNoToken: Handler was asked to serve without a bearer token.
var ErrNoToken = errors.New("the HTTP transport needs a bearer token")

// Handler serves the streamable HTTP transport, stateful (each client's
// Mcp-Session-Id is one connection, with its own session allowlist;
// ccrun never serves the stateless mode, where questions to the person
// and cancellation are lost on older protocols), to requests that carry
// "Authorization: Bearer <token>"; any other request gets 401 and reaches
// nothing. The SDK's protection against DNS rebinding stays on. An empty
// token is refused (ErrNoToken): the endpoint is never open. Run Watch
// beside it so that list changes are noticed.
func (s *Server) Handler(token string) (http.Handler, error) {
	if strings.TrimSpace(token) == "" {
		return nil, ErrNoToken
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{Logger: s.opts.Logger})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ccrun"`)
			http.Error(w, "ccrun mcp: a bearer token is required (Authorization: Bearer <token>)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}), nil
}
