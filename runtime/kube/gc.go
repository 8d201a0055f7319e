package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/ccrun/ccrun/internal/ctr"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// owner names a process: its pid and its start time.
type owner = ctr.Owner

func self() owner { return ctr.Self() }

var labelUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// labelValue makes s a valid label value (63 characters of [A-Za-z0-9_.-],
// alphanumeric at both ends); a longer one is cut and ends in a hash of
// the whole, so two hosts never share one.
func labelValue(s string) string {
	v := labelUnsafe.ReplaceAllString(s, "-")
	if len(v) > 63 || v != s {
		sum := sha256.Sum256([]byte(s))
		h := hex.EncodeToString(sum[:4])
		if len(v) > 54 {
			v = v[:54]
		}
		v = v + "-" + h
	}
	return strings.Trim(v, "-_.")
}

// ownedBy is the process a pod belongs to on this host: its claimer when
// it is a claimed warm pod, else its creator; ok false when the pod names
// another host (its owner cannot be checked from here).
func (e *Executor) ownedBy(p *corev1.Pod) (o owner, ok bool) {
	l := p.Labels
	if l[LabelPool] == poolClaimed {
		if l[LabelClaimHost] != labelValue(e.hostname) {
			return owner{}, false
		}
		pid, _ := strconv.Atoi(l[LabelClaimPID])
		return owner{PID: pid, Start: l[LabelClaimStart]}, true
	}
	if l[LabelHost] != labelValue(e.hostname) {
		return owner{}, false
	}
	pid, _ := strconv.Atoi(l[LabelPID])
	return owner{PID: pid, Start: l[LabelStart]}, true
}

// GC deletes the pods of ccrun in the namespace that serve no one: those
// whose owner (its creator, or for a claimed warm pod its claimer) was a
// process of this host that is gone, and those of any host past their
// expiry annotation. Idle warm pods are left (DrainPool removes them), and
// so is everything not labelled app.kubernetes.io/managed-by=ccrun. It
// returns the names deleted.
func (e *Executor) GC(ctx context.Context) ([]string, error) {
	list, err := e.ownedPods(ctx, LabelManaged+"="+managedBy)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var gone []string
	for i := range list {
		if p := &list[i]; e.garbage(p, now) {
			e.deletePod(ctx, p.Name)
			gone = append(gone, p.Name)
		}
	}
	return gone, nil
}

// Garbage returns the names of the pods GC would delete and, with pool,
// of the warm pods DrainPool would delete, as listed now: what ccrun gc
// --dry-run shows. It deletes nothing.
func (e *Executor) Garbage(ctx context.Context, pool bool) ([]string, error) {
	list, err := e.ownedPods(ctx, LabelManaged+"="+managedBy)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var names []string
	for i := range list {
		p := &list[i]
		_, warm := p.Labels[LabelTemplate]
		if e.garbage(p, now) || pool && warm {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// ownedPods lists the pods of the namespace that selector selects and
// that are labelled as ccrun's (a label selector is the server's word:
// checked again here).
func (e *Executor) ownedPods(ctx context.Context, selector string) ([]corev1.Pod, error) {
	lctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list, err := e.api.Pods(e.namespace).List(lctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, classify(e.server, "list pods", err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Labels[LabelManaged] == managedBy {
			out = append(out, p)
		}
	}
	return out, nil
}

// garbage reports whether GC deletes pod p at now: past its expiry, or
// owned by a process of this host that is gone (an idle warm pod aside).
func (e *Executor) garbage(p *corev1.Pod, now time.Time) bool {
	if t, err := time.Parse(time.RFC3339, p.Annotations[AnnotationExpires]); err == nil && now.After(t) {
		return true
	}
	if o, ok := e.ownedBy(p); ok && !o.Alive() {
		return p.Labels[LabelPool] != poolWarm
	}
	return false
}
