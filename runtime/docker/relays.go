package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/ccrun/ccrun/runtime/docker/internal/relay"
)

// LabelRelay is "1" on a relay container (RunBehind), besides the
// ownership labels.
const LabelRelay = "ccrun.relay"

// relayDirPrefix starts the name of a relay's directory in the temporary
// one: ccrun-relay-PID.START- names its owner, for GC.
const relayDirPrefix = "ccrun-relay-"

// relays are the relays an Executor keeps for the next calls behind the
// proxy (RunBehind).
type relays struct {
	mu        sync.Mutex
	idle      []*relayBox
	releasing int           // relays on their way back from a run (putRelay)
	wake      chan struct{} // closed, and made again, when one is back or dropped
	closed    bool          // Close was called: no relay is kept any more
	starts    int           // relays started, for tests
}

// relayWait bounds how long a run waits for a relay on its way back from
// the last run (its container seen gone, then a reset: some 50 ms) before
// it starts one.
const relayWait = 2 * time.Second

// relayBox is a relay container, started, and ccrun's end of its stdin and
// output.
type relayBox struct {
	id    string
	dir   string // the host directory bound at relayDir; "" for a relay of one run
	hj    types.HijackedResponse
	ready chan struct{} // it said "ready"
	dead  chan struct{} // its output ended: it is gone, or going
	mu    sync.Mutex
	said  bytes.Buffer // what it wrote to stderr, bounded
}

