package kube

import (
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/once"
	"github.com/ccrun/ccrun/runtime/job"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PullPolicy says when the node pulls the image: the pull policy of both
// engines of @docker. The zero value means PullMissing.
type PullPolicy = ctr.PullPolicy

// The pull policies, each as the pod's imagePullPolicy.
const (
	PullMissing = ctr.PullMissing // IfNotPresent (default)
	PullNever   = ctr.PullNever   // Never: the image must be on the node already
	PullAlways  = ctr.PullAlways  // Always
)

// Defaults of the hardened pod.
const (
	// DefaultUID is the uid and gid the program runs as: nobody, never root.
	DefaultUID = 65534
	// TmpSize is the size of the writable /tmp: a memory-backed emptyDir,
	// charged to the pod's memory limit as runtime/docker's tmpfs is.
	TmpSize = 64 << 20
	// DefaultEphemeralStorage is each pod's ephemeral-storage limit (its
	// logs and emptyDirs on the node's disk, its copied mounts). job.Limits
	// has no disk field; past it the kubelet evicts the pod.
	DefaultEphemeralStorage = 1 << 30
	// DefaultMountSize bounds what is copied into or out of one pod's
	// mounts, in bytes.
	DefaultMountSize = 64 << 20
	// startMargin is added to the timeout for activeDeadlineSeconds: the
	// deadline counts from the pod's start (scheduling, image), and it is
	// only the backstop for a ccrun killed mid-run; ccrun's own timer ends
	// the call at its timeout.
	startMargin = 60 * time.Second
)

// Spec is one program to run in a pod: the fields both engines of
// @docker take (see each field; a runtime/docker Spec converts to this
// one), as Kubernetes reads them. An empty Cmd runs the image's own
// Entrypoint and Cmd (Executor.ImageCommand); a Cmd[0] without a
// slash is looked for on the PATH of the container's environment (the
// image's, else the default PATH, as an exec into a container of the
// local engine does: once does it); Mounts are copied (see the package documentation); Network is none or
// bridge; Pool claims a warm pod of the same template (Executor.WithPool),
// and a call with mounts runs cold; User is numeric
// (default 65534:65534; with mounts, the caller's uid and gid unless it is
// root: see Executor.Run). Its zero fields mean the hardened defaults; a
// field that loosens them is listed by Loosens.
type Spec ctr.Spec

// Loosens lists, for the person approving the run, every way s differs
// from the hardened defaults in what the program may reach.
func (s Spec) Loosens() []string {
	var out []string
	switch s.Network {
	case "", "none":
	case "bridge":
		out = append(out, "network: the cluster's pod network (the program can reach other pods and hosts)")
	default:
		out = append(out, fmt.Sprintf("network: %q", s.Network))
	}
	for _, m := range s.Mounts {
		mode := "read-only copy"
		if m.Writable {
			mode = "writable copy, copied back"
		}
		out = append(out, fmt.Sprintf("mount: %s at %s, %s", m.Host, m.Guest, mode))
	}
	if uid, _, _ := s.user(); uid == 0 {
		out = append(out, "user: 0 (root inside the container, still without capabilities)")
	}
	if s.Limits.Timeout < 0 {
		out = append(out, "timeout: none")
	}
	if s.Limits.Output < 0 {
		out = append(out, "output: unlimited")
	}
	return out
}

// callerUser is the User of a pod with mounts for a caller of effective
// uid and gid: the caller itself, or "" (DefaultUID) for root.
func callerUser(uid, gid int) string {
	if uid == 0 {
		return ""
	}
	return strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
}

func (s Spec) user() (uid, gid int64, err error) {
	if s.User == "" {
		return DefaultUID, DefaultUID, nil
	}
	u, g, hasG := strings.Cut(s.User, ":")
	uid, err = strconv.ParseInt(u, 10, 32)
	if err != nil || uid < 0 {
		return 0, 0, fmt.Errorf("user %q: want a numeric uid[:gid]", s.User)
	}
	gid = uid
	if hasG {
		if gid, err = strconv.ParseInt(g, 10, 32); err != nil || gid < 0 {
			return 0, 0, fmt.Errorf("user %q: want a numeric uid[:gid]", s.User)
		}
	}
	return uid, gid, nil
}

// validate checks what the cluster would refuse, or accept wrongly, before
// any API call: every problem is ErrInvalidArgument with the field named.
func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return newError(ErrInvalidArgument, nil, "kube: spec: "+format, args...)
	}
	if len(s.Cmd) == 0 {
		return bad("no command (Run gives a Spec without one the image's entrypoint and command: Executor.ImageCommand)")
	}
	if s.Cmd[0] == "" {
		return bad("program \"\": name a program (a name on the image's PATH, or its path in the image)")
	}
	if err := once.Check(s.Cmd, s.Env); err != nil {
		return bad("%v", err) // once carries them: warm, the environment too
	}
	return s.validateRest()
}

