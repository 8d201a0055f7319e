// Package mcpserver serves a ccrun Runtime over the Model Context Protocol,
// so that any agent that speaks MCP (Claude Code, Codex, Gemini CLI, VS
// Code, …) runs its tool calls behind ccrun's gate.
//
// The tools offered are the Runtime's (ccrun.Runtime.Tools): run_command,
// run_wasm, run_docker, the library tools a Go program registered
// (ccrun.WithTool) and the project's capabilities, less what the policy
// hides; and capability_create, which writes a new capability. A call goes
// through the same gate as `ccrun exec`: the model passes arguments only,
// never a mode, a rule, a limit or an approval.
//
// When the gate asks, the person is asked through the client (form-mode
// elicitation) with what the terminal prompt shows, and offered exactly the
// grants the decision allows (prompt.Choices). On protocol 2026-07-28 the
// question goes back as the tool result's input requests, and the answer
// comes with a retried call; the request state that carries it is bound by
// an HMAC of a per-process key to the connection, the call's arguments,
// its key, its digest and a one-use nonce, so that an answer nobody was
// asked for is refused. On older protocols the server asks the client
// directly while the call waits. A client that cannot be asked, a declined
// or cancelled question, or no answer in time is a deny, returned as a tool
// result with isError whose text says what was refused and how the person
// can allow it.
//
// One MCP connection is one session: each has its own session allowlist,
// so a "this session" grant lasts as long as the connection.
//
// A Server is safe for concurrent use; it serves any number of connections
// at once.
package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/advice"
	"github.com/ccrun/ccrun/internal/prompt"
	"github.com/ccrun/ccrun/internal/runtimehook"
	"github.com/ccrun/ccrun/internal/trust"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/shellcmd"
)

// ToolCapabilityCreate is the built-in tool that writes a new capability.
const ToolCapabilityCreate = "capability_create"

// newProtocol is the first protocol version on which a server may not send
// requests of its own while serving one (multi-round-trip requests).
const newProtocol = "2026-07-28"

// approvalID names ccrun's question among a result's input requests.
const approvalID = "ccrun_approval"

// Options configure a Server. The zero value is the default of each field.
type Options struct {
	// Name and Version are what the server calls itself in the
	// handshake. Default: "ccrun" and "dev".
	Name, Version string
	// AskTimeout is how long a person has to answer a question; past it,
	// the call is denied. Default: 10 minutes.
	AskTimeout time.Duration
	// Rescan is how often the project's capabilities and the policy's
	// visibility are read again, so that tools/list_changed is sent when
	// they change. Default: 1 second; negative: only on request (Sync) and
	// after capability_create.
	Rescan time.Duration
	// ProgressEvery is how often a running call with a progress token
	// reports progress. Default: 500 ms.
	ProgressEvery time.Duration
	// Logger logs the server's own problems. Default: none.
	Logger *slog.Logger
	// Reload, when set, builds the Runtime again; it is called when a
	// settings file (managed, user, ccrun.json, ccrun.local.json) changes,
	// so that a new deny rule hides a tool at once (list_changed) and the
	// next calls are decided by the new settings. Calls under way finish
	// on the Runtime they started on; the Server closes the Runtimes
	// Reload gave it once they are idle, never the one given to New.
	// Default: nil, the settings are those of the Runtime given to New.
	Reload func() (*ccrun.Runtime, error)
	// AllowOrigins are the origins (scheme://host[:port]) besides
	// loopback ones whose requests Handler serves. Default: none.
	AllowOrigins []string
	// SessionTimeout closes an HTTP session that made no request for this
	// long (Handler). Default: DefaultSessionTimeout; negative: never.
	SessionTimeout time.Duration
	// MaxSessions is how many HTTP sessions may be open at once; past it
	// Handler refuses new ones. Default: DefaultMaxSessions.
	MaxSessions int
}

// Server serves one ccrun Runtime over MCP. Build it with New.
type Server struct {
	dir string // the project root
	// trustFile is the project's record in the default trust store
	// ("" when there is none).
	trustFile string
	cur       *rtRef // the current Runtime (guarded by mu; see use)
	mcp       *mcp.Server
	opts      Options
	key       []byte // the HMAC key of request states; per process, never stored

	mu     sync.Mutex
	conns  map[*mcp.ServerSession]*conn
	nonces map[string]time.Time // nonces of request states already answered, until they expire
	listed map[string]string    // tool name → fingerprint of what is listed
	allow  fileStamp            // the project allowlist file when last read
	conf   []fileStamp          // the settings files when last read (Options.Reload)
	// inflight counts the calls being handled; idle, when set, is closed
	// when it drops to 0 (CancelCalls waits on it).
	inflight int
	idle     chan struct{}

	syncMu sync.Mutex // one Sync at a time

	// base is the parent of every connection's context: CancelCalls
	// cancels it, and with it every call in flight.
	base       context.Context
	cancelBase context.CancelFunc
}

