package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ccrun/ccrun/internal/once"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/gofrs/flock"
)

// poolMu serialises claims inside this process; the lock file serialises
// them between processes (flock(2) also excludes two descriptors of one
// process, the mutex only saves the system calls).
var poolMu sync.Mutex

// closeWait bounds how long Close waits for the pool's background work (a
// refill, the removal of a used container) before it gives up on it: what
// a ccrun process that ran one pooled program pays before it exits.
const closeWait = 3 * time.Second

func isNotFound(err error) bool { return errdefs.IsNotFound(err) }

// poolConfig is the configuration of an idle pooled container for s: the
// cold path's configuration, with its hardening as it is, except that
//   - the program is once (bound read-only at oncePath, run by
//     docker-init), not the call's: once waits on the container's stdin,
//     kept open for it, for the one call it serves (see callOnce), or a
//     call's program is exec'd into the container beside it (see exec);
//   - it holds none of the call's environment (given at exec time), and
//     nobody attaches to it until a run claims it;
//   - its pids limit counts once and its stdin copier too, so the program
//     has as many processes as on the cold path.
func poolConfig(s Spec, lim job.Limits, prog string, labels map[string]string) (*container.Config, *container.HostConfig) {
	cfg, hc := s.config(lim, labels)
	onceConfig(cfg, hc, prog)
	cfg.Env = nil
	cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = false, false, false
	return cfg, hc
}

// onceConfig makes once, bound read-only from prog, the program of a
// container configured by Spec.config: its stdin open, and closed when
// the attach session that serves the call ends (a once whose caller went
// away ends), its pids limit two higher, for once and its stdin copier.
func onceConfig(cfg *container.Config, hc *container.HostConfig, prog string) {
	cfg.Entrypoint = []string{oncePath}
	cfg.Cmd = nil
	cfg.OpenStdin, cfg.StdinOnce = true, true
	pids := *hc.Resources.PidsLimit + 2
	hc.Resources.PidsLimit = &pids
	hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: prog, Target: oncePath, ReadOnly: true})
}

