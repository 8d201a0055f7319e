package docker

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/runtime/job"
)

// arm64Image makes sure the arm64 test image is there and that this host
// runs arm64 programs in a container (natively, or by binfmt_misc under
// qemu-user-static, whose F flag makes it work in any mount namespace),
// and returns the image; it skips otherwise, unless CCRUN_REQUIRE_ARM64=1
// (CI sets all of it up).
func arm64Image(t testing.TB) string {
	t.Helper()
	if skipReason != "" {
		t.Skip("no docker engine (set CCRUN_REQUIRE_DOCKER=1 to fail instead): " + skipReason)
	}
	skip := func(why string) {
		t.Helper()
		if os.Getenv("CCRUN_REQUIRE_ARM64") == "1" {
			t.Fatal("CCRUN_REQUIRE_ARM64=1: " + why)
		}
		t.Skip(why + " (set CCRUN_REQUIRE_ARM64=1 to fail instead)")
	}
	if runtime.GOARCH != "arm64" {
		if b, err := os.ReadFile("/proc/sys/fs/binfmt_misc/qemu-aarch64"); err != nil || !strings.HasPrefix(string(b), "enabled\n") {
			skip("arm64 programs do not run here: apt-get install qemu-user-static binfmt-support; mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; update-binfmts --enable qemu-aarch64")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testimage.EnsureArm64(ctx); err != nil {
		skip("no arm64 test image: " + err.Error())
	}
	return testimage.Arm64
}

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

// TestArm64Engine: an engine that runs arm64 (here an arm64 container
// under emulation, once taken to be arm64's as an arm64 machine's engine
// would say) runs pooled calls end to end through arm64's once — the
// handshake, stdin, both streams, the exit status, the environment,
// PATH — and cold ones through it too; and this amd64 engine serves an
// arm64 image pooled, with its own once.
func TestArm64Engine(t *testing.T) {
	img := arm64Image(t)
	for _, tc := range []struct {
		name, machine, arch string
	}{
		{"an arm64 engine", "aarch64", "arm64"},
		{"this engine, an arm64 image", "", goArch(runtime.GOARCH)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			if tc.machine != "" {
				opts = append(opts, withEngineArch(tc.machine))
			}
			e := executor(t, opts...)
			t.Cleanup(func() { e.DrainPool(context.Background()) })
			s := Spec{Image: img, Cmd: []string{"busybox", "uname", "-m"}, Env: []string{"A=b"}}
			if _, prog := keyOf(t, e, s); !strings.HasPrefix(filepath.Base(prog), "once-"+tc.arch+"-") {
				t.Fatalf("once's file %s, want %s's", prog, tc.arch)
			}
			res := runWarm(t, e, s)
			if got := string(res.Stdout); got != "aarch64\n" || !res.OK() || res.Detail != "" {
				t.Errorf("uname -m, pooled: %s %d %q, stdout %q; want aarch64", res.Reason, res.ExitCode, res.Detail, got)
			}
			served := e.onceRuns.Load()
			s = Spec{Image: img, Cmd: []string{"/bin/busybox", "sh", "-c", `cat; echo "$A" >&2; exit 3`}, Env: []string{"A=b"},
				Streams: job.Streams{Stdin: strings.NewReader("in\n")}}
			res = runWarm(t, e, s)
			if string(res.Stdout) != "in\n" || string(res.Stderr) != "b\n" || res.ExitCode != 3 {
				t.Errorf("pooled: exit %d, stdout %q, stderr %q; want 3, %q, %q", res.ExitCode, res.Stdout, res.Stderr, "in\n", "b\n")
			}
			if e.onceRuns.Load() != served+1 {
				t.Error("once did not serve the pooled run")
			}
			s.Pool, s.Streams.Stdin = false, strings.NewReader("cold\n")
			res = run(t, e, s)
			if string(res.Stdout) != "cold\n" || res.ExitCode != 3 || e.onceRuns.Load() != served+2 {
				t.Errorf("cold: exit %d, stdout %q, %d runs served by once; want 3, %q, %d", res.ExitCode, res.Stdout, e.onceRuns.Load(), "cold\n", served+2)
			}
		})
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
