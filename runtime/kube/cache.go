package kube

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// indexTemplate indexes the warm pods by their template's key.
const indexTemplate = "template"

// podCache is the warm pods of ccrun in the namespace (labelled with a
// template), as one list and watch of the API server keeps them: a claim
// picks its pod here instead of listing, and a warm call waits on its pod's
// status here instead of watching it.
type podCache struct {
	inf    cache.SharedIndexInformer
	mu     sync.Mutex
	change chan struct{} // closed and replaced at every event
}

// warmCache starts the cache once per Executor and waits until it holds
// what the API server has (ErrUnavailable when it cannot within
// requestTimeout; a later call waits again, the cache retrying meanwhile).
func (e *Executor) warmCache(ctx context.Context) (*podCache, error) {
	e.cacheMu.Lock()
	pc := e.pods
	if pc == nil {
		pc = &podCache{change: make(chan struct{})}
		// What client-go's informers/core/v1 pod informer lists and
		// watches, through kapi.
		sel := LabelManaged + "=" + managedBy + "," + LabelTemplate
		pods := e.api.Pods(e.namespace)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.LabelSelector = sel
				return pods.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.LabelSelector = sel
				return pods.Watch(ctx, o)
			},
		}
		pc.inf = cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
			Indexers: cache.Indexers{indexTemplate: func(obj any) ([]string, error) {
				if p, ok := obj.(*corev1.Pod); ok {
					return []string{p.Labels[LabelTemplate]}, nil
				}
				return nil, nil
			}},
		})
		_, _ = pc.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { pc.changed(); e.warmChanged(obj) },
			UpdateFunc: func(_, obj any) { pc.changed(); e.warmChanged(obj) },
			DeleteFunc: func(obj any) { pc.changed(); e.warmGone(obj) },
		})
		go pc.inf.Run(e.bg.Done())
		e.pods = pc
	}
	e.cacheMu.Unlock()
	if pc.inf.HasSynced() {
		return pc, nil
	}
	sctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), pc.inf.HasSynced) {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kube: list warm pods: %w", ctx.Err())
		}
		return nil, unavailable(e.server, fmt.Errorf("list warm pods: %w", sctx.Err()))
	}
	return pc, nil
}

func (pc *podCache) changed() {
	pc.mu.Lock()
	close(pc.change)
	pc.change = make(chan struct{})
	pc.mu.Unlock()
}

// changes is closed at the next event.
func (pc *podCache) changes() <-chan struct{} {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.change
}

// template returns the cached pods of a template (shared: do not modify).
func (pc *podCache) template(key string) []*corev1.Pod {
	objs, _ := pc.inf.GetIndexer().ByIndex(indexTemplate, key)
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// get returns the cached pod name, nil when there is none.
func (pc *podCache) get(namespace, name string) *corev1.Pod {
	obj, ok, _ := pc.inf.GetStore().GetByKey(namespace + "/" + name)
	if !ok {
		return nil
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// until waits until cond says the cached pod name is as wanted (or
// fails), the pod is gone (errDeleted), or ctx ends.
func (e *Executor) until(ctx context.Context, pc *podCache, name string, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	for {
		ch := pc.changes()
		p := pc.get(e.namespace, name)
		if p == nil {
			return nil, errDeleted
		}
		if ok, err := cond(p); err != nil || ok {
			return p, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return p, ctx.Err()
		}
	}
}