// poolKey is what an idle container must match to serve a run: the shape of
// the container (image id, limits, mounts, network, user, working
// directory, the holder) — not the command nor the environment, which come
// with the exec. The image id is the one the reference names now, so a
// rebuilt image is never served from an old container; likewise each bind
// source is named by its device and inode now, so a directory replaced at
// the same path is never served from a container that binds the old one.
func poolKey(imageID string, cfg *container.Config, hc *container.HostConfig) (string, error) {
	c := *cfg
	c.Labels = nil // the owner differs from run to run
	var sources []string
	for _, m := range hc.Mounts {
		fi, err := os.Stat(m.Source)
		if err != nil {
			return "", err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return "", fmt.Errorf("docker: pool key: no inode for %s", m.Source)
		}
		sources = append(sources, fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	}
	b, err := json.Marshal(struct {
		Image   string
		Config  container.Config
		Host    *container.HostConfig
		Sources []string
		Claim   string // how a claim is made: not shared with a ccrun that claims otherwise
	}{imageID, c, hc, sources, "marker"})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// execArgv is what the cold path would run for cmd in img: the image's
// entrypoint followed by cmd, or by the image's command when cmd is empty.
func execArgv(img image.InspectResponse, cmd []string) []string {
	var entry, def []string
	if img.Config != nil {
		entry, def = img.Config.Entrypoint, img.Config.Cmd
	}
	if len(cmd) == 0 {
		cmd = def
	}
	return append(append([]string(nil), entry...), cmd...)
}

// runPooled runs s in an idle pooled container if one is there, and starts
// a refill of the pool either way. used is false when the run must go the
// cold path: no idle container, the image not local (the cold path pulls
// it), no once for the engine's architecture (run then says so: poolNote),
// or no program to run.
func (e *Executor) runPooled(ctx context.Context, s Spec, lim job.Limits, begin time.Time) (res *job.Result, used bool, err error) {
	if e.poolDir == "" {
		return nil, false, nil
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	img, err := e.inspect(kctx, s.Image)
	if isNotFound(err) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, classify(e.host, "inspect image "+s.Image, err)
	}
	argv := execArgv(img, s.Cmd)
	if len(argv) == 0 {
		return nil, false, nil // the cold path says "no command"
	}
	prog, err := e.onceFile()
	if err != nil {
		return nil, false, nil // the pool is off here: cold
	}
	cfg, hc := poolConfig(s, lim, prog, nil)
	key, err := poolKey(img.ID, cfg, hc)
	if err != nil {
		return nil, false, nil
	}
	labels := e.labels()
	labels[LabelPool] = key
	// A configuration of its own for the refill: the client normalises
	// what it is given.
	rcfg, rhc := poolConfig(s, lim, prog, labels)
	id, ok := e.claim(kctx, key)
	if !ok {
		e.refill(key, rcfg, rhc, "")
		return nil, false, nil
	}
	if e.detach == nil {
		e.refill(key, rcfg, rhc, "") // while the program runs
	}
	e.pooledRuns.Add(1)
	var (
		later bool
		cold  bool // nothing ran: the call runs cold
	)
	if onceServes(s, argv) {
		res, later, err = e.callOnce(ctx, id, s, lim, argv, begin, nil, nil)
		var ns once.NotStarted
		switch {
		case errors.As(err, &ns):
			// Nothing ran: the container is removed unused, off the
			// path, and the call runs cold.
			e.pooledRuns.Add(-1)
			res, later, err, cold = nil, true, nil, true
		case !later:
			e.removeNow(ctx, id) // killed
		}
	} else {
		res, later, err = e.exec(ctx, id, s, lim, argv, begin)
	}
	switch {
	case e.detach != nil && later:
		e.refill(key, rcfg, rhc, id) // the refiller removes it, then its marker
	case e.detach != nil:
		e.unmark(id)
		e.refill(key, rcfg, rhc, "")
	case later:
		e.background(func(ctx context.Context) {
			e.remove(ctx, id)
			e.unmark(id)
		})
	default:
		e.unmark(id) // removed by exec or callOnce
	}
	return res, !cold, err
}

// removeNow removes container id before it returns, on a context the
// caller's cancellation cannot cut short.
func (e *Executor) removeNow(ctx context.Context, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	e.remove(cctx, id)
}

func (e *Executor) remove(ctx context.Context, id string) {
	_ = e.eng.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
}

// exec runs argv in the claimed, started container id, as the call's user,
// with its environment and working directory. It removes the container
// before returning when it killed it (or checked it for an out-of-memory
// kill); when the program exited by itself, later is true and the caller
// removes it, off the run's path.
func (e *Executor) exec(ctx context.Context, id string, s Spec, lim job.Limits, argv []string, begin time.Time) (res *job.Result, later bool, err error) {
	defer func() {
		if !later {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			e.remove(cctx, id)
		}
	}()
	// The exec's stream lives as long as the run, whatever the caller does.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer rcancel()

	// The lifecycle is the Supervisor's; the timeout counts from the
	// program's start (attaching starts it).
	type exit struct {
		code, pid int
		err       error
	}
	var (
		closeStream func()
		unstarted   bool // set by Wait: the program never started
		checked     bool // set by Wait: killed and inspected for memory
	)
	copied := make(chan struct{})
	exited := make(chan exit, 1)
	sup := &job.Supervisor{Limits: lim, Streams: s.Streams, Begin: begin, TimeoutAfterStart: true,
		KillGrace: -1, DrainGrace: drainTimeout}
	sup.Start = func(_ context.Context, out *job.Capture) error {
		ex, err := e.eng.ContainerExecCreate(rctx, id, container.ExecOptions{
			User:         s.user(),
			Env:          append([]string(nil), s.Env...),
			WorkingDir:   s.Dir,
			Cmd:          argv,
			AttachStdin:  s.Streams.Stdin != nil,
			AttachStdout: true,
			AttachStderr: true,
		})
		if err != nil {
			return classify(e.host, "exec in pooled container", err)
		}
		// Attaching starts the program.
		hj, err := e.eng.ContainerExecAttach(rctx, ex.ID, container.ExecAttachOptions{})
		if err != nil {
			return classify(e.host, "start exec in pooled container", err)
		}
		closeStream = hj.Close
		go func() {
			defer close(copied)
			_, _ = stdcopy.StdCopy(out.Stdout, out.Stderr, hj.Reader)
		}()
		if in := s.Streams.Stdin; in != nil {
			go func() {
				_, _ = io.Copy(hj.Conn, in)
				_ = hj.CloseWrite()
			}()
		}
		// The stream ends when the program exited and its output is
		// drained (the engine waits at most 2 s for a background process
		// still holding it); the exit code is the exec's.
		go func() {
			<-copied
			for {
				ins, err := e.eng.ContainerExecInspect(rctx, ex.ID)
				if err != nil || !ins.Running {
					exited <- exit{ins.ExitCode, ins.Pid, err}
					return
				}
				select {
				case <-rctx.Done():
					exited <- exit{err: rctx.Err()}
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		return nil
	}
	sup.Wait = func() (job.Status, error) {
		x := <-exited
		if x.err != nil {
			return job.Status{}, classify(e.host, "inspect exec in pooled container", x.err)
		}
		st := job.Status{Code: x.code}
		switch {
		case x.pid == 0 && x.code != 0:
			// The program never started (not found, not executable): the
			// engine wrote why on stdout. Like docker-init on the cold
			// path: exit 127, the reason on stderr.
			unstarted = true
			st.Code = 127
		case x.code == job.KilledExitCode && sup.StopReason() == "":
			// Killed by SIGKILL: by the kernel, out of memory? The engine
			// marks the container OOMKilled only once it stopped, so stop
			// it first.
			checked = true
			if e.oomKilled(ctx, id) {
				st.Reason = job.Memory
				st.Detail = fmt.Sprintf("killed by the kernel: out of memory (limit %d bytes)", lim.Memory)
			}
		}
		return st, nil
	}
	// The container is single-use: kill all of it, the holder too. The
	// exec's end is not waited for (the stream's is, by Drain).
	sup.Kill, sup.Drain = e.killer(ctx, id), drainer(copied)
	res, err = sup.Run(ctx)
	if closeStream != nil {
		closeStream()
	}
	if err != nil || res.Reason != job.Exit {
		return res, false, err
	}
	// Wait returned: what it set is final.
	if unstarted {
		res.Stdout, res.Stderr = nil, append(res.Stderr, res.Stdout...)
	}
	return res, !checked, nil
}

// oomKilled kills container id, waits for it to stop, and reports whether
// the kernel killed a process of it for want of memory.
func (e *Executor) oomKilled(ctx context.Context, id string) bool {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	waitC, errC := e.eng.ContainerWait(cctx, id, container.WaitConditionNotRunning)
	_ = e.eng.ContainerKill(cctx, id, "KILL")
	select {
	case <-waitC:
	case <-errC:
	case <-cctx.Done():
	}
	ins, err := e.eng.ContainerInspect(cctx, id)
	return err == nil && ins.State != nil && ins.State.OOMKilled
}

// background runs f on the Executor's background context, which Close
// cancels after waiting for it at most closeWait.
func (e *Executor) background(f func(context.Context)) {
	e.bgWork.Add(1)
	go func() {
		defer e.bgWork.Done()
		ctx, cancel := context.WithTimeout(e.bg, cleanupTimeout)
		defer cancel()
		f(ctx)
	}()
}

func (e *Executor) lockFile() (*flock.Flock, error) {
	if err := os.MkdirAll(e.poolDir, 0o700); err != nil {
		return nil, err
	}
	return flock.New(filepath.Join(e.poolDir, "docker-pool.lock")), nil
}

// poolList lists the pooled containers of key on this host; with running,
// only those the engine says run.
func (e *Executor) poolList(ctx context.Context, key string, running bool) ([]container.Summary, error) {
	f := filters.NewArgs(
		filters.Arg("label", LabelPool+"="+key),
		filters.Arg("label", LabelHost+"="+e.hostname),
	)
	if running {
		f.Add("status", "running")
	}
	return e.eng.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
}

// claim takes an idle pooled container made for key, if there is one: one
// that runs its holder and has no claim marker (see marker). Under the pool
// lock it lists them and writes the claim marker of the first. Every
// claimer of the pool lists under the lock, so a claimer that comes later
// finds the marker and passes the container by. The container keeps its
// idle name: a rename would hold the engine's lock on the container for
// 10–40 ms, during which the exec could be neither created nor started.
func (e *Executor) claim(ctx context.Context, key string) (id string, ok bool) {
	lock, err := e.lockFile()
	if err != nil {
		return "", false
	}
	poolMu.Lock()
	defer poolMu.Unlock()
	if err := lock.Lock(); err != nil {
		return "", false
	}
	defer lock.Unlock()
	list, err := e.poolList(ctx, key, true)
	if err != nil {
		return "", false
	}
	for _, c := range list {
		if idle(c) && e.mark(c.ID) {
			return c.ID, true
		}
	}
	return "", false
}

// A claim marker, the file claims/ID in the pool directory, is written
// (O_EXCL, naming this process) when a run claims idle container ID, and
// removed once the container is. While it is there, the container is in
// use or used: never claimed again, nor taken for the pool's idle
// container, nor removed by DrainPool while its claimer lives. It outlives
// a claimer killed before the used container was removed: then the next
// fill of its key, or DrainPool, removes the container.
func (e *Executor) marker(id string) string { return filepath.Join(e.poolDir, "claims", id) }

// mark writes the claim marker of id, and reports whether this process
// wrote it (false: there is one, or it cannot be written).
func (e *Executor) mark(id string) bool {
	p := e.marker(id)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return false
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false
	}
	// Written whole or not, the file marks the claim (an unreadable one
	// names no live process).
	_, _ = fmt.Fprintf(f, "%d %s\n", e.owner.pid, e.owner.start)
	_ = f.Close()
	return true
}

func (e *Executor) unmark(id string) { _ = os.Remove(e.marker(id)) }

// markedBy returns the process a claim marker of id names, and whether
// there is a marker (one unreadable names no live process).
func (e *Executor) markedBy(id string) (owner, bool) {
	b, err := os.ReadFile(e.marker(id))
	if errors.Is(err, fs.ErrNotExist) {
		return owner{}, false
	}
	return parseOwner(b), true
}

// parseOwner reads the claimer a claim marker names ("PID START").
func parseOwner(b []byte) owner {
	var o owner
	if f := strings.Fields(string(b)); len(f) == 2 {
		o.pid, _ = strconv.Atoi(f[0])
		o.start = f[1]
	}
	return o
}

// inUse reports whether pooled container c is claimed by a live process:
// its claim marker, in the pool directory of the holder it binds (this
// Executor's or another's: DrainPool sees every pool of the host), names
// one, or cannot be read (then it may: c is left alone).
func (e *Executor) inUse(c container.Summary) bool {
	dir := e.poolDir
	for _, m := range c.Mounts {
		if m.Destination == oncePath {
			dir = filepath.Dir(m.Source)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "claims", c.ID))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	} else if err != nil {
		return true
	}
	return parseOwner(b).alive()
}

// sweepMarkers removes the claim markers of dead claimers whose container
// is gone (those of live ones are theirs to remove).
func (e *Executor) sweepMarkers(ctx context.Context) {
	ents, err := os.ReadDir(filepath.Join(e.poolDir, "claims"))
	if err != nil {
		return
	}
	for _, ent := range ents {
		if o, ok := e.markedBy(ent.Name()); !ok || o.alive() {
			continue
		}
		if _, err := e.eng.ContainerInspect(ctx, ent.Name()); isNotFound(err) {
			e.unmark(ent.Name())
		}
	}
}

// refill creates and starts, in the background, an idle container for key
// from cfg and hc (their labels included) unless one already waits, and
// removes on the way the pooled containers of key that serve no one (see
// fill), and the used container remove when not "". In this process (one
// refill per key at a time), or in a process of its own with
// WithDetachedRefill.
func (e *Executor) refill(key string, cfg *container.Config, hc *container.HostConfig, remove string) {
	if e.detach != nil {
		e.spawnRefill(refillRequest{Key: key, Config: cfg, Host: hc, Remove: remove, PoolDir: e.poolDir})
		return
	}
	e.refillMu.Lock()
	if e.refilling == nil {
		e.refilling = make(map[string]bool)
	}
	if e.refilling[key] {
		e.refillMu.Unlock()
		return
	}
	e.refilling[key] = true
	e.refillMu.Unlock()
	e.background(func(ctx context.Context) {
		defer func() {
			e.refillMu.Lock()
			delete(e.refilling, key)
			e.refillMu.Unlock()
		}()
		e.fill(ctx, key, cfg, hc)
	})
}

// fill creates and starts an idle container for key unless one waits
// already, removing the pooled containers of key that serve no one:
// stopped ones that no run claimed, and those whose owner is gone (a used
// container a ccrun process exited before removing, a refill it left
// half-made). A pool that cannot be refilled is only a cold next run: fill
// reports nothing.
func (e *Executor) fill(ctx context.Context, key string, cfg *container.Config, hc *container.HostConfig) {
	list, err := e.poolList(ctx, key, false)
	if err != nil {
		return
	}
	waiting := false
	for _, c := range list {
		o, marked := e.markedBy(c.ID)
		switch {
		case idle(c) && marked:
			if !o.alive() {
				// Claimed by a process killed before its rename: used.
				e.remove(ctx, c.ID)
				e.unmark(c.ID)
			} // else being claimed
		case idle(c):
			waiting = true
		case stale(c):
			e.remove(ctx, c.ID)
		}
	}
	defer e.sweepMarkers(ctx)
	if waiting {
		return
	}
	id, err := e.create(ctx, cfg, hc, "ccrun-pool-"+randHex(6))
	if err != nil {
		return
	}
	if err := e.eng.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		e.remove(rctx, id)
	}
}

// stale reports whether pooled container c serves no one: never claimed
// and stopped (its holder died), or owned by a process that is gone.
func stale(c container.Summary) bool {
	if !claimed(c.Names) && c.State != "running" && c.State != "created" {
		return true
	}
	return !ownerOf(c.Names, c.Labels).alive()
}
