package docker

import (
	"context"
	"io"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
)

// engine is every Docker Engine call this package makes, and nothing more.
// dockerClient implements it with github.com/docker/docker/client (frozen
// at v28); moving to its successor, github.com/moby/moby/client, means
// changing this file and the few type names it mentions, not the executor.
type engine interface {
	Ping(ctx context.Context) (types.Ping, error)
	NegotiateAPIVersionPing(ping types.Ping)
	DaemonHost() string
	ClientVersion() string
	Info(ctx context.Context) (system.Info, error)

	ContainerCreate(ctx context.Context, config *container.Config, host *container.HostConfig, name string) (container.CreateResponse, error)
	ContainerAttach(ctx context.Context, id string, options container.AttachOptions) (types.HijackedResponse, error)
	ContainerWait(ctx context.Context, id string, condition container.WaitCondition) (<-chan container.WaitResponse, <-chan error)
	ContainerStart(ctx context.Context, id string, options container.StartOptions) error
	ContainerKill(ctx context.Context, id, signal string) error
	ContainerRemove(ctx context.Context, id string, options container.RemoveOptions) error
	ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerRename(ctx context.Context, id, name string) error
	ContainerExecCreate(ctx context.Context, id string, options container.ExecOptions) (container.ExecCreateResponse, error)
	ContainerExecAttach(ctx context.Context, execID string, options container.ExecAttachOptions) (types.HijackedResponse, error)
	ContainerExecInspect(ctx context.Context, execID string) (container.ExecInspect, error)
	Events(ctx context.Context, options events.ListOptions) (<-chan events.Message, <-chan error)

	NetworkCreate(ctx context.Context, name string, options network.CreateOptions) (network.CreateResponse, error)
	NetworkRemove(ctx context.Context, id string) error
	NetworkList(ctx context.Context, options network.ListOptions) ([]network.Summary, error)

	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImagePull(ctx context.Context, ref string, options image.PullOptions) (io.ReadCloser, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)

	Close() error
}

// dockerClient is the engine of github.com/docker/docker/client.
type dockerClient struct{ *client.Client }

var _ engine = dockerClient{}

// ContainerCreate creates a container with no networking configuration
// beyond the HostConfig's mode, for the native platform.
func (c dockerClient) ContainerCreate(ctx context.Context, config *container.Config, host *container.HostConfig, name string) (container.CreateResponse, error) {
	return c.Client.ContainerCreate(ctx, config, host, nil, nil, name)
}
