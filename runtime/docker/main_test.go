package docker

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
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
)

// testImage is built by TestMain from testdata/docker when it is missing.
const testImage = "ccrun-test:busybox"

// skipReason is why the tests that need an engine skip; "" when one answers.
var skipReason string

// refillEnv makes the test binary a detached refiller (TestPoolDetached).
const refillEnv = "CCRUN_DOCKER_TEST_REFILL"

func TestMain(m *testing.M) {
	if os.Getenv(refillEnv) != "" {
		os.Exit(RefillMain())
	}
	if os.Getenv(childEnv) != "" || os.Getenv(permChildEnv) != "" {
		os.Exit(m.Run()) // a child of TestGCAfterKill or TestSocketPermission: no setup
	}
	if err := setup(); err != nil {
		if os.Getenv("CCRUN_REQUIRE_DOCKER") == "1" {
			fmt.Fprintln(os.Stderr, "CCRUN_REQUIRE_DOCKER=1:", err)
			os.Exit(1)
		}
		skipReason = err.Error()
	}
	os.Exit(m.Run())
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := New(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	if _, err := e.eng.ImageInspect(ctx, testImage); err == nil {
		return nil
	} else if !isNotFound(err) {
		return err
	}
	return buildTestImage(ctx, e)
}

// buildTestImage builds testImage from testdata/docker/Dockerfile and the
// host's /bin/busybox (Debian: busybox-static).
func buildTestImage(ctx context.Context, e *Executor) error {
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "testdata", "docker", "Dockerfile"))
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
	resp, err := e.eng.ImageBuild(ctx, &buf, build.ImageBuildOptions{Tags: []string{testImage}, Remove: true, ForceRemove: true})
	if err != nil {
		return fmt.Errorf("build %s: %w", testImage, err)
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
			return fmt.Errorf("build %s: %w", testImage, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("build %s: %s", testImage, msg.Error)
		}
	}
	if _, err := e.eng.ImageInspect(ctx, testImage); err != nil {
		return fmt.Errorf("build %s: %w", testImage, err)
	}
	return nil
}

// executor gives an Executor on the engine of the environment, or skips.
func executor(t testing.TB, opts ...Option) *Executor {
	t.Helper()
	if skipReason != "" {
		t.Skip("no docker engine (set CCRUN_REQUIRE_DOCKER=1 to fail instead): " + skipReason)
	}
	e, err := New(context.Background(), append([]Option{WithPoolDir(t.TempDir())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
