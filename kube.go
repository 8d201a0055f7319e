//go:build !ccrunfront

package ccrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

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

// DockerSettings is the "docker" member of a managed or user settings
// file: {"docker": {"engine": "kubernetes", "namespace": "ccrun",
// "context": "…", "kubeconfig": "…", "pool": 4}}.
type DockerSettings struct {
	Engine     string `json:"engine"`
	Namespace  string `json:"namespace,omitempty"`
	Context    string `json:"context,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Pool       int    `json:"pool,omitempty"`
}

// Options are the runtime/kube options these settings name.
func (d DockerSettings) Options() []kube.Option {
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
		d, ok, err := f.read()
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		path := f.path
		switch d.Engine {
		case "", EngineDocker:
			return &kubeConfig{engine: EngineDocker, from: path}, nil
		case EngineKubernetes:
			return &kubeConfig{engine: EngineKubernetes, opts: d.Options(), from: path}, nil
		default:
			return nil, fmt.Errorf("%s: docker.engine %q: want docker or kubernetes: %w", path, d.Engine, permission.ErrInvalidConfig)
		}
	}
	return &kubeConfig{engine: EngineDocker, from: "default"}, nil
}

// dockerFile is where the "docker" member is read from: a settings layer
// the Runtime loaded (so that the file is read once), or a file.
type dockerFile struct {
	path  string
	layer *permission.Settings // nil: read path
}

func (f dockerFile) read() (DockerSettings, bool, error) {
	if f.layer == nil {
		return readDockerSettings(f.path)
	}
	if f.layer.Docker == nil {
		return DockerSettings{}, false, nil
	}
	var d DockerSettings
	if err := json.Unmarshal(f.layer.Docker, &d); err != nil {
		return DockerSettings{}, false, fmt.Errorf("%s: %v: %w", f.path, err, permission.ErrInvalidConfig)
	}
	return d, true, nil
}

// dockerSettings is where the engine may be chosen, in order: the managed
// policy, then the user config: the layers loadFiles read when there are
// (a file absent is no layer), else the files.
func (r *Runtime) dockerSettings() []dockerFile {
	loc := permission.DefaultLocations(r.dir)
	if r.files == nil {
		return []dockerFile{{path: loc.Managed}, {path: loc.User}}
	}
	var out []dockerFile
	for _, origin := range []permission.Origin{permission.OriginManaged, permission.OriginUser} {
		for _, s := range r.files {
			if s.Origin == origin {
				out = append(out, dockerFile{path: s.Name, layer: s})
			}
		}
	}
	return out
}

// readDockerSettings reads the "docker" member of a settings file; ok
// false when the file or the member is absent.
func readDockerSettings(path string) (DockerSettings, bool, error) {
	if path == "" {
		return DockerSettings{}, false, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DockerSettings{}, false, nil
	} else if err != nil {
		return DockerSettings{}, false, err
	}
	var top struct {
		Docker *DockerSettings `json:"docker"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return DockerSettings{}, false, fmt.Errorf("%s: %v: %w", path, err, permission.ErrInvalidConfig)
	}
	if top.Docker == nil {
		return DockerSettings{}, false, nil
	}
	return *top.Docker, true, nil
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
