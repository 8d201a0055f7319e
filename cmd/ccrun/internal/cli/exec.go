package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/advice"
	"github.com/ccrun/ccrun/internal/outlive"
	"github.com/ccrun/ccrun/internal/prompt"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/job"
)

// callFlags are the flags every environment shares, for exec and check.
type callFlags struct {
	shell, wasmFile, image string
	timeout                time.Duration
	memory, output         string
	mounts, env            []string
	input                  string
	network, pull          string
	engine                 string // --engine: where @docker runs
	directive              string
	mode                   string
	allow, ask, deny       []string
	allowHosts             []string // --allow-host, repeated
}

func (f *callFlags) register(c *cobra.Command, withLimits bool) {
	fl := c.Flags()
	fl.StringVar(&f.shell, "shell", "", "run this shell command (bash syntax) with the run_command tool, on the host")
	fl.StringVar(&f.wasmFile, "wasm", "", "run this WebAssembly (WASI preview 1) module with the run_wasm tool")
	fl.StringVar(&f.image, "docker", "", "run this container image with the run_docker tool; the command follows --")
	fl.StringArrayVar(&f.mounts, "mount", nil, "mount HOST:GUEST[:ro|rw] into a @wasm or @docker tool (read-only unless rw; repeatable)")
	fl.StringVar(&f.pull, "pull", "", "@docker pull policy: missing (default), never or always")
	fl.StringVar(&f.network, "network", "", "@docker network: none (default), bridge or host; anything but none loosens the sandbox")
	fl.StringVar(&f.engine, "engine", "", "where @docker tools run: docker (the local engine) or kubernetes (the kubeconfig's cluster; default: the settings' docker.engine, else docker)")
	fl.StringVar(&f.input, "input", "", "the call's parameters, a JSON object validated against the capability's schema: inline, @FILE or - (stdin); at most 64 MiB")
	fl.StringArrayVar(&f.env, "env", nil, "give the tool KEY=VALUE (repeatable)")
	fl.StringVar(&f.mode, "mode", "", "permission mode: plan, default, accept-edits or trust (default: from the settings files, else default)")
	fl.StringArrayVar(&f.allow, "allow", nil, "allow rule for this run, a key pattern (repeatable)")
	fl.StringArrayVar(&f.ask, "ask", nil, "ask rule for this run (repeatable)")
	fl.StringArrayVar(&f.deny, "deny", nil, "deny rule for this run (repeatable)")
	fl.StringArrayVar(&f.allowHosts, "allow-host", nil, "let an approved @shell or @docker call reach this host through ccrun's egress proxy (and no host that no list allows): HOST, *.DOMAIN, HOST:PORT or an IP literal (repeatable; a loosening where the settings keep a \"network\" list)")
	fl.StringVar(&f.directive, "directive", "", "narrow this call: read-only, plan-only, analyze-only or do-not-edit")
	if withLimits {
		fl.DurationVar(&f.timeout, "timeout", 0, "wall-clock limit, e.g. 30s (default: the capability's, else 10m)")
		fl.StringVar(&f.memory, "memory", "", "memory limit, e.g. 64MiB (@wasm, @docker; default: the capability's, else 256MiB)")
		fl.StringVar(&f.output, "output", "", "limit of each output stream, e.g. 1MiB (default: the capability's, else 4MiB)")
	}
	c.MarkFlagsMutuallyExclusive("shell", "wasm", "docker")
	completeCallFlags(c)
}

