// Package kube runs a program in a hardened pod through the Kubernetes API
// server (client-go): the Kubernetes engine of ccrun's @docker environment.
// Same Spec and Run shape as runtime/docker; only where the container runs
// differs.
//
// One call is one pod: non-root (65534; a pod with mounts: the caller's
// uid and gid, unless it is root), all capabilities dropped, no
// privilege escalation, a read-only root filesystem, seccomp
// RuntimeDefault, no service-account token, no service links, no host
// namespace or path, CPU, memory and ephemeral-storage limits from the
// call's job.Limits, a memory-backed emptyDir of 64 MiB at /tmp,
// restartPolicy Never, activeDeadlineSeconds from the timeout (a backstop:
// ccrun's own timer ends the call), and labels naming ccrun, the owning
// process and the call. network "none" (the default) labels the pod for a
// NetworkPolicy that denies it all ingress and egress; only a network plugin
// that enforces policies enforces it.
//
// The pod's program is once (internal/once; a ConfigMap, read-only, 0555,
// for the architecture of the nodes, to which a nodeSelector holds the pod:
// see nodeArch), which
// starts the call's program when Run asks and ends only when Run has all of
// its output, so none is missed and stdout and stderr stay apart. The exit
// code comes from once's trailer, an OOM kill from the container's status.
// The run's lifecycle is job.Supervisor's, as every executor's: past the
// timeout (124; for a cold call it counts from before the pod is created),
// the output cap, or a cancelled context, the pod is deleted at once. A
// pod lost before it finished (evicted, deleted from outside, its node
// gone, the API server gone) is ErrUnavailable, within the call's timeout.
//
// Mounts are copied: into an emptyDir before the program starts, through
// tar over exec in a second container of the same image, and, for a
// writable mount, back after it ended, applied to the host directory
// through an os.Root (no symbolic link followed out of it), with the
// protected paths of job.Mount.Protected never written and size limits
// both ways.
//
// The warm pool (WithPool, default size 0) keeps single-use pods of a
// template started in advance; a call claims one (from a watch's cache)
// with an optimistic concurrency label update, hands its program to the
// pod's once (a one-call request server, over an attach session opened
// when the pod started), and the pod ends with the call.
// GC removes what a killed ccrun left: only pods of ccrun, by their labels
// and their expiry annotation. Before its first pod an Executor records its
// Place in ccrun's state directory (internal/enginerecord), where ccrun gc
// finds it.
//
// An Executor is safe for concurrent use.
package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/enginerecord"
	"github.com/ccrun/ccrun/internal/mountlock"
	"github.com/ccrun/ccrun/internal/once"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/kube/internal/kapi"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Labels and annotations of every pod ccrun creates.
const (
	LabelManaged = "app.kubernetes.io/managed-by" // "ccrun"
	LabelHost    = "ccrun.dev/host"               // the owning process's hostname (sanitized)
	LabelPID     = "ccrun.dev/pid"                // its pid
	LabelStart   = "ccrun.dev/start"              // its start time, in clock ticks since boot
	LabelCall    = "ccrun.dev/call"               // a random id of the call (or of the warm pod)
	LabelNetwork = "ccrun.dev/network"            // "none": selected by the deny-all NetworkPolicy
	// AnnotationExpires is when the pod should be gone at the latest
	// (RFC 3339): GC deletes it past then, whoever owns it.
	AnnotationExpires = "ccrun.dev/expires"
	managedBy         = "ccrun"
)

// Bounds on the API calls that are not the program's own time.
const (
	requestTimeout = 30 * time.Second // one create, get, patch or delete
	pingTimeout    = 10 * time.Second // New's first call
	lostGrace      = 10 * time.Second // after the stream ends, for the status to say the container ended
	drainTimeout   = 5 * time.Second  // the stream ending after the pod is deleted (KillGrace)
)

