// Package docker runs a program in a hardened container through the Docker
// Engine API: the @docker environment of ccrun.
//
// By default a container has no network (only a loopback device), a
// read-only root filesystem, no capabilities, no-new-privileges, the
// engine's default seccomp profile, a non-root user (the caller's uid and
// gid, or 65534:65534 when the caller is root: WithDefaultUser), an init
// process as PID 1 (docker-init), pids, memory (no swap) and CPU limits, and
// a writable /tmp of 64 MiB on tmpfs. Mounts are read-only unless declared
// writable. A Spec loosens a default only by saying so, and Spec.Loosens
// lists what it loosens, for the person who approves the run.
//
// Run creates the container, attaches to it and registers the wait for its
// exit before starting it, so no output and no exit is missed. Output is
// capped per stream; past the cap, past the timeout, or when the caller
// cancels, the container is killed; an out-of-memory kill is reported as
// job.Memory. The engine removes the container as it exits (AutoRemove, as
// `docker run --rm`), so Run returns without waiting for the removal; a
// container that binds protected paths, or that never ran, is removed by
// Run before it returns, and one it killed is seen removed first (a pooled
// one that the program left by exiting: just after, in the background), on
// a context the caller's cancellation cannot cut short.
//
// Every container carries the label ccrun=1 and the labels ccrun.host,
// ccrun.pid and ccrun.start naming the process that owns it. GC removes the
// containers whose owner is gone (a ccrun killed with SIGKILL mid-run).
// The first container a process creates records the engine's address in
// ccrun's state directory (internal/enginerecord), where ccrun gc finds it.
//
// The warm pool (Spec.Pool, opt-in) keeps, for each container shape (image,
// limits, mounts, network, user, working directory), a container created
// and started in advance, as hardened as a cold one, in which once
// (internal/once, a static program of about 2.3 KB for the engine's
// architecture, bound read-only; nothing
// of the image runs) waits on the container's stdin. A run claims it by a
// claim marker (a file written under a lock file shared by the ccrun
// processes of this host and user) and attaches to it: once runs the
// program with the container's user and working directory, the call's
// environment added to the container's, and sends its exit status after
// its output. A run whose environment unsets a variable (a bare NAME) is
// exec'd into the container instead. Either way the container is removed
// after: each serves one run. A fresh one is created and started in the background —
// in this process, which Close waits for at most 3 s, or in a process of
// its own (WithDetachedRefill, RefillMain) — and outlives the process, so
// the next ccrun process finds it. With no idle container, a pooled run
// runs cold. See docs/docker.md for what it buys and what differs.
//
// Errors are of the classes ErrUnavailable (an engine that refuses us
// too), ErrNotFound and ErrInvalidArgument (errors.Is), with a message
// that says what to do. A program that exits non-zero is not an error: it is a
// job.Result.
package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/enginerecord"
	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"golang.org/x/term"
)

// Labels every container of ccrun carries.
const (
	LabelOwned = "ccrun"       // "1" on every container ccrun creates
	LabelHost  = "ccrun.host"  // the hostname of the owning process
	LabelPID   = "ccrun.pid"   // the pid of the owning process
	LabelStart = "ccrun.start" // the owning process's start time, in clock ticks since boot (tells pid reuse apart)
	LabelPool  = "ccrun.pool"  // on pooled containers: the key of the container shape they were made for
)

// Bounds on the engine calls made after the program ran, which the
// caller's cancellation does not cut.
const (
	cleanupTimeout = 30 * time.Second // kill, wait and remove of one container
	drainTimeout   = 5 * time.Second  // the output stream closing after exit
	pingTimeout    = 10 * time.Second // New's first call to the engine
)

// DefaultPullTimeout bounds an image pull: long enough for a large image on
// a slow link, short enough that an unreachable registry is an error, not a
// hang.
const DefaultPullTimeout = 5 * time.Minute

// Executor runs Specs on one Docker Engine. It is safe for concurrent use;
// Close it when done.
type Executor struct {
	eng         engine
	host        string // the engine's address, for messages
	hostname    string
	owner       owner
	pullOut     io.Writer
	pullTerm    bool
	pullTimeout time.Duration
	poolDir     string
	detach      []string // WithDetachedRefill's program and arguments
	hostOpt     string   // WithHost's address; "": the environment's
	user        string   // what a Spec that names no User runs as (WithDefaultUser, callerUser)
	asRoot      bool     // user is DefaultUser because this process is root

	bgWork    sync.WaitGroup // refills, removals of used pooled containers
	refillMu  sync.Mutex
	refilling map[string]bool // pool keys with a refill in flight
	bg        context.Context // background work; cancelled by Close
	stop      context.CancelFunc

	pooledRuns atomic.Int64 // runs served by a pooled container, for tests
	onceRuns   atomic.Int64 // of those, runs its once served (not an exec)

	images sync.Map // image ID -> image.InspectResponse: an ID names one image for good

	arch *engineArch // the engine's architecture: which once it runs (askArch)

	relays relays // kept for the next runs behind the egress proxy (RunBehind)
}

