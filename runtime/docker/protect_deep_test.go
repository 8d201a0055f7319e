package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
)

// TestProtectedDeepTree: a container that first makes a directory 70
// levels deep, then plants at the bottom of it and at the top, keeps
// nothing: the check after the run has no depth of the container's
// choosing past which it stops looking.
func TestProtectedDeepTree(t *testing.T) {
	e := executor(t)
	dir := newProtectTree(t)
	deep := strings.Repeat("d/", 70)
	script := "cd /w && mkdir -p " + deep + " && cd " + deep + " && mkdir -p .git/hooks && " +
		"echo evil > .envrc && echo '#!/bin/sh' > .git/hooks/pre-commit && cd /w && echo evil > sub/.envrc && " +
		"mkdir -p sub/.vscode && echo '{}' > sub/.vscode/tasks.json && echo PLANTED"
	res, err := e.Run(context.Background(), Spec{Image: testImage, Cmd: sh(script),
		Limits: job.Limits{Timeout: 60 * time.Second},
		Mounts: []job.Mount{{Host: dir, Guest: "/w", Writable: true}}})
	if err == nil && !strings.Contains(string(res.Stdout), "PLANTED") {
		t.Fatalf("the container did not plant (the test proves nothing): %+v", res)
	}
	for _, p := range []string{deep + ".envrc", deep + ".git/hooks", "sub/.envrc", "sub/.vscode"} {
		if _, serr := os.Lstat(filepath.Join(dir, p)); serr == nil {
			t.Errorf("%s remains on the host (run error %v, detail %q)", p, err, detailOf(res))
		}
	}
}

func detailOf(res *job.Result) string {
	if res == nil {
		return ""
	}
	return res.Detail
}
