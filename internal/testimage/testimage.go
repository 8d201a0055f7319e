// Package testimage builds the Docker image the tests run, ccrun-test:busybox:
// FROM scratch with the host's static busybox (Debian: busybox-static), from
// testdata/docker/Dockerfile. There is no registry to pull from, so tests
// build it through the Engine API when it is missing. Arm64 is its arm64
// twin (platform linux/arm64), for the tests of an arm64 engine, run here
// under emulation (qemu-user-static, binfmt_misc).
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
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Name is the test image's reference.
const Name = "ccrun-test:busybox"

// Need makes sure Name exists (Ensure, given three minutes), or ends t as
// NoEngine does.
func Need(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := Ensure(ctx); err != nil {
		NoEngine(t, err)
	}
}

// NoEngine ends t for err, a Docker Engine that does not answer or an
// image it cannot build: t is skipped, and fails instead with
// CCRUN_REQUIRE_DOCKER=1 (CI, where the engine must be there).
func NoEngine(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CCRUN_REQUIRE_DOCKER") == "1" {
		t.Fatalf("CCRUN_REQUIRE_DOCKER=1: %v", err)
	}
	t.Skipf("no docker engine (CCRUN_REQUIRE_DOCKER=1 fails instead): %v", err)
}

// Ensure makes sure Name exists on the engine DOCKER_HOST points at,
// building it when missing. An error means no engine answers or the image
// cannot be built; callers skip or fail (CCRUN_REQUIRE_DOCKER=1) on it.
func Ensure(ctx context.Context) error {
	return ensure(ctx, Name, "/bin/busybox", "")
}

// ensure builds tag from busybox for platform ("": the engine's) when
// there is no image of that name on the engine DOCKER_HOST points at.
func ensure(ctx context.Context, tag, busybox, platform string) error {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Ping(ctx); err != nil {
		return fmt.Errorf("no docker engine at %s: %w", c.DaemonHost(), err)
	}
	if _, err := c.ImageInspect(ctx, tag); err == nil {
		return nil
	} else if !errdefs.IsNotFound(err) {
		return err
	}
	_, err = buildImage(ctx, c, tag, "", busybox, platform)
	return err
}

// Arm64 is the reference of the test image for linux/arm64.
const Arm64 = "ccrun-test:busybox-arm64"

// Arm64Busybox is where Arm64's busybox is looked for
// ($CCRUN_TEST_BUSYBOX_ARM64 else this path): Debian's busybox-static for
// arm64, as .ci/run extracts it (dpkg --add-architecture arm64; apt-get
// download busybox-static:arm64; dpkg-deb -x).
const Arm64Busybox = "/usr/local/lib/ccrun-test/arm64/busybox"

// EnsureArm64 makes sure Arm64 exists on the engine DOCKER_HOST points
// at, building it when missing. An error means no engine answers, or no
// arm64 busybox is there; callers skip or fail on it.
func EnsureArm64(ctx context.Context) error {
	busybox := Arm64Busybox
	if p := os.Getenv("CCRUN_TEST_BUSYBOX_ARM64"); p != "" {
		busybox = p
	}
	return ensure(ctx, Arm64, busybox, "linux/arm64")
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
	return buildImage(ctx, c, tag, extra, "/bin/busybox", "")
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

// buildImage builds the test image of busybox for platform ("": the
// engine's), with the Dockerfile lines extra, as tag and returns its ID.
func buildImage(ctx context.Context, c *client.Client, tag, extra, busybox, platform string) (string, error) {
	_, self, _, _ := runtime.Caller(0)
	dockerfile, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "testdata", "docker", "Dockerfile"))
	if err != nil {
		return "", err
	}
	if extra != "" {
		dockerfile = append(dockerfile, "\n"+extra+"\n"...)
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return "", fmt.Errorf("the test image needs a static busybox (apt-get install busybox-static; for arm64 see Arm64Busybox): %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, dockerfile}, {"busybox", 0o755, bb}} {
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
	resp, err := c.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true, Platform: platform})
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