// inspect inspects the image ref. What an image ID names never changes, so
// an ID inspected once is not asked about again (an image removed since
// shows up at create, as ErrNotFound).
func (e *Executor) inspect(ctx context.Context, ref string) (image.InspectResponse, error) {
	if v, ok := e.images.Load(ref); ok {
		return v.(image.InspectResponse), nil
	}
	img, err := e.eng.ImageInspect(ctx, ref)
	if err == nil {
		e.images.Store(img.ID, img)
	}
	return img, err
}

// Option configures an Executor.
type Option func(*Executor) error

// WithPullProgress streams image pull progress to w (default: nowhere).
// When w is a terminal, progress bars redraw in place.
func WithPullProgress(w io.Writer) Option {
	return func(e *Executor) error {
		e.pullOut = w
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			e.pullTerm = true
		}
		return nil
	}
}

// WithPullTimeout bounds each image pull (default DefaultPullTimeout).
func WithPullTimeout(d time.Duration) Option {
	return func(e *Executor) error {
		if d <= 0 {
			return newError(ErrInvalidArgument, nil, "docker: pull timeout %s: want a positive duration", d)
		}
		e.pullTimeout = d
		return nil
	}
}

// WithPoolDir sets the directory holding the warm pool's lock file
// (default: ccrun under the user's cache directory). Every ccrun process
// that shares an engine and claims from the same pool must use the same
// directory.
func WithPoolDir(dir string) Option {
	return func(e *Executor) error {
		e.poolDir = dir
		return nil
	}
}

// WithHost connects to the Docker Engine at host, as DOCKER_HOST names one
// (unix:///var/run/docker.sock, tcp://h:2376, ...), instead of the one the
// environment names; the rest of the environment (DOCKER_CERT_PATH,
// DOCKER_TLS_VERIFY, DOCKER_API_VERSION) still applies. Default: the
// environment's (DOCKER_HOST, else the local socket).
func WithHost(host string) Option {
	return func(e *Executor) error {
		if host == "" {
			return newError(ErrInvalidArgument, nil, "docker: host: empty")
		}
		e.hostOpt = host
		return nil
	}
}

// EnvHost is the address of the Docker Engine that New connects to
// without WithHost: DOCKER_HOST, else the local socket. It connects to
// nothing; "" when DOCKER_HOST is not an address.
func EnvHost() string {
	c, err := client.NewClientWithOpts(client.FromEnv)
	if err != nil {
		return ""
	}
	defer c.Close()
	return c.DaemonHost()
}

// withEngine replaces the Docker client, for tests of the error paths.
func withEngine(eng engine) Option {
	return func(e *Executor) error {
		e.eng = eng
		return nil
	}
}

// New connects to the Docker Engine named by the environment (DOCKER_HOST,
// DOCKER_API_VERSION, DOCKER_CERT_PATH, DOCKER_TLS_VERIFY; default the
// local socket), negotiating the API version, and checks that it answers:
// an engine that does not, or refuses us, is ErrUnavailable, with its
// address in the message.
func New(ctx context.Context, opts ...Option) (*Executor, error) {
	e := &Executor{pullTimeout: DefaultPullTimeout}
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, err
		}
	}
	if e.eng == nil {
		opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
		if e.hostOpt != "" {
			opts = append(opts, client.WithHost(e.hostOpt))
		}
		c, err := client.NewClientWithOpts(opts...)
		if err != nil {
			if e.hostOpt != "" {
				return nil, newError(ErrInvalidArgument, err, "docker: client for %q", e.hostOpt)
			}
			return nil, newError(ErrInvalidArgument, err, "docker: client from the environment (DOCKER_HOST=%q)", os.Getenv("DOCKER_HOST"))
		}
		e.eng = dockerClient{c}
	}
	e.host = e.eng.DaemonHost()
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ping, err := e.eng.Ping(pctx)
	if err != nil {
		e.eng.Close()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, unavailable(e.host, fmt.Errorf("no answer within %s: %w", pingTimeout, err))
		}
		return nil, classify(e.host, "ping", err)
	}
	e.eng.NegotiateAPIVersionPing(ping)
	e.hostname, _ = os.Hostname()
	e.owner = self()
	if e.user == "" {
		e.user, e.asRoot = callerUser(os.Geteuid(), os.Getegid()), os.Geteuid() == 0
	}
	if e.poolDir == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			e.poolDir = filepath.Join(dir, "ccrun")
		}
	}
	e.bg, e.stop = context.WithCancel(context.WithoutCancel(ctx))
	if e.arch == nil && e.poolDir != "" {
		e.askArch() // for once, which a run with a pool directory uses
	}
	return e, nil
}

