// Package testimage builds the Docker image the tests run, ccrun-test:busybox:
// FROM scratch with the host's static busybox (Debian: busybox-static), from
// testdata/docker/Dockerfile. There is no registry to pull from, so tests
// build it through the Engine API when it is missing.
package testimage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Name is the test image's reference.
const Name = "ccrun-test:busybox"

// Ensure makes sure Name exists on the engine DOCKER_HOST points at,
// building it when missing. An error means no engine answers or the image
// cannot be built; callers skip or fail (CCRUN_REQUIRE_DOCKER=1) on it.
func Ensure(ctx context.Context) error {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Ping(ctx); err != nil {
		return fmt.Errorf("no docker engine at %s: %w", c.DaemonHost(), err)
	}
	if _, err := c.ImageInspect(ctx, Name); err == nil {
		return nil
	} else if !errdefs.IsNotFound(err) {
		return err
	}
	_, err = buildImage(ctx, c, Name, "")
	return err
}

// Variant builds the test image with the Dockerfile lines extra added (an
// ENV or a LABEL makes another image) and tags it tag; it returns the new
// image's ID. Remove it with Remove.
func Variant(ctx context.Context, tag, extra string) (string, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return "", err
	}
	defer c.Close()
	return buildImage(ctx, c, tag, extra)
}

// Tag makes tag name the image id.
func Tag(ctx context.Context, id, tag string) error {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer c.Close()
	return c.ImageTag(ctx, id, tag)
}

// Remove removes the tags (and the images only they name).
func Remove(ctx context.Context, tags ...string) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return
	}
	defer c.Close()
	for _, tag := range tags {
		_, _ = c.ImageRemove(ctx, tag, image.RemoveOptions{})
	}
}

// buildImage builds the test image, with the Dockerfile lines extra, as tag and
// returns its ID.
func buildImage(ctx context.Context, c *client.Client, tag, extra string) (string, error) {
	_, self, _, _ := runtime.Caller(0)
	dockerfile, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "testdata", "docker", "Dockerfile"))
	if err != nil {
		return "", err
	}
	if extra != "" {
		dockerfile = append(dockerfile, "\n"+extra+"\n"...)
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return "", fmt.Errorf("the test image needs a static busybox (apt-get install busybox-static): %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, dockerfile}, {"busybox", 0o755, busybox}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	resp, err := c.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true})
	if err != nil {
		return "", fmt.Errorf("build %s: %w", tag, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("build %s: %w", tag, err)
		}
		if msg.Error != "" {
			return "", fmt.Errorf("build %s: %s", tag, msg.Error)
		}
	}
	img, err := c.ImageInspect(ctx, tag)
	if err != nil {
		return "", err
	}
	return img.ID, nil
}
