package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The end-to-end tests of `ccrun mcp`: the built ccrun binary, a process of
// its own, driven by real MCP clients (the go-sdk's here, mark3labs/mcp-go's
// in mcp_interop_test.go).

var mcpBuild struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// mcpBinary builds cmd/ccrun once per test binary, with the race detector
// when the tests run under it (the server's concurrency is then checked in
// the real process too).
func mcpBinary(t testing.TB) string {
	t.Helper()
	mcpBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "ccrun-mcp-bin")
		if err != nil {
			mcpBuild.err = err
			return
		}
		mcpBuild.path = filepath.Join(dir, "ccrun")
		args := []string{"build", "-o", mcpBuild.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := goCommand(nil, append(args, wholePkg)...)
		mcpBuild.out, mcpBuild.err = cmd.CombinedOutput()
	})
	if mcpBuild.err != nil {
		t.Fatalf("go build: %v\n%s", mcpBuild.err, mcpBuild.out)
	}
	return mcpBuild.path
}

// mcpProject is a fresh project directory with ccrun's state, config and
// sessions beside it, and the environment a ccrun process there needs.
func mcpProject(t testing.TB) (dir string, env []string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "project")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// a project (ccrun.json marks it): its audit log is its own .ccrun's
	if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(os.Environ(),
		"XDG_STATE_HOME="+filepath.Join(base, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(base, "config"),
		"XDG_CACHE_HOME="+filepath.Join(base, "cache"),
		"CCRUN_SESSION_DIR="+filepath.Join(base, "sessions"),
		"CCRUN_SESSION=",
	)
	return dir, env
}

// mcpStdio starts `ccrun mcp` in dir and connects a go-sdk client to it on
// protocol version (empty: the newest).
func mcpStdio(t testing.TB, dir string, env []string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	return mcpConnect(t, exec.Command(mcpBinary(t), "mcp"), dir, env, opts, version)
}

// mcpConnect starts cmd, a `ccrun mcp`, in dir and connects a go-sdk
// client to it, as mcpStdio does.
func mcpConnect(t testing.TB, cmd *exec.Cmd, dir string, env []string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	client := mcp.NewClient(&mcp.Implementation{Name: "ccrun-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, so)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("ccrun mcp stderr:\n%s", stderr.String())
		}
	})
	return cs
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// asker answers elicitations as a person would, and counts them.
type asker struct {
	mu     sync.Mutex
	n      int
	asked  []*mcp.ElicitParams
	answer string // the grant word chosen; "" declines
	action string // "": accept (or decline when answer is ""); "cancel"
}

func (a *asker) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	a.asked = append(a.asked, req.Params)
	switch {
	case a.action != "":
		return &mcp.ElicitResult{Action: a.action}, nil
	case a.answer == "":
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"grant": a.answer}}, nil
}

