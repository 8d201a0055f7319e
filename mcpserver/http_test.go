package mcpserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/mcpserver"
)

const testToken = "ccrun_test_token_0123456789"

// httpServer serves a Server of a fresh project over HTTP on loopback.
func httpServer(t *testing.T, o *mcpserver.Options) (*mcpserver.Server, *httptest.Server) {
	t.Helper()
	rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithTrustDir(""), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	o.Rescan = -1
	srv, err := mcpserver.New(rt, o)
	if err != nil {
		t.Fatal(err)
	}
	h, err := srv.Handler(testToken)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return srv, hs
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// post sends one JSON-RPC message and returns the status, the session id
// and the body.
func post(t testing.TB, c *http.Client, url, body string, hdr map[string]string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range hdr {
		if v == "-" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// TestHTTPOrigin: with the token, a request from a page of another origin
// is refused (403): "null", a look-alike of loopback, another host; loopback
// origins, no Origin at all and those given in AllowOrigins pass. A wrong
// token and a missing one get different texts.
func TestHTTPOrigin(t *testing.T) {
	_, hs := httpServer(t, &mcpserver.Options{AllowOrigins: []string{"https://app.example/"}})
	c := hs.Client()
	for _, o := range []string{"https://evil.example", "null", "http://127.0.0.1.evil.com", "http://localhost.evil.com:80",
		"http://127.0.0.1@evil.com", "file://", "http://[::1].evil.com", "http://127.0.0.2", "ftp://127.0.0.1", "http://127.0.0.1/x"} {
		if code, _, body := post(t, c, hs.URL, initialize, map[string]string{"Origin": o}); code != http.StatusForbidden || !strings.Contains(body, "Origin") {
			t.Errorf("Origin %q: %d %q, want 403", o, code, body)
		}
	}
	for _, o := range []string{"", "http://127.0.0.1", "http://127.0.0.1:5173", "https://localhost:8443", "http://[::1]:3000", "https://app.example"} {
		hdr := map[string]string{"Origin": o}
		if o == "" {
			hdr = nil
		}
		if code, _, body := post(t, c, hs.URL, initialize, hdr); code != http.StatusOK {
			t.Errorf("Origin %q: %d %q, want 200", o, code, body)
		}
	}
	_, _, missing := post(t, c, hs.URL, initialize, map[string]string{"Authorization": "-"})
	code, _, wrong := post(t, c, hs.URL, initialize, map[string]string{"Authorization": "Bearer " + testToken + "x"})
	if code != http.StatusUnauthorized || missing == wrong || !strings.Contains(wrong, "wrong") || !strings.Contains(missing, "required") {
		t.Errorf("missing token %q, wrong token %d %q: want two different 401 texts", missing, code, wrong)
	}
}

// TestHTTPSessionsCapped: past MaxSessions a new session is refused with a
// message that says why; the open ones keep working.
func TestHTTPSessionsCapped(t *testing.T) {
	_, hs := httpServer(t, &mcpserver.Options{MaxSessions: 3})
	c := hs.Client()
	var ids []string
	for range 3 {
		code, id, body := post(t, c, hs.URL, initialize, nil)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d %q", code, body)
		}
		ids = append(ids, id)
	}
	if code, _, body := post(t, c, hs.URL, initialize, nil); code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-sessions") {
		t.Errorf("a fourth session: %d %q, want 503 naming --max-sessions", code, body)
	}
	hdr := map[string]string{"Mcp-Session-Id": ids[0], "Mcp-Protocol-Version": "2025-06-18"}
	post(t, c, hs.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	if code, _, body := post(t, c, hs.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr); code != http.StatusOK || !strings.Contains(body, "capability_create") {
		t.Errorf("an open session after the refusal: %d %q", code, body)
	}
}

// TestHTTPAbandonedSessionsEnd: 20,000 sessions opened and abandoned are
// closed after the idle timeout, and the heap returns to within 2× of
// where it started. The start is taken after a first round of as many
// sessions, closed the same way: the Go runtime keeps the descriptors of
// goroutines that ended for reuse (runtime.malg, ~3 MB for this many
// sessions' goroutines), which is not the server holding sessions.
func TestHTTPAbandonedSessionsEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("2 × 20,000 sessions")
	}
	const n = 20000
	const timeout = 2 * time.Second
	srv, hs := httpServer(t, &mcpserver.Options{SessionTimeout: timeout, MaxSessions: 2 * n})
	c := hs.Client()
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	open := func() int {
		k := 0
		for range srv.MCP().Sessions() {
			k++
		}
		return k
	}
	round := func() (full uint64) {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 4 {
					if code, _, body := post(t, c, hs.URL, initialize, nil); code != http.StatusOK {
						t.Errorf("session %d: %d %q", i, code, body)
						return
					}
				}
			}()
		}
		wg.Wait()
		full = heap()
		for i := 0; open() != 0; i++ {
			if i > 600 {
				t.Fatalf("%d sessions still open a minute after their timeout", open())
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.CloseIdleConnections()
		return full
	}
	round()
	start := heap()
	full := round()
	end := heap()
	t.Logf("heap: %d KiB at the start, %d KiB with %d sessions open, %d KiB after their timeout", start>>10, full>>10, n, end>>10)
	if end > 2*start {
		t.Errorf("heap after the timeout %d KiB, more than twice the start (%d KiB)", end>>10, start>>10)
	}
}

// TestHTTPDiscoverRefused: server/discover for 2026-07-28, which the
// stateful HTTP transport does not serve, is a JSON-RPC error naming the
// versions served, not a result a client could take for a yes; one for a
// version served, and initialize, go to the SDK as before.
func TestHTTPDiscoverRefused(t *testing.T) {
	_, hs := httpServer(t, &mcpserver.Options{})
	discover := `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
	code, _, body := post(t, hs.Client(), hs.URL, discover, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
	if code != http.StatusBadRequest || !strings.Contains(body, `"id":7`) || !strings.Contains(body, `"code":-32022`) ||
		!strings.Contains(body, `"supported":["2025-11-25"`) || strings.Contains(body, `"result"`) {
		t.Errorf("server/discover for 2026-07-28: %d %s; want 400 with error -32022 listing 2025-11-25 first", code, body)
	}
	code, sid, body := post(t, hs.Client(), hs.URL, initialize, nil)
	if code != http.StatusOK || sid == "" {
		t.Errorf("initialize after a refused discover: %d %q %s", code, sid, body)
	}
}
