package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	"github.com/google/go-cmp/cmp"
)

// fake is an engine for the error paths only: what it does not override
// panics (the embedded interface is nil).
type fake struct {
	engine
	ping   error
	create error
}

func (f *fake) Ping(context.Context) (types.Ping, error) {
	return types.Ping{APIVersion: "1.41"}, f.ping
}
func (f *fake) NegotiateAPIVersionPing(types.Ping) {}
func (f *fake) Info(context.Context) (system.Info, error) {
	return system.Info{Architecture: "x86_64"}, nil
}
func (f *fake) DaemonHost() string { return "unix:///fake.sock" }
func (f *fake) Close() error       { return nil }
func (f *fake) ContainerCreate(context.Context, *container.Config, *container.HostConfig, string) (container.CreateResponse, error) {
	return container.CreateResponse{}, f.create
}

// ImageInspect finds no image: a cold run takes the classic path, whose
// create says what is wrong.
func (f *fake) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{}, errdefs.ErrNotFound
}

func TestNewClasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		ping error
		want error
	}{
		{"permission denied", fmt.Errorf("ping: %w", errdefs.ErrPermissionDenied), ctr.ErrRefused},
		{"unavailable", fmt.Errorf("ping: %w", errdefs.ErrUnavailable), ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(context.Background(), withEngine(&fake{ping: tc.ping}))
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrUnavailable) || errors.Is(err, errdefs.ErrPermissionDenied) {
				t.Fatalf("New = %v, want %v, of class ErrUnavailable (not the gate's ErrPermissionDenied)", err, tc.want)
			}
		})
	}
}

// TestRefused: a socket nobody listens on is ErrUnavailable, through the
// real client (client.IsErrConnectionFailed), and the message names it.
func TestRefused(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // the file stays, nobody answers
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	_, err = New(context.Background())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("New = %v, want ErrUnavailable", err)
	}
}

// TestValidate: a Spec the engine would refuse, or run wrongly, never
// reaches it.
func TestValidate(t *testing.T) {
	e, err := New(context.Background(), withEngine(&fake{create: errors.New("must not be called")}))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"no image", Spec{}},
		{"memory too small", Spec{Image: "i", Limits: job.Limits{Memory: job.MinMemory - 1}}},
		{"negative pids", Spec{Image: "i", Limits: job.Limits{Pids: -1}}},
		{"negative cpus", Spec{Image: "i", Limits: job.Limits{CPUs: -1}}},
		{"relative dir", Spec{Image: "i", Dir: "tmp"}},
		{"mount source missing", Spec{Image: "i", Mounts: []job.Mount{{Host: filepath.Join(dir, "missing"), Guest: "/in"}}}},
		{"mount source relative", Spec{Image: "i", Mounts: []job.Mount{{Host: "rel", Guest: "/in"}}}},
		{"mount guest relative", Spec{Image: "i", Mounts: []job.Mount{{Host: dir, Guest: "in"}}}},
		{"mount over root", Spec{Image: "i", Mounts: []job.Mount{{Host: dir, Guest: "/"}}}},
		{"unknown network", Spec{Image: "i", Network: "container:other"}},
		{"unknown pull policy", Spec{Image: "i", Pull: "sometimes"}},
		{"NUL in an argument", Spec{Image: "i", Cmd: []string{"/bin/sh", "-c", "true\x00LD_PRELOAD=/tmp/x.so"}}},
		{"NUL in the environment", Spec{Image: "i", Env: []string{"A=b\x00LD_PRELOAD=/tmp/x.so"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := e.Run(context.Background(), tc.spec); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Run = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

func TestCreateClasses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		create error
		want   error
	}{
		{"engine refuses the configuration", errdefs.ErrInvalidArgument, ErrInvalidArgument},
		{"image missing, never pull", errdefs.ErrNotFound, ErrNotFound},
		{"engine gone", errdefs.ErrUnavailable, ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := New(context.Background(), withEngine(&fake{create: tc.create}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Run(context.Background(), Spec{Image: "i", Pull: PullNever})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Run = %v, want class %v", err, tc.want)
			}
		})
	}
}

// TestLoosensSymlink: a mount through a symbolic link shows, and binds,
// what the link points to.
func TestLoosensSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "secret")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "data")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := Spec{Image: "i", Mounts: []job.Mount{{Host: link, Guest: "/in"}}}
	want := []string{fmt.Sprintf("mount: %s (which is %s) at /in, read-only", link, real)}
	if diff := cmp.Diff(want, s.Loosens()); diff != "" {
		t.Errorf("Loosens() mismatch (-want +got):\n%s", diff)
	}
	if _, hc := s.config(s.Limits.WithDefaults(), nil); hc.Mounts[0].Source != real {
		t.Errorf("binds %s, want %s", hc.Mounts[0].Source, real)
	}
}

