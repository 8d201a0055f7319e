package shell

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/internal/confine"
	"github.com/ccrun/ccrun/runtime/job"
)

// MarkerVar is the variable that every program of a run finds in its
// environment, set to an identifier of the run (24 hex digits). Processes
// inherit it, and the executor uses it to recognise the run's orphans that
// left its process groups (daemons). A process started with a cleared
// environment (env -i) cannot be recognised that way.
const MarkerVar = "CCRUN_RUN"

// run is the state of one Run: why it ended, and the processes it started.
type run struct {
	e      *Executor
	ctx    context.Context // the interpreter's; cancelled by stop
	cancel context.CancelFunc

	sup *job.Supervisor // the run's lifecycle: why it ended is recorded there

	shutOnce sync.Once // shutdown runs once, for the kill or after the exit
	killed   int       // processes shutdown killed

	mu          sync.Mutex
	closed      bool             // no program may start any more
	inflight    sync.WaitGroup   // exec handler calls that may have a live child
	groups      map[int]struct{} // process groups the run created (= pids of its direct children)
	children    map[int]struct{} // direct children not yet reaped by os/exec
	files       []*os.File       // pipes to close when Run returns
	started     bool             // at least one program was started
	markerOnce  sync.Once
	marker      string           // markerVar's
	guard       *Guard           // Spec.Guard
	beforeStart func()           // WithBeforeStart's, or nil
	refusal     string           // what the Guard refused first, for the Result
	confine     *Confinement     // Spec.Confine; nil: programs start unconfined
	confineOnce sync.Once        // builds confined, on the first start or open
	confined    *confine.Ruleset // confine's ruleset, once built
	confineErr  error            // why it could not be built
	net         *netRun          // Confinement.Net's namespace and proxy; nil: none
	tempOnce    sync.Once        // dropTemp's
	tempGone    chan struct{}    // closed once the Temp directory is removed; nil: not being removed
	refusedMu   sync.Mutex
	refused     []string // what the sandbox was seen to refuse ("write PATH")
	auditErr    string   // why what programs were refused may be incomplete
}

func newRun(e *Executor) *run {
	ctx, cancel := context.WithCancel(context.Background())
	return &run{
		e:        e,
		ctx:      ctx,
		cancel:   cancel,
		groups:   make(map[int]struct{}),
		children: make(map[int]struct{}),
	}
}

// markerVar is MarkerVar=<id of the run>, in every program's environment:
// made for the first program, so that a script of builtins draws no
// random number (crypto/rand's first use costs a new process ~50 µs).
func (r *run) markerVar() string {
	r.markerOnce.Do(func() {
		var id [12]byte
		rand.Read(id[:]) // never fails (crypto/rand)
		r.marker = MarkerVar + "=" + hex.EncodeToString(id[:])
	})
	return r.marker
}

// stop stops the run for why: the first reason wins (job.Supervisor). A
// refusal carries what was refused. The interpreter and the processes are
// stopped by shutdown, in the order that keeps the process tree whole
// until it has been walked.
func (r *run) stop(why job.Reason) {
	detail := ""
	if why == job.Refused {
		r.mu.Lock()
		detail = r.refusal
		r.mu.Unlock()
	}
	r.sup.Stop(why, detail)
}

// shutdown makes sure nothing the run started is alive: no new program may
// start, running ones are killed with their descendants, and the exec
// handlers have returned. It runs once; a second call waits for the first
// and returns how many processes it killed.
func (r *run) shutdown() int {
	r.shutOnce.Do(func() { r.killed = r.kill() })
	return r.killed
}

func (r *run) kill() int {
	r.mu.Lock()
	r.closed = true
	started := r.started
	r.mu.Unlock()
	if !started {
		r.cancel()
		return 0 // only builtins ran: there is nothing to kill
	}
	// Walk and kill the tree while it is whole: cancelling first would let
	// os/exec kill the direct children, orphaning their descendants before
	// the walk could find them through their parents. No program can start
	// now (closed), so the walk sees every direct child.
	killed := r.sweep()
	// Then stop the interpreter, and wait for the exec handlers, whose
	// programs are dead, to return.
	r.cancel()
	r.inflight.Wait()
	if killed > 0 {
		killed += r.sweep() // belt and braces: there should be nothing left
	}
	return killed
}

// releaseFiles closes the run's pipes.
func (r *run) releaseFiles() {
	r.cancel()
	for _, f := range r.files {
		f.Close()
	}
}

// sweep kills the run's processes; see killTree.
func (r *run) sweep() int {
	r.mu.Lock()
	r.pruneGroups()
	groups := make([]int, 0, len(r.groups))
	for g := range r.groups {
		groups = append(groups, g)
	}
	children := make([]int, 0, len(r.children))
	for c := range r.children {
		children = append(children, c)
	}
	r.mu.Unlock()
	return killTree(children, groups, r.markerVar())
}

// pruneGroups forgets the process groups that have no process left (a
// zombie counts: it may be ours to reap). Nothing can join an empty group,
// and its number may be reused. Called with mu held.
func (r *run) pruneGroups() {
	for g := range r.groups {
		if groupGone(g) {
			delete(r.groups, g)
		}
	}
}

