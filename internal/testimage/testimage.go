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
	_, self, _, _ := runtime.Caller(0)
	dockerfile, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "testdata", "docker", "Dockerfile"))
	if err != nil {
		return err
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return fmt.Errorf("the test image needs a static busybox (apt-get install busybox-static): %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, dockerfile}, {"busybox", 0o755, busybox}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	resp, err := c.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{Name}, Remove: true, ForceRemove: true})
	if err != nil {
		return fmt.Errorf("build %s: %w", Name, err)
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
			return fmt.Errorf("build %s: %w", Name, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("build %s: %s", Name, msg.Error)
		}
	}
	_, err = c.ImageInspect(ctx, Name)
	return err
}