// conn is what one MCP connection owns.
type conn struct {
	id      string
	ss      *mcp.ServerSession
	session *allowlist.SessionAllowlist
	// ctx is done when the connection's calls are to stop: its Serve's
	// context is done, or CancelCalls was called.
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a Server for rt. It lists rt's tools at once; Serve and
// Handler start serving.
func New(rt *ccrun.Runtime, o *Options) (*Server, error) {
	s := &Server{dir: rt.ProjectDir(), cur: &rtRef{rt: rt}, conns: map[*mcp.ServerSession]*conn{}, nonces: map[string]time.Time{}, listed: map[string]string{}}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	if st := rt.Trust(); st.Dir != "" {
		s.trustFile = trust.Open(trust.DefaultDir()).File(st.Dir)
	}
	if o != nil {
		s.opts = *o
	}
	if s.opts.Name == "" {
		s.opts.Name = "ccrun"
	}
	if s.opts.Version == "" {
		s.opts.Version = "dev"
	}
	if s.opts.AskTimeout <= 0 {
		s.opts.AskTimeout = 10 * time.Minute
	}
	if s.opts.Rescan == 0 {
		s.opts.Rescan = time.Second
	}
	if s.opts.ProgressEvery <= 0 {
		s.opts.ProgressEvery = 500 * time.Millisecond
	}
	s.key = make([]byte, 32)
	if _, err := rand.Read(s.key); err != nil {
		return nil, err
	}
	logger := s.opts.Logger
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: s.opts.Name, Version: s.opts.Version}, &mcp.ServerOptions{
		Logger: logger,
		//lint:ignore SA1019 HasTools keeps tools/list_changed announced before any tool is added
		HasTools: true,
		Instructions: "ccrun runs these tools behind its permission gate. A call the gate asks about is put to the person " +
			"through this client when it can show questions; a denied call comes back as an error result that says why " +
			"and how the person can allow it: do not retry it unchanged.",
	})
	s.mcp.AddTool(&mcp.Tool{Name: ToolCapabilityCreate, Description: createDescription, InputSchema: json.RawMessage(createSchema),
		OutputSchema: json.RawMessage(createOutputSchema), Annotations: createAnnotations()}, s.handleCreate)
	s.conf = s.settingsStamps()
	if err := s.Sync(); err != nil {
		return nil, err
	}
	s.allow = stampOf(s.allowlistPath())
	return s, nil
}

// rtRef is a Runtime and the calls using it.
type rtRef struct {
	rt      *ccrun.Runtime
	users   int
	retired bool // replaced by Reload: closed when idle
	owned   bool // given by Reload: the Server closes it
}

// use returns the current Runtime for one call; done must be called once
// the call ended.
func (s *Server) use() (rt *ccrun.Runtime, done func()) {
	s.mu.Lock()
	r := s.cur
	r.users++
	s.mu.Unlock()
	return r.rt, func() {
		s.mu.Lock()
		r.users--
		closeIt := r.retired && r.owned && r.users == 0
		s.mu.Unlock()
		if closeIt {
			_ = r.rt.Close()
		}
	}
}

// settingsStamps are the stamps of the files a decision reads besides the
// project allowlist: the settings files, and the project's trust record
// (`ccrun trust` writes it; the project's own files count by it).
func (s *Server) settingsStamps() []fileStamp {
	loc := permission.DefaultLocations(s.dir)
	var out []fileStamp
	for _, p := range []string{loc.Managed, loc.User, loc.Project, loc.Local, s.trustFile} {
		out = append(out, stampOf(p))
	}
	return out
}

// reloadSettings builds the Runtime again when a settings file changed.
func (s *Server) reloadSettings() {
	if s.opts.Reload == nil {
		return
	}
	st := s.settingsStamps()
	s.mu.Lock()
	changed := !slices.Equal(st, s.conf)
	s.conf = st
	s.mu.Unlock()
	if !changed {
		return
	}
	rt, err := s.opts.Reload()
	if err != nil {
		if s.opts.Logger != nil {
			s.opts.Logger.Warn("settings changed, but the runtime could not be built again; the old settings stay", "err", err)
		}
		return
	}
	s.mu.Lock()
	old := s.cur
	s.cur = &rtRef{rt: rt, owned: true}
	old.retired = true
	closeIt := old.owned && old.users == 0
	s.mu.Unlock()
	if closeIt {
		_ = old.rt.Close()
	}
}

// Close closes the Runtimes Reload gave the Server (not the one given to
// New, which its caller closes).
func (s *Server) Close() error {
	s.mu.Lock()
	r := s.cur
	s.mu.Unlock()
	if r.owned {
		return r.rt.Close()
	}
	return nil
}

// MCP returns the underlying go-sdk server, for a caller that wants its own
// transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Serve serves one connection over t (mcp.StdioTransport for `ccrun mcp`)
// until the client goes or ctx is done; capabilities are re-read every
// Options.Rescan meanwhile. When ctx is done (a signal to `ccrun mcp`),
// every call in flight on the connection is cancelled — its process
// tree, container or guest is stopped — and Serve returns once they
// ended, with ctx's error.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.watch(ctx)
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	c := s.conn(ss)
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		c.cancel()
		_ = ss.Close() // waits for the calls' handlers, which end as cancelled
		<-closed
		return ctx.Err()
	case err := <-closed:
		c.cancel()
		return err
	}
}

