package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilexec "k8s.io/client-go/util/exec"
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
	size int
}

// WithPool sets how many warm pods each template keeps ready (default 0:
// no pool, every call is cold even when its Spec asks for the pool). A
// call with Spec.Pool claims one of its template's warm pods (its image,
// limits, network, user and working directory), execs its program into it
// and deletes it after; each claim starts a refill in the background.
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
// environment or stdin (those come with the exec).
type template struct {
	key  string
	spec Spec // Image, Limits, Network, User, Dir, Pull only
	lim  job.Limits
}

func newTemplate(s Spec, lim job.Limits) *template {
	t := Spec{Image: s.Image, Network: s.Network, User: s.User, Dir: s.Dir, Pull: s.Pull, Limits: lim}
	b, _ := json.Marshal(struct {
		Image, Network, User, Dir string
		Pull                      PullPolicy
		Limits                    job.Limits
		Helpers                   string
	}{t.Image, t.Network, t.User, t.Dir, t.Pull, lim, helpersName()})
	sum := sha256.Sum256(b)
	return &template{key: hex.EncodeToString(sum[:8]), spec: t, lim: lim}
}

// warmPool is the pool of one template in this process: it refills one
// pod set at a time.
type warmPool struct {
	t         *template
	refilling atomic.Bool
	mu        sync.Mutex
}

func (e *Executor) warmPool(s Spec, lim job.Limits) *warmPool {
	t := newTemplate(s, lim)
	v, _ := e.pools.LoadOrStore(t.key, &warmPool{t: t})
	return v.(*warmPool)
}

// Warm fills the pool of s's template now (size WithPool), so that the
// first call finds a pod ready, and waits until they run or ctx ends.
func (e *Executor) Warm(ctx context.Context, s Spec) error {
	if e.pool.size == 0 {
		return nil
	}
	if err := e.ensure(ctx); err != nil {
		return err
	}
	wp := e.warmPool(s, s.Limits.WithDefaults())
	if err := e.fill(ctx, wp); err != nil {
		return err
	}
	for {
		n, err := e.countReady(ctx, wp)
		if err != nil {
			return err
		}
		if n >= e.pool.size {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (e *Executor) poolPods(ctx context.Context, wp *warmPool, state string) ([]corev1.Pod, error) {
	lctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	sel := LabelManaged + "=" + managedBy + "," + LabelTemplate + "=" + wp.t.key + "," + LabelPool + "=" + state
	list, err := e.cs.CoreV1().Pods(e.namespace).List(lctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, classify(e.server, "list warm pods", err)
	}
	return list.Items, nil
}

func ready(p *corev1.Pod) bool {
	st := status(p, containerRun)
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && st != nil && st.State.Running != nil
}

func (e *Executor) countReady(ctx context.Context, wp *warmPool) (int, error) {
	pods, err := e.poolPods(ctx, wp, poolWarm)
	n := 0
	for i := range pods {
		if ready(&pods[i]) {
			n++
		}
	}
	return n, err
}

// claim takes one ready warm pod of wp for this call: a merge patch that
// relabels it claimed, with the pod's resourceVersion as precondition, so
// that of two claimants of one pod exactly one succeeds (the other gets a
// conflict and tries the next pod). ok false: none was ready.
func (e *Executor) claim(ctx context.Context, wp *warmPool) (*corev1.Pod, bool, error) {
	pods, err := e.poolPods(ctx, wp, poolWarm)
	if err != nil {
		return nil, false, err
	}
	rand.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	for i := range pods {
		p := &pods[i]
		if !ready(p) {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": p.ResourceVersion,
			"labels": map[string]string{
				LabelPool:       poolClaimed,
				LabelClaimHost:  labelValue(e.hostname),
				LabelClaimPID:   strconv.Itoa(e.owner.pid),
				LabelClaimStart: e.owner.start,
			},
		}})
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		got, err := e.cs.CoreV1().Pods(e.namespace).Patch(pctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		cancel()
		switch {
		case err == nil:
			return got, true, nil
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			continue // another claimant was first
		default:
			return nil, false, classify(e.server, "claim warm pod "+p.Name, err)
		}
	}
	return nil, false, nil
}

// refill tops wp up to the pool size in the background, one refill of a
// template at a time in this process.
func (e *Executor) refill(wp *warmPool) {
	if !wp.refilling.CompareAndSwap(false, true) {
		return
	}
	e.bgWork.Add(1)
	go func() {
		defer e.bgWork.Done()
		defer wp.refilling.Store(false)
		_ = e.fill(e.bg, wp)
	}()
}

// fill deletes the warm pods of wp that can serve no one (failed, ended)
// and creates as many as the pool lacks.
func (e *Executor) fill(ctx context.Context, wp *warmPool) error {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	pods, err := e.poolPods(ctx, wp, poolWarm)
	if err != nil {
		return err
	}
	live := 0
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || failed(p) != nil {
			e.deletePod(ctx, p.Name)
			continue
		}
		live++
	}
	for ; live < e.pool.size; live++ {
		if err := e.createWarm(ctx, wp); err != nil {
			return err
		}
	}
	return nil
}

func (e *Executor) createWarm(ctx context.Context, wp *warmPool) error {
	labels := e.labels(wp.t.spec.Network)
	labels[LabelTemplate] = wp.t.key
	labels[LabelPool] = poolWarm
	name := "ccrun-warm-" + labels[LabelCall]
	lim := wp.t.lim
	lim.Timeout = warmTTL - startMargin
	pod := wp.t.spec.pod(lim, podOptions{name: name, labels: labels, helpers: helpersName(), program: []string{holdPath}, mountMax: e.mountMax})
	pod.Annotations = map[string]string{AnnotationExpires: time.Now().Add(warmTTL).UTC().Format(time.RFC3339)}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if _, err := e.cs.CoreV1().Pods(e.namespace).Create(cctx, pod, metav1.CreateOptions{}); err != nil {
		return classify(e.server, "create warm pod", err)
	}
	return nil
}

// DrainPool deletes every warm pod (claimed or not) of ccrun in the
// namespace and returns how many.
func (e *Executor) DrainPool(ctx context.Context) (int, error) {
	lctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list, err := e.cs.CoreV1().Pods(e.namespace).List(lctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + managedBy + "," + LabelTemplate})
	if err != nil {
		return 0, classify(e.server, "list warm pods", err)
	}
	for i := range list.Items {
		e.deletePod(ctx, list.Items[i].Name)
	}
	return len(list.Items), nil
}

