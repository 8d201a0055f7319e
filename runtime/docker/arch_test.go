package docker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineArch: the once an Executor uses is the engine's, as its Info
// says, whatever ccrun runs on.
func TestEngineArch(t *testing.T) {
	e := executor(t)
	info, err := e.eng.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := e.onceFile()
	if want := goArch(info.Architecture); want == "" {
		if err == nil {
			t.Errorf("a once (%s) for an engine of %s", prog, info.Architecture)
		}
	} else if err != nil || !strings.HasPrefix(filepath.Base(prog), "once-"+want+"-") {
		t.Errorf("once for an engine of %s: %s, %v; want once-%s", info.Architecture, prog, err, want)
	}
}

// TestUnknownEngineArch: on an engine of an architecture once is not
// built for, a pooled run runs cold, and its Result says so; a cold run
// has nothing to say.
func TestUnknownEngineArch(t *testing.T) {
	e := executor(t, withEngineArch("s390x"))
	t.Cleanup(func() { e.DrainPool(context.Background()) })
	res := run(t, e, Spec{Image: testImage, Cmd: sh("echo hi"), Pool: true})
	if string(res.Stdout) != "hi\n" || !res.OK() {
		t.Fatalf("pooled run: %s %d, stdout %q", res.Reason, res.ExitCode, res.Stdout)
	}
	if e.pooledRuns.Load() != 0 || e.onceRuns.Load() != 0 {
		t.Errorf("%d pooled runs, %d by once, on an engine once does not run on", e.pooledRuns.Load(), e.onceRuns.Load())
	}
	if !strings.Contains(res.Detail, "not pooled") || !strings.Contains(res.Detail, `"s390x"`) {
		t.Errorf("Detail %q does not say why the pooled run ran cold", res.Detail)
	}
	if res := run(t, e, Spec{Image: testImage, Cmd: sh("echo hi")}); res.Detail != "" {
		t.Errorf("a cold run says %q", res.Detail)
	}
}