// CancelCalls cancels every call in flight, on every connection, and
// every call made after it, and waits until the calls in flight ended
// (their process trees, containers and guests stopped, their ends
// audited) or ctx is done: what `ccrun mcp --http` does on a signal,
// before it shuts the HTTP server down.
func (s *Server) CancelCalls(ctx context.Context) error {
	s.cancelBase()
	for {
		s.mu.Lock()
		if s.inflight == 0 {
			s.mu.Unlock()
			return nil
		}
		if s.idle == nil {
			s.idle = make(chan struct{})
		}
		idle := s.idle
		s.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// callStarted counts a call in flight; the func it returns ends it.
func (s *Server) callStarted() func() {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.inflight--
		if s.inflight == 0 && s.idle != nil {
			close(s.idle)
			s.idle = nil
		}
		s.mu.Unlock()
	}
}

// callContext is the context of one call on c: ctx, done too when c's
// calls are to stop.
func (c *conn) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.ctx, func() { cancel(errStopping) })
	return ctx, func() { stop(); cancel(nil) }
}

// errStopping is why a call is cancelled when the server stops.
var errStopping = errors.New("ccrun mcp is stopping (a signal or the end of the connection)")

// Watch re-reads the tools every Options.Rescan until ctx is done (Serve
// does it itself; an HTTP server calls it beside Handler).
func (s *Server) Watch(ctx context.Context) { s.watch(ctx) }

func (s *Server) watch(ctx context.Context) {
	if s.opts.Rescan < 0 {
		return
	}
	t := time.NewTicker(s.opts.Rescan)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Sync(); err != nil && s.opts.Logger != nil {
				s.opts.Logger.Warn("rescanning tools", "err", err)
			}
		}
	}
}

// conn returns the connection state of ss, making it on first use; it is
// dropped when the connection ends.
func (s *Server) conn(ss *mcp.ServerSession) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.conns[ss]; ok {
		return c
	}
	c := &conn{id: rand.Text(), ss: ss, session: allowlist.NewSessionAllowlist()}
	c.ctx, c.cancel = context.WithCancel(s.base)
	s.conns[ss] = c
	go func() {
		_ = ss.Wait()
		c.cancel()
		s.mu.Lock()
		delete(s.conns, ss)
		s.mu.Unlock()
	}()
	return c
}

// multiRound reports whether the client speaks a protocol on which
// questions go back as input requests.
func (c *conn) multiRound() bool {
	p := c.ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= newProtocol
}

// canAsk reports whether the client declared form-mode elicitation.
func (c *conn) canAsk() bool {
	p := c.ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil // neither said: form, for older clients
}

// Sync reads the tools again and updates what is listed: each change
// (a capability created, edited or removed, a tool the policy now hides)
// sends notifications/tools/list_changed to the clients.
func (s *Server) Sync() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.reloadSettings()
	rt, done := s.use()
	defer done()
	tools, errs := rt.Tools()
	if s.opts.Logger != nil {
		for _, err := range errs {
			s.opts.Logger.Warn("capability not offered", "err", err)
		}
	}
	seen := map[string]bool{ToolCapabilityCreate: true}
	for _, t := range tools {
		if t.Name == ToolCapabilityCreate {
			continue
		}
		mt := s.describe(t)
		fp, err := json.Marshal(mt)
		if err != nil {
			continue
		}
		seen[t.Name] = true
		if s.listed[t.Name] == string(fp) {
			continue
		}
		if err := addTool(s.mcp, mt, s.handleCall); err != nil {
			if s.opts.Logger != nil {
				s.opts.Logger.Warn("tool not offered", "tool", t.Name, "err", err)
			}
			delete(seen, t.Name)
			continue
		}
		s.listed[t.Name] = string(fp)
	}
	var gone []string
	for name := range s.listed {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.listed, name)
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		s.mcp.RemoveTools(gone...)
	}
	return nil
}

// addTool adds t, turning the SDK's panic on a schema it refuses into an
// error.
func addTool(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	srv.AddTool(t, h)
	return nil
}