// Executor runs Specs as pods in one namespace of one cluster. It is safe
// for concurrent use; Close it when done.
type Executor struct {
	cfg       *rest.Config
	api       *kapi.Client
	server    string
	context   string
	namespace string
	hostname  string
	owner     owner
	mountMax  int64
	user      string // the user of a pod with mounts whose Spec names none: the caller's ("" for root: DefaultUID)

	// configuration from options
	kubeconfig string
	ctxName    string
	nsName     string
	qps        float32
	burst      int
	pool       poolConfig
	// pullSecrets are the pods' imagePullSecrets, whose credentials
	// ccrun's registry reads use too (WithPullSecrets)
	pullSecrets []string

	setupMu sync.Mutex
	setup   bool   // the helpers ConfigMap and the NetworkPolicy exist
	arch    string // the architecture of the pods (nodeArch), set with setup

	bg      context.Context
	stop    context.CancelFunc
	bgWork  sync.WaitGroup
	closing atomic.Bool // Close was called
	pools   sync.Map    // template key -> *warmPool

	cacheMu sync.Mutex
	pods    *podCache // the warm pods of the namespace (started by the first pooled call)
	made    sync.Map  // pod name -> true: warm pods this Executor created, not claimed yet
	conns   sync.Map  // pod name -> *warmConn: this Executor's sessions to them

	cmds cmdCache // ImageCommand's: the images' own commands, by digest

	pooledRuns atomic.Int64 // runs served by a warm pod, for tests and benchmarks
	warmMade   atomic.Int64 // warm pods created, for the benchmarks
	sessions   atomic.Int64 // attach and exec sessions opened, for the benchmarks
}

// Option configures an Executor.
type Option func(*Executor) error

// WithKubeconfig names the kubeconfig file. Default: as kubectl finds it
// ($KUBECONFIG, a list of files, else ~/.kube/config; in a pod, the
// in-cluster service account).
func WithKubeconfig(path string) Option {
	return func(e *Executor) error { e.kubeconfig = path; return nil }
}

// WithContext selects a context of the kubeconfig. Default: its current
// context.
func WithContext(name string) Option {
	return func(e *Executor) error { e.ctxName = name; return nil }
}

// WithNamespace sets the namespace the pods run in. Default: the
// context's namespace, else "default". A dedicated namespace (with a
// ResourceQuota) is what a shared cluster wants: see docs/kubernetes.md.
func WithNamespace(ns string) Option {
	return func(e *Executor) error { e.nsName = ns; return nil }
}

// WithMountSize bounds what is copied into, and back out of, each mount of
// a call (default DefaultMountSize, 64 MiB): a larger host directory is
// ErrInvalidArgument before any pod is made, and a copy-back past it
// changes nothing on the host.
func WithMountSize(n int64) Option {
	return func(e *Executor) error {
		if n <= 0 {
			return newError(ErrInvalidArgument, nil, "kube: mount size %d: want a positive number of bytes", n)
		}
		e.mountMax = n
		return nil
	}
}

// WithRate sets the client's request rate to the API server (default 50
// requests per second, bursts of 100: client-go's 5/10 would queue a
// pool of concurrent calls).
func WithRate(qps float32, burst int) Option {
	return func(e *Executor) error { e.qps, e.burst = qps, burst; return nil }
}

// withConfigWrap makes the API client from wrapped (a loaded config with a
// counting transport, for the benchmarks) and the streams from plain (the
// WebSocket executor needs its own transport unwrapped).
func withConfigWrap(wrapped, plain *rest.Config) Option {
	return func(e *Executor) error {
		c, err := kapi.New(wrapped)
		if err != nil {
			return err
		}
		e.api, e.cfg = c, plain
		return nil
	}
}

// New loads the kubeconfig as kubectl does, connects, and checks that the
// API server answers (ErrUnavailable, with its address, when it does not).
func New(ctx context.Context, opts ...Option) (*Executor, error) {
	e, err := configure(opts)
	if err != nil {
		return nil, err
	}
	if e.api == nil {
		c, err := kapi.New(e.cfg)
		if err != nil {
			return nil, newError(ErrInvalidArgument, err, "kube: client for %s", e.cfg.Host)
		}
		e.api = c
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := e.api.Namespaces().Get(pctx, e.namespace, metav1.GetOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			// May not read namespaces: the pods' permissions are what count.
		} else if apierrors.IsNotFound(err) {
			return nil, newError(ErrNotFound, err, "kube: namespace %s does not exist on %s: create it (kubectl create namespace %s) or choose another", e.namespace, e.server, e.namespace)
		} else {
			return nil, classify(e.server, "ping", err)
		}
	}
	e.hostname, _ = os.Hostname()
	e.owner = self()
	e.user = callerUser(os.Geteuid(), os.Getegid())
	e.bg, e.stop = context.WithCancel(context.WithoutCancel(ctx))
	return e, nil
}