// Host is the address of the engine, as DOCKER_HOST would name it.
func (e *Executor) Host() string { return e.host }

// Close waits for the warm pool's background work (a refill, the removal
// of a used container) at most 3 s, cancels what is left of it, then closes
// the connection to the engine. What it gives up on is not leaked: a
// container it left half-made, or used and not removed, is removed by the
// next refill of its pool, by GC or by DrainPool. It removes the relays
// kept for runs behind the egress proxy (RunBehind). Run must not be
// called after.
func (e *Executor) Close() error {
	ctr.WaitAtMost(&e.bgWork, closeWait)
	e.stop()
	e.closeRelays()
	return e.eng.Close()
}

// labels are the ownership labels of a container this process creates.
func (e *Executor) labels() map[string]string {
	return map[string]string{
		LabelOwned: "1",
		LabelHost:  e.hostname,
		LabelPID:   strconv.Itoa(e.owner.pid),
		LabelStart: e.owner.start,
	}
}

// Run runs s to its end and has its container removed. The Result's Reason
// says how it ended: Exit (with the program's ExitCode), Timeout (124),
// OutputCap, Memory, or Cancelled when ctx was cancelled while the program
// ran. An error means the program could not be run: invalid Spec, missing
// image, unreachable engine.
//
// The protected paths under a writable mount (job.Mount.Protected) stay
// read-only inside the container, and one the container made anyway is
// removed after the run and named in the Result's Detail: see protection
// and docs/docker.md. A run with a writable mount is never pooled.
//
// A run with a writable mount holds that directory's lock to its end
// (internal/mountlock): a second run that writes it, here or in @wasm or
// another process, waits, bounded by its timeout.
//
// A Spec that names no User runs as the caller's uid and gid, or as
// 65534:65534 when the caller is root (WithDefaultUser). A writable mount
// whose directory that user may not write is named in the Result's
// Detail, with why.
func (e *Executor) Run(ctx context.Context, s Spec) (*job.Result, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	asRoot := false
	if s.User == "" {
		s.User, asRoot = e.user, e.asRoot
	}
	note := unwritable(s, asRoot) // as the container will find it
	lk, early, err := mountlock.Begin(ctx, s.Mounts, s.Limits.WithDefaults(), time.Now())
	if lk == nil {
		return early, err
	}
	res, err := lk.End(e.runProtected(ctx, s))
	if note != "" && res != nil {
		res.Detail = strings.TrimPrefix(res.Detail+"; "+note, "; ")
	}
	return res, err
}

// runProtected is Run once the mounts are locked.
func (e *Executor) runProtected(ctx context.Context, s Spec) (*job.Result, error) {
	prot, err := protect(s)
	if err != nil {
		return nil, err
	}
	res, err := e.run(ctx, s, prot)
	note, ferr := prot.finish()
	if ferr != nil {
		// Fail closed: the sweep could not look everywhere, so what the
		// container left may plant something the host runs later.
		if note != "" {
			ferr = fmt.Errorf("%w (%s)", ferr, note)
		}
		return nil, fmt.Errorf("docker: the run's writable mounts could not be checked: %w", ferr)
	}
	if note != "" {
		switch {
		case res != nil && res.Detail != "":
			res.Detail += "; " + note
		case res != nil:
			res.Detail = note
		case err != nil:
			err = fmt.Errorf("%w (%s)", err, note)
		}
	}
	return res, err
}

