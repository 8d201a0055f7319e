//go:build !ccrunfront

package ccrun

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/kube"
)

// The engines of the @docker environment: where its containers run. The
// environment (manifest, ceiling, gate, prompt) is the same on both.
const (
	EngineDocker     = "docker"     // the local Docker Engine (runtime/docker), the default
	EngineKubernetes = "kubernetes" // pods through a Kubernetes API server (runtime/kube)
)

// kubeConfig is the @docker engine chosen by WithDockerEngine or the
// settings files.
type kubeConfig struct {
	engine string
	opts   []kube.Option
	from   string // where the choice came from, for ccrun doctor
}

// kubeOptions are the runtime/kube options the "docker" member of a
// settings file names.
func kubeOptions(d *permission.DockerSettings) []kube.Option {
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
	return o
}

// WithDockerEngine chooses where @docker tools run: EngineDocker (the
// default: the local Docker Engine) or EngineKubernetes, with opts for
// runtime/kube (namespace, context, kubeconfig, pool). It wins over the
// settings files' "docker" member. Only the engine changes: the same
// manifests, ceiling, grants and prompt apply.
func WithDockerEngine(engine string, opts ...kube.Option) Option {
	return func(r *Runtime) error {
		switch engine {
		case "", EngineDocker:
			r.engines.kube = &kubeConfig{engine: EngineDocker, from: "option"}
		case EngineKubernetes:
			r.engines.kube = &kubeConfig{engine: EngineKubernetes, opts: opts, from: "option"}
		default:
			return fmt.Errorf("@docker engine %q: want docker or kubernetes: %w", engine, ErrInvalidCall)
		}
		return nil
	}
}

// DockerEngine says which engine @docker calls use and why ("option",
// or the settings file that chose it; "default").
func (r *Runtime) DockerEngine() (engine, from string, err error) {
	c, err := r.dockerEngine()
	if err != nil {
		return "", "", err
	}
	return c.engine, c.from, nil
}

// dockerEngine is the engine WithDockerEngine chose, else the one the
// managed settings file names, else the user's, else the local engine.
// A project file cannot choose it: where a tool runs is the person's, or
// the administrator's, decision.
func (r *Runtime) dockerEngine() (*kubeConfig, error) {
	if r.engines.kube != nil {
		return r.engines.kube, nil
	}
	for _, f := range r.dockerSettings() {
		d, err := f.read()
		if err != nil {
			return nil, err
		}
		if d == nil {
			continue
		}
		switch d.Engine {
		case "", EngineDocker:
			return &kubeConfig{engine: EngineDocker, from: f.path}, nil
		case EngineKubernetes:
			return &kubeConfig{engine: EngineKubernetes, opts: kubeOptions(d), from: f.path}, nil
		default: // permission's parser refused it already
			return nil, fmt.Errorf("%s: docker.engine %q: want docker or kubernetes: %w", f.path, d.Engine, permission.ErrInvalidConfig)
		}
	}
	return &kubeConfig{engine: EngineDocker, from: "default"}, nil
}

// dockerFile is where the "docker" member is read from: a settings layer
// the Runtime loaded (so that the file is read once), or a file, read as
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

// dockerSettings is where the engine may be chosen, in order: the managed
// policy, then the user config: the layers loadFiles read when there are
// (a file absent is no layer), else the files.
func (r *Runtime) dockerSettings() []dockerFile {
	loc := permission.DefaultLocations(r.dir)
	if r.files == nil {
		return []dockerFile{{path: loc.Managed, origin: permission.OriginManaged}, {path: loc.User, origin: permission.OriginUser}}
	}
	var out []dockerFile
	for _, origin := range []permission.Origin{permission.OriginManaged, permission.OriginUser} {
		for _, s := range r.files {
			if s.Origin == origin {
				out = append(out, dockerFile{path: s.Name, origin: origin, layer: s})
			}
		}
	}
	return out
}

// DefaultDockerEngine is the @docker engine a Runtime without
// WithDockerEngine would use: the one the managed settings file's
// "docker" member names, else the user's, else EngineDocker. from names
// the file ("default" when none chose); opts are its runtime/kube options.
func DefaultDockerEngine() (engine, from string, opts []kube.Option, err error) {
	c, err := (&Runtime{}).dockerEngine()
	if err != nil {
		return "", "", nil, err
	}
	return c.engine, c.from, c.opts, nil
}