// configure makes an Executor of opts with its client configuration
// loaded as kubectl loads it: the API server, the context, the namespace.
// It makes no request.
func configure(opts []Option) (*Executor, error) {
	quietClient()
	e := &Executor{mountMax: DefaultMountSize, qps: 50, burst: 100}
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, err
		}
	}
	if e.cfg == nil {
		cc := e.clientConfig()
		cfg, err := cc.ClientConfig()
		if err != nil {
			return nil, newError(ErrInvalidArgument, err, "kube: no usable kubeconfig (KUBECONFIG, ~/.kube/config, --kubeconfig, or in-cluster)")
		}
		ns, _, err := cc.Namespace()
		if err == nil && e.nsName == "" {
			e.nsName = ns
		}
		if raw, err := cc.RawConfig(); err == nil {
			e.context = raw.CurrentContext
			if e.ctxName != "" {
				e.context = e.ctxName
			}
		}
		cfg.QPS, cfg.Burst = e.qps, e.burst
		cfg.UserAgent = "ccrun"
		e.cfg = cfg
	}
	if e.nsName == "" {
		e.nsName = "default"
	}
	e.namespace = e.nsName
	e.server = e.cfg.Host
	return e, nil
}

// quietClient silences client-go's own logging in this process, for
// good: klog's lines (a watch that ended, a retried request, the API
// server's warnings) would go to stderr, between the lines of the calls'
// output. What the engine has to say it says in its errors and Results.
func quietClient() {
	quietOnce.Do(func() {
		klog.SetLogger(logr.Discard())
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	})
}

var quietOnce sync.Once

// Place is where an Executor runs its pods, as ccrun records it to find
// them again (ccrun gc): the kubeconfig file as it was named (WithKubeconfig,
// else $KUBECONFIG when it names one file; "" for kubectl's default), the
// context ("" in-cluster), the namespace, and the API server's address.
type Place struct {
	Kubeconfig, Context, Namespace, Server string
}

// Place is where e runs its pods.
func (e *Executor) Place() Place {
	kc := e.kubeconfig
	if env := os.Getenv("KUBECONFIG"); kc == "" && filepath.IsAbs(env) && !strings.ContainsRune(env, filepath.ListSeparator) {
		kc = env
	}
	return Place{Kubeconfig: kc, Context: e.context, Namespace: e.namespace, Server: e.server}
}

// PlaceOf is where an Executor of opts would run its pods, from the
// kubeconfig alone: it makes no request.
func PlaceOf(opts ...Option) (Place, error) {
	e, err := configure(opts)
	if err != nil {
		return Place{}, err
	}
	return e.Place(), nil
}

func (e *Executor) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if e.kubeconfig != "" {
		rules.ExplicitPath = e.kubeconfig
	}
	over := &clientcmd.ConfigOverrides{CurrentContext: e.ctxName}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
}

// Server is the API server's address.
func (e *Executor) Server() string { return e.server }

// Context is the kubeconfig context the executor uses; "" in-cluster.
func (e *Executor) Context() string { return e.context }

// Namespace is where the executor's pods run.
func (e *Executor) Namespace() string { return e.namespace }

// Close waits for the warm pool's background work (refills, deletions of
// used pods) at most 3 s, then cancels what is left; warm pods stay for the
// next process (DrainPool removes them). Run must not be called after.
func (e *Executor) Close() error {
	e.closing.Store(true) // no refill starts any more
	ctr.WaitAtMost(&e.bgWork, 3*time.Second)
	e.stop()
	return nil
}

// labels are the ownership labels of a pod this process creates.
func (e *Executor) labels(network string) map[string]string {
	l := map[string]string{
		LabelManaged: managedBy,
		LabelHost:    labelValue(e.hostname),
		LabelPID:     strconv.Itoa(e.owner.PID),
		LabelStart:   e.owner.Start,
		LabelCall:    randHex(8),
	}
	if network == "" || network == "none" {
		l[LabelNetwork] = "none"
	}
	return l
}

