package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exited reports whether the process pid has ended (gone, or a zombie
// its parent has not reaped yet).
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// TestMCPSignalStopsCalls: SIGTERM or SIGINT to `ccrun mcp` while a call
// runs `sleep` cancels the call, kills the sleep, and the server exits
// long before the sleep would have ended (it sleeps 10 minutes; the bound
// is a minute, for a loaded machine).
func TestMCPSignalStopsCalls(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir, env := mcpProject(t)
			cmd := exec.Command(mcpBinary(t), "mcp")
			cmd.Dir, cmd.Env = dir, env
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			secs := fmt.Sprint(600 + time.Now().UnixNano()%1000 + int64(sig)*1000)
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sleep " + secs}})
				done <- err
			}()
			waitFor(t, "the sleep to start", func() bool { return len(sleepers(secs)) > 0 })
			pids := sleepers(secs)
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "ccrun mcp to exit", func() bool { return exited(cmd.Process.Pid) })
			t.Logf("ccrun mcp exited %v after %s", time.Since(start).Round(time.Millisecond), sig)
			for _, p := range pids {
				var pid int
				fmt.Sscan(p, &pid)
				if !exited(pid) {
					t.Errorf("the sleep (pid %d) outlived ccrun mcp", pid)
				}
			}
			if left := sleepers(secs); len(left) > 0 {
				t.Errorf("sleeps left: %v", left)
			}
		})
	}
}

// TestMCPHTTPSignalStopsCalls: the same over HTTP: SIGTERM to `ccrun mcp
// --http` mid-call kills the sleep and the server exits.
func TestMCPHTTPSignalStopsCalls(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	cmd := exec.Command(mcpBinary(t), "mcp", "--http", "127.0.0.1:0")
	cmd.Dir, cmd.Env = dir, env
	errp, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-reaped })
	sc := bufio.NewScanner(errp)
	re := regexp.MustCompile(`serving (http://\S+)|bearer token: (\S+)`)
	var url, token string
	for (url == "" || token == "") && sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil && m[1] != "" {
			url = m[1]
		} else if m != nil {
			token = m[2]
		}
	}
	if url == "" || token == "" {
		t.Fatalf("no URL and token on stderr: %v", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, errp); _ = cmd.Wait(); close(reaped) }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	secs := fmt.Sprint(5600 + time.Now().UnixNano()%1000)
	go func() {
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sleep " + secs}})
	}()
	waitFor(t, "the sleep to start", func() bool { return len(sleepers(secs)) > 0 })
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reaped:
	case <-time.After(time.Minute):
		t.Fatal("ccrun mcp --http still running a minute after SIGTERM")
	}
	t.Logf("ccrun mcp --http exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	if left := sleepers(secs); len(left) > 0 {
		t.Errorf("sleeps left: %v", left)
	}
	// The call was cancelled and said so before the server went, rather
	// than cut short by its exit.
	cancelled := false
	for _, l := range auditLines(t, dir) {
		cancelled = cancelled || l["kind"] == "execution" && l["outcome"] == "cancelled"
	}
	if !cancelled {
		t.Errorf("no execution line of a cancelled call in the audit log: %v", auditLines(t, dir))
	}
}