// middleware is the interpreter's exec handler: it ignores next (the
// default handler) and starts every program itself.
func (r *run) middleware(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return r.exec
}

// exec starts one program in its own process group and waits for it.
func (r *run) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	path, err := interp.LookPathDir(hc.Dir, hc.Env, args[0])
	if err != nil {
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(127)
	}
	if err := r.checkExec(ctx, hc, path, args); err != nil {
		return err
	}

	newCmd := func() *exec.Cmd {
		cmd := exec.CommandContext(ctx, path)
		cmd.Args = args
		cmd.Env = append(environ(hc.Env), r.markerVar())
		cmd.Dir = hc.Dir
		if f, ok := hc.Stdin.(*os.File); !ok || f != nil {
			cmd.Stdin = hc.Stdin
		}
		cmd.Stdout = hc.Stdout
		cmd.Stderr = hc.Stderr
		cmd.SysProcAttr = procAttr(r.e.detach)
		cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
		cmd.WaitDelay = r.e.waitDelay
		return cmd
	}
	if r.beforeStart != nil {
		r.beforeStart()
	}
	// Start and register under the lock, so that the sweep, which runs
	// once closed is set, knows every direct child: it must never reap one
	// of them in os/exec's place.
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return interp.ExitStatus(job.KilledExitCode)
	}
	r.started = true
	r.inflight.Add(1)
	defer r.inflight.Done()
	cmd := newCmd()
	err = r.start(cmd)
	// A program written by a concurrent fork may briefly be busy (ETXTBSY,
	// go.dev/issue/22315): retry a few times.
	for delay := time.Millisecond; errors.Is(err, syscall.ETXTBSY) && delay < 300*time.Millisecond; delay *= 2 {
		time.Sleep(delay)
		cmd = newCmd()
		err = r.start(cmd)
	}
	if err == nil {
		r.groups[cmd.Process.Pid] = struct{}{}
		r.children[cmd.Process.Pid] = struct{}{}
	}
	r.mu.Unlock()
	if errors.Is(err, syscall.ENOEXEC) {
		return r.script(ctx, hc, path, args)
	}
	if err != nil {
		if ctx.Err() != nil {
			return interp.ExitStatus(job.KilledExitCode)
		}
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(126)
	}
	pid := cmd.Process.Pid
	err = cmd.Wait()
	if st := cmd.ProcessState; st == nil || !st.Success() {
		// said now, beside what the program said of it; what a program
		// that succeeded was refused is said at the end of the run (a
		// wait for audit's delivery each, about 0.2 ms: BenchmarkRefused)
		r.programRefused(hc.Stderr, pid)
	}

	r.mu.Lock()
	delete(r.children, pid)
	if groupGone(pid) {
		// Nothing is left in the program's group: forget it now, so that a
		// long script does not pile up groups to check.
		delete(r.groups, pid)
	}
	r.mu.Unlock()

	if st := cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return interp.ExitStatus(128 + int(ws.Signal()))
		}
		if code := st.ExitCode(); code != 0 {
			return interp.ExitStatus(code)
		}
		return nil // exited 0; ErrWaitDelay only means a leftover held a pipe
	}
	fmt.Fprintln(hc.Stderr, err)
	return interp.ExitStatus(126)
}

// script runs a file that the kernel refused to execute (no shebang line)
// as a shell script, as other shells do, in a new interpreter under the
// same run.
func (r *run) script(ctx context.Context, hc interp.HandlerContext, path string, args []string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(126)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if bytes.IndexByte(line, 0) >= 0 {
		fmt.Fprintf(hc.Stderr, "%s: cannot execute binary file\n", args[0])
		return interp.ExitStatus(126)
	}
	file, err := syntax.NewParser().Parse(bytes.NewReader(b), args[0])
	if err != nil {
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(2)
	}
	var stdin *os.File
	if f, ok := hc.Stdin.(*os.File); ok {
		stdin = f
	}
	sub, err := interp.New(
		interp.Dir(hc.Dir),
		interp.Env(expand.ListEnviron(environ(hc.Env)...)),
		interp.StdIO(stdin, hc.Stdout, hc.Stderr),
		interp.Params(append([]string{"--"}, args[1:]...)...),
		interp.ExecHandlers(r.middleware),
		interp.OpenHandler(r.open),
	)
	if err != nil {
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(126)
	}
	if err := sub.Run(ctx, file); err != nil {
		var es interp.ExitStatus
		if errors.As(err, &es) {
			return es
		}
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(2)
	}
	return nil
}

// environ is the environment a program gets: the exported string
// variables of the interpreter.
func environ(env expand.Environ) []string {
	list := make([]string, 0, 32)
	for name, vr := range env.Each {
		if !vr.IsSet() {
			// unset in the runner but set globally: drop it
			for i, kv := range list {
				if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
					list[i] = ""
				}
			}
			continue
		}
		if vr.Exported && vr.Kind == expand.String {
			list = append(list, name+"="+vr.String())
		}
	}
	out := list[:0]
	for _, kv := range list {
		if kv != "" {
			out = append(out, kv)
		}
	}
	return out
}