// call builds the call from the flags and the arguments: args before the
// index dash (-1: no --) name a capability, those after it are the tool's;
// --input - reads stdin; a refuses a --docker image reference the engine
// could not read (app.checkImage) and makes the @docker options of
// --network and --pull (app.dockerOptions).
func (f *callFlags) call(args []string, dash int, stdin io.Reader, a *app) (*ccrun.Call, error) {
	var name string
	var rest []string
	before := args
	if dash >= 0 {
		before, rest = args[:dash], args[dash:]
	}
	picked := 0
	for _, s := range []string{f.shell, f.wasmFile, f.image} {
		if s != "" {
			picked++
		}
	}
	var env ceiling.Environment
	var target string
	switch {
	case picked == 0 && isEnvironmentArg(before): // backends.go
		e, t, err := targetArgs(before)
		if err != nil {
			return nil, err
		}
		env, target = e, t
	case picked == 0 && len(before) == 1:
		name = before[0]
	case picked == 0 && len(before) == 0:
		return nil, usagef("name a capability, or give --shell 'CMD', --wasm FILE or --docker IMAGE")
	case picked == 0:
		return nil, usagef("one capability at a time (got %q); put the tool's arguments after --", before)
	case len(before) > 0:
		return nil, usagef("unexpected arguments %q; put the tool's arguments after --", before)
	}
	if f.shell != "" && strings.TrimSpace(f.shell) == "" {
		return nil, usagef("--shell: the command is empty")
	}
	call := &ccrun.Call{Command: f.shell, Capability: name, Module: f.wasmFile, Image: f.image, Environment: env, Target: target,
		Args: rest, Env: f.env, Directive: permission.Directive(f.directive),
		AllowHosts: f.allowHosts}
	if (f.network != "" || f.pull != "") && (f.shell != "" || f.wasmFile != "") {
		kind := "@shell"
		if f.wasmFile != "" {
			kind = "@wasm"
		}
		return nil, usagef("--network and --pull apply to @docker calls only; this is a %s call: drop them", kind)
	}
	var err error
	if call.Options, err = a.dockerOptions(f.network, f.pull); err != nil {
		return nil, err
	}
	for _, m := range f.mounts {
		mt, err := job.ParseMount(m)
		if err == nil {
			mt, err = absMount(mt) // relative to where the person stands
		}
		if err != nil {
			return nil, usagef("--mount: %w", err)
		}
		call.Mounts = append(call.Mounts, mt)
	}
	if call.Module, err = absFromHere(call.Module); err != nil {
		return nil, usagef("--wasm: %w", err)
	}
	if call.Image != "" {
		if err := a.checkImage(call.Image); err != nil {
			return nil, err
		}
	}
	if f.input != "" {
		if call.Input, call.InputFile, err = readInput(f.input, stdin); err != nil {
			return nil, err
		}
	}
	call.Limits.Timeout = f.timeout
	if f.timeout < 0 {
		return nil, usagef("--timeout %s: must be positive", f.timeout)
	}
	for _, s := range []struct {
		flag, val string
		dst       *int64
	}{{"memory", f.memory, &call.Limits.Memory}, {"output", f.output, &call.Limits.Output}} {
		if s.val == "" {
			continue
		}
		n, err := capabilities.ParseSize(s.val)
		if err != nil || n <= 0 {
			return nil, usagef("--%s %q: want a size such as 64MiB", s.flag, s.val)
		}
		*s.dst = n
	}
	return call, nil
}

// settings is the CLI-flags settings layer, or nil when no flag sets one.
func (f *callFlags) settings() (*permission.Settings, error) {
	if f.mode == "" && len(f.allow)+len(f.ask)+len(f.deny) == 0 {
		return nil, nil
	}
	s, err := permission.FlagSettings(f.mode, f.allow, f.ask, f.deny)
	if err != nil {
		return nil, usageError{err}
	}
	return s, nil
}

// execOptions are `ccrun exec`'s flags and arguments as the command line
// gave them: runExec needs nothing else, so that a test calls it without
// cobra (and execCommand's runF sees what cobra parsed).
type execOptions struct {
	call    callFlags // the call: --shell, --wasm, --docker, the limits' and the gate's flags
	args    []string  // a capability's NAME, and after -- the tool's arguments
	dash    int       // where -- stood in args; -1: nowhere
	approve string    // --approve: once, session, project or unconfined; "": ask a person, if any
	events  string    // --events: json; "": the status line at a terminal
	worker  bool      // --wasm-worker
}

// execCommand is `ccrun exec`; it parses the command line into
// execOptions and calls runF with them (nil: runExec).
func (a *app) execCommand(runF func(context.Context, *execOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runExec
	}
	o := &execOptions{}
	c := &cobra.Command{
		Use:   "exec (NAME | --shell CMD | --wasm FILE | --docker IMAGE | @ENV TARGET) [-- ARGS...]",
		Short: "Run a capability or an ad-hoc tool behind the permission gate",
		Long: `Run a capability (a directory .ccrun/capabilities/NAME/) or an ad-hoc tool, after the
permission gate allows it. When the gate asks and stdin and stderr are terminals, you are
prompted; otherwise --approve answers in advance, and without it an ask is a deny (exit 77).
The tool's exit code becomes ccrun's.`,
		Example: `  ccrun exec --shell 'git status'
  ccrun exec fmt-json --input '{"indent": 2}'
  ccrun exec --wasm hello.wasm --mount data:/data -- --verbose
  ccrun exec --docker ccrun-test:busybox -- /bin/busybox echo hi`,
		RunE: func(c *cobra.Command, args []string) error {
			o.args, o.dash = args, c.ArgsLenAtDash()
			return runF(c.Context(), o)
		},
	}
	o.call.register(c, true)
	c.Flags().StringVar(&o.approve, "approve", "", "answer an ask in advance when nobody can be prompted: once, session or project (project is refused for @shell), or unconfined: once, and a @shell command runs outside the workspace sandbox")
	c.Flags().BoolVar(&o.worker, "wasm-worker", false, "run a @wasm guest in a worker process of its own, killed at the limits, at ~90 ms more per run (by default it runs in the project's warm server, ccrun-full wasm-server SOCKET, or in ccrun's own process where there is none)")
	c.Flags().StringVar(&o.events, "events", "", "print each state transition as a JSON line on stderr: json")
	c.ValidArgsFunction = a.completeCapabilities
	return c
}