// ensure chooses, once per Executor, the architecture of the pods
// (nodeArch), and creates the helpers ConfigMap (immutable, named after
// its content) and the deny-all NetworkPolicy of the namespace. A
// ConfigMap of that name holding other bytes is refused.
func (e *Executor) ensure(ctx context.Context) error {
	e.setupMu.Lock()
	defer e.setupMu.Unlock()
	if e.setup {
		return nil
	}
	arch, err := e.nodeArch(ctx)
	if err != nil {
		return err
	}
	files := helpers()
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	name := helpersName()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelManaged: managedBy}},
		BinaryData: files,
		Immutable:  ptr(true),
	}
	_, err = e.api.ConfigMaps(e.namespace).Create(rctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, gerr := e.api.ConfigMaps(e.namespace).Get(rctx, name, metav1.GetOptions{})
		if gerr != nil {
			return classify(e.server, "get configmap "+name, gerr)
		}
		for k, v := range files {
			if string(got.BinaryData[k]) != string(v) {
				return newError(ctr.ErrRefused, nil, "kube: configmap %s/%s does not hold ccrun's helper %s: someone else made it; delete it", e.namespace, name, k)
			}
		}
	} else if err != nil {
		return classify(e.server, "create configmap "+name, err)
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: denyAllPolicy, Labels: map[string]string{LabelManaged: managedBy}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelNetwork: "none"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	if _, err := e.api.NetworkPolicies(e.namespace).Create(rctx, np, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return classify(e.server, "create networkpolicy "+denyAllPolicy, err)
	}
	e.record()
	e.setup, e.arch = true, arch
	return nil
}

// podArch is the architecture of the pods, once ensure chose it ("" before).
func (e *Executor) podArch() string {
	e.setupMu.Lock()
	defer e.setupMu.Unlock()
	return e.arch
}

// record adds e's Place to ccrun's engine record (internal/enginerecord),
// where ccrun gc finds it: before e's first pod.
func (e *Executor) record() {
	p := e.Place()
	enginerecord.Add(enginerecord.Site{Engine: enginerecord.Kubernetes, Kubeconfig: p.Kubeconfig, Context: p.Context, Namespace: p.Namespace, Server: p.Server})
}

// denyAllPolicy is the NetworkPolicy that denies every ingress and egress
// of the pods labelled ccrun.dev/network=none.
const denyAllPolicy = "ccrun-deny-all"

// deletePod deletes a pod at once (grace 0), on a context the caller's
// cancellation cannot cut short. Gone already is fine.
func (e *Executor) deletePod(ctx context.Context, name string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	_ = e.api.Pods(e.namespace).Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
}