func (a *asker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

func (a *asker) set(answer string) {
	a.mu.Lock()
	a.answer = answer
	a.mu.Unlock()
}

// offered is the grant enum of the i-th question.
func (a *asker) offered(t *testing.T, i int) []string {
	t.Helper()
	return a.grant(t, i).Enum
}

// grantChoices are the choices of a question's grant property.
type grantChoices struct {
	Enum      []string `json:"enum"`
	EnumNames []string `json:"enumNames"`
}

// grant is the grant property of the i-th question's schema.
func (a *asker) grant(t *testing.T, i int) grantChoices {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if i >= len(a.asked) {
		t.Fatalf("question %d was never asked (%d asked)", i, len(a.asked))
	}
	b, _ := json.Marshal(a.asked[i].RequestedSchema)
	var s struct {
		Properties struct {
			Grant grantChoices `json:"grant"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.Properties.Grant
}

// eachProtocol runs f as a parallel subtest of t for each MCP protocol
// version of versions ("" for the newest, named so).
func eachProtocol(t *testing.T, versions []string, f func(t *testing.T, version string)) {
	for _, version := range versions {
		name := version
		if name == "" {
			name = "newest"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, version)
		})
	}
}

func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// structured decodes a result's structured content.
type mcpResult struct {
	Outcome    string  `json:"outcome"`
	Tool       string  `json:"tool"`
	Key        string  `json:"key"`
	ExitCode   *int    `json:"exit_code"`
	Stdout     string  `json:"stdout"`
	Stderr     string  `json:"stderr"`
	Truncated  bool    `json:"truncated"`
	Reason     string  `json:"reason"`
	DurationMS float64 `json:"duration_ms"`
	Decision   string  `json:"decision"`
	HowToAllow string  `json:"how_to_allow"`
}

func structured(t testing.TB, res *mcp.CallToolResult) mcpResult {
	t.Helper()
	var r mcpResult
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return r
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCPListTools: the built-ins and capability_create are listed, with
// input and output schemas that are valid JSON Schema and annotations that
// say the truth.
func TestMCPListTools(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	cs := mcpStdio(t, dir, env, nil, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
		for what, sch := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			b, _ := json.Marshal(sch)
			var s jsonschema.Schema
			if err := json.Unmarshal(b, &s); err != nil {
				t.Errorf("%s: %s schema does not decode: %v", tool.Name, what, err)
				continue
			}
			if _, err := s.Resolve(nil); err != nil {
				t.Errorf("%s: %s schema is not valid: %v", tool.Name, what, err)
			}
			if s.Type != "object" {
				t.Errorf("%s: %s schema type %q, want object", tool.Name, what, s.Type)
			}
		}
	}
	for _, name := range []string{"run_command", "run_wasm", "run_docker", "capability_create"} {
		if got[name] == nil {
			t.Fatalf("%s not listed; got %v", name, res.Tools)
		}
	}
	tests := []struct {
		tool                  string
		readOnly, destructive bool
		openWorld             bool
	}{
		{"run_command", false, true, true},
		{"run_wasm", false, true, false},
		{"run_docker", false, true, false},
		{"capability_create", false, true, false},
	}
	for _, tc := range tests {
		a := got[tc.tool].Annotations
		if a == nil {
			t.Errorf("%s: no annotations", tc.tool)
			continue
		}
		if a.ReadOnlyHint != tc.readOnly || a.DestructiveHint == nil || *a.DestructiveHint != tc.destructive ||
			a.OpenWorldHint == nil || *a.OpenWorldHint != tc.openWorld {
			t.Errorf("%s: annotations %+v, want readOnly %v destructive %v openWorld %v", tc.tool, a, tc.readOnly, tc.destructive, tc.openWorld)
		}
	}
}

// TestMCPAsk: on the newest and an older protocol, a read-only command runs
// without a question; one that asks runs on Once, on "session" the next call
// is not asked, Deny is isError with the reason; "project" is never offered
// for run_command; a client without elicitation is denied with how to allow.
func TestMCPAsk(t *testing.T) {
	t.Parallel()
	eachProtocol(t, []string{"", "2025-06-18"}, func(t *testing.T, version string) {
		dir, env := mcpProject(t)
		a := &asker{answer: "once"}
		cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle}, version)

		res := callTool(t, cs, "run_command", map[string]any{"command": "echo hi"})
		if r := structured(t, res); res.IsError || r.Stdout != "hi\n" || a.count() != 0 {
			t.Fatalf("read-only: isError %v, %+v, %d questions; want hi and none", res.IsError, r, a.count())
		}

		res = callTool(t, cs, "run_command", map[string]any{"command": "touch once"})
		if res.IsError || a.count() != 1 {
			t.Fatalf("once: isError %v (%s), %d questions, want 1", res.IsError, text(res), a.count())
		}
		if _, err := os.Stat(filepath.Join(dir, "once")); err != nil {
			t.Fatalf("once: did not run: %v", err)
		}
		if got := a.offered(t, 0); strings.Join(got, ",") != shellOffer() {
			t.Errorf("run_command offered %v, want %s (never project)", got, shellOffer())
		}
		a.mu.Lock()
		msg := a.asked[0].Message
		a.mu.Unlock()
		for _, want := range []string{"run_command (@shell) asks to run", "touch once", "key:       run_command:touch"} {
			if !strings.Contains(msg, want) {
				t.Errorf("question does not show %q:\n%s", want, msg)
			}
		}

		a.set("session")
		for i := range 2 {
			res = callTool(t, cs, "run_command", map[string]any{"command": "touch session"})
			if res.IsError {
				t.Fatalf("session call %d: %s", i, text(res))
			}
		}
		if a.count() != 2 {
			t.Fatalf("after a session grant: %d questions, want 2 (the second call not asked)", a.count())
		}

		a.set("")
		res = callTool(t, cs, "run_command", map[string]any{"command": "rm -f once"})
		r := structured(t, res)
		if !res.IsError || r.Outcome != "denied" || !strings.Contains(text(res), "declined") {
			t.Fatalf("deny: isError %v, %+v, %q", res.IsError, r, text(res))
		}
		if _, err := os.Stat(filepath.Join(dir, "once")); err != nil {
			t.Fatalf("deny: it ran: %v", err)
		}

		// A client without elicitation: denied, and told how to allow it.
		plain := mcpStdio(t, dir, env, nil, version)
		res = callTool(t, plain, "run_command", map[string]any{"command": "touch plain"})
		r = structured(t, res)
		if !res.IsError || r.Outcome != "denied" || !strings.Contains(r.HowToAllow, "permissions") ||
			!strings.Contains(text(res), "run_command:touch") {
			t.Fatalf("no elicitation: isError %v, %+v, %q", res.IsError, r, text(res))
		}
		if _, err := os.Stat(filepath.Join(dir, "plain")); err == nil {
			t.Fatal("no elicitation: it ran")
		}
	})
}

// helloCapability is the manifest of a @wasm capability whose module is the
// hello guest (capabilities.HelloWasm).
func helloManifest(name, desc string) map[string]any {
	return map[string]any{"name": name, "description": desc, "environment": "@wasm", "entry": map[string]any{"module": "hello.wasm"}}
}

// TestMCPCapabilityCreate: a capability written through capability_create
// is listed after tools/list_changed, asked before its first run, not asked
// again on a session grant, and asked again once its files change; an
// invalid manifest is refused naming the field.
func TestMCPCapabilityCreate(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	a := &asker{answer: "session"}
	changed := make(chan struct{}, 16)
	cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}, "2025-11-25")

	bad := callTool(t, cs, "capability_create", map[string]any{"manifest": map[string]any{"name": "x", "environment": "@wasm", "entry": map[string]any{"module": 3}}})
	if !bad.IsError || !strings.Contains(text(bad), "/entry/module") {
		t.Fatalf("invalid manifest: isError %v, %q; want the field named", bad.IsError, text(bad))
	}

	wasm := helloWasmBase64(t)
	res := callTool(t, cs, "capability_create", map[string]any{"manifest": helloManifest("hello", "says hello"),
		"files": []map[string]any{{"path": "hello.wasm", "content": wasm, "encoding": "base64"}}})
	if res.IsError {
		t.Fatalf("create: %s", text(res))
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed after capability_create")
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range list.Tools {
		found = found || tool.Name == "hello"
	}
	if !found {
		t.Fatalf("hello not listed after list_changed: %v", list.Tools)
	}
	// What the agent wrote is in the audit log, before anything ran.
	var written []map[string]any
	for _, rec := range auditLines(t, dir) {
		if rec["kind"] == "capability" {
			written = append(written, rec)
		}
	}
	if len(written) != 1 || written[0]["tool"] != "hello" || written[0]["outcome"] != "created" ||
		!strings.Contains(fmt.Sprint(written[0]["display"]), "sha256:") {
		t.Errorf("audit: %v, want one capability line for hello, created, with its digest", written)
	}
	for i := range 2 {
		res = callTool(t, cs, "hello", map[string]any{})
		if r := structured(t, res); res.IsError || !strings.Contains(r.Stdout, "hello") {
			t.Fatalf("run %d: %+v %s", i, r, text(res))
		}
	}
	if a.count() != 1 {
		t.Fatalf("%d questions for two runs after a session grant, want 1", a.count())
	}
	if got := a.offered(t, 0); strings.Join(got, ",") != "once,session,project,deny" {
		t.Errorf("@wasm capability offered %v, want once, session, project, deny", got)
	}
	// Edited: asked again.
	if err := os.WriteFile(filepath.Join(dir, ".ccrun", "capabilities", "hello", "NOTES"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = callTool(t, cs, "hello", map[string]any{})
	if res.IsError || a.count() != 2 {
		t.Fatalf("after an edit: isError %v (%s), %d questions, want 2", res.IsError, text(res), a.count())
	}
}

// TestMCPCancel: cancelling a `sleep` stops it; no process outlives the call.
func TestMCPCancel(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	cs := mcpStdio(t, dir, env, nil, "")
	secs := fmt.Sprint(600 + time.Now().UnixNano()%1000) // sleep 600…1599: a marker of this test's process
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sleep " + secs}})
		done <- err
	}()
	waitFor(t, "the sleep to start", func() bool { return len(sleepers(secs)) > 0 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	waitFor(t, "the sleep to be gone", func() bool { return len(sleepers(secs)) == 0 })
	// The server keeps serving.
	if res := callTool(t, cs, "run_command", map[string]any{"command": "echo after"}); res.IsError {
		t.Fatalf("after a cancel: %s", text(res))
	}
}

// sleepers are the pids of processes running `sleep secs`.
func sleepers(secs string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(argv) == 2 && filepath.Base(argv[0]) == "sleep" && argv[1] == secs {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitFor polls cond for up to a minute: a bound for a broken build, not a
// timing assertion.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMCPProgress: a 3 s run with a progress token reports progress, and its
// state events arrive as debug log messages.
func TestMCPProgress(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	var progress, logs atomic.Int32
	cs := mcpStdio(t, dir, env, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		//lint:ignore SA1019 the server sends state events as debug log messages
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			if r.Params.Level == "debug" && r.Params.Logger == "ccrun" {
				logs.Add(1)
			}
		},
	}, "2025-11-25")
	//lint:ignore SA1019 the server sends state events as debug log messages
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sleep 3"}}
	p.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("sleep 3: %v %v", err, res)
	}
	if progress.Load() == 0 {
		t.Error("no progress notification for a 3 s run")
	}
	if logs.Load() < 3 { // validating, scheduled, executing, success
		t.Errorf("%d debug log messages of state events, want at least 3", logs.Load())
	}
}

// TestMCPOutputCapped: 5 MB of output is capped at the CLI's limit (4 MiB
// per stream): truncated, stopped for output, isError.
func TestMCPOutputCapped(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	a := &asker{answer: "once"}
	cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle}, "")
	res := callTool(t, cs, "run_command", map[string]any{"command": "head -c 5000000 /dev/zero | tr '\\0' a"})
	r := structured(t, res)
	if !res.IsError || !r.Truncated || r.Reason != "output" || len(r.Stdout) != 4<<20 {
		t.Fatalf("5 MB: isError %v truncated %v reason %q, %d bytes of stdout; want capped at %d", res.IsError, r.Truncated, r.Reason, len(r.Stdout), 4<<20)
	}
}

// TestMCPConcurrent: 16 calls in flight on one connection, all answered
// right (under -race, the server binary is built with it too).
func TestMCPConcurrent(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	a := &asker{answer: "once"}
	cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle}, "")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := fmt.Sprintf("echo n%d", i)
			if i%2 == 1 {
				cmd = fmt.Sprintf("touch f%d && echo n%d", i, i) // asked
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": cmd}})
			if err != nil {
				errs <- err
				return
			}
			var r mcpResult
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &r)
			if res.IsError || r.Stdout != fmt.Sprintf("n%d\n", i) {
				errs <- fmt.Errorf("call %d: isError %v stdout %q: %s", i, res.IsError, r.Stdout, text(res))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if a.count() != 8 {
		t.Errorf("%d questions, want 8", a.count())
	}
}

// TestMCPRawProtocol: a malformed request and an unknown tool get protocol
// errors, and the server keeps serving.
func TestMCPRawProtocol(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	cmd := exec.Command(mcpBinary(t), "mcp")
	cmd.Dir, cmd.Env = dir, env
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	out := bufio.NewReader(outp)
	send := func(s string) { fmt.Fprintln(in, s) }
	recv := func() map[string]any {
		t.Helper()
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := recv(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
	if m := recv(); m["error"] == nil || m["id"] != float64(2) {
		t.Fatalf("unknown tool: %v, want a protocol error", m)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_command","arguments":"not an object"}}`)
	if m := recv(); m["error"] == nil && !isErrorResult(m) {
		t.Fatalf("arguments not an object: %v, want an error", m)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":`) // cut short: not JSON
	send(`{"jsonrpc":"1.0","id":6,"method":"tools/list"}`)
	send(`[1,2]`)
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	for {
		m := recv()
		if m["id"] == float64(5) {
			if m["result"] == nil {
				t.Fatalf("tools/list after a malformed request: %v", m)
			}
			break
		}
		if m["error"] == nil {
			t.Fatalf("a malformed request: %v, want a protocol error", m)
		}
	}
}

func isErrorResult(m map[string]any) bool {
	r, _ := m["result"].(map[string]any)
	return r != nil && r["isError"] == true
}

// TestMCPForgedAnswer: input responses on a first call nobody asked, and a
// request state answered twice, are refused; nothing runs.
func TestMCPForgedAnswer(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	a := &asker{answer: "once"}
	cs := mcpStdio(t, dir, env, &mcp.ClientOptions{ElicitationHandler: a.handle, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, "")
	args := map[string]any{"command": "touch forged"}
	accept := mcp.InputResponseMap{"ccrun_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"grant": "once"}}}
	for _, state := range []string{"", "forged", "eyJjIjoiYSJ9.AAAA"} {
		res := callToolParams(t, cs, &mcp.CallToolParams{Name: "run_command", Arguments: args, InputResponses: accept, RequestState: state})
		if r := structured(t, res); !res.IsError || r.Outcome != "refused" {
			t.Fatalf("state %q: %+v %s, want refused", state, r, text(res))
		}
	}
	// Asked for real: the state is good once, for this call only.
	first := callToolParams(t, cs, &mcp.CallToolParams{Name: "run_command", Arguments: args})
	if !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("first call: want input required, got %+v", first)
	}
	other := callToolParams(t, cs, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "touch other"}, InputResponses: accept, RequestState: first.RequestState})
	if r := structured(t, other); r.Outcome != "refused" {
		t.Fatalf("the state on another call: %+v, want refused", r)
	}
	ok := callToolParams(t, cs, &mcp.CallToolParams{Name: "run_command", Arguments: args, InputResponses: accept, RequestState: first.RequestState})
	if ok.IsError {
		t.Fatalf("the answer asked for: %s", text(ok))
	}
	again := callToolParams(t, cs, &mcp.CallToolParams{Name: "run_command", Arguments: args, InputResponses: accept, RequestState: first.RequestState})
	if r := structured(t, again); r.Outcome != "refused" {
		t.Fatalf("the same answer twice: %+v, want refused", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Fatal("a forged answer ran a command")
	}
}

func callToolParams(t testing.TB, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return res
}

// mcpHTTPClient connects a go-sdk client with opts to the HTTP server of
// `ccrun mcp` at url (mcpHTTP), with its bearer token, within a minute;
// the session is closed when t ends.
func mcpHTTPClient(t testing.TB, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ccrun-test", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpHTTP starts `ccrun mcp --http` on a free loopback port and returns its
// URL and token.
func mcpHTTP(t testing.TB, dir string, env []string) (url, token string) {
	t.Helper()
	cmd := exec.Command(mcpBinary(t), "mcp", "--http", "127.0.0.1:0")
	cmd.Dir, cmd.Env = dir, env
	errp, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	sc := bufio.NewScanner(errp)
	re := regexp.MustCompile(`serving (http://\S+)|bearer token: (\S+)`)
	for (url == "" || token == "") && sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		switch {
		case m == nil:
		case m[1] != "":
			url = m[1]
		default:
			token = m[2]
		}
	}
	if url == "" || token == "" {
		t.Fatalf("no URL and token on stderr: %v", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, errp) }()
	return url, token
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestMCPHTTP: over HTTP, nothing without the token; two connections at once,
// each its own session (a session grant on one is asked again on the other).
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	url, token := mcpHTTP(t, dir, env)

	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %s, want 401", resp.Status)
	}

	connect := func(a *asker) *mcp.ClientSession {
		return mcpHTTPClient(t, url, token, &mcp.ClientOptions{ElicitationHandler: a.handle})
	}
	a1, a2 := &asker{answer: "session"}, &asker{answer: "once"}
	c1, c2 := connect(a1), connect(a2)
	var wg sync.WaitGroup
	for _, c := range []struct {
		cs *mcp.ClientSession
		n  string
	}{{c1, "one"}, {c2, "two"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := callTool(t, c.cs, "run_command", map[string]any{"command": "echo " + c.n})
			if r := structured(t, res); res.IsError || r.Stdout != c.n+"\n" {
				t.Errorf("%s: %+v", c.n, r)
			}
		}()
	}
	wg.Wait()
	if res := callTool(t, c1, "run_command", map[string]any{"command": "touch h1"}); res.IsError {
		t.Fatalf("c1: %s", text(res))
	}
	if res := callTool(t, c1, "run_command", map[string]any{"command": "touch h1"}); res.IsError || a1.count() != 1 {
		t.Fatalf("c1 again: %s, %d questions, want 1", text(res), a1.count())
	}
	if res := callTool(t, c2, "run_command", map[string]any{"command": "touch h1"}); res.IsError || a2.count() != 1 {
		t.Fatalf("c2: %s, %d questions, want 1 (c1's session grant is not c2's)", text(res), a2.count())
	}
}

func helloWasmBase64(t testing.TB) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(capabilities.HelloWasm())
}

// TestMCPSettingsDeny: a deny rule added to ccrun.json while the server runs
// hides the tool (tools/list_changed) and the tool is refused when called.
func TestMCPSettingsDeny(t *testing.T) {
	t.Parallel()
	dir, env := mcpProject(t)
	changed := make(chan struct{}, 16)
	cs := mcpStdio(t, dir, env, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}, "2025-11-25")
	if err := os.WriteFile(filepath.Join(dir, "ccrun.json"), []byte(`{"permissions": {"deny": ["run_wasm"]}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed after a deny rule was added")
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "run_wasm" {
			t.Fatal("run_wasm still listed under a deny rule")
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_wasm", Arguments: map[string]any{"module": "x.wasm"}})
	if err == nil && !res.IsError {
		t.Fatalf("run_wasm under a deny rule: %+v, want refused", res)
	}
}
