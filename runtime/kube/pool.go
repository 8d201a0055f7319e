package kube

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccrun/ccrun/internal/once"
	"github.com/ccrun/ccrun/runtime/job"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// The warm pool's labels, named after agent-sandbox's SandboxTemplate,
// SandboxWarmPool and SandboxClaim: a pod of a template waits in the warm
// pool until a call claims it.
const (
	LabelTemplate   = "ccrun.dev/sandbox-template" // the template's key: a hash of what the pod is made of
	LabelPool       = "ccrun.dev/warm-pool"        // poolWarm, then poolClaimed
	LabelClaimHost  = "ccrun.dev/claim-host"       // the claiming process: hostname,
	LabelClaimPID   = "ccrun.dev/claim-pid"        // pid
	LabelClaimStart = "ccrun.dev/claim-start"      // and start time
	poolWarm        = "warm"
	poolClaimed     = "claimed"
	// warmTTL bounds a warm pod's life (activeDeadlineSeconds and its
	// expiry annotation): a pool nobody uses any more empties itself.
	warmTTL = time.Hour
)

// poolConfig is the warm pool's configuration (WithPool).
type poolConfig struct {
	size int // also the most pods the surge adds while calls claim them
}

// WithPool sets how many warm pods each template keeps ready (default 0:
// no pool, every call is cold even when its Spec asks for the pool). A
// call with Spec.Pool claims one of its template's warm pods (its image,
// memory and CPU limits, network, user and working directory), runs its
// program there, and the pod ends with it; each claim starts a refill in
// the background. While calls claim pods faster than they start (fewer
// than half ready), the pool creates up to size more, as many as were
// claimed in the time a pod takes to start, and it shrinks back to size
// when the claims stop. An Executor holds an attach session to each warm pod it
// made, so that its own calls need no stream set up; a pod another process
// made is attached to when claimed.
func WithPool(size int) Option {
	return func(e *Executor) error {
		if size < 0 {
			return newError(ErrInvalidArgument, nil, "kube: pool size %d: want 0 or more", size)
		}
		e.pool.size = size
		return nil
	}
}

// template is what a warm pod is made of, without the call's program,
// environment or stdin (those come with the call) and without the limits
// ccrun enforces itself (timeout, output).
type template struct {
	key  string
	spec Spec // Image, Limits (Memory, CPUs), Network, User, Dir, Pull only
	lim  job.Limits
	arch string // its pods' architecture (Executor.podArch)
}

func newTemplate(s Spec, lim job.Limits, arch string, pullSecrets []string) *template {
	lim = job.Limits{Memory: lim.Memory, CPUs: lim.CPUs}
	t := Spec{Image: s.Image, Network: s.Network, User: s.User, Dir: s.Dir, Pull: s.Pull, Limits: lim}
	b, _ := json.Marshal(struct {
		Image, Network, User, Dir string
		Pull                      PullPolicy
		Limits                    job.Limits
		Helpers, Arch             string
		PullSecrets               []string `json:",omitempty"` // none: the key as before
	}{t.Image, t.Network, t.User, t.Dir, t.Pull, lim, helpersName(), arch, pullSecrets})
	sum := sha256.Sum256(b)
	return &template{key: hex.EncodeToString(sum[:8]), spec: t, lim: lim, arch: arch}
}

// warmPool is the pool of one template in this process: one refill of it
// runs at a time (another asked for meanwhile runs after it), creating its
// pods at once.
type warmPool struct {
	t  *template
	mu sync.Mutex
	// What this Executor did that the cache may not show yet: pods it
	// created (or is creating) and pods it claimed or trimmed, with when.
	created map[string]time.Time
	claimed map[string]time.Time
	claims  []time.Time   // this Executor's recent claims, oldest first (surge)
	start   time.Duration // how long its pods take to be servable, averaged (0: none yet)
	surplus int           // pods the surge made past the size, at most (what a trim may delete)
	filling bool          // a refill runs
	again   bool          // and another was asked for
	trimmer *time.Timer   // a refill when the surge is over
}

func (e *Executor) warmPool(s Spec, lim job.Limits) *warmPool {
	t := newTemplate(s, lim, e.podArch(), e.pullSecrets)
	v, _ := e.pools.LoadOrStore(t.key, &warmPool{t: t, created: map[string]time.Time{}, claimed: map[string]time.Time{}})
	return v.(*warmPool)
}

