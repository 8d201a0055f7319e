package ccrun_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/runtime/kube"
)

// kubeOrSkip returns the options that run @docker on the test cluster
// (CCRUN_K8S_KUBECONFIG, printed by make test-cluster), or skips without
// one unless CCRUN_REQUIRE_K8S=1, which makes that a failure.
func kubeOrSkip(t *testing.T) []engines.Option {
	t.Helper()
	kc := os.Getenv("CCRUN_K8S_KUBECONFIG")
	if kc == "" {
		if os.Getenv("CCRUN_REQUIRE_K8S") == "1" {
			t.Fatal("CCRUN_REQUIRE_K8S=1 and no CCRUN_K8S_KUBECONFIG: make test-cluster")
		}
		t.Skip("no Kubernetes cluster (make test-cluster; CCRUN_REQUIRE_K8S=1 fails instead)")
	}
	return []engines.Option{engines.WithDockerEngine(engines.EngineKubernetes, kube.WithKubeconfig(kc), kube.WithNamespace("default"))}
}

// TestKubeGrantBoundToImage: on Kubernetes too a grant is bound to the
// image (its digest as the nodes report it), not its tag: once the tag
// names another image on the nodes, the same call is asked about again.
func TestKubeGrantBoundToImage(t *testing.T) {
	engine := kubeOrSkip(t)
	script := os.Getenv("CCRUN_K8S_CLUSTER")
	if script == "" {
		script = "testdata/k8s/cluster.sh"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const tag = "ccrun-test:kube-moved"
	load := func(id string) {
		t.Helper()
		if err := testimage.Tag(ctx, id, tag); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.CommandContext(ctx, script, "load", tag).CombinedOutput(); err != nil {
			t.Fatalf("load %s: %v %s", tag, err, b)
		}
	}
	if err := testimage.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := testimage.Variant(ctx, tag+"-a", "LABEL ccrun.kube.variant=a")
	if err != nil {
		t.Fatal(err)
	}
	second, err := testimage.Variant(ctx, tag+"-b", "LABEL ccrun.kube.variant=b")
	if err != nil {
		t.Fatal(err)
	}
	defer testimage.Remove(context.Background(), tag, tag+"-a", tag+"-b")
	load(first)

	var asked atomic.Int32
	var mu sync.Mutex
	var shown []string
	rt, err := ccrun.New(append(engines.All(engine...), ccrun.WithProjectDir(t.TempDir()), ccrun.WithApprover(permission.ApproverFunc(
		func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
			asked.Add(1)
			mu.Lock()
			shown = append(shown, p.Request.Display)
			mu.Unlock()
			return ceiling.AlwaysThisSession, nil
		})))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if engine, _, _ := engines.DockerEngine(rt, engine...); engine != engines.EngineKubernetes {
		t.Fatalf("engine %s", engine)
	}
	call := func() {
		t.Helper()
		out, err := rt.Exec(ctx, &ccrun.Call{Image: tag, Args: []string{"/bin/busybox", "true"}})
		if err != nil {
			t.Fatal(err)
		}
		if !out.Result.OK() {
			t.Fatalf("%+v", out.Result)
		}
	}
	// The nodes report an image within their status period.
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(time.Second) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
		}
	}
	e, err := kube.New(ctx, kube.WithKubeconfig(os.Getenv("CCRUN_K8S_KUBECONFIG")), kube.WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var d1 string
	waitFor("the nodes report "+tag, func() bool { d1, err = e.Resolve(ctx, tag, kube.PullNever); return err == nil })
	call()
	call()
	if asked.Load() != 1 {
		t.Fatalf("asked %d times for one image, want 1", asked.Load())
	}
	if !strings.Contains(shown[0], d1) {
		t.Errorf("the prompt does not show the digest %s: %q", d1, shown[0])
	}
	load(second)
	waitFor("the nodes report the moved tag", func() bool { d, err := e.Resolve(ctx, tag, kube.PullNever); return err == nil && d != d1 })
	call()
	if asked.Load() != 2 {
		t.Errorf("asked %d times after the tag moved, want 2", asked.Load())
	}
}
