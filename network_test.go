package ccrun_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// netServer is a local HTTP server; its address's port.
func netServer(t *testing.T) (addr, port string) {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	t.Cleanup(s.Close)
	addr = strings.TrimPrefix(s.URL, "http://")
	_, port, _ = net.SplitHostPort(addr)
	return addr, port
}

// netChooser approves the command, and answers net: asks with net.
type netChooser struct {
	mu    sync.Mutex
	net   ceiling.Grant
	asked []string
}

func (c *netChooser) Approve(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.Request.Tool == keys.NetTool {
		c.asked = append(c.asked, p.Decision.Key.String())
		return c.net, nil
	}
	return ceiling.Once, nil
}

// TestNetworkSettingsLimit: the user config's "network" list limits an
// approved command to its hosts; another is refused, and said in the
// result, on stderr and in the audit log; with nobody to say yes to it.
func TestNetworkSettingsLimit(t *testing.T) {
	needTier(t)
	addr, port := netServer(t)
	tierHome(t, `{"network": {"allow": ["127.0.0.1:`+port+`"]}}`)
	a := &netChooser{net: ceiling.Deny}
	rt, log := tierRuntime(t, a)
	n, err := rt.Network(&ccrun.Call{Command: "true"})
	if err != nil || !n.Limited || len(n.Allow) != 1 || n.Allow[0] != "127.0.0.1:"+port || !n.Ask {
		t.Fatalf("Network: %+v, %v", n, err)
	}
	out, err := rt.Exec(context.Background(), &ccrun.Call{Command: fmt.Sprintf(
		"curl -sS -m 5 http://%s/; echo; curl -sS -m 5 -o /dev/null -w '%%{http_code}\\n' http://127.0.0.2:%s/", addr, port)})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Result.Stdout); got != "hello\n403\n" {
		t.Errorf("stdout %q, want hello then 403 (stderr %q)", got, out.Result.Stderr)
	}
	want := "network refused: 127.0.0.2:" + port + " (http): denied when asked"
	if !strings.Contains(out.Result.Detail, want) || !strings.Contains(string(out.Result.Stderr), "ccrun: "+want) {
		t.Errorf("detail %q, stderr %q: want %q", out.Result.Detail, out.Result.Stderr, want)
	}
	if len(a.asked) != 1 || a.asked[0] != "net:127.0.0.2:"+port {
		t.Errorf("asked %q, want net:127.0.0.2:%s once", a.asked, port)
	}
	data, _ := os.ReadFile(log)
	if !strings.Contains(string(data), want) {
		t.Errorf("the audit log does not say it:\n%s", data)
	}
	var netLine bool
	for _, d := range decisionLines(t, log) {
		netLine = netLine || d["key"] == "net:127.0.0.2:"+port && d["decision"] == "deny"
	}
	if !netLine {
		t.Errorf("no decision line for net:127.0.0.2:%s:\n%s", port, data)
	}
}