// describe is t as MCP lists it: its schema, the result's schema, and
// annotations that say the truth about what ccrun lets it do.
func (s *Server) describe(t ccrun.Tool) *mcp.Tool {
	f, tr := false, true
	a := &mcp.ToolAnnotations{DestructiveHint: &tr, OpenWorldHint: &tr}
	desc := t.Description
	switch t.Name {
	case keys.ShellTool:
		a.Title = "Run a shell command (on the host, behind ccrun's gate)"
		desc += " Read-only commands run at once, confined; anything else is asked of the person, and a grant lasts for this session at most."
	case keys.WasmTool:
		a.Title, a.OpenWorldHint = "Run a WebAssembly module (sandboxed)", &f
		desc += " It is asked of the person before it runs; a writable mount lets it change files."
	case keys.DockerTool:
		a.Title, a.OpenWorldHint = "Run a container (sandboxed)", &f
		desc += " It is asked of the person before it runs; a writable mount lets it change files."
	default:
		if c, err := capabilities.Find(s.dir, t.Name); err == nil {
			m := c.Manifest
			a.Title = fmt.Sprintf("%s (%s capability)", t.Name, m.Environment)
			if m.Environment.Sandboxed() { // not @shell, nor an environment a Go program registered
				if m.NetworkOrDefault() == capabilities.NetworkNone {
					a.OpenWorldHint = &f
				}
				writable := false
				for _, mt := range m.Mounts {
					writable = writable || mt.Writable
				}
				if !writable {
					a.DestructiveHint = &f
				}
			}
			desc = strings.TrimSpace(desc + fmt.Sprintf(" (a %s capability of this project, run by ccrun; asked of the person before its first run and again whenever its files change)", m.Environment))
		} else {
			// a library tool: its class is what it says of itself
			a.Title = t.Name
			switch t.Class {
			case permission.ClassRead:
				a.ReadOnlyHint, a.DestructiveHint, a.OpenWorldHint, a.IdempotentHint = true, &f, &f, true
			case permission.ClassInternal:
				a.DestructiveHint, a.OpenWorldHint = &f, &f
			case permission.ClassWrite:
				a.OpenWorldHint = &f
			}
		}
	}
	return &mcp.Tool{Name: t.Name, Description: desc, InputSchema: t.InputSchema,
		OutputSchema: json.RawMessage(resultSchema), Annotations: a}
}

// allowlistPath is the project allowlist's file.
func (s *Server) allowlistPath() string {
	rt, done := s.use()
	defer done()
	return rt.AllowlistFile()
}

// reloadAllowlist reads the project allowlist again when its file changed
// (a person ran `ccrun allowlist add … --scope project`).
func (s *Server) reloadAllowlist(rt *ccrun.Runtime) {
	path := rt.AllowlistFile()
	if path == "" {
		return
	}
	st := stampOf(path)
	s.mu.Lock()
	changed := st != s.allow
	s.allow = st
	s.mu.Unlock()
	if changed {
		if err := runtimehook.ReloadAllowlist(rt); err != nil && s.opts.Logger != nil {
			s.opts.Logger.Warn("reloading the project allowlist", "err", err)
		}
	}
}

// fileStamp says whether a file changed: its size and modification time.
type fileStamp struct {
	size int64
	mod  time.Time
	ok   bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil || path == "" {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), mod: fi.ModTime(), ok: true}
}

// handleCall runs one call of a gated tool.
func (s *Server) handleCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	defer s.callStarted()()
	c := s.conn(req.Session)
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	p := req.Params
	name := p.Name
	args := p.Arguments
	var ans *answer
	if len(p.InputResponses) > 0 || p.RequestState != "" {
		a, err := s.answerOf(c, name, args, p.InputResponses, p.RequestState)
		if err != nil {
			if s.opts.Logger != nil {
				s.opts.Logger.Warn("refused an answer", "tool", name, "err", err)
			}
			return refused(name, err), nil
		}
		ans = a
	}
	s.reloadSettings() // a file changed since the last rescan: decide by it already
	rt, done := s.use()
	defer done()
	s.reloadAllowlist(rt)
	call, err := rt.CallFromTool(name, args)
	if err != nil {
		return invalid(name, err), nil
	}
	opts := ccrun.CallOptions{Session: c.session}
	if c.multiRound() && c.canAsk() {
		// A question goes back as input requests: decide first, and ask
		// when the gate would (again, when what was answered is no longer
		// what is asked: a capability edited meanwhile).
		chk, err := rt.CheckWith(ctx, call, opts)
		if err == nil && chk.Decision.Verdict == permission.AskUser && !ans.covers(chk) {
			return s.ask(c, name, args, chk)
		}
	}
	ap := &approver{s: s, c: c, ans: ans, tool: s.describer()}
	if ans != nil || c.canAsk() {
		opts.Approver = ap
	}
	return s.run(ctx, rt, req, call, opts, ap)
}

// run executes call and renders its outcome.
func (s *Server) run(ctx context.Context, rt *ccrun.Runtime, req *mcp.CallToolRequest, call *ccrun.Call, opts ccrun.CallOptions, ap *approver) (*mcp.CallToolResult, error) {
	var out atomic.Int64
	var state atomic.Value
	state.Store(string(ccrun.Validating))
	call.Stdout, call.Stderr = counter{&out}, counter{&out}
	ss := req.Session
	opts.Events = func(e ccrun.Event) {
		state.Store(string(e.State))
		//lint:ignore SA1019 the issue asks for state events as debug log messages (deprecated only from 2026-07-28)
		_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Logger: "ccrun", Data: e})
	}
	if tok := req.Params.GetProgressToken(); tok != nil {
		done := make(chan struct{})
		defer close(done)
		start := time.Now()
		go func() {
			t := time.NewTicker(s.opts.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-t.C:
					el := time.Since(start)
					_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: el.Seconds(),
						Message: fmt.Sprintf("%s, %.1fs, %d bytes of output", state.Load(), el.Seconds(), out.Load())})
				}
			}
		}()
	}
	o, err := rt.ExecWith(ctx, call, opts)
	return render(o, err, opts.Approver != nil && ap.declined.Load(), rt.Environments()), nil
}