// runExec puts the call o describes before the gate, asks whoever can be
// asked, runs it, and leaves its result in a.result.
func (a *app) runExec(ctx context.Context, o *execOptions) error {
	call, err := o.call.call(o.args, o.dash, a.io.in, a)
	if err != nil {
		return err
	}
	if len(call.AllowHosts) > 0 {
		// it may widen the settings' lists: refused under the lock
		// (checkLock), as --approve is
		a.loosenFlags = append(a.loosenFlags, "--allow-host")
	}
	sigs := newSignals(ctx)
	defer sigs.stop()
	if outlive.May(call) {
		sigs.start() // beside the gate's work: in before the run
	}
	var approver permission.Approver
	var term *prompt.Terminal
	prompted := false // a person was asked at the terminal
	if o.approve == "unconfined" {
		approver = unconfinedApprover{}
		a.loosenFlags = append(a.loosenFlags, "--approve unconfined")
	} else if o.approve != "" { // once, session or project (enumFlags)
		g, _ := ceiling.ParseGrant(o.approve)
		approver = fixedApprover(g)
		// refused under the no-loosening lock (checkLock), however
		// the approver is wrapped below
		a.loosenFlags = append(a.loosenFlags, "--approve")
	} else if isTerminal(a.io.in) && isTerminal(a.io.err) {
		term = &prompt.Terminal{In: a.io.in, Out: a.io.err, ResetTerminal: true}
		approver = hookedApprover{next: term, before: func(*permission.Prompt) { prompted = true }}
	}
	layer, err := o.call.settings()
	if err != nil {
		return err
	}
	if err := a.execEngines(o.call.engine, o.worker); err != nil {
		return err
	}
	// shown counts the notes of the decision an approver answered:
	// they said why it was asked, a person saw them in the prompt,
	// --approve answered regardless; they are not repeated after
	// the run (a stale grant would say so on every run).
	shown := 0
	if approver != nil {
		approver = hookedApprover{next: approver, before: func(p *permission.Prompt) { shown = len(p.Decision.Diagnostics) }}
	}
	rt, err := a.runtime(approver, layer)
	if err != nil {
		return err
	}
	defer rt.Close()
	if term != nil {
		term.Session, term.Describe = a.session != nil, a.describe
	}
	call.Stdout, call.Stderr = a.io.out, a.io.err
	if call.Input == nil { // with --input, the input is the tool's stdin
		call.Stdin = a.io.in
	}
	var st *status
	switch o.events {
	case "":
		if isTerminal(a.io.err) {
			st = newStatus(a.io.err)
			call.Stderr = st.writer(a.io.err)
			call.Stdout = st.writer(a.io.out)
			defer rt.Subscribe(st.update)()
			defer st.stop()
		}
	case "json":
		enc := json.NewEncoder(a.io.err)
		enc.SetEscapeHTML(false)
		defer rt.Subscribe(func(e ccrun.Event) { _ = enc.Encode(e) })()
	}
	// The call's context is the signals' from the start; their
	// handler is in before a person is prompted, before a run that
	// may leave something behind (mayOutlive), and before
	// each program of a script of builtins (outlive.WithBeforeStart).
	defer rt.Subscribe(func(e ccrun.Event) {
		if e.State == ccrun.AwaitingApproval && term != nil || e.State == ccrun.Scheduled && sigs.started() {
			sigs.install()
		}
	})()
	callCtx := outlive.WithBeforeStart(sigs.ctx, sigs.install)
	if st != nil {
		callCtx = a.withCompileProgress(callCtx, st)
	}
	out, err := rt.Exec(callCtx, call)
	if out != nil {
		a.result = out.Result
	}
	if err != nil {
		return explain(out, err, prompted, rt.Environments())
	}
	for _, x := range out.Decision.Diagnostics[min(shown, len(out.Decision.Diagnostics)):] {
		fmt.Fprintf(a.io.err, "ccrun: note: %s\n", x)
	}
	if d := out.Decision; o.approve == "unconfined" && d.Layer == permission.LayerApprover && !d.Unconfined {
		fmt.Fprintf(a.io.err, "ccrun: note: --approve unconfined: %s ran once in its sandbox: only a @shell command that would run in the workspace sandbox can run outside it (not with the sandbox off or required, nor where the kernel cannot confine)\n", d.Key)
	}
	switch r := out.Result; {
	case r != nil && r.Reason != job.Exit:
		fmt.Fprintf(a.io.err, "ccrun: %s stopped: %s\n", out.Tool, stopReason(r))
	case r != nil && r.Detail != "": // a trap, say
		fmt.Fprintf(a.io.err, "ccrun: %s exited %d: %s\n", out.Tool, r.ExitCode, r.Detail)
	}
	return nil
}

