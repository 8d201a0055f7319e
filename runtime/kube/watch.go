package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// errDeleted: the pod was deleted while ccrun waited on it.
var errDeleted = errors.New("pod deleted")

// podWatch follows one pod through a watch of the API server, re-opened
// from the last resource version when the server ends it, and retried
// while the server does not answer (each wait is bounded by its context).
type podWatch struct {
	e      *Executor
	name   string
	mu     sync.Mutex
	cur    *corev1.Pod
	gone   bool
	err    error // the last failure to (re)open the watch
	change chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func (e *Executor) watchPod(ctx context.Context, name, rv string) *podWatch {
	wctx, cancel := context.WithCancel(ctx)
	w := &podWatch{e: e, name: name, change: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go w.loop(wctx, rv)
	return w
}

func (w *podWatch) stop() { w.cancel(); <-w.done }

func (w *podWatch) last() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

func (w *podWatch) notify(f func()) {
	w.mu.Lock()
	f()
	close(w.change)
	w.change = make(chan struct{})
	w.mu.Unlock()
}

func (w *podWatch) loop(ctx context.Context, rv string) {
	defer close(w.done)
	pods := w.e.api.Pods(w.e.namespace)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		wi, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", w.name).String(),
			ResourceVersion: rv,
		})
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = "" // too old: start from now
				continue
			}
			w.notify(func() { w.err = classify(w.e.server, "watch pod "+w.name, err) })
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			if backoff < 2*time.Second {
				backoff *= 2
			}
			continue
		}
		backoff = 100 * time.Millisecond
		for ev := range wi.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					rv = p.ResourceVersion
					w.notify(func() { w.cur, w.err = p, nil })
				}
			case watch.Deleted:
				w.notify(func() { w.gone = true })
			case watch.Error:
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
					rv = ""
				}
			}
		}
		wi.Stop()
	}
}

// until waits until cond says the pod is as wanted (or fails), the pod
// is deleted (errDeleted), or ctx ends (then the last failure to watch,
// if any, is the error).
func (w *podWatch) until(ctx context.Context, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	for {
		w.mu.Lock()
		cur, gone, werr, ch := w.cur, w.gone, w.err, w.change
		w.mu.Unlock()
		if cur != nil {
			if ok, err := cond(cur); err != nil || ok {
				return cur, err
			}
		}
		if gone {
			return cur, errDeleted
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if werr != nil {
				return cur, werr
			}
			return cur, ctx.Err()
		}
	}
}

func status(p *corev1.Pod, container string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == container {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func terminated(p *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	if st := status(p, container); st != nil {
		return st.State.Terminated
	}
	return nil
}

// failed says why a pod cannot run its program, or nil while it still
// may: a pod that failed as a whole (evicted, past its deadline, its node
// lost) or a container that cannot be created.
func failed(p *corev1.Pod) error {
	if p.Status.Phase == corev1.PodFailed {
		if p.Status.Reason == "DeadlineExceeded" {
			return nil // reported as a timeout by status
		}
		return newError(ErrUnavailable, nil, "kube: pod %s/%s failed: %s %s", p.Namespace, p.Name, p.Status.Reason, p.Status.Message)
	}
	for _, st := range p.Status.ContainerStatuses {
		wt := st.State.Waiting
		if wt == nil {
			continue
		}
		switch wt.Reason {
		case "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ImageInspectError":
			return newError(ErrNotFound, nil, "kube: pod %s/%s: image %s: %s: %s (load it on the nodes, or give a reference they can pull)", p.Namespace, p.Name, imageOf(p, st.Name), wt.Reason, wt.Message)
		case "CreateContainerConfigError", "CreateContainerError":
			return newError(ErrInvalidArgument, nil, "kube: pod %s/%s: container %s: %s: %s", p.Namespace, p.Name, st.Name, wt.Reason, wt.Message)
		}
	}
	return nil
}

func imageOf(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

// runStarted: the run container runs (once waits for its request) or already ended.
func runStarted(p *corev1.Pod) (bool, error) {
	if err := failed(p); err != nil {
		return false, err
	}
	st := status(p, containerRun)
	return st != nil && (st.State.Running != nil || st.State.Terminated != nil), nil
}

func containerRunning(name string) func(*corev1.Pod) (bool, error) {
	return func(p *corev1.Pod) (bool, error) {
		if err := failed(p); err != nil {
			return false, err
		}
		st := status(p, name)
		if st != nil && st.State.Terminated != nil {
			return false, newError(ErrUnavailable, nil, "kube: pod %s/%s: container %s ended: %s (exit %d)", p.Namespace, p.Name, name, st.State.Terminated.Reason, st.State.Terminated.ExitCode)
		}
		return st != nil && st.State.Running != nil, nil
	}
}

func containerEnded(name string) func(*corev1.Pod) (bool, error) {
	return func(p *corev1.Pod) (bool, error) {
		if terminated(p, name) != nil {
			return true, nil
		}
		if p.Status.Phase == corev1.PodFailed && p.Status.Reason == "DeadlineExceeded" {
			return false, nil
		}
		return false, failed(p)
	}
}

// pendingReason says why a pod has not started, from its last status.
func pendingReason(p *corev1.Pod) string {
	if p == nil {
		return "no status from the API server"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("not scheduled: %s %s", c.Reason, c.Message)
		}
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.State.Waiting != nil {
			return fmt.Sprintf("container %s waiting: %s %s", st.Name, st.State.Waiting.Reason, st.State.Waiting.Message)
		}
	}
	return fmt.Sprintf("phase %s on node %q", p.Status.Phase, p.Spec.NodeName)
}
