package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/once"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The helper programs every ccrun pod gets, read-only, from a ConfigMap
// (helpersVolume at helpersDir): no host path, no image of ccrun's, no
// program of the call's image. Each is a static ELF executable of a few
// hundred bytes (once, the run container's program, a few KB), for each
// architecture they are built for (internal/once, internal/ctr);
// a pod gets those of the architecture of the nodes it is scheduled to.
const (
	helpersDir = "/.ccrun"
	// holdPath is ctr.Holder, which blocks for ever: the program
	// of the copy container of a pod whose mounts are copied, into which
	// tar is exec'd. (The run container's program is once:
	// internal/once.)
	holdPath = helpersDir + "/hold"
	// oncePath is internal/once's program: the program of every pod's run
	// container (cold or warm), which serves exactly one call.
	oncePath = helpersDir + "/once"
)

// archLabel is the well-known node label of its architecture (the
// kubelet's GOARCH, as status.nodeInfo.architecture reports it): a pod's
// nodeSelector on it keeps the pod off the nodes its helpers cannot run
// on.
const archLabel = "kubernetes.io/arch"

// helperKey is the ConfigMap key of helper name ("hold", "once") for
// arch.
func helperKey(name, arch string) string { return name + "-" + arch }

// helpers returns the helper files by ConfigMap key: hold and once for
// every architecture once is built for.
func helpers() map[string][]byte {
	files := map[string][]byte{}
	for _, arch := range once.Arches() {
		files[helperKey("hold", arch)] = ctr.Holder(arch)
		files[helperKey("once", arch)] = once.ELF(arch)
	}
	return files
}

// helpersName is the name of the ConfigMap holding the helpers: it names
// their content, so a ConfigMap of that name that holds anything else is
// refused, and a new ccrun never meets an old helper.
func helpersName() string {
	files := helpers()
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write(files[k])
	}
	return "ccrun-helpers-" + hex.EncodeToString(h.Sum(nil)[:6])
}

// helperItems project the helpers of arch onto the names the pod runs
// them by (holdPath, oncePath).
func helperItems(arch string) []corev1.KeyToPath {
	return []corev1.KeyToPath{
		{Key: helperKey("hold", arch), Path: "hold"},
		{Key: helperKey("once", arch), Path: "once"},
	}
}

// nodeArch chooses the architecture of the pods from the cluster's nodes
// (status.nodeInfo.architecture): the one, among those once is built
// for, that has the most ready nodes (then the most nodes; then the first
// of once.Arches). The pods are scheduled to nodes of it (archLabel), so
// that no pod gets a once its node cannot run — an amd64 client driving
// an arm64 cluster ships arm64 code. A cluster whose nodes ccrun may not
// list, or that lists none (nodes made on demand), gets ccrun's own
// architecture (amd64 where once has none for it), still held to it by
// the selector: a pod with no such node stays pending, and its timeout
// says why. A cluster with nodes of no architecture once is built for is
// ErrUnavailable, naming them.
func (e *Executor) nodeArch(ctx context.Context) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	nodes, err := e.api.Nodes().List(rctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return defaultArch(), nil
	} else if err != nil {
		return "", classify(e.server, "list nodes for their architecture", err)
	}
	return chooseArch(e.server, nodes.Items)
}

// defaultArch is the architecture of pods on a cluster whose nodes are
// not known: ccrun's own, where once is built for it.
func defaultArch() string {
	if once.ELF(runtime.GOARCH) != nil {
		return runtime.GOARCH
	}
	return "amd64"
}

// chooseArch is nodeArch's choice among nodes.
func chooseArch(server string, nodes []corev1.Node) (string, error) {
	if len(nodes) == 0 {
		return defaultArch(), nil
	}
	type count struct{ ready, all int }
	counts := map[string]*count{}
	var others []string
	for _, n := range nodes {
		arch := n.Status.NodeInfo.Architecture
		if once.ELF(arch) == nil {
			others = append(others, fmt.Sprintf("%s (%s)", n.Name, arch))
			continue
		}
		c := counts[arch]
		if c == nil {
			c = &count{}
			counts[arch] = c
		}
		c.all++
		if nodeReady(n) {
			c.ready++
		}
	}
	if len(counts) == 0 {
		return "", newError(ErrUnavailable, nil, "kube: no node of %s has an architecture ccrun's pod program (once) is built for (%s): %s",
			server, strings.Join(once.Arches(), ", "), strings.Join(others, ", "))
	}
	best := ""
	for _, arch := range once.Arches() {
		c, b := counts[arch], counts[best]
		if c != nil && (b == nil || c.ready > b.ready || c.ready == b.ready && c.all > b.all) {
			best = arch
		}
	}
	return best, nil
}

// nodeReady reports whether n's Ready condition is True and it takes new
// pods.
func nodeReady(n corev1.Node) bool {
	return !n.Spec.Unschedulable && slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}