func (e *Executor) run(ctx context.Context, s Spec, prot *protection) (res *job.Result, err error) {
	lim := s.Limits.WithDefaults()
	begin := time.Now()

	pulled := false
	if s.Pull.OrDefault() == PullAlways {
		if err := e.pull(ctx, s.Image); err != nil {
			return nil, err
		}
		pulled = true
	}
	if s.Pool && len(prot.mounts) == 0 {
		if res, used, err := e.runPooled(ctx, s, lim, begin); used || err != nil {
			return res, err
		}
		if note := e.poolNote(); note != "" {
			defer func() {
				if res != nil {
					res.Detail = strings.TrimPrefix(res.Detail+"; "+note, "; ")
				}
			}()
		}
	}

	var undo ctr.Cleanup
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		undo.Run(cctx)
	}()
	// Attach and wait live as long as the run, whatever the caller does.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	undo.Push(func(context.Context) { rcancel() })

	argv, prog := e.coldOnce(ctx, s, prot)
	id, err := e.container(ctx, s, lim, pulled, prot.binds, prog, argv)
	if err != nil {
		return nil, err
	}
	// The engine removes the container as it exits (AutoRemove, as `docker
	// run --rm` has it) unless it binds protected paths: then it is removed
	// here, before the protection is finished. So a program that exited
	// does not wait for the removal; a container that ccrun killed is seen
	// removed before Run returns, and one that never ran is removed here.
	auto := len(prot.binds) == 0
	var ended atomic.Bool // the container ran and exited (by itself or killed)
	undo.Push(func(cctx context.Context) {
		if auto && ended.Load() {
			return
		}
		// Force: kill it if it still runs. Gone already is fine.
		_ = e.eng.ContainerRemove(cctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
	if err := e.verifyProtected(ctx, id, prot.binds); err != nil {
		return nil, err
	}
	if prog != "" {
		return e.runColdOnce(ctx, rctx, id, s, lim, argv, begin, auto, &ended)
	}
	hj, err := e.eng.ContainerAttach(rctx, id, container.AttachOptions{
		Stream: true,
		Stdin:  s.Streams.Stdin != nil,
		Stdout: true,
		Stderr: true,
	})
	if err != nil {
		return nil, classify(e.host, "attach to container", err)
	}
	undo.Push(func(context.Context) { hj.Close() })

	waitC, waitErrC := e.eng.ContainerWait(rctx, id, container.WaitConditionNextExit)
	var oom <-chan struct{}
	if auto {
		oom = e.watchOOM(rctx, id) // the inspection may come after the removal
	}

	// The lifecycle is the Supervisor's; the timeout counts from the
	// container's start, as the program's own time.
	copied := make(chan struct{})
	sup := &job.Supervisor{Limits: lim, Streams: s.Streams, Begin: begin, TimeoutAfterStart: true,
		KillGrace: cleanupTimeout, DrainGrace: drainTimeout}
	sup.Start = func(_ context.Context, out *job.Capture) error {
		go func() {
			defer close(copied)
			_, _ = stdcopy.StdCopy(out.Stdout, out.Stderr, hj.Reader)
		}()
		if err := e.eng.ContainerStart(rctx, id, container.StartOptions{}); err != nil {
			return classify(e.host, "start container", err)
		}
		if in := s.Streams.Stdin; in != nil {
			go func() {
				_, _ = io.Copy(hj.Conn, in)
				_ = hj.CloseWrite()
			}()
		}
		return nil
	}
	sup.Wait = func() (job.Status, error) {
		var status container.WaitResponse
		select {
		case status = <-waitC:
		case err := <-waitErrC:
			return job.Status{}, classify(e.host, "wait for container", err)
		}
		ended.Store(true)
		if status.Error != nil && status.Error.Message != "" {
			return job.Status{}, fmt.Errorf("docker: wait for container: %s", status.Error.Message)
		}
		st := job.Status{Code: int(status.StatusCode)}
		if st.Code != 0 && sup.StopReason() == "" {
			// Only a failed run pays for the inspection (not one we killed).
			ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			ins, err := e.eng.ContainerInspect(ictx, id)
			cancel()
			killed := err == nil && ins.State != nil && ins.State.OOMKilled
			if err != nil && oom != nil { // removed already
				killed = oomSeen(oom, st.Code)
			}
			if killed {
				st.Reason = job.Memory
				st.Detail = fmt.Sprintf("killed by the kernel: out of memory (limit %d bytes)", lim.Memory)
			}
		}
		return st, nil
	}
	// Not running any more is fine: the remove in the cleanup stack forces
	// whatever is left.
	sup.Kill, sup.Drain = e.killer(ctx, id), drainer(copied)
	res, err = sup.Run(ctx)
	if err == nil && res.Reason != job.Exit && auto && ended.Load() {
		e.awaitRemoved(ctx, id) // killed: seen removed (by the engine) before Run returns
	}
	return res, err
}

// awaitRemoved waits, at most cleanupTimeout, until the engine removed
// container id (gone already is an error: fine).
func (e *Executor) awaitRemoved(ctx context.Context, id string) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	removed, removedErr := e.eng.ContainerWait(kctx, id, container.WaitConditionRemoved)
	select {
	case <-removed:
	case <-removedErr:
	case <-kctx.Done():
	}
}

// killer is the Supervisor's Kill of a run in container id: SIGKILL to
// all of it, bounded by cleanupTimeout, whatever the caller does.
func (e *Executor) killer(ctx context.Context, id string) func(job.Reason) {
	return func(job.Reason) {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = e.eng.ContainerKill(kctx, id, "KILL")
	}
}

// drainer is the Supervisor's Drain of a run whose output stream's copy
// closes copied.
func drainer(copied <-chan struct{}) func(context.Context) {
	return func(dctx context.Context) {
		select {
		case <-copied:
		case <-dctx.Done():
		}
	}
}

// oomWait bounds how long a program killed by SIGKILL waits for the
// engine's word of an out-of-memory kill, once its container is removed.
const oomWait = 500 * time.Millisecond

// watchOOM returns a channel closed when the engine reports an
// out-of-memory kill in container id (its "oom" event, from the engine's
// log of recent events since now, so that none is missed for a request
// that reaches the engine late), until ctx ends: what the inspection of a
// container that the engine removed already cannot say.
func (e *Executor) watchOOM(ctx context.Context, id string) <-chan struct{} {
	seen := make(chan struct{})
	msgs, errs := e.eng.Events(ctx, events.ListOptions{
		Since:   strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10),
		Filters: filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", id), filters.Arg("event", string(events.ActionOOM))),
	})
	go func() {
		select {
		case <-msgs:
			close(seen)
		case <-errs:
		case <-ctx.Done():
		}
	}()
	return seen
}

