package docker

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// PullPolicy says when Run pulls the image from its registry: the pull
// policy of both engines of @docker. The zero value means PullMissing.
type PullPolicy = ctr.PullPolicy

// The pull policies.
const (
	PullMissing = ctr.PullMissing // pull only when the image is not local (default)
	PullNever   = ctr.PullNever   // never pull: a missing image is ErrNotFound
	PullAlways  = ctr.PullAlways  // pull before every run; a failed pull fails the run
)

// Defaults of the hardened container.
const (
	// DefaultUser is the user the program runs as when ccrun runs as
	// root: nobody:nogroup, never root. A caller that is not root is the
	// default user itself (WithDefaultUser).
	DefaultUser = "65534:65534"
	// DefaultNetwork is the network mode: none, only a loopback device.
	DefaultNetwork = "none"
	// TmpSize is the size of the writable /tmp (a tmpfs, mode 1777, charged
	// to the container's memory limit).
	TmpSize = "64m"
)

// Spec is one program to run in a container: the fields that both
// engines of @docker take (see each field), as the Docker Engine reads
// them. Image is a reference or an image ID; an empty Cmd runs the
// image's default; Mounts are bound into the container; Network may also
// be "host"; Pool claims a container started in advance for the same
// shape (image, limits, mounts, network, user, working directory), see
// the package documentation for what it costs; User may be a name the
// image knows (default: the caller's uid and gid, or DefaultUser when the
// caller is root; see WithDefaultUser). Its zero fields mean the hardened
// defaults; a field that loosens them is listed by Loosens.
type Spec ctr.Spec

// Loosens lists, for a person approving the run, every way s differs from
// the hardened defaults in what the program may reach. Nil: it loosens
// nothing.
func (s Spec) Loosens() []string {
	var out []string
	switch s.Network {
	case "", DefaultNetwork:
	case "bridge":
		out = append(out, "network: bridge (the program can reach other hosts)")
	case "host":
		out = append(out, "network: host (the program shares the host's network, including its loopback services)")
	default:
		out = append(out, fmt.Sprintf("network: %q", s.Network))
	}
	for _, m := range s.Mounts {
		host := m.Host
		if real, err := filepath.EvalSymlinks(m.Host); err == nil && real != filepath.Clean(m.Host) {
			host = fmt.Sprintf("%s (which is %s)", m.Host, real)
		}
		if m.Writable {
			out = append(out, fmt.Sprintf("mount: %s at %s, writable", host, m.Guest))
			if len(m.Implants) > 0 {
				out = append(out, fmt.Sprintf("mount: %s at %s may change protected paths: %s", host, m.Guest, strings.Join(m.Implants, ", ")))
			}
		} else {
			out = append(out, fmt.Sprintf("mount: %s at %s, read-only", host, m.Guest))
		}
	}
	if u := s.user(); isRoot(u) {
		out = append(out, fmt.Sprintf("user: %s (root inside the container, still without capabilities)", u))
	}
	if s.Limits.Timeout < 0 {
		out = append(out, "timeout: none")
	}
	if s.Limits.Output < 0 {
		out = append(out, "output: unlimited")
	}
	return out
}

func isRoot(u string) bool {
	name, _, _ := strings.Cut(u, ":")
	return name == "0" || name == "root"
}

func (s Spec) user() string {
	if s.User == "" {
		return DefaultUser
	}
	return s.User
}

func (s Spec) network() string {
	if s.Network == "" {
		return DefaultNetwork
	}
	return s.Network
}

// validate checks what the engine would refuse, or accept wrongly, before
// asking it: every problem is ErrInvalidArgument with the field named.
func (s Spec) validate() error {
	if s.Image == "" {
		return newError(ErrInvalidArgument, nil, "docker: spec: no image")
	}
	if !s.Pull.Known() {
		return newError(ErrInvalidArgument, nil, "docker: spec: pull policy %q: want never, missing or always", s.Pull)
	}
	switch s.network() {
	case "none", "bridge", "host":
	default:
		return newError(ErrInvalidArgument, nil, "docker: spec: network %q: want none, bridge or host", s.Network)
	}
	lim := s.Limits.WithDefaults()
	if lim.Memory < job.MinMemory {
		return newError(ErrInvalidArgument, nil, "docker: spec: memory limit %d bytes is below the %d bytes a container needs to start", lim.Memory, job.MinMemory)
	}
	if lim.Pids < 0 {
		return newError(ErrInvalidArgument, nil, "docker: spec: pids limit %d: want a positive number", lim.Pids)
	}
	if lim.CPUs < 0 {
		return newError(ErrInvalidArgument, nil, "docker: spec: cpus %g: want a positive number", lim.CPUs)
	}
	if s.Dir != "" && !path.IsAbs(s.Dir) {
		return newError(ErrInvalidArgument, nil, "docker: spec: working directory %q is not absolute", s.Dir)
	}
	for i, a := range s.Cmd {
		if strings.IndexByte(a, 0) >= 0 {
			return newError(ErrInvalidArgument, nil, "docker: spec: argument %d holds a NUL byte, which no program can receive", i)
		}
	}
	for _, kv := range s.Env {
		if strings.IndexByte(kv, 0) >= 0 {
			return newError(ErrInvalidArgument, nil, "docker: spec: environment entry %q holds a NUL byte, which no program can receive", kv)
		}
	}
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Host) {
			return newError(ErrInvalidArgument, nil, "docker: mount %s: host path %q is not absolute", m, m.Host)
		}
		if !path.IsAbs(m.Guest) || path.Clean(m.Guest) == "/" {
			return newError(ErrInvalidArgument, nil, "docker: mount %s: guest path %q must be absolute and not /", m, m.Guest)
		}
		if _, err := os.Stat(m.Host); err != nil {
			return newError(ErrInvalidArgument, err, "docker: mount %s: host path %q", m, m.Host)
		}
	}
	return nil
}

// config builds the container's configuration: the hardened defaults with
// what s declares. labels are added as they are.
func (s Spec) config(lim job.Limits, labels map[string]string) (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image:        s.Image,
		Cmd:          append([]string(nil), s.Cmd...),
		Env:          append([]string(nil), s.Env...),
		WorkingDir:   s.Dir,
		User:         s.user(),
		AttachStdout: true,
		AttachStderr: true,
		Labels:       labels,
	}
	if s.Streams.Stdin != nil {
		cfg.AttachStdin, cfg.OpenStdin, cfg.StdinOnce = true, true, true
	}
	init := true
	pids := lim.Pids
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(s.network()),
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		// The engine's default seccomp profile stays on: it is only
		// disabled by "seccomp=unconfined", which we never set.
		SecurityOpt: []string{"no-new-privileges"},
		Init:        &init,
		Tmpfs:       map[string]string{"/tmp": "rw,nosuid,nodev,size=" + TmpSize + ",mode=1777"},
		// Output goes to the attached client only: a flood cannot fill the
		// engine's disk through a log file.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     lim.Memory,
			MemorySwap: lim.Memory, // no swap: memory + swap == memory
			NanoCPUs:   int64(lim.CPUs * 1e9),
			PidsLimit:  &pids,
		},
	}
	for _, m := range s.Mounts {
		// Bind what the path names now, symbolic links resolved, as
		// Loosens showed it (validate checked it exists).
		src := m.Host
		if real, err := filepath.EvalSymlinks(m.Host); err == nil {
			src = real
		}
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type:     mount.TypeBind,
			Source:   src,
			Target:   m.Guest,
			ReadOnly: !m.Writable,
		})
	}
	return cfg, hc
}