// Run runs s in a pod to its end and deletes the pod. The Result's Reason
// says how it ended: Exit (the program's ExitCode), Timeout (124),
// OutputCap, Memory (the container was OOMKilled), or Cancelled. An error
// means the program could not be run, or its pod was lost: invalid Spec
// (ErrInvalidArgument), image on no node (ErrNotFound), API server or
// node gone, pod evicted or deleted from outside (ErrUnavailable). A run
// with a writable mount holds that directory's lock from before the copy
// in to after the copy back (internal/mountlock): a second run that writes
// it waits, bounded by its timeout.
//
// A pod with mounts whose Spec names no User runs as the caller's uid and
// gid (as on the Docker Engine), or as 65534 when the caller is root: the
// copies in it are that user's files, as the host directories are the
// caller's. A pod without mounts reaches nothing of the caller's, and
// keeps 65534 (so warm pods serve every caller alike).
func (e *Executor) Run(ctx context.Context, s Spec) (*job.Result, error) {
	if s.User == "" && len(s.Mounts) > 0 {
		s.User = e.user
	}
	if len(s.Cmd) == 0 {
		// The image's own command, as docker run IMAGE: read from its
		// registry (the call is allowed: it runs), for the image pinned.
		if err := s.validateRest(); err != nil {
			return nil, err
		}
		img, cmd, err := e.ImageCommand(ctx, s.Image, s.Pull)
		if err != nil {
			return nil, err
		}
		s.Image, s.Cmd = img, cmd
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	lim := s.Limits.WithDefaults()
	begin := time.Now()
	lk, early, err := mountlock.Begin(ctx, s.Mounts, lim, begin)
	if lk == nil {
		return early, err
	}
	return lk.End(e.runLocked(ctx, s, lim, begin))
}

// runLocked is Run once the writable mounts are locked.
func (e *Executor) runLocked(ctx context.Context, s Spec, lim job.Limits, begin time.Time) (*job.Result, error) {
	var in *mountSet
	if len(s.Mounts) > 0 {
		var err error
		if in, err = e.prepareMounts(s); err != nil {
			return nil, err
		}
		defer in.close()
	}
	if err := e.ensure(ctx); err != nil {
		return nil, err
	}
	// A warm pod's once adds the call's environment to the container's,
	// as the cold pod's spec does.
	if s.Pool && in == nil && once.Check(s.Cmd, s.Env) == nil {
		if res, used, err := e.runPooled(ctx, s, lim, begin); used || err != nil {
			return res, err
		}
	}
	return e.runCold(ctx, s, lim, begin, in)
}

func (e *Executor) runCold(ctx context.Context, s Spec, lim job.Limits, begin time.Time, in *mountSet) (*job.Result, error) {
	var undo ctr.Cleanup
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		defer cancel()
		undo.Run(cctx)
	}()
	labels := e.labels(s.Network)
	name := "ccrun-" + labels[LabelCall]
	pod := s.pod(lim, podOptions{
		name: name, labels: labels, helpers: helpersName(), arch: e.podArch(),
		program: []string{oncePath}, env: true, stdin: true, stdinKept: true,
		copyside: in != nil, mountMax: e.mountMax, pullSecrets: e.pullSecretRefs(),
	})
	pod.Annotations = map[string]string{AnnotationExpires: expiry(lim)}

	// The lifecycle is the Supervisor's. Its timeout counts from before
	// the pod is created (not TimeoutAfterStart): a pod that cannot start
	// within it is a timeout, as on the local engine, whose clock also
	// counts the container's start.
	sup := &job.Supervisor{Limits: lim, Streams: s.Streams, Begin: begin, KillGrace: drainTimeout}
	out := job.NewCapture(lim.Output, s.Streams, func() { sup.Stop(job.OutputCap, "") })
	sup.Capture = out
	var (
		w        *podWatch
		runCtx   context.Context // Start's: done once the run is stopped
		created  bool            // the pod exists
		started  bool            // Start returned: the program runs, or once could not start
		startErr error           // Start's error, which is the run's even when a stop came meanwhile
		early    *corev1.Pod     // the pod, when once ended before its request (it could not start)
		c        *warmConn
		oc       *once.Call
	)
	defer func() {
		if w != nil {
			w.stop()
		}
	}()
	// The sessions live as long as the run, whatever the caller does; the
	// kill ends them.
	actx, acancel := context.WithCancel(context.WithoutCancel(ctx))
	defer acancel()
	defer func() {
		if c != nil {
			c.in.CloseWithError(io.EOF)
		}
	}()

	sup.Start = func(sctx context.Context, out *job.Capture) error {
		runCtx = sctx
		// The create runs on a context the caller cannot cancel: a pod the
		// API server made after the caller gave up would be left until GC.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		got, err := e.api.Pods(e.namespace).Create(cctx, pod, metav1.CreateOptions{})
		cancel()
		if err != nil {
			startErr = e.createError(s, err)
			return startErr
		}
		created = true
		undo.Push(func(c context.Context) { e.deletePod(c, name) })
		w = e.watchPod(context.WithoutCancel(ctx), name, got.ResourceVersion)
		p, err := w.until(sctx, runStarted)
		if err != nil {
			// Stopped before the program started: the stop's Result (see
			// below), unless the watch failed meanwhile (the API server
			// gone: ErrUnavailable) or the pod cannot run.
			if why := sup.StopReason(); why != job.Cancelled && (why != job.Timeout || !errors.Is(err, context.Canceled)) {
				startErr = err
			}
			return err
		}
		if terminated(p, containerRun) != nil {
			early, started = p, true // once itself could not start (StartError and friends)
			return nil
		}
		if in != nil {
			if _, err := w.until(sctx, containerRunning(containerCopy)); err != nil {
				startErr = e.lostOrCancelled(ctx, sctx, err, name, lim)
				return startErr
			}
			if err := e.copyIn(sctx, name, in); err != nil {
				if ctx.Err() != nil || sctx.Err() != nil {
					err = e.lostOrCancelled(ctx, sctx, err, name, lim)
				}
				startErr = err
				return err
			}
		}
		// The program runs under once, as in a warm pod (see internal/once):
		// asked for by a request, its end told by a trailer on each
		// stream, the container kept until ccrun has all of its output.
		c = e.connect(actx, name)
		oc = once.Start(c, s.Cmd, nil, s.Streams.Stdin, out.Stdout, out.Stderr, requestTimeout)
		started = true
		return nil
	}
	sup.Wait = func() (job.Status, error) {
		if early != nil {
			return e.status(out, early, lim)
		}
		var streamErr error
		released := false
		select {
		case streamErr = <-oc.Ended():
		case <-oc.Released():
			released = true
		}
		if sup.StopReason() != "" {
			return job.Status{}, nil // killed: the stop is the Result
		}
		var ns once.NotStarted
		if errors.As(streamErr, &ns) {
			return job.Status{}, newError(ErrUnavailable, streamErr, "kube: pod %s/%s: %v", e.namespace, name, streamErr)
		}
		ws, whole := oc.Result()
		if msg := once.ExecMessage(s.Cmd[0], ws); whole && msg != "" {
			fmt.Fprint(out.Stderr, msg) // the program could not be executed
		}
		if released {
			// Both trailers came: all the program wrote is here. With no
			// mounts to copy back, and no SIGKILL to ask the container's
			// status about (the kernel's OOM killer?), the trailer's
			// status is the call's: the kubelet reports the container's
			// end up to a relist later.
			if code, sig := once.WaitStatus(ws); in == nil && sig != sigKill {
				c.SetOutput(nil, nil)
				return job.Status{Code: code}, nil
			}
			streamErr = <-oc.Ended()
		}
		if streamErr == nil {
			streamErr = c.err
		}
		// The stream ended: the program exited, or the pod, its node or
		// the API server went away. The status tells which, within
		// lostGrace.
		gctx, gcancel := context.WithTimeout(runCtx, lostGrace)
		final, err := w.until(gctx, containerEnded(containerRun))
		gcancel()
		if err != nil {
			return job.Status{}, e.lost(name, w.last(), streamErr, err)
		}
		if t := terminated(final, containerRun); t.Reason != "OOMKilled" && !whole {
			return job.Status{}, e.cutShort(name, t, streamErr)
		}
		return e.status(out, final, lim)
	}
	sup.Kill = func(job.Reason) {
		e.deletePod(ctx, name)
		acancel()
	}
	clock := time.Now()
	res, err := sup.Run(ctx)
	switch {
	case startErr != nil:
		return nil, startErr
	case err != nil:
		return nil, err
	case sup.StopReason() == "":
	case started:
		return deleted(res), nil
	case created && res.Reason == job.Cancelled:
		res.Detail = "killed: the caller cancelled the run before it started (pod deleted)"
		return res, nil
	case created && res.Reason == job.Timeout:
		res.Detail = fmt.Sprintf("killed after the %s timeout, before the program started (%s; pod deleted)", lim.Timeout, pendingReason(w.last()))
		return res, nil
	default:
		return res, nil
	}
	if in != nil && early == nil {
		// A writable mount comes back once the program exited, within
		// what is left of the timeout.
		cctx := ctx
		if lim.Timeout > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithDeadline(ctx, clock.Add(lim.Timeout))
			defer cancel()
		}
		if err := e.copyOut(cctx, name, in); err != nil {
			return nil, err
		}
		out.Fill(res)
		if note := in.note(); note != "" {
			res.Detail = joinDetail(res.Detail, note)
		}
	}
	return res, nil
}