// validateRest is validate but for the command: what Run checks of a Spec
// before it asks the registry for the image's own command.
func (s Spec) validateRest() error {
	bad := func(format string, args ...any) error {
		return newError(ErrInvalidArgument, nil, "kube: spec: "+format, args...)
	}
	if s.Image == "" {
		return bad("no image")
	}
	if !s.Pull.Known() {
		return bad("pull policy %q: want never, missing or always", s.Pull)
	}
	switch s.Network {
	case "", "none", "bridge":
	case "host":
		return bad("network host: a pod of ccrun never shares its node's network")
	default:
		return bad("network %q: want none or bridge", s.Network)
	}
	if _, _, err := s.user(); err != nil {
		return bad("%v", err)
	}
	lim := s.Limits.WithDefaults()
	if lim.Memory < job.MinMemory {
		return bad("memory limit %d bytes is below the %d bytes a container needs to start", lim.Memory, job.MinMemory)
	}
	if lim.CPUs < 0 {
		return bad("cpus %g: want a positive number", lim.CPUs)
	}
	if s.Dir != "" && !path.IsAbs(s.Dir) {
		return bad("working directory %q is not absolute", s.Dir)
	}
	for _, e := range s.Env {
		if name, _, ok := strings.Cut(e, "="); !ok || name == "" {
			return bad("environment entry %q: want NAME=value", e)
		}
	}
	guests := map[string]bool{}
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Host) {
			return bad("mount %s: host path %q is not absolute", m, m.Host)
		}
		g := path.Clean(m.Guest)
		if !path.IsAbs(m.Guest) || g == "/" || g == "/tmp" || g == helpersDir || strings.HasPrefix(g, helpersDir+"/") {
			return bad("mount %s: guest path %q must be absolute, not /, /tmp or %s", m, m.Guest, helpersDir)
		}
		if guests[g] {
			return bad("mount %s: guest path %q mounted twice", m, m.Guest)
		}
		guests[g] = true
		fi, err := os.Stat(m.Host)
		if err != nil {
			return newError(ErrInvalidArgument, err, "kube: mount %s: host path %q", m, m.Host)
		}
		if !fi.IsDir() {
			return bad("mount %s: host path %q is not a directory", m, m.Host)
		}
	}
	return nil
}

// hardened is the security context of every container of a ccrun pod.
func hardened(uid, gid int64) *corev1.SecurityContext {
	f, t := false, true
	return &corev1.SecurityContext{
		RunAsUser:                &uid,
		RunAsGroup:               &gid,
		RunAsNonRoot:             ptr(uid != 0),
		AllowPrivilegeEscalation: &f,
		Privileged:               &f,
		ReadOnlyRootFilesystem:   &t,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func ptr[T any](v T) *T { return &v }

// Names of the pod's parts.
const (
	containerRun  = "run"  // the call's program
	containerCopy = "copy" // a holder with the mounts, for tar over exec (calls with mounts)
	volumeTmp     = "tmp"
	volumeHelpers = "ccrun"
)

func mountVolume(i int) string { return "mount-" + strconv.Itoa(i) }

// resources are the container's limits (from lim) and requests: memory
// and storage as much as the limit (never overcommitted); CPU a tenth of
// it (at least 10m), so that a node of two cores can hold more than two
// calls that mostly wait.
func resources(lim job.Limits) corev1.ResourceRequirements {
	cpu := int64(math.Ceil(lim.CPUs * 1000))
	req := cpu / 10
	if req < 10 {
		req = 10
	}
	mem := resource.NewQuantity(lim.Memory, resource.BinarySI)
	return corev1.ResourceRequirements{
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewMilliQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory:           *mem,
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(DefaultEphemeralStorage, resource.BinarySI),
		},
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewMilliQuantity(req, resource.DecimalSI),
			corev1.ResourceMemory:           *mem,
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(64<<20, resource.BinarySI),
		},
	}
}