// counter counts the bytes of output as they arrive, for progress.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

// describer returns a tool's description for the question, as the
// terminal prompt shows it.
func (s *Server) describer() func(string) string {
	return func(tool string) string {
		if c, err := capabilities.Find(s.dir, tool); err == nil {
			return c.Manifest.Description
		}
		return ""
	}
}

// answer is a person's answer, taken from a verified request state.
type answer struct {
	key, digest string
	grant       ceiling.Grant
	unconfined  bool // the person chose to run it once outside the sandbox
	late        bool // it came after the question's time ran out
	cancelled   bool // the person dismissed the question without an answer
	used        atomic.Bool
}

// covers reports whether a is the answer to the question chk would ask:
// the same key and digest, and, for a choice to run it outside the
// sandbox, a question that still offers that.
func (a *answer) covers(chk *ccrun.Outcome) bool {
	return a != nil && chk.Decision != nil && chk.Request != nil &&
		a.key == chk.Decision.Key.String() && a.digest == chk.Request.Digest &&
		(!a.unconfined || chk.Decision.OfferUnconfined)
}

// approver answers the gate for one call of one connection: with the
// answer the call brought, else by asking the client while the call waits
// (protocols before 2026-07-28), else nobody can answer.
type approver struct {
	s        *Server
	c        *conn
	ans      *answer
	tool     func(string) string
	declined atomic.Bool // a person was asked and said no
}

// errCannotAsk: the question could not be put to the person.
var errCannotAsk = errors.New("the client cannot show ccrun's question")

// errCancelled: the person dismissed the question without answering it (the
// client's "cancel"), which is not a decline: nobody said no.
var errCancelled = errors.New("the person cancelled ccrun's question, dismissing it without an answer")

func (a *approver) Approve(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	g, _, err := a.approve(ctx, p, false)
	return g, err
}

// ApproveUnconfined implements permission.UnconfinedApprover: the question
// also offers "unconfined" (run this call once outside the sandbox) as a
// choice of its own, labelled so; only that answer is unconfined.
func (a *approver) ApproveUnconfined(ctx context.Context, p *permission.Prompt) (ceiling.Grant, bool, error) {
	return a.approve(ctx, p, p.Decision.OfferUnconfined)
}

func (a *approver) approve(ctx context.Context, p *permission.Prompt, offerUnconfined bool) (ceiling.Grant, bool, error) {
	if an := a.ans; an != nil && an.key == p.Decision.Key.String() && an.digest == p.Request.Digest && an.used.CompareAndSwap(false, true) {
		if an.late {
			return ceiling.Deny, false, fmt.Errorf("the answer came after the %s the question allows", a.s.opts.AskTimeout)
		}
		if an.cancelled {
			return ceiling.Deny, false, errCancelled
		}
		if an.unconfined && !offerUnconfined {
			return ceiling.Deny, false, errors.New("the answer was to run the call outside the sandbox, which it is no longer offered")
		}
		a.declined.Store(an.grant == ceiling.Deny)
		return an.grant, an.unconfined, nil
	}
	if a.c.multiRound() || !a.c.canAsk() {
		return ceiling.Deny, false, fmt.Errorf("%w (nothing asked while a call runs on protocol %s)", errCannotAsk, newProtocol)
	}
	offered := choicesOf(p, offerUnconfined)
	ctx, cancel := context.WithTimeout(ctx, a.s.opts.AskTimeout)
	defer cancel()
	res, err := a.c.ss.Elicit(ctx, question(p, offered, a.tool))
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return ceiling.Deny, false, fmt.Errorf("no answer within %s", a.s.opts.AskTimeout)
	case err != nil:
		return ceiling.Deny, false, fmt.Errorf("asking through the client: %w", err)
	}
	c, err := choiceOf(res, offered)
	a.declined.Store(err == nil && c.grant == ceiling.Deny)
	return c.grant, c.unconfined, err
}

// choice is one answer the question offers: its word (the enum value), its
// label (what a client shows), what it means, and what it answers.
type choice struct {
	word, label, meaning string
	grant                ceiling.Grant
	unconfined           bool
}

