package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun/internal/testimage"
)

// TestMCPUnixSocket: `ccrun mcp --http unix:PATH` serves on a socket made
// for the current user only, still behind the bearer token; a real client
// connects through it and runs a command.
func TestMCPUnixSocket(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	// Short: a unix socket's path is at most 107 bytes.
	sockDir, err := os.MkdirTemp("", "ccrun-mcp-sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s")
	cmd := exec.Command(mcpBinary(t), "mcp", "--http", "unix:"+sock)
	cmd.Dir, cmd.Env = dir, env
	errp, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	sc := bufio.NewScanner(errp)
	var token, lines string
	for token == "" && sc.Scan() {
		lines += sc.Text() + "\n"
		if _, tok, ok := strings.Cut(sc.Text(), "bearer token: "); ok {
			token = strings.TrimSpace(tok)
		}
	}
	if token == "" {
		t.Fatalf("no bearer token on stderr: %v\n%s", sc.Err(), lines)
	}
	go func() { _, _ = io.Copy(io.Discard, errp) }()
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("%s: mode %v, want a socket for its owner only", sock, fi.Mode())
	}
	dial := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	resp, err := (&http.Client{Transport: dial}).Post("http://localhost/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %s, want 401", resp.Status)
	}
	a := &asker{answer: "once"}
	client := mcp.NewClient(&mcp.Implementation{Name: "ccrun-test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: a.handle})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://localhost/",
		HTTPClient: &http.Client{Transport: bearer{token, dial}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res := callTool(t, cs, "run_command", map[string]any{"command": "echo over a socket"})
	if r := structured(t, res); res.IsError || r.Stdout != "over a socket\n" {
		t.Fatalf("run_command: %+v %s", r, text(res))
	}
}

// TestMCPRunDocker: run_docker through `ccrun mcp`: asked through the
// client (sandboxed: project is among the choices), run in a container of
// the local engine with the call's command, and its output returned.
func TestMCPRunDocker(t *testing.T) {
	t.Parallel()
	testimage.Need(t)
	dir, env := mcpProject(t)
	a := &asker{answer: "once"}
	cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle}, "2025-11-25")
	res := callTool(t, cs, "run_docker", map[string]any{"image": testimage.Name, "command": []string{"/bin/busybox", "sh", "-c", "echo in a container; id -u"}})
	r := structured(t, res)
	if res.IsError || r.Stdout != "in a container\n65534\n" {
		t.Fatalf("run_docker: %+v %s", r, text(res))
	}
	if a.count() != 1 {
		t.Fatalf("%d questions, want 1", a.count())
	}
	if got := strings.Join(a.offered(t, 0), ","); got != "once,session,project,deny" {
		t.Errorf("@docker offered %s, want once, session, project, deny", got)
	}
	// A network the call asks for is a loosening: not in run_docker's
	// arguments at all, so the model cannot ask for it.
	bad := callTool(t, cs, "run_docker", map[string]any{"image": testimage.Name, "network": "host"})
	if !bad.IsError {
		t.Fatalf("run_docker with a network argument: %s, want refused", text(bad))
	}
}

// auditLines reads a project's audit log.
func auditLines(t *testing.T, dir string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".ccrun", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}