// expiry is the pod's expiry annotation: when it is past its deadline at
// the latest.
func expiry(lim job.Limits) string {
	d := 24 * time.Hour
	if lim.Timeout > 0 {
		d = lim.Timeout + 2*startMargin
	}
	return time.Now().Add(d).UTC().Format(time.RFC3339)
}

func (e *Executor) createError(s Spec, err error) error {
	if apierrors.IsNotFound(err) {
		return newError(ErrNotFound, err, "kube: namespace %s not found on %s", e.namespace, e.server)
	}
	return classify(e.server, "create pod for "+s.Image, err)
}

// lostOrCancelled reports a run that ended before the program started.
func (e *Executor) lostOrCancelled(ctx, wctx context.Context, err error, name string, lim job.Limits) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kube: pod %s: %w", name, ctx.Err())
	}
	if wctx.Err() != nil {
		return newError(ErrUnavailable, err, "kube: pod %s/%s was not ready within the %s timeout", e.namespace, name, lim.Timeout)
	}
	return err
}

// lost is the error for a pod whose stream ended without a final status.
func (e *Executor) lost(name string, last *corev1.Pod, streamErr, err error) error {
	why := "its status stopped changing (its node or the API server is gone)"
	if errors.Is(err, errDeleted) {
		why = "it was deleted from outside ccrun"
	} else if last != nil && last.Status.Phase == corev1.PodFailed {
		why = fmt.Sprintf("it failed: %s %s", last.Status.Reason, last.Status.Message)
	}
	cause := err
	if streamErr != nil {
		cause = fmt.Errorf("%w (stream: %v)", err, streamErr)
	}
	node := ""
	if last != nil {
		node = " on node " + last.Spec.NodeName
	}
	return newError(ErrUnavailable, cause, "kube: pod %s/%s%s was lost before its program ended: %s", e.namespace, name, node, why)
}

