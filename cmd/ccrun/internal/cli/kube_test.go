package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/housekeep"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeCLI points the CLI at the test cluster (KUBECONFIG, as kubectl
// finds it), or skips without one unless CCRUN_REQUIRE_K8S=1.
func kubeCLI(t *testing.T) string {
	t.Helper()
	kc := os.Getenv("CCRUN_K8S_KUBECONFIG")
	if kc == "" {
		if os.Getenv("CCRUN_REQUIRE_K8S") == "1" {
			t.Fatal("CCRUN_REQUIRE_K8S=1 and no CCRUN_K8S_KUBECONFIG: make test-cluster")
		}
		t.Skip("no Kubernetes cluster (make test-cluster; CCRUN_REQUIRE_K8S=1 fails instead)")
	}
	t.Setenv("KUBECONFIG", kc)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("CCRUN_SESSION_DIR", t.TempDir())
	t.Chdir(t.TempDir())
	return kc
}

// TestKubeExec runs @docker tools through `ccrun exec --engine
// kubernetes`: the exit code, stdin, the output cap, the timeout and the
// hardening seen from inside the pod become ccrun's own output and code.
func TestKubeExec(t *testing.T) {
	kubeCLI(t)
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string
	}{
		{"exit code", []string{"sh", "-c", "exit 3"}, "", 3, ""},
		{"stdin", []string{"cat"}, "to the pod\n", 0, "to the pod\n"},
		{"hardening", []string{"sh", "-c", "id -u; grep -E 'CapEff|NoNewPrivs' /proc/self/status; touch /x 2>/dev/null || echo ro; test -e /var/run/secrets/kubernetes.io || echo no-token"}, "", 0,
			"65534\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\nro\nno-token\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"exec", "--engine", "kubernetes", "--approve", "once", "--docker", "ccrun-test:busybox", "--", "/bin/busybox"}, tc.args...)
			code := run(args, stdio{strings.NewReader(tc.stdin), &out, &errb})
			if code != tc.code || (tc.stdout != "" && out.String() != tc.stdout) {
				t.Errorf("exit %d, stdout %q (stderr %q); want %d, %q", code, out.String(), errb.String(), tc.code, tc.stdout)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := run([]string{"exec", "--engine", "kubernetes", "--approve", "once", "--timeout", "3s", "--docker", "ccrun-test:busybox", "--", "/bin/busybox", "sleep", "60"}, stdio{strings.NewReader(""), &out, &errb})
		if code != 124 {
			t.Errorf("exit %d (stderr %q), want 124", code, errb.String())
		}
	})
	t.Run("output cap", func(t *testing.T) {
		var out, errb bytes.Buffer
		run([]string{"exec", "--engine", "kubernetes", "--approve", "once", "--output", "64KiB", "--docker", "ccrun-test:busybox", "--", "/bin/busybox", "yes"}, stdio{strings.NewReader(""), &out, &errb})
		if out.Len() != 64<<10 {
			t.Errorf("stdout %d bytes, want %d (stderr %q)", out.Len(), 64<<10, errb.String())
		}
	})
}

// TestKubeGCAfterKill: a `ccrun exec --engine kubernetes` killed with
// SIGKILL mid-run leaves its pod; `ccrun gc --engine kubernetes` removes it.
func TestKubeGCAfterKill(t *testing.T) {
	kc := kubeCLI(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "exec", "--engine", "kubernetes", "--approve", "once", "--docker", "ccrun-test:busybox", "--", "/bin/busybox", "sleep", "300")
	cmd.Env = append(os.Environ(), asCCRun+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	sel := housekeep.PodOwnerLabel + "=" + strconv.Itoa(cmd.Process.Pid)
	var name string
	for deadline := time.Now().Add(time.Minute); name == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		l, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: sel})
		if err == nil && len(l.Items) > 0 {
			name = l.Items[0].Name
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if name == "" {
		t.Fatal("the killed ccrun made no pod")
	}
	var out, errb bytes.Buffer
	if code := run([]string{"gc", "--engine", "kubernetes"}, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
		t.Fatalf("gc: exit %d: %s %s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), name) {
		t.Errorf("gc did not say it removed %s: %q", name, out.String())
	}
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		t.Errorf("pod %s still there", name)
	}
}