// The choices a question may offer, each by a word of its own.
var (
	choiceOnce    = choice{"once", "once", "once: this call only", ceiling.Once, false}
	choiceSession = choice{"session", "this session", "session: until this connection ends", ceiling.AlwaysThisSession, false}
	choiceProject = choice{"project", "this project", "project: kept in ccrun.json", ceiling.AlwaysThisProject, false}
	// choiceUnconfined is never folded into "once": a word, a label and
	// a meaning of its own.
	choiceUnconfined = choice{"unconfined", prompt.UnconfinedLabel,
		"unconfined: " + prompt.UnconfinedLabel + ", this call only, with all your rights (every other choice runs it in the workspace sandbox)",
		ceiling.Once, true}
	choiceDeny = choice{"deny", "deny", "deny: do not run it", ceiling.Deny, false}

	allChoices = []choice{choiceOnce, choiceSession, choiceProject, choiceUnconfined, choiceDeny}
)

// choicesOf is what the question about p offers, deny last: the grants the
// decision allows, and "unconfined" — once, outside the sandbox — when
// unconfined says so (the decision offers it, and the question can carry
// the answer).
func choicesOf(p *permission.Prompt, unconfined bool) []choice {
	grants, _ := prompt.Choices(p.Request, p.Decision, true)
	var out []choice
	for _, g := range grants {
		for _, c := range allChoices {
			if c.grant == g && !c.unconfined {
				out = append(out, c)
			}
		}
	}
	if unconfined {
		out = append(out, choiceUnconfined)
	}
	return append(out, choiceDeny)
}

// question is the elicitation that asks about p: the terminal prompt's
// text, and a choice among those offered. The footer and the choice's
// description name the offered choices only; each choice has a label of
// its own (enumNames), so that "unconfined" is shown as what it means.
func question(p *permission.Prompt, offered []choice, describe func(string) string) *mcp.ElicitParams {
	words, labels := []string{}, []string{}
	var notes, meanings []string
	unconfined := false
	for _, c := range offered {
		words, labels, meanings = append(words, c.word), append(labels, c.label), append(meanings, c.meaning)
		switch {
		case c.unconfined:
			unconfined = true
			notes = append(notes, `"unconfined" runs this call alone outside the sandbox; no grant ever does`)
		case c.grant == ceiling.AlwaysThisSession:
			notes = append(notes, `"session" lasts as long as this MCP connection`)
		case c.grant == ceiling.AlwaysThisProject:
			notes = append(notes, `"project" is kept in ccrun.json`)
		}
	}
	if !unconfined && p.Decision.OfferUnconfined {
		// the question cannot carry that answer: it says nothing of it
		d := *p.Decision
		d.OfferUnconfined = false
		p = &permission.Prompt{Request: p.Request, Decision: &d}
	}
	msg := strings.TrimSpace(prompt.Render(p, true, describe))
	if len(notes) > 0 {
		msg += "\n\n(" + strings.Join(notes, "; ") + ".)"
	}
	schema := map[string]any{
		"type":     "object",
		"required": []string{"grant"},
		"properties": map[string]any{
			"grant": map[string]any{"type": "string", "title": "Allow?", "enum": words, "enumNames": labels,
				"description": strings.Join(meanings, "; ")},
		},
	}
	return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: schema}
}

// choiceOf reads a person's answer: accept with one of the offered
// choices, else deny (declined, deny chosen). A cancelled question
// (dismissed, no answer) is errCancelled; an accepted answer that is not on
// offer is an error too: nothing runs on either. Only the word
// "unconfined" is unconfined: an accept of anything else never is.
func choiceOf(res *mcp.ElicitResult, offered []choice) (choice, error) {
	if res != nil && res.Action == "cancel" {
		return choiceDeny, errCancelled
	}
	if res == nil || res.Action != "accept" {
		return choiceDeny, nil
	}
	w, _ := res.Content["grant"].(string)
	for _, c := range offered {
		if c.word == w {
			return c, nil
		}
	}
	return choiceDeny, fmt.Errorf("the answer %q was not on offer", w)
}

// ticket is what a request state carries: the question asked, bound to
// the connection and the call.
type ticket struct {
	Conn   string   `json:"c"`
	Tool   string   `json:"t"`
	Args   string   `json:"a"` // sha256 of the canonical arguments
	Key    string   `json:"k"`
	Digest string   `json:"d"`
	Offer  []string `json:"o"`
	Nonce  string   `json:"n"`
	Issued int64    `json:"i"` // unix ms
}

// ask returns the input-required result that asks about chk.
func (s *Server) ask(c *conn, name string, args json.RawMessage, chk *ccrun.Outcome) (*mcp.CallToolResult, error) {
	p := &permission.Prompt{Request: chk.Request, Decision: chk.Decision}
	offered := choicesOf(p, chk.Decision.OfferUnconfined)
	t := ticket{Conn: c.id, Tool: name, Args: argsDigest(args), Key: chk.Decision.Key.String(), Digest: chk.Request.Digest,
		Nonce: rand.Text(), Issued: time.Now().UnixMilli()}
	for _, c := range offered {
		t.Offer = append(t.Offer, c.word)
	}
	state, err := s.seal(t)
	if err != nil {
		return nil, err
	}
	q := question(p, offered, s.describer())
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalID: q}, RequestState: state}, nil
}

func (s *Server) seal(t ticket) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, s.key)
	m.Write(b)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(b) + "." + enc.EncodeToString(m.Sum(nil)), nil
}

