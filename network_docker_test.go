package ccrun_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/egresstest"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// dockerNetRuntime is a Runtime with @docker and @wasm whose approver is
// a, skipping the test without a Docker Engine and the test image.
func dockerNetRuntime(t *testing.T, dir string, a permission.Approver) (*ccrun.Runtime, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testimage.Ensure(ctx); err != nil {
		if os.Getenv("CCRUN_REQUIRE_DOCKER") == "1" {
			t.Fatal(err)
		}
		t.Skipf("no docker engine or test image: %v", err)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	rt, err := ccrun.New(engines.Docker(), engines.Wasm(), ccrun.WithProjectDir(dir), ccrun.WithTrustDir(t.TempDir()),
		ccrun.WithAuditLog(log), ccrun.WithApprover(a))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, log
}

// fetchScript reaches http://HOST:port/ for each host through the proxy
// HTTP_PROXY names, by nc, which shuts its writing side once the request
// is sent. (The test image's static busybox wget crashes here when it
// goes through a proxy.)
func fetchScript(port int, hosts ...string) string {
	var b strings.Builder
	b.WriteString(`hp=${HTTP_PROXY#http://}; ph=${hp%:*}; pp=${hp##*:}` + "\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, `printf 'GET http://%[1]s:%[2]d/ HTTP/1.0\r\n\r\n' | /bin/busybox nc -w 5 $ph $pp | /bin/busybox tail -1 | /bin/busybox sed "s/^/nc: /"
`, h, port)
	}
	return b.String()
}

// TestNetworkDocker: a @docker call whose settings name a host reaches it
// through ccrun's proxy (by an nc that half-closes); another
// host is asked about (net:HOST:PORT, @docker's), refused, and said on
// stderr, in the result and in the audit log; the prompt says the
// network the container gets. Without a list, the container has no
// network, as before.
func TestNetworkDocker(t *testing.T) {
	port := egresstest.Server(t) // on every address: 127.0.0.2 would answer were it reached
	tierHome(t, fmt.Sprintf(`{"network": {"allow": ["127.0.0.1:%d"]}}`, port))
	a := &netChooser{net: ceiling.Deny}
	rt, log := dockerNetRuntime(t, t.TempDir(), a)
	out, err := rt.Exec(context.Background(), &ccrun.Call{Image: testimage.Name,
		Args: []string{"/bin/busybox", "sh", "-c", fetchScript(port, "127.0.0.1", "127.0.0.2")}})
	if err != nil {
		t.Fatal(err)
	}
	allowed := fmt.Sprintf("hello from 127.0.0.1:%d", port)
	want := "network refused: 127.0.0.2:" + fmt.Sprint(port) + " (http): denied when asked"
	got := string(out.Result.Stdout)
	if want := "nc: " + allowed + "\nnc: egress: refused 127.0.0.2:"; !strings.HasPrefix(got, want) {
		t.Errorf("stdout %q: want %q (stderr %q)", got, want, out.Result.Stderr)
	}
	if !strings.Contains(out.Result.Detail, want) || !strings.Contains(string(out.Result.Stderr), "ccrun: "+want) {
		t.Errorf("detail %q, stderr %q: want %q", out.Result.Detail, out.Result.Stderr, want)
	}
	if len(a.asked) != 1 || a.asked[0] != fmt.Sprintf("net:127.0.0.2:%d", port) {
		t.Errorf("asked %q, want net:127.0.0.2:%d once", a.asked, port)
	}
	if l := strings.Join(out.Request.Loosens, "\n"); !strings.Contains(l, fmt.Sprintf("network: only through ccrun's proxy, to: 127.0.0.1:%d", port)) {
		t.Errorf("the prompt does not say the network: %q", l)
	}
	data, _ := os.ReadFile(log)
	if !strings.Contains(string(data), want) {
		t.Errorf("the audit log does not say it:\n%s", data)
	}
	var netLine bool
	for _, d := range decisionLines(t, log) {
		netLine = netLine || d["key"] == fmt.Sprintf("net:127.0.0.2:%d", port) && d["decision"] == "deny" && d["environment"] == string(ceiling.Docker)
	}
	if !netLine {
		t.Errorf("no @docker decision line for net:127.0.0.2:%d:\n%s", port, data)
	}
	if tmp, _ := filepath.Glob(filepath.Join(os.TempDir(), "ccrun-egress-*")); len(tmp) > 0 {
		t.Errorf("the proxy's directory is left: %q", tmp)
	}

	tierHome(t, "")
	rt, _ = dockerNetRuntime(t, t.TempDir(), a)
	out, err = rt.Exec(context.Background(), &ccrun.Call{Image: testimage.Name,
		Args: []string{"/bin/busybox", "sh", "-c", "env | /bin/busybox grep -c _PROXY= ; " + fetchScript(port, "127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Result.Stdout); !strings.HasPrefix(got, "0\n") || strings.Contains(got, "hello") {
		t.Errorf("without a list: stdout %q, want no proxy and no network", got)
	}
}

// TestNetworkDockerRefused: lists and the engine's network together are
// refused before anyone is asked, and a @wasm call has no hosts to allow.
func TestNetworkDockerRefused(t *testing.T) {
	tierHome(t, "")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.wasm"), emptyModule, 0o644)
	a := &netChooser{net: ceiling.Deny}
	rt, _ := dockerNetRuntime(t, dir, a)
	for _, c := range []ccrun.Call{
		{Image: testimage.Name, Options: engines.DockerOptions{Network: "bridge"}, AllowHosts: []string{"x.org"}},
		{Image: testimage.Name, Options: engines.DockerOptions{Network: "host"}, AllowHosts: []string{"x.org"}},
		{Module: "m.wasm", AllowHosts: []string{"x.org"}},
	} {
		_, err := rt.Exec(context.Background(), &c)
		if !errors.Is(err, ccrun.ErrInvalidCall) {
			t.Errorf("%+v: got %v, want ErrInvalidCall", c, err)
		}
		if c.Options != nil && (err == nil || !strings.Contains(err.Error(), "only through ccrun's proxy")) {
			t.Errorf("%+v: the error does not say why: %v", c.Options, err)
		}
	}
	if len(a.asked) != 0 {
		t.Errorf("asked %q", a.asked)
	}
}

// TestNetworkDockerCapabilityHosts: a @docker capability's hosts limit
// its container's network, show when asking, and are part of what was
// approved: one with a host added is asked again.
func TestNetworkDockerCapabilityHosts(t *testing.T) {
	port := egresstest.Server(t)
	tierHome(t, "")
	dir := t.TempDir()
	manifest := func(hosts string) string {
		return fmt.Sprintf(`{"name": "fetch", "description": "fetch", "environment": "@docker",
  "entry": {"image": %q, "command": ["/bin/busybox", "sh", "-c", %q]},
  "hosts": {"allow": [%s]}}`, testimage.Name, fetchScript(port, "127.0.0.1"), hosts)
	}
	writeCapability(t, dir, "fetch", manifest(fmt.Sprintf(`"127.0.0.1:%d"`, port)))
	a := &countingApprover{asked: map[string]int{}}
	rt, _ := dockerNetRuntime(t, dir, a)
	run := func() {
		t.Helper()
		out, err := rt.Exec(context.Background(), &ccrun.Call{Capability: "fetch"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(out.Result.Stdout), fmt.Sprintf("nc: hello from 127.0.0.1:%d\n", port); got != want {
			t.Errorf("stdout %q, want %q (stderr %q, detail %q)", got, want, out.Result.Stderr, out.Result.Detail)
		}
		if l := strings.Join(out.Request.Loosens, "\n"); !strings.Contains(l, fmt.Sprintf("network: may reach 127.0.0.1:%d", port)) {
			t.Errorf("the prompt does not show the hosts: %q", l)
		}
	}
	run()
	run()
	if a.asked["fetch"] != 1 || a.asked[keys.NetTool] != 0 {
		t.Errorf("asked %v, want the capability once and no host", a.asked)
	}
	writeCapability(t, dir, "fetch", manifest(fmt.Sprintf(`"127.0.0.1:%d", "registry.npmjs.org"`, port)))
	run()
	if a.asked["fetch"] != 2 {
		t.Errorf("a host added to the manifest asked %d times in all, want twice", a.asked["fetch"])
	}
}
