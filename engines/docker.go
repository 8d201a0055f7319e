package engines

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/backend/dockerenv"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/kube"
)

// The engines of the @docker environment: where its containers run. The
// environment (manifest, ceiling, gate, prompt) is the same on both.
const (
	EngineDocker     = "docker"     // the local Docker Engine (runtime/docker), the default
	EngineKubernetes = "kubernetes" // pods through a Kubernetes API server (runtime/kube)
)

// choice is the @docker engine chosen, and by whom.
type choice struct {
	engine string
	opts   []kube.Option // EngineKubernetes's
	from   string        // "option", the settings file that chose, or "default"
}

// WithDockerEngine chooses where @docker tools run: EngineDocker (the
// local Docker Engine) or EngineKubernetes, with opts for runtime/kube
// (namespace, context, kubeconfig, pool, pull secrets). It wins over the settings files'
// "docker" member. Only the engine changes: the same manifests, ceiling,
// grants and prompt apply. Default: the engine the managed settings file
// names, else the user's, else EngineDocker (DockerEngine). Another
// engine is an error of class ccrun.ErrInvalidCall.
func WithDockerEngine(engine string, opts ...kube.Option) Option {
	return func(c *config) error {
		switch engine {
		case "", EngineDocker:
			c.choice = &choice{engine: EngineDocker, from: "option"}
		case EngineKubernetes:
			c.choice = &choice{engine: EngineKubernetes, opts: opts, from: "option"}
		default:
			return fmt.Errorf("@docker engine %q: want docker or kubernetes: %w", engine, ccrun.ErrInvalidCall)
		}
		return nil
	}
}

// DockerEngine says which engine the @docker calls of rt use, given
// Docker (or All) with opts, and why: "option" (WithDockerEngine), the
// settings file that chose it (the managed policy's "docker" member, else
// the user config's, as rt read them: ccrun.Runtime.SettingsFiles), or
// "default" (EngineDocker). It is what the backend does when it starts.
func DockerEngine(rt *ccrun.Runtime, opts ...Option) (engine, from string, err error) {
	c, err := newConfig(opts)
	if err != nil {
		return "", "", err
	}
	ch, err := c.engine(rt)
	if err != nil {
		return "", "", err
	}
	return ch.engine, ch.from, nil
}

// DefaultDockerEngine is the @docker engine a Runtime without
// WithDockerEngine would use, read from the files now: the one the
// managed settings file's "docker" member names, else the user's, else
// EngineDocker. from names the file ("default" when none chose); opts are
// its runtime/kube options. It is for a program that visits the engine
// without a Runtime (ccrun gc, ccrun doctor).
func DefaultDockerEngine() (engine, from string, opts []kube.Option, err error) {
	ch, err := (&config{}).engine(nil)
	if err != nil {
		return "", "", nil, err
	}
	return ch.engine, ch.from, ch.opts, nil
}

// start starts the @docker engine of rt (engine).
func (c *config) start(ctx context.Context, rt *ccrun.Runtime) (dockerenv.Engine, error) {
	ch, err := c.engine(rt)
	if err != nil {
		return nil, fmt.Errorf("@docker: %w", err)
	}
	if ch.engine == EngineKubernetes {
		return dockerenv.Kubernetes(ctx, ch.opts...)
	}
	return dockerenv.Docker(ctx, c.docker...)
}

// engine is the engine WithDockerEngine chose, else the one the managed
// settings file names, else the user's, else the local engine. A project
// file cannot choose it (permission refuses the member there): where a
// tool runs is the person's, or the administrator's, decision. rt nil:
// the files are read now.
func (c *config) engine(rt *ccrun.Runtime) (*choice, error) {
	if c.choice != nil {
		return c.choice, nil
	}
	for _, f := range dockerFiles(rt) {
		d, err := f.read()
		if err != nil {
			return nil, err
		}
		if d == nil {
			continue
		}
		switch d.Engine {
		case "", EngineDocker:
			return &choice{engine: EngineDocker, from: f.path}, nil
		case EngineKubernetes:
			return &choice{engine: EngineKubernetes, opts: KubeOptions(*d), from: f.path}, nil
		default: // permission's parser refused it already
			return nil, fmt.Errorf("%s: docker.engine %q: want docker or kubernetes: %w", f.path, d.Engine, ccrun.ErrInvalidConfig)
		}
	}
	return &choice{engine: EngineDocker, from: "default"}, nil
}

// KubeOptions are the runtime/kube options the "docker" member of a
// settings file names: its namespace, context, kubeconfig, pool and pull
// secrets.
func KubeOptions(d permission.DockerSettings) []kube.Option {
	var o []kube.Option
	if d.Namespace != "" {
		o = append(o, kube.WithNamespace(d.Namespace))
	}
	if d.Context != "" {
		o = append(o, kube.WithContext(d.Context))
	}
	if d.Kubeconfig != "" {
		o = append(o, kube.WithKubeconfig(d.Kubeconfig))
	}
	if d.Pool > 0 {
		o = append(o, kube.WithPool(d.Pool))
	}
	if len(d.PullSecrets) > 0 {
		o = append(o, kube.WithPullSecrets(d.PullSecrets...))
	}
	return o
}

// dockerFile is where the "docker" member is read from: a settings layer
// a Runtime loaded (so that the file is read once), or a file, read as
// that layer would be (permission.LoadSettings: the one, strict, reading
// of the member).
type dockerFile struct {
	path   string
	origin permission.Origin
	layer  *permission.Settings // nil: read path
}

// read returns the member; nil when the file or the member is absent.
func (f dockerFile) read() (*permission.DockerSettings, error) {
	if f.layer != nil {
		return f.layer.Docker, nil
	}
	if f.path == "" {
		return nil, nil
	}
	s, err := permission.LoadSettings(f.path, f.origin)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.Docker, nil
}

// dockerFiles is where the engine may be chosen, in order: the managed
// policy, then the user config: the layers rt loaded (a file absent is no
// layer), or with no rt the files.
func dockerFiles(rt *ccrun.Runtime) []dockerFile {
	if rt == nil {
		loc := permission.DefaultLocations("")
		return []dockerFile{{path: loc.Managed, origin: permission.OriginManaged}, {path: loc.User, origin: permission.OriginUser}}
	}
	files := rt.SettingsFiles()
	var out []dockerFile
	for _, origin := range []permission.Origin{permission.OriginManaged, permission.OriginUser} {
		for _, s := range files {
			if s.Origin == origin {
				out = append(out, dockerFile{path: s.Name, origin: origin, layer: s})
			}
		}
	}
	return out
}