// signals is exec's handling of Ctrl-C and SIGTERM: they cancel ctx, with
// the cause signal.NotifyContext gives ("interrupt signal received"), so
// that the call is stopped whole (nothing it started outlives ccrun), said
// and audited. os/signal starts two or three threads of the Go runtime for
// it (a fifth of a new process's ~3 ms here, with their exit), so it goes
// in only where a signal's default action, which ends ccrun at once, would
// leave something of the call behind: before a prompt, and before a run
// that may leave something (mayOutlive), beside the gate's work. Elsewhere
// a signal ends ccrun by its default action and the call with it, and the
// audit log has the call's decision but no execution line. A @shell script
// of builtins that starts a program after all gets the handling first
// (outlive.WithBeforeStart).
type signals struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	ch     chan os.Signal
	once   sync.Once
	going  atomic.Bool   // start was called
	in     chan struct{} // closed once the handler is in
}

func newSignals(parent context.Context) *signals {
	s := &signals{ch: make(chan os.Signal, 1), in: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancelCause(parent)
	return s
}

// start installs the handler in the background.
func (s *signals) start() {
	s.once.Do(func() {
		s.going.Store(true)
		go func() {
			signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM)
			close(s.in)
			select {
			case sig := <-s.ch:
				s.cancel(errors.New(sig.String() + " signal received"))
			case <-s.ctx.Done():
			}
		}()
	})
}

// started reports whether start was called.
func (s *signals) started() bool { return s.going.Load() }

// install installs the handler, and returns once it is in.
func (s *signals) install() {
	s.start()
	<-s.in
}

// stop ends the handling: the signals have their default action again.
func (s *signals) stop() {
	s.cancel(nil)
	s.once.Do(func() {}) // no start after this one
	if s.started() {
		<-s.in
		signal.Stop(s.ch)
	}
}

// explain turns a deny into the one line a person needs: the key, why, and
// how to allow it. prompted says whether a person was asked at the
// terminal; envs are the Runtime's environments, whose ceilings the
// advice keeps to.
func explain(out *ccrun.Outcome, err error, prompted bool, envs ceiling.Set) error {
	var de *permission.DeniedError
	if !errors.As(err, &de) || out == nil || out.Request == nil {
		return err
	}
	d := de.Decision
	switch {
	case errors.Is(err, prompt.ErrInterrupted):
		return &denied{msg: fmt.Sprintf("denied: %s: interrupted at the prompt (Ctrl-C); nothing ran", d.Key), err: err}
	case errors.Is(err, prompt.ErrClosed):
		return &denied{msg: fmt.Sprintf("denied: %s: the prompt got no answer (Ctrl-D); nothing ran", d.Key), err: err}
	}
	adv := advice.For(advice.Denial{Request: out.Request, Decision: d, Err: err, Ceiling: envs.Of(out.Request.Environment)})
	declined := prompted && d.Layer == permission.LayerApprover && d.Grant == ceiling.Deny && de.Err == nil
	how := howHere(adv, declined)
	msg := fmt.Sprintf("denied: %s (%s: %s); to allow it, %s", d.Key, d.Layer, d.Reason, how)
	for _, x := range d.Diagnostics {
		msg += "\nccrun: note: " + x
	}
	return &denied{msg: msg, err: err}
}