// answerOf verifies a retried call's request state and reads the answer:
// the state must be one this process issued (its HMAC), to this
// connection, for this tool and these arguments, answered once.
func (s *Server) answerOf(c *conn, name string, args json.RawMessage, responses mcp.InputResponseMap, state string) (*answer, error) {
	if state == "" {
		return nil, errors.New("input responses without a request state: ccrun asked no question")
	}
	body, mac, ok := strings.Cut(state, ".")
	enc := base64.RawURLEncoding
	b, err1 := enc.DecodeString(body)
	sum, err2 := enc.DecodeString(mac)
	if !ok || err1 != nil || err2 != nil {
		return nil, errors.New("a request state ccrun did not issue")
	}
	m := hmac.New(sha256.New, s.key)
	m.Write(b)
	if !hmac.Equal(sum, m.Sum(nil)) {
		return nil, errors.New("a request state ccrun did not issue (its signature does not match)")
	}
	var t ticket
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, errors.New("a request state ccrun did not issue")
	}
	switch {
	case t.Conn != c.id:
		return nil, errors.New("a question asked on another connection")
	case t.Tool != name || t.Args != argsDigest(args):
		return nil, errors.New("the answer is to a question about another call (other tool or arguments)")
	}
	issued := time.UnixMilli(t.Issued)
	now := time.Now()
	s.mu.Lock()
	for n, exp := range s.nonces {
		if now.After(exp) {
			delete(s.nonces, n)
		}
	}
	_, dup := s.nonces[t.Nonce]
	if !dup {
		s.nonces[t.Nonce] = issued.Add(2 * s.opts.AskTimeout)
	}
	s.mu.Unlock()
	if dup {
		return nil, errors.New("that question was answered already")
	}
	late := now.Sub(issued) > s.opts.AskTimeout
	if late && now.Sub(issued) > 2*s.opts.AskTimeout {
		return nil, errors.New("a question that expired long ago")
	}
	r, ok := responses[approvalID]
	if !ok {
		return nil, errors.New("no answer to ccrun's question among the input responses")
	}
	er, ok := r.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("the answer to ccrun's question is a %T, not an elicitation result", r)
	}
	var offered []choice
	for _, w := range t.Offer {
		for _, c := range allChoices {
			if c.word == w {
				offered = append(offered, c)
			}
		}
	}
	ch, err := choiceOf(er, offered)
	cancelled := errors.Is(err, errCancelled)
	if err != nil && !cancelled {
		return nil, err
	}
	return &answer{key: t.Key, digest: t.Digest, grant: ch.grant, unconfined: ch.unconfined, late: late, cancelled: cancelled}, nil
}

// argsDigest is the sha256 of args in a canonical form (keys sorted,
// numbers as written), so that the same arguments re-encoded match.
func argsDigest(args json.RawMessage) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.UseNumber()
	if len(args) == 0 || dec.Decode(&v) != nil {
		v = string(args)
	}
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Result is the structured content of every gated tool's result.
type Result struct {
	// Outcome is "ran" (see the exit code and reason), "denied" (the gate
	// said no; nothing ran), "refused" (an answer ccrun did not ask for),
	// "invalid" (bad arguments) or "failed" (the tool could not be run).
	Outcome    string  `json:"outcome"`
	Tool       string  `json:"tool"`                  // the tool called
	Call       string  `json:"call,omitempty"`        // the call's id, as in the audit log
	Key        string  `json:"key,omitempty"`         // the key a grant of the call covers
	ExitCode   *int    `json:"exit_code,omitempty"`   // the program's exit code, when it ran
	Stdout     string  `json:"stdout,omitempty"`      // its output, at most the output cap
	Stderr     string  `json:"stderr,omitempty"`      // its error output, at most the output cap
	Truncated  bool    `json:"truncated,omitempty"`   // a stream went past the output cap
	DurationMS float64 `json:"duration_ms,omitempty"` // how long the run took
	// Reason says why the run ended: exit, timeout, memory, output,
	// cancelled, refused.
	Reason string `json:"reason,omitempty"`
	// Detail says more about an abnormal end (job.Result.Detail), or why
	// the tool could not be run.
	Detail string `json:"detail,omitempty"`
	// Decision is how the gate decided: allow/deny, the layer, the reason.
	Decision string `json:"decision,omitempty"`
	// HowToAllow says, on a deny, what the person can do to allow it.
	HowToAllow string `json:"how_to_allow,omitempty"`
}