// oomSeen reports whether oom says the kernel killed for want of memory in
// a container whose program exited with code: at once, or, when the
// program was killed by SIGKILL (as by the kernel), once the engine's
// event came, within oomWait.
func oomSeen(oom <-chan struct{}, code int) bool {
	if code != job.KilledExitCode {
		select {
		case <-oom:
			return true
		default:
			return false
		}
	}
	select {
	case <-oom:
		return true
	case <-time.After(oomWait):
		return false
	}
}

// Resolve returns the ID (sha256:...) of the image ref names now, pulling
// it first as policy says (PullAlways: always; PullMissing, the default:
// when it is not local; PullNever: never). A Spec whose Image is that ID
// runs exactly that image, whatever ref is made to name later: ccrun binds
// a grant to the ID and runs by it. Errors: ErrNotFound (not local and not
// pulled), ErrUnavailable (a registry's refusal too).
func (e *Executor) Resolve(ctx context.Context, ref string, policy PullPolicy) (string, error) {
	if policy == "" {
		policy = PullMissing
	}
	if policy == PullAlways {
		if err := e.pull(ctx, ref); err != nil {
			return "", err
		}
	}
	img, err := e.eng.ImageInspect(ctx, ref) // a name: asked every time
	if isNotFound(err) && policy == PullMissing {
		if err := e.pull(ctx, ref); err != nil {
			return "", err
		}
		img, err = e.eng.ImageInspect(ctx, ref)
	}
	if err == nil {
		e.images.Store(img.ID, img)
	}
	if isNotFound(err) {
		return "", notLocal(ref, policy, err)
	}
	if err != nil {
		return "", classify(e.host, "inspect image "+ref, err)
	}
	return img.ID, nil
}

// notLocal is the error for an image that is not local and that policy
// did not pull.
func notLocal(ref string, policy PullPolicy, err error) error {
	return imageNotFound(ref, fmt.Sprintf("docker: image %s not found locally (pull policy %s)", ref, policy), err, false)
}