// podOptions are what differs between a cold pod and a warm one.
type podOptions struct {
	name        string
	labels      map[string]string
	helpers     string                        // the helpers ConfigMap
	arch        string                        // the nodes' architecture: its helpers, and a node of it (nodeArch)
	program     []string                      // the run container's command
	env         bool                          // put s.Env in the pod (cold only)
	stdin       bool                          // the run container's stdin is open (once reads it)
	stdinKept   bool                          // and stays open across attach sessions (once: its claimant may not be the first to attach)
	copyside    bool                          // add the copy container (mounts)
	mountMax    int64                         // size limit of each mount's emptyDir
	pullSecrets []corev1.LocalObjectReference // the pod's imagePullSecrets (WithPullSecrets)
}

// pod builds the hardened pod for s.
func (s Spec) pod(lim job.Limits, o podOptions) *corev1.Pod {
	uid, gid, _ := s.user()
	var deadline *int64
	if lim.Timeout > 0 {
		deadline = ptr(int64((lim.Timeout + startMargin + time.Second - 1) / time.Second))
	}
	tmpSize := resource.NewQuantity(TmpSize, resource.BinarySI)
	mounts := []corev1.VolumeMount{
		{Name: volumeTmp, MountPath: "/tmp"},
		{Name: volumeHelpers, MountPath: helpersDir, ReadOnly: true},
	}
	volumes := []corev1.Volume{
		{Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tmpSize}}},
		{Name: volumeHelpers, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: o.helpers}, Items: helperItems(o.arch), DefaultMode: ptr(int32(0o555))}}},
	}
	var copyMounts []corev1.VolumeMount
	for i, m := range s.Mounts {
		size := resource.NewQuantity(o.mountMax, resource.BinarySI)
		volumes = append(volumes, corev1.Volume{Name: mountVolume(i), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: size}}})
		mounts = append(mounts, corev1.VolumeMount{Name: mountVolume(i), MountPath: path.Clean(m.Guest), ReadOnly: !m.Writable})
		copyMounts = append(copyMounts, corev1.VolumeMount{Name: mountVolume(i), MountPath: copyDir(i)})
	}
	var env []corev1.EnvVar
	if o.env {
		for _, e := range s.Env {
			k, v, _ := strings.Cut(e, "=")
			env = append(env, corev1.EnvVar{Name: k, Value: v})
		}
	}
	pull := corev1.PullIfNotPresent
	switch s.Pull.OrDefault() {
	case PullNever:
		pull = corev1.PullNever
	case PullAlways:
		pull = corev1.PullAlways
	}
	run := corev1.Container{
		Name:            containerRun,
		Image:           s.Image,
		ImagePullPolicy: pull,
		Command:         o.program,
		Env:             env,
		WorkingDir:      s.Dir,
		Stdin:           o.stdin,
		StdinOnce:       o.stdin && !o.stdinKept,
		SecurityContext: hardened(uid, gid),
		Resources:       resources(lim),
		VolumeMounts:    mounts,
		// The kubelet's termination message file would be a writable
		// path on the read-only root: none.
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Labels: o.labels},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{run},
			Volumes:                       volumes,
			ImagePullSecrets:              o.pullSecrets,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         deadline,
			NodeSelector:                  map[string]string{archLabel: o.arch},
			TerminationGracePeriodSeconds: ptr(int64(0)),
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			DNSPolicy:                     corev1.DNSDefault,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      &uid,
				RunAsGroup:     &gid,
				RunAsNonRoot:   ptr(uid != 0),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
	if o.copyside {
		small := job.Limits{Memory: 32 << 20, CPUs: 0.5}
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name:            containerCopy,
			Image:           s.Image,
			ImagePullPolicy: pull,
			Command:         []string{holdPath},
			SecurityContext: hardened(uid, gid),
			Resources:       resources(small),
			VolumeMounts:    append([]corev1.VolumeMount{{Name: volumeHelpers, MountPath: helpersDir, ReadOnly: true}}, copyMounts...),
		})
	}
	return pod
}

// copyDir is where the copy container sees mount i.
func copyDir(i int) string { return "/.ccrun-mount/" + strconv.Itoa(i) }
