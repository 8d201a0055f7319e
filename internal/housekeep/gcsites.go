package housekeep

import (
	"context"
	"errors"
	"fmt"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/enginerecord"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/kube"
)

// EngineSite is a place where @docker starts containers: a Docker Engine
// by its address (Engine engines.EngineDocker, Host), or a namespace of a
// Kubernetes cluster (engines.EngineKubernetes: Kubeconfig, "" for kubectl's
// default, Context, Namespace; Server for messages). ccrun records in its
// state directory ($XDG_STATE_HOME/ccrun/engines.jsonl) each place it
// created a container or set a namespace up on, so that ccrun gc finds
// them again without being told.
type EngineSite = enginerecord.Site

// GCSites returns the places ccrun gc visits, each once: the Docker Engine
// the environment names (DOCKER_HOST, else the local socket), the
// Kubernetes engine the settings choose (or kube asks for, with the
// settings' cluster when they name one, else the kubeconfig's current
// context), then every place of the record, the one used last at the end.
// The error says what could not be read (the settings, a damaged record:
// what could be read of it still counts); the places are returned with
// it.
func GCSites(kube bool) ([]EngineSite, error) {
	sites := []EngineSite{{Engine: engines.EngineDocker, Host: docker.EnvHost()}}
	var errs []error
	engine, _, opts, err := engines.DefaultDockerEngine()
	if err != nil {
		errs = append(errs, err)
	}
	if kube && engine != engines.EngineKubernetes {
		engine, opts = engines.EngineKubernetes, nil
	}
	if engine == engines.EngineKubernetes {
		if s, err := kubeSite(opts); err != nil {
			errs = append(errs, fmt.Errorf("pods not collected: %w", err))
		} else {
			sites = append(sites, s)
		}
	}
	recorded, err := enginerecord.Read(enginerecord.Dir())
	if err != nil {
		errs = append(errs, fmt.Errorf("%w (the record's next rewrite drops what is damaged; removing the file starts afresh)", err))
	}
	seen := map[string]bool{}
	out := sites[:0]
	for _, s := range append(sites, recorded...) {
		if !seen[s.Key()] {
			seen[s.Key()] = true
			out = append(out, s)
		}
	}
	return out, errors.Join(errs...)
}

// kubeSite is the place of the Kubernetes engine of opts, from its
// kubeconfig alone.
func kubeSite(opts []kube.Option) (EngineSite, error) {
	p, err := kube.PlaceOf(opts...)
	if err != nil {
		return EngineSite{}, err
	}
	return EngineSite{Engine: engines.EngineKubernetes, Kubeconfig: p.Kubeconfig, Context: p.Context, Namespace: p.Namespace, Server: p.Server}, nil
}

// kubeOptions are the runtime/kube options that reach site.
func kubeOptions(site EngineSite) []kube.Option {
	return engines.KubeOptions(permission.DockerSettings{Kubeconfig: site.Kubeconfig, Context: site.Context, Namespace: site.Namespace})
}

// CollectAt removes what @docker calls left at site: what
// CollectContainers removes on a Docker Engine, what CollectPods removes
// in a namespace of a cluster (pods named "pod NAME"). A site that cannot
// be reached is an error of class ccrun.ErrUnavailable, within ctx and the
// engines' own bounds (10 s to answer).
func CollectAt(ctx context.Context, site EngineSite, pool bool) ([]string, error) {
	switch site.Engine {
	case engines.EngineDocker:
		e, err := dockerAt(ctx, site)
		if err != nil {
			return nil, err
		}
		removed, err := e.GC(ctx)
		if pool && err == nil {
			var more []string
			more, err = e.DrainPool(ctx)
			removed = append(removed, more...)
		}
		return removed, errors.Join(err, e.Close())
	case engines.EngineKubernetes:
		pods, err := CollectPods(ctx, pool, kubeOptions(site)...)
		return podNames(pods), err
	}
	return nil, fmt.Errorf("%s: no such engine: %w", site, ccrun.ErrInvalidCall)
}

// GarbageAt lists what CollectAt would remove at site, removing nothing.
func GarbageAt(ctx context.Context, site EngineSite, pool bool) ([]string, error) {
	switch site.Engine {
	case engines.EngineDocker:
		e, err := dockerAt(ctx, site)
		if err != nil {
			return nil, err
		}
		listed, err := e.Garbage(ctx, pool)
		return listed, errors.Join(err, e.Close())
	case engines.EngineKubernetes:
		e, err := kube.New(ctx, kubeOptions(site)...)
		if err != nil {
			return nil, err
		}
		defer e.Close()
		pods, err := e.Garbage(ctx, pool)
		return podNames(pods), err
	}
	return nil, fmt.Errorf("%s: no such engine: %w", site, ccrun.ErrInvalidCall)
}

// dockerAt connects to the Docker Engine of site ("": the environment's).
func dockerAt(ctx context.Context, site EngineSite) (*docker.Executor, error) {
	if site.Host == "" {
		return docker.New(ctx)
	}
	return docker.New(ctx, docker.WithHost(site.Host))
}

func podNames(pods []string) []string {
	for i := range pods {
		pods[i] = "pod " + pods[i]
	}
	return pods
}