// Warm fills the pool of s's template now (size WithPool), so that the
// first call finds a pod ready, and waits until they run and this
// Executor's sessions to them are up, or ctx ends.
func (e *Executor) Warm(ctx context.Context, s Spec) error {
	if e.pool.size == 0 {
		return nil
	}
	if err := e.ensure(ctx); err != nil {
		return err
	}
	pc, err := e.warmCache(ctx)
	if err != nil {
		return err
	}
	wp := e.warmPool(s, s.Limits.WithDefaults())
	if err := e.fill(ctx, wp); err != nil {
		return err
	}
	refilled := time.Now()
	for {
		if time.Since(refilled) > 2*time.Second {
			// A pod counted may have gone since (deleted from outside,
			// failed): fill counts again and makes up for it.
			if err := e.fill(ctx, wp); err != nil {
				return err
			}
			refilled = time.Now()
		}
		ch := pc.changes()
		n := 0
		for _, p := range pc.template(wp.t.key) {
			if p.Labels[LabelPool] == poolWarm && ready(p) && e.servable(p.Name) {
				n++
			}
		}
		if n >= e.pool.size {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-time.After(100 * time.Millisecond): // a session comes up without an event
		}
	}
}

// poolPods lists, from the API server, the pods of wp in state.
func (e *Executor) poolPods(ctx context.Context, wp *warmPool, state string) ([]corev1.Pod, error) {
	lctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	sel := LabelManaged + "=" + managedBy + "," + LabelTemplate + "=" + wp.t.key + "," + LabelPool + "=" + state
	list, err := e.api.Pods(e.namespace).List(lctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, classify(e.server, "list warm pods", err)
	}
	return list.Items, nil
}

func ready(p *corev1.Pod) bool {
	st := status(p, containerRun)
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && st != nil && st.State.Running != nil
}

// claim takes one ready warm pod of wp for this call, as the cache shows
// them (those this Executor holds a session to first): a merge patch that
// relabels it claimed, with the pod's resourceVersion as precondition, so
// that of two claimants of one pod exactly one succeeds (the other gets a
// conflict, or a cache that is behind does, and tries the next pod). ok
// false: none was ready.
func (e *Executor) claim(ctx context.Context, wp *warmPool) (*corev1.Pod, bool, error) {
	pc, err := e.warmCache(ctx)
	if err != nil {
		return nil, false, err
	}
	var held, other []*corev1.Pod
	for _, p := range pc.template(wp.t.key) {
		if p.Labels[LabelPool] != poolWarm || !ready(p) || wp.wasClaimed(p.Name) {
			continue
		}
		if _, ok := e.conns.Load(p.Name); ok {
			held = append(held, p)
		} else {
			other = append(other, p)
		}
	}
	// Callers of one process spread over their pods, and processes over
	// the others'.
	rand.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
	rand.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
	for _, p := range append(held, other...) {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": p.ResourceVersion,
			"labels": map[string]string{
				LabelPool:       poolClaimed,
				LabelClaimHost:  labelValue(e.hostname),
				LabelClaimPID:   strconv.Itoa(e.owner.PID),
				LabelClaimStart: e.owner.Start,
			},
		}})
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		got, err := e.api.Pods(e.namespace).Patch(pctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		cancel()
		switch {
		case err == nil:
			wp.noteClaimed(got.Name)
			return got, true, nil
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			continue // another claimant was first
		default:
			return nil, false, classify(e.server, "claim warm pod "+p.Name, err)
		}
	}
	return nil, false, nil
}

func (wp *warmPool) noteClaimed(name string) {
	wp.mu.Lock()
	now := time.Now()
	wp.claimed[name] = now
	wp.claims = append(wp.claims, now)
	delete(wp.created, name) // claimed: it fills the pool no more
	wp.mu.Unlock()
}

func (wp *warmPool) wasClaimed(name string) bool {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	_, ok := wp.claimed[name]
	return ok
}