// runPooled runs s in a claimed warm pod: used false means none was ready
// (or the pool is off) and the caller runs it cold.
func (e *Executor) runPooled(ctx context.Context, s Spec, lim job.Limits, begin time.Time) (*job.Result, bool, error) {
	if e.pool.size == 0 {
		return nil, false, nil
	}
	wp := e.warmPool(s, lim)
	defer e.refill(wp)
	p, ok, err := e.claim(ctx, wp)
	if err != nil || !ok {
		return nil, false, err
	}
	name := p.Name
	e.pooledRuns.Add(1)
	// Deleted after use, in the background: the result does not wait.
	defer func() {
		e.bgWork.Add(1)
		go func() { defer e.bgWork.Done(); e.deletePod(e.bg, name) }()
	}()

	overflow := make(chan struct{})
	out := job.NewCapture(lim.Output, s.Streams, func() { close(overflow) })
	out.Start = begin
	var stdin io.Reader
	if s.Streams.Stdin != nil {
		stdin = s.Streams.Stdin
	}
	var timeout <-chan time.Time
	if lim.Timeout > 0 {
		t := time.NewTimer(lim.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	done := make(chan error, 1)
	go func() { done <- e.execIn(sctx, name, containerRun, s.Cmd, stdin, out.Stdout, out.Stderr) }()
	res := &job.Result{Reason: job.Exit}
	var xerr error
	select {
	case xerr = <-done:
	case <-timeout:
		stopped(res, job.Timeout, lim)
	case <-ctx.Done():
		stopped(res, job.Cancelled, lim)
	case <-overflow:
		stopped(res, job.OutputCap, lim)
	}
	if res.Reason != job.Exit {
		e.deletePod(ctx, name)
		scancel()
		select {
		case <-done:
		case <-time.After(drainTimeout):
		}
		return out.Fill(res), true, nil
	}
	var ce utilexec.ExitError
	switch {
	case xerr == nil:
	case errors.As(xerr, &ce):
		res.ExitCode = ce.ExitStatus()
		if res.ExitCode == job.KilledExitCode {
			res.Detail = "killed by SIGKILL (in a warm pod an out-of-memory kill is not told apart from another SIGKILL)"
		}
	default:
		// The exec failed as a whole: the pod is gone, or the program
		// could not start.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		cur, gerr := e.cs.CoreV1().Pods(e.namespace).Get(gctx, name, metav1.GetOptions{})
		cancel()
		if gerr != nil || !ready(cur) {
			return nil, true, e.lost(name, cur, xerr, errDeleted)
		}
		res.ExitCode = 127
		fmt.Fprintf(out.Stderr, "ccrun: cannot start the program: %v\n", strings.TrimSpace(xerr.Error()))
	}
	return out.Fill(res), true, nil
}