// TestNetworkAllowHosts: a call's AllowHosts alone limit it; a host asked
// about and allowed once gets through; no list, the host's network.
func TestNetworkAllowHosts(t *testing.T) {
	needTier(t)
	addr, port := netServer(t)
	other, _ := netServer(t)
	tierHome(t, "")
	a := &netChooser{net: ceiling.Once}
	rt, _ := tierRuntime(t, a)
	if n, _ := rt.Network(&ccrun.Call{Command: "true"}); n.Limited {
		t.Fatalf("no list, yet %+v", n)
	}
	if _, err := rt.Exec(context.Background(), &ccrun.Call{Command: "true", AllowHosts: []string{"a*.x.org"}}); err == nil {
		t.Fatal("a malformed host was taken")
	}
	cmd := fmt.Sprintf("curl -sS -m 5 http://%s/; echo; curl -sS -m 5 http://%s/; echo; env | grep -c _PROXY=", addr, other)
	out, err := rt.Exec(context.Background(), &ccrun.Call{Command: cmd, AllowHosts: []string{"127.0.0.1:" + port}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Result.Stdout); got != "hello\nhello\n4\n" {
		t.Errorf("stdout %q (stderr %q)", got, out.Result.Stderr)
	}
	if len(a.asked) != 1 {
		t.Errorf("asked %q", a.asked)
	}
	out, err = rt.Exec(context.Background(), &ccrun.Call{Command: "env | grep -c _PROXY= || true"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Result.Stdout); got != "0\n" {
		t.Errorf("without a list the command got proxy variables: %q", got)
	}
}

// TestNetworkAskRules: a net: deny rule refuses a host with nobody asked,
// a session grant of one lets the next call through without asking, and
// the mode trust does not widen the lists: the host is asked about.
func TestNetworkAskRules(t *testing.T) {
	needTier(t)
	addr, port := netServer(t)
	other, otherPort := netServer(t)
	third, thirdPort := netServer(t)
	tierHome(t, `{"network": {"allow": ["127.0.0.1:`+port+`"]}}`)
	flags, err := permission.FlagSettings("trust", nil, nil, []string{"net:127.0.0.1:" + thirdPort})
	if err != nil {
		t.Fatal(err)
	}
	a := &netChooser{net: ceiling.AlwaysThisSession}
	rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""),
		ccrun.WithApprover(a), ccrun.WithSettings(flags))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	cmd := fmt.Sprintf("curl -sS -m 5 http://%s/; echo; curl -sS -m 5 http://%s/; echo; curl -sS -m 5 -o /dev/null -w '%%{http_code}\\n' http://%s/",
		addr, other, third)
	for i := range 2 {
		out, err := rt.Exec(context.Background(), &ccrun.Call{Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(out.Result.Stdout); got != "hello\nhello\n403\n" {
			t.Errorf("run %d: stdout %q (stderr %q)", i, got, out.Result.Stderr)
		}
	}
	if len(a.asked) != 1 || a.asked[0] != "net:127.0.0.1:"+otherPort {
		t.Errorf("asked %q: want net:127.0.0.1:%s once (the mode does not allow it; the session grant does, the second time; the deny rule is never asked)", a.asked, otherPort)
	}
}

// countingApprover grants every ask for the session and counts the asks
// of each tool.
type countingApprover struct {
	mu    sync.Mutex
	asked map[string]int
}

func (c *countingApprover) Approve(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked[p.Request.Tool]++
	return ceiling.AlwaysThisSession, nil
}

// TestNetworkCapabilityHosts: a @shell capability's hosts limit its
// network, and are part of what was approved: the same manifest is not
// asked again in the session, one with a host added is.
func TestNetworkCapabilityHosts(t *testing.T) {
	needTier(t)
	addr, port := netServer(t)
	other, _ := netServer(t)
	tierHome(t, "")
	dir := t.TempDir()
	manifest := func(hosts string) string {
		return `{"name": "fetch", "description": "fetch", "environment": "@shell",
  "entry": {"command": "curl -sS -m 5 http://` + addr + `/; echo; curl -sS -m 5 -o /dev/null -w '%{http_code}\\n' http://` + other + `/"},
  "hosts": {"allow": [` + hosts + `]}}`
	}
	writeCapability(t, dir, "fetch", manifest(`"127.0.0.1:`+port+`"`))
	a := &countingApprover{asked: map[string]int{}}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()), ccrun.WithAuditLog(""), ccrun.WithApprover(a))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	n, err := rt.Network(&ccrun.Call{Capability: "fetch"})
	if err != nil || !n.Limited || len(n.Allow) != 1 {
		t.Fatalf("Network: %+v, %v", n, err)
	}
	run := func() *ccrun.Outcome {
		t.Helper()
		out, err := rt.Exec(context.Background(), &ccrun.Call{Capability: "fetch"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(out.Request.Loosens, "\n"), "network: may reach 127.0.0.1:"+port) {
			t.Errorf("the prompt does not show the hosts: %q", out.Request.Loosens)
		}
		return out
	}
	out := run()
	run()
	if a.asked["fetch"] != 1 {
		t.Errorf("the same manifest asked %d times, want once", a.asked["fetch"])
	}
	// the other server was asked about (net:) and granted for the session
	if got := string(out.Result.Stdout); got != "hello\n200\n" || a.asked[keys.NetTool] != 1 {
		t.Errorf("stdout %q, net asks %d (stderr %q)", got, a.asked[keys.NetTool], out.Result.Stderr)
	}
	writeCapability(t, dir, "fetch", manifest(`"127.0.0.1:`+port+`", "registry.npmjs.org"`))
	run()
	if a.asked["fetch"] != 2 {
		t.Errorf("a host added to the manifest asked %d times in all, want twice", a.asked["fetch"])
	}
}