// refill tops wp up in the background, one refill of a template at a
// time in this process: one asked for while another runs runs after it,
// so that no claim's deficit waits for the next claim.
func (e *Executor) refill(wp *warmPool) {
	if e.closing.Load() || e.bg.Err() != nil {
		return
	}
	wp.mu.Lock()
	if wp.filling {
		wp.again = true
		wp.mu.Unlock()
		return
	}
	wp.filling = true
	wp.mu.Unlock()
	e.bgWork.Add(1)
	go func() {
		defer e.bgWork.Done()
		for {
			_ = e.fill(e.bg, wp)
			wp.mu.Lock()
			if !wp.again || e.bg.Err() != nil {
				wp.filling, wp.again = false, false
				wp.mu.Unlock()
				return
			}
			wp.again = false
			wp.mu.Unlock()
		}
	}()
}

// notedFor is how long fill trusts its own notes over the cache.
const notedFor = time.Minute

// Bounds of the surge's window: claims within it are pods on their way.
const (
	surgeMinWindow = time.Second
	surgeMaxWindow = 10 * time.Second
	// createsAtOnce bounds the pods one refill creates at once.
	createsAtOnce = 8
)

// surgeWindow is how far back claims count for the surge: one and a half
// times a pod's start, as measured (the warm pods' variance), within
// bounds. wp.mu held.
func (wp *warmPool) surgeWindow() time.Duration {
	return min(max(wp.start*3/2, surgeMinWindow), surgeMaxWindow)
}

// noteStart averages how long a pod of wp took to be servable. wp.mu not
// held.
func (wp *warmPool) noteStart(d time.Duration) {
	wp.mu.Lock()
	if wp.start == 0 {
		wp.start = d
	} else {
		wp.start += (d - wp.start) / 4
	}
	wp.mu.Unlock()
}

// recentClaims forgets the claims older than the surge's window and says
// how many are left. wp.mu held.
func (wp *warmPool) recentClaims(now time.Time) int {
	w := wp.surgeWindow()
	i := 0
	for i < len(wp.claims) && now.Sub(wp.claims[i]) > w {
		i++
	}
	wp.claims = wp.claims[i:]
	return len(wp.claims)
}

