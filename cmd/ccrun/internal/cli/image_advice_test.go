package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/housekeep"
	"github.com/ccrun/ccrun/internal/testimage"
)

// TestImageNotFoundAdvice: an image the engine does not have, on `ccrun
// exec --docker` and on a @docker capability, is a usage error (exit 64)
// whose one line names the image and ends with the command that gets it:
// `make testimage` for ccrun's test images, `docker pull IMAGE` otherwise.
func TestImageNotFoundAdvice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := housekeep.DockerHost(ctx); err != nil {
		testimage.NoEngine(t, err)
	}
	t.Setenv("CCRUN_SESSION_DIR", t.TempDir())
	dir := t.TempDir()
	capability := func(name, image string) string {
		return `{"name": "` + name + `", "description": "runs ` + image + `", "environment": "@docker",
  "entry": {"image": "` + image + `", "command": ["/bin/busybox", "true"]}}`
	}
	writeFiles(t, dir, map[string]string{
		// .invalid never resolves: the pull fails at once, with or without a network.
		".ccrun/capabilities/elsewhere/capability.json": capability("elsewhere", "registry.invalid/team/tool:1"),
		".ccrun/capabilities/testimg/capability.json":   capability("testimg", "ccrun-test:ccrun-no-such-tag"),
	})
	for _, tc := range []struct {
		name  string
		args  []string
		image string
		want  string
	}{
		{"exec --docker", []string{"exec", "--approve", "once", "--pull", "never", "--docker", "alpine:ccrun-no-such-tag", "--", "true"},
			"alpine:ccrun-no-such-tag", "get it with `docker pull alpine:ccrun-no-such-tag`"},
		{"exec --docker a test image", []string{"exec", "--approve", "once", "--pull", "never", "--docker", "ccrun-test:ccrun-no-such-tag", "--", "true"},
			"ccrun-test:ccrun-no-such-tag", "build it from ccrun's source tree with `make testimage`"},
		{"@docker capability", []string{"exec", "--approve", "once", "elsewhere"},
			"registry.invalid/team/tool:1", "get it with `docker pull registry.invalid/team/tool:1` (after `docker login` when its registry wants one)"},
		{"@docker capability of a test image", []string{"exec", "--approve", "once", "testimg"},
			"ccrun-test:ccrun-no-such-tag", "build it from ccrun's source tree with `make testimage`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := ccrunIn(t, dir, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d; want %d (stderr %q)", code, exitUsage, stderr)
			}
			line := strings.TrimSpace(stderr)
			if strings.Count(line, "\n") != 0 || !strings.HasPrefix(line, "ccrun: docker: image "+tc.image+" not found locally") {
				t.Errorf("stderr %q: want one line naming the image", stderr)
			}
			if i := strings.LastIndex(line, "): "); i < 0 || !strings.Contains(line[i:], tc.want) {
				t.Errorf("stderr %q: want it to end with %q", stderr, tc.want)
			}
		})
	}
}