// status is how the run container ended, from its final status p.
func (e *Executor) status(out *job.Capture, p *corev1.Pod, lim job.Limits) (job.Status, error) {
	t := terminated(p, containerRun)
	if t == nil {
		return job.Status{}, newError(ErrUnavailable, nil, "kube: pod %s/%s: no final status of its program", e.namespace, p.Name)
	}
	st := job.Status{Code: int(t.ExitCode)}
	switch t.Reason {
	case "OOMKilled":
		st.Reason = job.Memory
		st.Detail = fmt.Sprintf("killed by the kernel: out of memory (limit %d bytes)", lim.Memory)
	case "StartError", "ContainerCannotRun":
		// As docker-init reports a program it cannot start.
		st.Code = 127
		fmt.Fprintf(out.Stderr, "ccrun: cannot start the program: %s\n", t.Message)
	case "DeadlineExceeded":
		r := deleted(job.Stopped(job.Timeout, lim, "", true))
		st = job.Status{Code: r.ExitCode, Reason: r.Reason, Detail: r.Detail}
	}
	return st, nil
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// deleted words the Result of a run that ccrun stopped: its pod was
// deleted.
func deleted(res *job.Result) *job.Result {
	res.Detail += " (pod deleted)"
	return res
}

// cutShort is the error of a call whose container ended (t) but whose
// output stopped short of once's trailer: what came is not all the
// program wrote, and is no result.
func (e *Executor) cutShort(name string, t *corev1.ContainerStateTerminated, streamErr error) error {
	return newError(ErrUnavailable, streamErr, "kube: pod %s/%s: its output stream ended before all the program wrote had come (the program exited %d; stream: %v)", e.namespace, name, t.ExitCode, streamErr)
}

// Cluster is what Info reports about the cluster an Executor uses (the
// type the CLI's engine report shares).
type Cluster = ctr.Cluster

// Info asks the API server its version and its nodes (a user who may not
// list nodes gets Nodes 0, not an error).
func (e *Executor) Info(ctx context.Context) (Cluster, error) {
	c := Cluster{Server: e.server, Context: e.context, Namespace: e.namespace, PullSecrets: e.PullSecrets()}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	v, err := e.api.ServerVersion(rctx)
	if err != nil {
		return c, classify(e.server, "version", err)
	}
	c.Version = v.GitVersion
	nodes, err := e.api.Nodes().List(rctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return c, nil
		}
		return c, classify(e.server, "list nodes", err)
	}
	c.Nodes = len(nodes.Items)
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				c.ReadyNodes++
			}
		}
	}
	return c, nil
}