// takeRelay returns a relay for a run whose proxy listens on socket: an
// idle one, or a new one, with socket linked into its directory (link,
// removed after the run); or, where it cannot be linked there, a relay of
// the run's own bound to socket (link "").
func (e *Executor) takeRelay(ctx context.Context, s Spec, socket string) (r *relayBox, link string, err error) {
	waited := false
	for {
		e.relays.mu.Lock()
		n := len(e.relays.idle)
		if n == 0 && e.relays.releasing > 0 && !waited {
			wake := e.relays.wakeChan()
			e.relays.mu.Unlock()
			t := time.NewTimer(relayWait)
			select {
			case <-wake:
			case <-t.C:
				waited = true
			}
			t.Stop()
			continue
		}
		if n == 0 {
			e.relays.mu.Unlock()
			break
		}
		r = e.relays.idle[n-1]
		e.relays.idle = e.relays.idle[:n-1]
		e.relays.mu.Unlock()
		select {
		case <-r.dead:
			e.dropRelay(r)
			continue
		default:
		}
		link = filepath.Join(r.dir, socketName)
		if err := os.Link(socket, link); errors.Is(err, syscall.EXDEV) {
			e.relays.mu.Lock()
			e.relays.idle = append(e.relays.idle, r) // for another run
			e.relays.mu.Unlock()
			return e.ownRelay(ctx, s, socket)
		} else if err != nil {
			e.dropRelay(r) // a link left behind, say: not this relay
			return e.ownRelay(ctx, s, socket)
		}
		return r, link, nil
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d.%s-", relayDirPrefix, e.owner.pid, e.owner.start))
	if err != nil {
		return nil, "", fmt.Errorf("docker: egress: the relay's directory: %w", err)
	}
	link = filepath.Join(dir, socketName)
	if err := os.Link(socket, link); err != nil {
		_ = os.Remove(dir)
		return e.ownRelay(ctx, s, socket)
	}
	r, err = e.startRelay(ctx, s, dir, relayDir, relayDir+"/"+socketName)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	r.dir = dir
	return r, link, nil
}

// wakeChan is the channel closed when a relay is back or dropped; mu held.
func (rs *relays) wakeChan() chan struct{} {
	if rs.wake == nil {
		rs.wake = make(chan struct{})
	}
	return rs.wake
}

// ownRelay starts a relay bound to socket itself, for one run.
func (e *Executor) ownRelay(ctx context.Context, s Spec, socket string) (*relayBox, string, error) {
	r, err := e.startRelay(ctx, s, socket, relayDir+"/"+socketName, relayDir+"/"+socketName)
	return r, "", err
}

// putRelay keeps r for another run once the run's container (call, ""
// if none was made) is gone and r is reset, off the run's path; else, or
// when the container does not end, it removes r. A relay of one run (no
// directory) is removed.
func (e *Executor) putRelay(r *relayBox, call string) {
	if r.dir == "" {
		e.dropRelay(r)
		return
	}
	e.relays.mu.Lock()
	e.relays.releasing++
	e.relays.mu.Unlock()
	e.background(func(bctx context.Context) {
		keep := e.awaitGone(bctx, call) && r.reset() == nil
		e.relays.mu.Lock()
		e.relays.releasing--
		if keep && !e.relays.closed && len(e.relays.idle) < maxIdleRelays {
			e.relays.idle = append(e.relays.idle, r)
			r = nil
		}
		if e.relays.wake != nil {
			close(e.relays.wake)
			e.relays.wake = nil
		}
		e.relays.mu.Unlock()
		if r != nil {
			e.dropRelay(r)
		}
	})
}

// awaitGone waits, as long as ctx allows, until container id ("": none)
// runs no more, and reports whether it was seen so. A run whose container
// once served returns before the container ends (callOnce): what its
// program left running runs until then.
func (e *Executor) awaitGone(ctx context.Context, id string) bool {
	if id == "" {
		return true
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waitC, errC := e.eng.ContainerWait(wctx, id, container.WaitConditionNotRunning)
	select {
	case <-waitC:
	case <-errC: // removed already (not found), or the engine: gone says
	case <-ctx.Done():
		return false
	}
	return e.gone(ctx, id)
}

// gone reports whether container id, "" for none, runs no more: removed,
// or exited. Anything else, an engine that does not answer included, is
// not gone.
func (e *Executor) gone(ctx context.Context, id string) bool {
	if id == "" {
		return true
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	ins, err := e.eng.ContainerInspect(kctx, id)
	if isNotFound(err) {
		return true
	}
	if err != nil || ins.ContainerJSONBase == nil || ins.State == nil {
		return false
	}
	st := ins.State
	return !st.Running && !st.Paused && !st.Restarting && st.Pid == 0
}

// reset has r kill every connection of the run it served and make its
// listener again (dropping what was not accepted), and waits until it
// says it is ready.
func (r *relayBox) reset() error {
	select {
	case <-r.ready: // stale; the relay says it once a start or reset
	default:
	}
	if _, err := r.hj.Conn.Write([]byte{'r'}); err != nil {
		return err
	}
	return r.await()
}

// await waits until r says it is ready.
func (r *relayBox) await() error {
	t := time.NewTimer(relayReady)
	defer t.Stop()
	select {
	case <-r.ready:
		return nil
	case <-r.dead:
	case <-t.C:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return newError(ErrUnavailable, nil, "docker: egress: the relay is not ready (it said %q)", strings.TrimSpace(r.said.String()))
}

// dropRelay removes r, and its directory.
func (e *Executor) dropRelay(r *relayBox) {
	r.hj.Close() // its stdin ends: it ends
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = e.eng.ContainerRemove(ctx, r.id, container.RemoveOptions{Force: true})
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
}

// closeRelays removes the idle relays and keeps none from now on.
func (e *Executor) closeRelays() {
	e.relays.mu.Lock()
	idle := e.relays.idle
	e.relays.idle, e.relays.closed = nil, true
	e.relays.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range idle {
		wg.Add(1)
		go func() { defer wg.Done(); e.dropRelay(r) }()
	}
	wg.Wait()
}

// startRelay starts a relay from the call's image, with src bound at
// target and the proxy's socket at sock in its container, and returns it
// once it listens.
func (e *Executor) startRelay(ctx context.Context, s Spec, src, target, sock string) (*relayBox, error) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relayReady)
	defer cancel()
	if _, _, err := e.onceCode(); err != nil { // the engine's architecture, asked
		return nil, newError(ErrUnavailable, err, "docker: egress: no relay for the engine")
	}
	arch := goArch(e.arch.machine)
	path, err := e.programFile("relay", arch, relay.ELF(arch))
	if err != nil {
		return nil, err
	}
	pids := int64(512) // a process a connection: a package manager opens dozens at once
	labels := e.labels()
	labels[LabelRelay] = "1"
	cfg := &container.Config{Image: s.Image, Entrypoint: []string{relayPath}, Cmd: []string{relayPort, sock},
		User: fmt.Sprintf("%d:%d", os.Geteuid(), os.Getegid()),
		// A reset a byte on stdin. StdinOnce: stdin closes when ccrun's
		// attach session ends (ccrun closed it, or ended), and so does the
		// relay.
		AttachStdin: true, OpenStdin: true, StdinOnce: true,
		AttachStdout: true, AttachStderr: true, Labels: labels}
	hc := &container.HostConfig{
		NetworkMode: DefaultNetwork, ReadonlyRootfs: true, CapDrop: []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"}, AutoRemove: true, LogConfig: container.LogConfig{Type: "none"},
		Sysctls: map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"},
		DNS:     []string{unreachableDNS},
		// The relay is PID 1 of its container (no init, whatever the
		// engine's default): a reset kills every other process there.
		Init:      new(bool),
		Resources: container.Resources{Memory: 64 << 20, MemorySwap: 64 << 20, NanoCPUs: 1e9, PidsLimit: &pids},
		Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: path, Target: relayPath, ReadOnly: true},
			{Type: mount.TypeBind, Source: src, Target: target, ReadOnly: true},
		},
	}
	id, err := e.create(kctx, cfg, hc, "ccrun-relay-"+randHex(6))
	if err != nil {
		return nil, err
	}
	r := &relayBox{id: id, ready: make(chan struct{}, 1), dead: make(chan struct{})}
	fail := func(err error) (*relayBox, error) { e.dropRelay(r); return nil, err }
	// Attached for the relay's life: not on a context of the call.
	r.hj, err = e.eng.ContainerAttach(context.WithoutCancel(kctx), id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		_ = e.eng.ContainerRemove(context.WithoutCancel(kctx), id, container.RemoveOptions{Force: true})
		return nil, classify(e.host, "attach to the relay", err)
	}
	go r.watch()
	e.relays.mu.Lock()
	e.relays.starts++
	e.relays.mu.Unlock()
	if err := e.eng.ContainerStart(kctx, id, container.StartOptions{}); err != nil {
		return fail(classify(e.host, "start the relay", err))
	}
	if err := r.await(); err != nil {
		return fail(err)
	}
	return r, nil
}