// render turns an outcome into a tool result: structured content and a
// text rendering; a non-zero exit, a stop or a deny is isError.
// declined says the person was asked and said no; envs are the
// Runtime's environments, whose ceilings the advice keeps to.
func render(o *ccrun.Outcome, err error, declined bool, envs ceiling.Set) *mcp.CallToolResult {
	tool := ""
	if o != nil {
		tool = o.Tool
	}
	if err != nil {
		var de *permission.DeniedError
		if errors.As(err, &de) && o != nil && o.Request != nil {
			return deniedResult(o, de, err, declined, envs)
		}
		r := Result{Outcome: "failed", Tool: tool}
		if errors.Is(err, ccrun.ErrInvalidCall) || errors.Is(err, capabilities.ErrInvalidInput) {
			r.Outcome = "invalid"
		}
		if o != nil {
			r.Call = o.ID
		}
		r.Detail = err.Error()
		return errorResult(r, fmt.Sprintf("ccrun: %s was not run: %v", show(tool), err))
	}
	res := o.Result
	code := res.ExitCode
	r := Result{Outcome: "ran", Tool: o.Tool, Call: o.ID, ExitCode: &code, Stdout: string(res.Stdout), Stderr: string(res.Stderr),
		Truncated: res.Truncated, DurationMS: float64(res.Duration.Microseconds()) / 1000, Reason: string(res.Reason), Detail: res.Detail}
	if d := o.Decision; d != nil {
		r.Key = d.Key.String()
		r.Decision = fmt.Sprintf("%s (%s: %s)", d.Verdict, d.Layer, d.Reason)
	}
	var b strings.Builder
	switch {
	case res.Reason == job.Exit:
		fmt.Fprintf(&b, "exit %d in %s", res.ExitCode, res.Duration.Round(time.Millisecond))
	default:
		fmt.Fprintf(&b, "stopped (%s) after %s, exit %d", res.Reason, res.Duration.Round(time.Millisecond), res.ExitCode)
	}
	if res.Detail != "" {
		fmt.Fprintf(&b, ": %s", res.Detail)
	}
	if res.Truncated {
		b.WriteString("; output truncated at the limit")
	}
	b.WriteString("\n")
	if len(res.Stdout) > 0 {
		b.WriteString("--- stdout ---\n")
		b.Write(res.Stdout)
		if res.Stdout[len(res.Stdout)-1] != '\n' {
			b.WriteString("\n")
		}
	}
	if len(res.Stderr) > 0 {
		b.WriteString("--- stderr ---\n")
		b.Write(res.Stderr)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, StructuredContent: r, IsError: !res.OK()}
}

func errorResult(r Result, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: r, IsError: true}
}

func invalid(tool string, err error) *mcp.CallToolResult {
	return errorResult(Result{Outcome: "invalid", Tool: tool, Detail: err.Error()},
		fmt.Sprintf("ccrun: %s was not run: %v", show(tool), err))
}

func refused(tool string, err error) *mcp.CallToolResult {
	return errorResult(Result{Outcome: "refused", Tool: tool, Detail: err.Error()},
		fmt.Sprintf("ccrun: refused: %v; nothing ran. Call the tool again without input responses, and the person is asked.", err))
}

// deniedResult says what was refused and how the person can allow it.
func deniedResult(o *ccrun.Outcome, de *permission.DeniedError, err error, declined bool, envs ceiling.Set) *mcp.CallToolResult {
	d := de.Decision
	req := o.Request
	key := d.Key.String()
	adv := advice.For(advice.Denial{Request: req, Decision: d, Err: err, Ceiling: envs.Of(req.Environment)})
	how := "the person can " + adv.Text()
	if !adv.Fixed {
		how = adv.Why + "the person can " + adv.Answer + " (in a client that shows ccrun's question: MCP elicitation)" + adv.Ahead
	}
	switch {
	case declined && d.Layer == permission.LayerApprover && d.Grant == ceiling.Deny && de.Err == nil:
		how = "the person declined when asked; they are asked again if the call is made again, but do not retry it unchanged. Else " + how
	case errors.Is(err, errCancelled):
		how = "the person cancelled the question (dismissed it without answering); they are asked again if the call is made again, but do not retry it unless they ask for it. Else " + how
	}
	text := fmt.Sprintf("ccrun denied %s: %s (%s: %s). Nothing ran. To allow it, %s.", show(req.Tool), key, d.Layer, d.Reason, how)
	for _, x := range d.Diagnostics {
		text += "\nnote: " + x
	}
	r := Result{Outcome: "denied", Tool: req.Tool, Call: o.ID, Key: key, Decision: fmt.Sprintf("%s (%s: %s)", d.Verdict, d.Layer, d.Reason), HowToAllow: how}
	return errorResult(r, text)
}

// show escapes a name for text.
func show(s string) string { return shellcmd.Escape(s) }

// resultSchema is the output schema of every gated tool (Result).
const resultSchema = `{"type":"object","required":["outcome","tool"],"properties":{
"outcome":{"type":"string","enum":["ran","denied","refused","invalid","failed"]},
"tool":{"type":"string"},"call":{"type":"string"},"key":{"type":"string"},
"exit_code":{"type":"integer"},"stdout":{"type":"string"},"stderr":{"type":"string"},
"truncated":{"type":"boolean"},"duration_ms":{"type":"number"},
"reason":{"type":"string","enum":["exit","timeout","memory","output","cancelled","refused"]},
"detail":{"type":"string"},"decision":{"type":"string"},"how_to_allow":{"type":"string"}}}`