func TestLoosens(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want []string
	}{
		{"defaults", Spec{Image: "i"}, nil},
		{"explicit none", Spec{Image: "i", Network: "none", User: DefaultUser}, nil},
		{"bridge", Spec{Image: "i", Network: "bridge"}, []string{"network: bridge (the program can reach other hosts)"}},
		{"host", Spec{Image: "i", Network: "host"}, []string{"network: host (the program shares the host's network, including its loopback services)"}},
		{"mounts", Spec{Image: "i", Mounts: []job.Mount{{Host: "/src", Guest: "/in"}, {Host: "/out", Guest: "/out", Writable: true}}},
			[]string{"mount: /src at /in, read-only", "mount: /out at /out, writable"}},
		{"root", Spec{Image: "i", User: "0:0"}, []string{"user: 0:0 (root inside the container, still without capabilities)"}},
		{"unlimited", Spec{Image: "i", Limits: job.Limits{Timeout: -1, Output: -1}}, []string{"timeout: none", "output: unlimited"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.spec.Loosens()); diff != "" {
				t.Errorf("Loosens() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigHardened pins the hardened defaults of the container
// configuration itself, engine or not.
func TestConfigHardened(t *testing.T) {
	s := Spec{Image: "i", Mounts: []job.Mount{{Host: "/a", Guest: "/a"}, {Host: "/b", Guest: "/b", Writable: true}}}
	lim := s.Limits.WithDefaults()
	cfg, hc := s.config(lim, nil)
	checks := []struct {
		name string
		ok   bool
	}{
		{"network none", hc.NetworkMode == "none"},
		{"read-only root", hc.ReadonlyRootfs},
		{"all capabilities dropped", cmp.Equal([]string(hc.CapDrop), []string{"ALL"}) && len(hc.CapAdd) == 0},
		{"no-new-privileges, seccomp not disabled", cmp.Equal(hc.SecurityOpt, []string{"no-new-privileges"})},
		{"not privileged", !hc.Privileged},
		{"non-root", cfg.User == DefaultUser},
		{"init", hc.Init != nil && *hc.Init},
		{"pids", hc.PidsLimit != nil && *hc.PidsLimit == job.DefaultPids},
		{"memory without swap", hc.Memory == job.DefaultMemory && hc.MemorySwap == hc.Memory},
		{"cpus", hc.NanoCPUs == int64(job.DefaultCPUs*1e9)},
		{"tmp", hc.Tmpfs["/tmp"] == "rw,nosuid,nodev,size=64m,mode=1777"},
		{"mount read-only by default", hc.Mounts[0].ReadOnly},
		{"mount writable when declared", !hc.Mounts[1].ReadOnly},
		{"no stdin unless given", !cfg.OpenStdin},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not so in %+v", c.name, hc)
		}
	}
}

func TestPullProgress(t *testing.T) {
	stream := `{"status":"Pulling from library/x","id":"latest"}
{"status":"Downloading","progressDetail":{"current":1,"total":2},"progress":"[=>  ]","id":"abc"}
{"status":"Pull complete","id":"abc"}
`
	var buf strings.Builder
	e := &Executor{pullOut: &buf}
	if err := e.progress(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "latest: Pulling from library/x\nabc: Pull complete\n"; got != want {
		t.Errorf("progress wrote %q, want %q", got, want)
	}
	failing := stream + `{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}` + "\n"
	if err := (&Executor{}).progress(strings.NewReader(failing)); err == nil {
		t.Error("a stream ending in an error gave no error")
	}
}