// container creates a container for s, not started, pulling the image
// when the policy says so and it was not pulled yet; its program once,
// bound from prog, to run argv, when prog is not "" (see coldOnce).
//
// The create runs on a context the caller cannot cancel (the caller's
// cancellation is seen just before the start): a create the engine
// completed after the caller gave up would leave a container Run does not
// know about, until GC.
func (e *Executor) container(ctx context.Context, s Spec, lim job.Limits, pulled bool, binds []mount.Mount, prog string, argv []string) (id string, err error) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	cfg, hc := s.config(lim, e.labels())
	if prog != "" {
		onceConfig(cfg, hc, prog)
		// once's own arguments, which it does not read: what `docker ps`
		// shows the container runs.
		cfg.Cmd = argv
	}
	hc.Mounts = append(hc.Mounts, binds...)
	hc.AutoRemove = len(binds) == 0 // see run
	if b, ok := ctx.Value(behindKey{}).(*behind); ok {
		b.apply(cfg, hc) // RunBehind's
	}
	id, err = e.create(kctx, cfg, hc, "")
	if err != nil && errors.Is(err, ErrNotFound) && !pulled && s.Pull.OrDefault() == PullMissing {
		if err := e.pull(ctx, s.Image); err != nil {
			return "", err
		}
		id, err = e.create(kctx, cfg, hc, "")
	}
	if b, ok := ctx.Value(behindKey{}).(*behind); ok && err == nil {
		b.id = id // seen gone before the relay serves another run
	}
	if err != nil && errors.Is(err, ErrNotFound) {
		return "", notLocal(s.Image, s.Pull.OrDefault(), err)
	}
	return id, err
}

func (e *Executor) create(ctx context.Context, cfg *container.Config, hc *container.HostConfig, name string) (string, error) {
	if name == "" {
		name = "ccrun-" + randHex(6)
	}
	resp, err := e.eng.ContainerCreate(ctx, cfg, hc, name)
	if err != nil {
		return "", classify(e.host, "create container", err)
	}
	enginerecord.Add(enginerecord.Site{Engine: enginerecord.Docker, Host: e.host}) // for ccrun gc; once per process
	return resp.ID, nil
}

// verifyProtected asks the engine how it set up the container's mounts
// and refuses to start it (ErrUnavailable) unless every protected path's
// bind is there, read-only.
func (e *Executor) verifyProtected(ctx context.Context, id string, binds []mount.Mount) error {
	if len(binds) == 0 {
		return nil
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	ins, err := e.eng.ContainerInspect(ictx, id)
	if err != nil {
		return classify(e.host, "inspect container", err)
	}
	ro := map[string]bool{}
	for _, mp := range ins.Mounts {
		ro[path.Clean(mp.Destination)] = !mp.RW
	}
	for _, b := range binds {
		if !ro[path.Clean(b.Target)] {
			return newError(ErrUnavailable, nil, "docker: the engine did not bind %s read-only: refusing to run with a protected path writable", b.Target)
		}
	}
	return nil
}

// pull pulls ref, bounded by the pull timeout, streaming progress when
// asked to. Any failure leaves the image missing: ErrNotFound, saying how
// to get it.
func (e *Executor) pull(ctx context.Context, ref string) error {
	pctx, cancel := context.WithTimeout(ctx, e.pullTimeout)
	defer cancel()
	fail := func(err error) error {
		if client.IsErrConnectionFailed(err) {
			return classify(e.host, "pull image "+ref, err)
		}
		if ctx.Err() != nil { // the caller gave up, not the registry
			return fmt.Errorf("docker: pull image %s: %w", ref, ctx.Err())
		}
		return imageNotFound(ref, fmt.Sprintf("docker: image %s not found locally and could not be pulled from its registry", ref), err, true)
	}
	rc, err := e.eng.ImagePull(pctx, ref, image.PullOptions{})
	if err != nil {
		return fail(err)
	}
	defer rc.Close()
	if err := e.progress(rc); err != nil {
		if pctx.Err() != nil {
			err = fmt.Errorf("no progress within %s: %w", e.pullTimeout, pctx.Err())
		}
		return fail(err)
	}
	return nil
}

// pullMessage is one line of the engine's pull progress stream.
type pullMessage struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Progress    string `json:"progress"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// progress reads a pull progress stream to its end, writes it to the pull
// progress writer (on a terminal, each line redrawn in place) and returns
// the error the stream ends with, if any.
func (e *Executor) progress(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m pullMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			if e.pullOut != nil && e.pullTerm {
				fmt.Fprintln(e.pullOut)
			}
			return nil
		} else if err != nil {
			return err
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if e.pullOut == nil {
			continue
		}
		line := strings.TrimSpace(strings.TrimPrefix(m.ID+": ", ": ") + m.Status + " " + m.Progress)
		if e.pullTerm {
			fmt.Fprintf(e.pullOut, "\r\x1b[K%s", line)
		} else if m.Progress == "" { // no bar redraws in a log
			fmt.Fprintln(e.pullOut, line)
		}
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