// howHere is the advice as the CLI gives it: the words every front end
// prints, after "run it again and" when the person just said no, else with
// the CLI's ways to answer (a terminal, --approve) after the answers; and,
// where the answers reach the session, the grant for a ccrun session.
func howHere(a advice.Advice, declined bool) string {
	switch {
	case a.Fixed:
		return a.Text()
	case declined:
		return a.Why + "run it again and " + a.Answer + a.Ahead + sessionWay(a)
	}
	return a.Why + a.Answer + " (ccrun asks at a terminal; --approve " + a.Words("|") + " answers ahead)" + a.Ahead + sessionWay(a)
}

// sessionWay is the CLI's grant of a's pattern for a ccrun session, if any.
func sessionWay(a advice.Advice) string {
	if a.Session == "" {
		return ""
	}
	return "; in a session: " + a.Session
}

type denied struct {
	msg string
	err error
}

func (d *denied) Error() string { return d.msg }
func (d *denied) Unwrap() error { return d.err }

// fixedApprover answers every ask with the same grant (--approve).
type fixedApprover ceiling.Grant

func (g fixedApprover) Approve(context.Context, *permission.Prompt) (ceiling.Grant, error) {
	return ceiling.Grant(g), nil
}

// unconfinedApprover is --approve unconfined: every ask is answered Once,
// and the call asked about runs outside the workspace sandbox where the
// gate offers that (permission.UnconfinedApprover); elsewhere — another
// environment, the sandbox off or required, a step asked where the
// command runs — it is a plain Once.
type unconfinedApprover struct{}

func (unconfinedApprover) Approve(context.Context, *permission.Prompt) (ceiling.Grant, error) {
	return ceiling.Once, nil
}

func (unconfinedApprover) ApproveUnconfined(context.Context, *permission.Prompt) (ceiling.Grant, bool, error) {
	return ceiling.Once, true, nil
}

// hookedApprover calls before with each prompt, then next. It is an
// UnconfinedApprover whatever next is, so that wrapping keeps a person's
// choice to run a call outside its sandbox: when next cannot give that
// choice, ApproveUnconfined is next's Approve.
type hookedApprover struct {
	next   permission.Approver
	before func(*permission.Prompt)
}

func (h hookedApprover) Approve(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	h.before(p)
	return h.next.Approve(ctx, p)
}

func (h hookedApprover) ApproveUnconfined(ctx context.Context, p *permission.Prompt) (ceiling.Grant, bool, error) {
	h.before(p)
	if u, ok := h.next.(permission.UnconfinedApprover); ok {
		return u.ApproveUnconfined(ctx, p)
	}
	g, err := h.next.Approve(ctx, p)
	return g, false, err
}

// runtime builds the Runtime for this run of the CLI.
func (a *app) runtime(approver permission.Approver, layer *permission.Settings, extra ...ccrun.Option) (*ccrun.Runtime, error) {
	dir, err := a.project()
	if err != nil {
		return nil, err
	}
	// A project found rather than given is found again by New, which then
	// knows that a directory holding neither ccrun.json nor .git is no
	// project: its audit log goes to the state directory, not into the
	// current directory.
	var opts []ccrun.Option
	if a.projectDir != "" {
		opts = append(opts, ccrun.WithProjectDir(dir))
	}
	opts = append(opts, a.trustOptions()...)
	if approver != nil {
		opts = append(opts, ccrun.WithApprover(approver))
	}
	if layer != nil {
		opts = append(opts, ccrun.WithSettings(layer))
	}
	sess, err := a.liveSession()
	if err != nil {
		return nil, err
	}
	if sess != nil {
		a.session = sess
		opts = append(opts, ccrun.WithSession(sess))
	}
	opts = append(opts, backends...) // backends.go
	opts = append(opts, a.runtimeEngines(dir)...)
	opts = append(opts, a.options...)
	rt, err := ccrun.New(append(opts, extra...)...)
	if err == nil {
		if err = a.checkLock(rt, approver); err != nil {
			rt.Close()
			rt = nil
		}
	}
	return rt, err
}

// adminRuntime is the Runtime of a command that runs no tool (allowlist,
// lint): nothing to ask, nothing to audit.
func (a *app) adminRuntime() (*ccrun.Runtime, error) {
	return a.runtime(nil, nil, ccrun.WithAuditLog(""))
}

// isTerminal reports whether v is a terminal file.
func isTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