// watch reads r's output (multiplexed: no TTY) to its end: each "ready"
// line on stdout is said on r.ready, stderr is kept.
func (r *relayBox) watch() {
	defer close(r.dead)
	_, _ = stdcopy.StdCopy(readyWriter{r}, stderrWriter{r}, r.hj.Reader)
}

type readyWriter struct{ r *relayBox }

func (w readyWriter) Write(p []byte) (int, error) {
	for range bytes.Count(p, []byte("ready\n")) {
		select {
		case w.r.ready <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

type stderrWriter struct{ r *relayBox }

func (w stderrWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	if w.r.said.Len() < 4096 {
		w.r.said.Write(p[:min(len(p), 4096-w.r.said.Len())])
	}
	return len(p), nil
}

// sweepRelayDirs removes the relay directories (of the temporary directory,
// this user's) whose owning process is gone.
func sweepRelayDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), relayDirPrefix+"*"))
	for _, d := range dirs {
		name := strings.TrimPrefix(filepath.Base(d), relayDirPrefix)
		own, _, ok := strings.Cut(name, "-")
		pid, start, ok2 := strings.Cut(own, ".")
		n, err := strconv.Atoi(pid)
		fi, serr := os.Lstat(d)
		if !ok || !ok2 || err != nil || serr != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		if (owner{pid: n, start: start}).alive() {
			continue
		}
		_ = os.RemoveAll(d)
	}
}
