package ctr

import "github.com/ccrun/ccrun/runtime/job"

// PullPolicy says when the image is pulled from its registry. The zero
// value means PullMissing.
type PullPolicy string

// The pull policies (each engine says what it makes of them: docker.Run
// pulls, a pod's imagePullPolicy has the node pull).
const (
	PullMissing PullPolicy = "missing" // only when the image is not there (default)
	PullNever   PullPolicy = "never"   // never: the image must be there already
	PullAlways  PullPolicy = "always"  // before every run
)

// OrDefault is p, or PullMissing when p is "".
func (p PullPolicy) OrDefault() PullPolicy {
	if p == "" {
		return PullMissing
	}
	return p
}

// Known reports whether p (or its default) is one of the pull policies.
func (p PullPolicy) Known() bool {
	switch p.OrDefault() {
	case PullMissing, PullNever, PullAlways:
		return true
	}
	return false
}

// Spec is one program to run in a container: the fields both engines of
// @docker take, so that docker.Spec and kube.Spec are this type (with the
// methods of their engine: validate, Loosens) and a caller builds one for
// either. Its zero fields mean the hardened defaults; a field that loosens
// them is listed by the engine's Spec.Loosens. Where the engines read a
// field differently, the field says so.
type Spec struct {
	// Image is the image reference, e.g. "ccrun-test:busybox". Required. A
	// grant is bound to what it names: pass what the engine's Resolve
	// returns (an image ID, a digest-pinned reference).
	Image string
	// Cmd is the program and its arguments. Empty runs the image's
	// default (its Entrypoint and Cmd), as docker run IMAGE does; on
	// Kubernetes those are read from the image's registry (the nodes do
	// not report them), which pull policy never forbids. A Cmd[0] without
	// a slash is looked for on the container's PATH.
	Cmd []string
	// Env is the environment, as NAME=value, added to the image's own.
	// Nothing from the host leaks in. On Kubernetes it is in the pod's
	// spec: whoever may read pods in the namespace sees it.
	Env []string
	// Mounts are host directories the program sees, read-only unless
	// Writable; host paths must be absolute and exist. Docker Engine: bound
	// into the container. Kubernetes: copied into the pod before the
	// program starts and, when Writable, copied back after it ends (the
	// image needs a tar program).
	Mounts []job.Mount
	// Dir is the working directory inside the container. Empty: the
	// image's.
	Dir string
	// Streams are the program's stdin, stdout and stderr. A nil Stdin is
	// an empty input.
	Streams job.Streams
	// Limits bound the run; zero fields take the job defaults. On
	// Kubernetes Pids is not set per pod (the node's podPidsLimit
	// applies).
	Limits job.Limits
	// Network is "" or "none" (default: no network but loopback; on
	// Kubernetes a NetworkPolicy denies all ingress and egress, where the
	// cluster's network plugin enforces policies), or "bridge" (the
	// engine's network: other hosts, other pods). "host" (the host's
	// network) only the Docker Engine takes; a pod never shares its node's.
	Network string
	// Pull is the pull policy; default PullMissing.
	Pull PullPolicy
	// Pool opts into the engine's warm pool: the program is exec'd into a
	// container (a pod) started in advance for the same shape, used once,
	// then removed. With none waiting, the run is cold. Default false. A
	// run with a writable mount (Docker Engine), or with mounts or an
	// environment (Kubernetes), runs cold.
	Pool bool
	// User is the user and group the program runs as, "uid[:gid]": never
	// root by default. Docker Engine: the caller's uid and gid, 65534:65534
	// when the caller is root; it also takes a name the image knows.
	// Kubernetes: 65534:65534, the caller's (as on the Docker Engine) for a
	// pod with mounts; a pod needs numbers.
	User string
}
