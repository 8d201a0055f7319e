package dockerenv

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/internal/backend"
	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/kube"
)

// spec is the program of inv in image, for either engine.
func spec(inv *backend.Invocation, image string, pull ctr.PullPolicy, pool bool) ctr.Spec {
	return ctr.Spec{Image: image, Cmd: inv.Args, Env: inv.Env, Mounts: inv.Mounts,
		Dir: inv.Dir, Streams: inv.Streams, Limits: inv.Limits, Network: inv.Network, Pool: pool, Pull: pull}
}

// Docker starts the local Docker Engine's client with opts.
func Docker(ctx context.Context, opts ...docker.Option) (Engine, error) {
	e, err := docker.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("@docker: %w", err)
	}
	return dockerEngine{e}, nil
}

type dockerEngine struct{ e *docker.Executor }

func (d dockerEngine) Run(ctx context.Context, inv *backend.Invocation, image, pull string, pool bool) (*job.Result, error) {
	s := docker.Spec(spec(inv, image, docker.PullPolicy(pull), pool))
	if eg := inv.Egress; eg != nil {
		// the network lists: an internal network whose one way out is the proxy
		return d.e.RunBehind(ctx, s, docker.Egress{Socket: eg.Socket, Env: eg.Env})
	}
	return d.e.Run(ctx, s)
}

func (d dockerEngine) Resolve(ctx context.Context, ref, pull string) (string, error) {
	return d.e.Resolve(ctx, ref, docker.PullPolicy(pull))
}

func (d dockerEngine) Close() error { return d.e.Close() }

// Kubernetes starts the Kubernetes engine's client with opts. A grant is
// bound to the digest-pinned reference of the image: the one the
// cluster's nodes report under pull policy "never" (which asks no
// registry), else the one its registry serves (kube.Executor.Resolve);
// the pod runs by it, pulled by the node when it has not got it.
func Kubernetes(ctx context.Context, opts ...kube.Option) (Engine, error) {
	e, err := kube.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("@docker on kubernetes: %w", err)
	}
	return kubeEngine{e}, nil
}

type kubeEngine struct{ e *kube.Executor }

func (k kubeEngine) Run(ctx context.Context, inv *backend.Invocation, image, pull string, pool bool) (*job.Result, error) {
	if inv.Egress != nil {
		// fail closed: a pod has no way to be put behind ccrun's proxy yet
		return nil, fmt.Errorf("@docker on kubernetes: a call whose network is limited to named hosts cannot run on a cluster yet (run it on the local Docker Engine: --engine docker): %w", errdefs.ErrInvalidArgument)
	}
	p := kube.PullPolicy(pull)
	if p == kube.PullNever && strings.Contains(image, "@sha256:") {
		// Bind says "never" because the image was resolved; on a cluster a
		// digest names one image wherever it is pulled from, so the node
		// may pull it when it does not have it.
		p = kube.PullMissing
	}
	s := kube.Spec(spec(inv, image, p, pool))
	if len(s.Cmd) == 0 {
		// The image's own entrypoint and command, as docker run IMAGE,
		// read from its registry unless the call's own pull policy is
		// never (Bind's "never" above is not the caller's).
		o, err := options(inv)
		if err != nil {
			return nil, err
		}
		pinned, cmd, err := k.e.ImageCommand(ctx, image, kube.PullPolicy(o.Pull))
		if err != nil {
			return nil, err
		}
		s.Image, s.Cmd = pinned, cmd
	}
	return k.e.Run(ctx, s)
}

func (k kubeEngine) Resolve(ctx context.Context, ref, pull string) (string, error) {
	return k.e.Resolve(ctx, ref, kube.PullPolicy(pull))
}

func (k kubeEngine) Close() error { return k.e.Close() }