// fill deletes the warm pods of wp that can serve no one (failed, ended)
// and creates, all at once, as many as the pool lacks: its size, plus,
// when fewer than half of it are ready, as many as this Executor claimed
// in the time a pod takes to start (the surge, at most pool.surge), so
// that pods stay ready while calls claim them faster than one starts. It counts from the cache, plus the pods this Executor created that
// the cache does not show yet, minus those it claimed that the cache still
// shows warm. With no claim in that time, it deletes the warm pods this
// Executor made past the size, as many as its surge made at most (two
// processes that filled one pool at once trim nothing), none that was
// claimed meanwhile (the delete's precondition is the resourceVersion it
// saw warm).
func (e *Executor) fill(ctx context.Context, wp *warmPool) error {
	pc, err := e.warmCache(ctx)
	if err != nil {
		return err
	}
	type victim struct{ name, rv string }
	var gone, extra []victim // failed; beyond the size (this Executor's)
	wp.mu.Lock()
	now := time.Now()
	seen := map[string]bool{}
	live, readyNow := 0, 0
	for _, p := range pc.template(wp.t.key) {
		seen[p.Name] = true
		if p.Labels[LabelPool] != poolWarm || p.DeletionTimestamp != nil {
			continue
		}
		if _, ok := wp.claimed[p.Name]; ok {
			continue
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || failed(p) != nil {
			gone = append(gone, victim{p.Name, p.ResourceVersion})
			continue
		}
		live++
		if ready(p) {
			readyNow++
		}
		if _, mine := e.made.Load(p.Name); mine {
			v := victim{p.Name, p.ResourceVersion}
			if ready(p) && e.connected(p.Name) {
				extra = append(extra, v) // the servable last
			} else {
				extra = append([]victim{v}, extra...)
			}
		}
	}
	for name, t := range wp.created {
		_, claimed := wp.claimed[name]
		switch {
		case seen[name] || claimed || now.Sub(t) > notedFor:
			delete(wp.created, name)
		default:
			live++
		}
	}
	for name, t := range wp.claimed {
		if !seen[name] && now.Sub(t) > notedFor {
			delete(wp.claimed, name)
		}
	}
	recent := wp.recentClaims(now)
	target := e.pool.size
	if readyNow < (e.pool.size+1)/2 {
		// Fewer than half ready: the claims outrun the pods' start.
		target += min(recent, e.pool.size)
	}
	var pods []*corev1.Pod
	for ; live < target; live++ {
		p := e.warmPod(wp)
		wp.created[p.Name] = now // counted by a fill meanwhile
		pods = append(pods, p)
		if live >= e.pool.size {
			wp.surplus++
		}
	}
	// Trimmed: past the size, with no claim in the window, what the surge
	// made (not what other processes' fills made at the same time).
	n := 0
	if recent == 0 {
		n = min(live-e.pool.size, wp.surplus)
		wp.surplus = 0
	}
	extra = extra[:max(0, min(n, len(extra)))]
	for _, v := range extra {
		wp.claimed[v.name] = now // neither claimed nor counted meanwhile
	}
	if recent > 0 && e.pool.size > 0 {
		// The surge ends a window after the last claim: look again then.
		if wp.trimmer != nil {
			wp.trimmer.Stop()
		}
		wp.trimmer = time.AfterFunc(wp.surgeWindow()+100*time.Millisecond, func() { e.refill(wp) })
	}
	wp.mu.Unlock()

	for _, v := range gone {
		e.deletePod(ctx, v.name)
	}
	for _, v := range extra {
		e.deleteWarm(ctx, v.name, v.rv)
	}
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	sem := make(chan struct{}, createsAtOnce)
	for _, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := e.createWarm(ctx, p); err != nil {
				wp.mu.Lock()
				delete(wp.created, p.Name)
				wp.mu.Unlock()
				errMu.Lock()
				first = cmp.Or(first, err)
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// deleteWarm deletes the warm pod name if it is still as the cache showed
// it (resourceVersion rv): not if a claim relabelled it since.
func (e *Executor) deleteWarm(ctx context.Context, name, rv string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	_ = e.api.Pods(e.namespace).Delete(dctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr(int64(0)),
		Preconditions:      &metav1.Preconditions{ResourceVersion: &rv},
	})
}

// warmPod is a new warm pod of wp, not created yet.
func (e *Executor) warmPod(wp *warmPool) *corev1.Pod {
	labels := e.labels(wp.t.spec.Network)
	labels[LabelTemplate] = wp.t.key
	labels[LabelPool] = poolWarm
	name := "ccrun-warm-" + labels[LabelCall]
	lim := wp.t.lim
	lim.Timeout = warmTTL - startMargin
	pod := wp.t.spec.pod(lim, podOptions{name: name, labels: labels, helpers: helpersName(), arch: wp.t.arch, program: []string{oncePath}, stdin: true, stdinKept: true, mountMax: e.mountMax, pullSecrets: e.pullSecretRefs()})
	pod.Annotations = map[string]string{AnnotationExpires: time.Now().Add(warmTTL).UTC().Format(time.RFC3339)}
	return pod
}

// createWarm creates the warm pod (warmPod).
func (e *Executor) createWarm(ctx context.Context, pod *corev1.Pod) error {
	e.made.Store(pod.Name, time.Now())
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if _, err := e.api.Pods(e.namespace).Create(cctx, pod, metav1.CreateOptions{}); err != nil {
		e.made.Delete(pod.Name)
		return classify(e.server, "create warm pod", err)
	}
	e.warmMade.Add(1)
	return nil
}

// DrainPool deletes every warm pod (claimed or not) of ccrun in the
// namespace and returns how many.
func (e *Executor) DrainPool(ctx context.Context) (int, error) {
	lctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list, err := e.api.Pods(e.namespace).List(lctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + managedBy + "," + LabelTemplate})
	if err != nil {
		return 0, classify(e.server, "list warm pods", err)
	}
	for i := range list.Items {
		e.deletePod(ctx, list.Items[i].Name)
	}
	return len(list.Items), nil
}

// warmConn is an attach session to a warm pod's once (a once.Conn): its
// stdin a pipe, its output to the sinks a claimant sets.
type warmConn struct {
	name      string
	in        *io.PipeWriter
	stdout    once.Sink
	stderr    once.Sink
	connected chan struct{} // closed when the session reads its stdin: it is up
	done      chan struct{} // closed when it ended; err says why
	err       error
}

func (c *warmConn) Write(p []byte) (int, error) { return c.in.Write(p) }
func (c *warmConn) Abort(err error)             { c.in.CloseWithError(err) }
func (c *warmConn) SetOutput(w, e io.Writer)    { c.stdout.Set(w); c.stderr.Set(e) }
func (c *warmConn) Done() <-chan struct{}       { return c.done }
func (c *warmConn) Err() error                  { return c.err }

// connect opens the attach sessions to the warm pod name, for as long as
// ctx lasts or the pod runs: one for stdin and stderr, one for stdout.
//
// One session per output stream, because containerd ends a session's
// stdin when either of its output streams ends, and a session whose stdin
// ended stops receiving its other stream: the container's stdin is not
// StdinOnce (it stays open across sessions), and then the session's
// writers are removed (pkg/cri/io ContainerIO.Attach, containerd 1.6 and
// later). With both streams in one session, stderr's end as the container
// exits cut off the tail of stdout not yet out of its pipe. The stdout
// session's stdin is a pipe nothing is written to.
func (e *Executor) connect(ctx context.Context, name string) *warmConn {
	pr, pw := io.Pipe()
	idle, idleW := io.Pipe()
	c := &warmConn{name: name, in: pw, connected: make(chan struct{}), done: make(chan struct{})}
	sctx, cancel := context.WithCancel(ctx)
	var pending atomic.Int32 // sessions not yet up
	pending.Store(2)
	var first sync.Once // the first session to fail says why
	var failed error
	var wg sync.WaitGroup
	open := func(r io.Reader, stdout, stderr io.Writer) {
		var up sync.Once
		stdin := readerFunc(func(p []byte) (int, error) {
			up.Do(func() {
				if pending.Add(-1) == 0 {
					close(c.connected)
				}
			})
			return r.Read(p)
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.attach(sctx, name, containerRun, stdin, stdout, stderr); err != nil {
				first.Do(func() { failed = err })
				cancel() // the other session is of no use without this one
			}
		}()
	}
	open(pr, nil, &c.stderr)
	open(idle, &c.stdout, nil)
	go func() {
		wg.Wait()
		cancel()
		c.err = cmp.Or(failed, io.EOF)
		pr.CloseWithError(c.err)
		idleW.Close()
		close(c.done)
	}()
	return c
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// warmChanged opens a session to a warm pod this Executor made once it
// runs, so that a claim of it needs none.
func (e *Executor) warmChanged(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Labels[LabelPool] != poolWarm || !ready(p) {
		return
	}
	made, mine := e.made.Load(p.Name)
	if !mine {
		return
	}
	if _, loaded := e.conns.LoadOrStore(p.Name, (*warmConn)(nil)); loaded {
		return
	}
	c := e.connect(e.bg, p.Name)
	e.conns.Store(p.Name, c)
	if v, ok := e.pools.Load(p.Labels[LabelTemplate]); ok {
		go func() {
			// How long the pod took from its create to servable: the
			// surge's window.
			select {
			case <-c.connected:
				v.(*warmPool).noteStart(time.Since(made.(time.Time)))
			case <-c.done:
			}
		}()
	}
	go func() {
		<-c.done
		e.conns.CompareAndDelete(p.Name, c)
		// A session that failed (one opened as the pod started may be
		// refused) is opened again while the pod waits, unclaimed.
		select {
		case <-e.bg.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		e.cacheMu.Lock()
		pc := e.pods
		e.cacheMu.Unlock()
		if pc != nil {
			if cur := pc.get(e.namespace, p.Name); cur != nil {
				e.warmChanged(cur)
			}
		}
	}()
}

// warmGone forgets a deleted pod.
func (e *Executor) warmGone(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		e.made.Delete(p.Name)
	}
}

// servable says whether a ready warm pod can serve a claim at once: one
// this Executor made once its session is up; one another Executor or
// process made (which fill counts too) as it is, the claim opening the
// session (takeConn).
func (e *Executor) servable(name string) bool {
	if _, mine := e.made.Load(name); !mine {
		return true
	}
	return e.connected(name)
}

// connected says whether this Executor's session to the pod name is up.
func (e *Executor) connected(name string) bool {
	v, ok := e.conns.Load(name)
	if !ok {
		return false
	}
	c, _ := v.(*warmConn)
	if c == nil {
		return false
	}
	select {
	case <-c.connected:
		return true
	default:
		return false
	}
}

// takeConn returns this Executor's session to the claimed pod name, or a
// new one.
func (e *Executor) takeConn(ctx context.Context, name string) *warmConn {
	e.made.Delete(name) // no session opened to it any more
	if v, ok := e.conns.LoadAndDelete(name); ok {
		if c, _ := v.(*warmConn); c != nil {
			select {
			case <-c.done:
			default:
				return c
			}
		}
	}
	return e.connect(ctx, name)
}

// runPooled runs s in a claimed warm pod: used false means none was ready
// (or the pool is off) and the caller runs it cold.
func (e *Executor) runPooled(ctx context.Context, s Spec, lim job.Limits, begin time.Time) (*job.Result, bool, error) {
	if e.pool.size == 0 {
		return nil, false, nil
	}
	wp := e.warmPool(s, lim)
	// After the call: a pod starting on the nodes meanwhile would slow it.
	defer e.refill(wp)
	p, ok, err := e.claim(ctx, wp)
	if err != nil || !ok {
		return nil, false, err
	}
	name := p.Name
	e.pooledRuns.Add(1)
	// The pod ends with its call; deleted in the background, the result
	// does not wait.
	defer func() {
		e.bgWork.Add(1)
		go func() { defer e.bgWork.Done(); e.deletePod(e.bg, name) }()
	}()

	// The lifecycle is the Supervisor's; the timeout counts from the
	// claim.
	sup := &job.Supervisor{Limits: lim, Streams: s.Streams, Begin: begin, KillGrace: drainTimeout}
	out := job.NewCapture(lim.Output, s.Streams, func() { sup.Stop(job.OutputCap, "") })
	sup.Capture = out
	var (
		runCtx context.Context // Start's: done once the run is stopped
		c      *warmConn
		oc     *once.Call
	)
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	defer func() {
		if c != nil {
			c.in.CloseWithError(io.EOF) // only now: a session whose stdin ends stops receiving output
		}
	}()
	sup.Start = func(rctx context.Context, out *job.Capture) error {
		runCtx = rctx
		c = e.takeConn(sctx, name)
		oc = once.Start(c, s.Cmd, s.Env, s.Streams.Stdin, out.Stdout, out.Stderr, requestTimeout)
		return nil
	}
	sup.Wait = func() (job.Status, error) {
		var streamErr error
		select {
		case streamErr = <-oc.Ended():
		case <-oc.Released():
			// Both trailers came: all the program wrote is here, and
			// once ends by itself, the container with it (a warm pod
			// has no mounts to copy back). What a process the program
			// left writes after is not the program's.
			c.SetOutput(nil, nil)
		}
		if sup.StopReason() != "" {
			return job.Status{}, nil // killed: the stop is the Result
		}
		var ns once.NotStarted
		if errors.As(streamErr, &ns) {
			return job.Status{}, streamErr // the caller runs it cold
		}
		ws, trailer := oc.Result()
		var st job.Status
		if trailer {
			code, sig := once.WaitStatus(ws)
			st.Code = code
			if msg := once.ExecMessage(s.Cmd[0], ws); msg != "" {
				fmt.Fprint(out.Stderr, msg) // the program could not be executed
			}
			if sig != sigKill {
				return st, nil
			}
			// Killed by SIGKILL: once exits 137 too, and the container's
			// status says whether the kernel killed it for memory.
			st.Detail = "killed by SIGKILL"
		}
		pc, err := e.warmCache(runCtx)
		if err != nil {
			return job.Status{}, err
		}
		gctx, gcancel := context.WithTimeout(runCtx, lostGrace)
		final, err := e.until(gctx, pc, name, containerEnded(containerRun))
		gcancel()
		switch {
		case err == nil:
			t := terminated(final, containerRun)
			switch {
			case t.Reason == "OOMKilled":
				return e.status(out, final, lim)
			case trailer:
				return st, nil
			}
			if streamErr == nil {
				streamErr = c.err
			}
			return job.Status{}, e.cutShort(name, t, streamErr)
		case trailer:
			return st, nil
		}
		if streamErr == nil {
			streamErr = c.err
		}
		return job.Status{}, e.lost(name, final, streamErr, err)
	}
	sup.Kill = func(job.Reason) {
		e.deletePod(ctx, name)
		scancel()
	}
	res, err := sup.Run(ctx)
	var ns once.NotStarted
	switch {
	case errors.As(err, &ns):
		// The program never started (the go byte was not sent): the pod
		// is deleted unused, and the call runs cold.
		e.pooledRuns.Add(-1)
		return nil, false, nil
	case err != nil:
		return nil, true, err
	case sup.StopReason() != "":
		return deleted(res), true, nil
	}
	return res, true, nil
}

// sigKill is SIGKILL's number.
const sigKill = 9
