package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The tests below run against a real cluster: the kubeconfig in
// CCRUN_K8S_KUBECONFIG (make test-cluster prints it). Without one they
// skip, unless CCRUN_REQUIRE_K8S=1, which makes that a failure (CI).
const (
	testImage     = "ccrun-test:busybox"
	testNamespace = "ccrun-test"
	busybox       = "/bin/busybox"
)

var (
	clusterOnce sync.Once
	clusterErr  error
	testRef     string // the test image, digest-pinned
)

func kubeconfig(t testing.TB) string {
	t.Helper()
	kc := os.Getenv("CCRUN_K8S_KUBECONFIG")
	if kc == "" {
		if os.Getenv("CCRUN_REQUIRE_K8S") == "1" {
			t.Fatal("CCRUN_REQUIRE_K8S=1 and no CCRUN_K8S_KUBECONFIG: start one with make test-cluster")
		}
		t.Skip("no cluster: make test-cluster, then CCRUN_K8S_KUBECONFIG=... (CCRUN_REQUIRE_K8S=1 fails instead)")
	}
	return kc
}

// clusterScript is testdata/k8s/cluster.sh, for the fault tests.
func clusterScript() string {
	if p := os.Getenv("CCRUN_K8S_CLUSTER"); p != "" {
		return p
	}
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "testdata", "k8s", "cluster.sh")
}

func clientset(t testing.TB) kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// newTest returns an Executor on the test namespace (created once), and
// the digest-pinned test image.
func newTest(t testing.TB, opts ...Option) *Executor {
	t.Helper()
	kc := kubeconfig(t)
	clusterOnce.Do(func() {
		cs := clientset(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			clusterErr = err
			return
		}
		// The namespace's default service account must exist before a pod.
		for ctx.Err() == nil {
			if _, err := cs.CoreV1().ServiceAccounts(testNamespace).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		e, err := New(ctx, WithKubeconfig(kc), WithNamespace(testNamespace))
		if err != nil {
			clusterErr = err
			return
		}
		testRef, clusterErr = e.Resolve(ctx, testImage, PullNever)
	})
	if clusterErr != nil {
		t.Fatalf("cluster: %v (is %s loaded on the nodes? testdata/k8s/cluster.sh load %s)", clusterErr, testImage, testImage)
	}
	e, err := New(context.Background(), append([]Option{WithKubeconfig(kc), WithNamespace(testNamespace)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func spec(cmd ...string) Spec {
	return Spec{Image: testRef, Cmd: append([]string{busybox}, cmd...), Pull: PullNever}
}

// ownPods lists the pods of ccrun in the test namespace.
func ownPods(t testing.TB, sel string) []corev1.Pod {
	t.Helper()
	if sel == "" {
		sel = LabelManaged + "=" + managedBy
	}
	l, err := clientset(t).CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// bothStreams writes 2 MiB to stdout and 64 KiB to stderr at once, then
// exits: neither stream's tail may be lost when the other ends first.
const bothStreams = "head -c 65536 /dev/zero | tr '\\0' y >&2 & head -c 2097152 /dev/zero | tr '\\0' x; wait"

// TestRun is the cold path's table: exit codes, stdin, output cap,
// timeout, cancel, OOM, a program that does not exist.
func TestRun(t *testing.T) {
	e := newTest(t)
	tests := []struct {
		name   string
		s      Spec
		stdin  string
		cancel time.Duration
		reason job.Reason
		code   int
		stdout string
		stderr string
	}{
		{name: "exit 0", s: spec("true"), reason: job.Exit},
		{name: "exit 3", s: spec("sh", "-c", "exit 3"), reason: job.Exit, code: 3},
		{name: "stdout and stderr apart", s: spec("sh", "-c", "echo out; echo err >&2"), reason: job.Exit, stdout: "out\n", stderr: "err\n"},
		{name: "stdin", s: spec("cat"), stdin: "hello\nworld\n", reason: job.Exit, stdout: "hello\nworld\n"},
		{name: "no stdin is EOF", s: spec("cat"), reason: job.Exit},
		{name: "output at exit not missed", s: spec("sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x"), reason: job.Exit, stdout: strings.Repeat("x", 1<<20)},
		{name: "both streams whole at exit", s: spec("sh", "-c", bothStreams), reason: job.Exit, stdout: strings.Repeat("x", 2<<20), stderr: strings.Repeat("y", 64<<10)},
		{name: "env", s: func() Spec { s := spec("sh", "-c", "echo $A"); s.Env = []string{"A=b c"}; return s }(), reason: job.Exit, stdout: "b c\n"},
		{name: "working dir", s: func() Spec { s := spec("pwd"); s.Dir = "/tmp"; return s }(), reason: job.Exit, stdout: "/tmp\n"},
		{name: "output cap", s: func() Spec { s := spec("yes"); s.Limits.Output = 64 << 10; return s }(), reason: job.OutputCap, code: job.KilledExitCode},
		{name: "timeout", s: func() Spec { s := spec("sleep", "60"); s.Limits.Timeout = 2 * time.Second; return s }(), reason: job.Timeout, code: job.TimeoutExit},
		{name: "timeout before the start", s: func() Spec { s := spec("true"); s.Limits.Timeout = time.Millisecond; return s }(), reason: job.Timeout, code: job.TimeoutExit},
		{name: "cancel", s: spec("sleep", "60"), cancel: 5 * time.Second, reason: job.Cancelled, code: job.KilledExitCode},
		{name: "oom", s: func() Spec {
			s := spec("sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo $x | head -c 1")
			s.Limits.Memory = 32 << 20
			return s
		}(), reason: job.Memory, code: job.KilledExitCode},
		{name: "program not found", s: Spec{Image: "", Cmd: []string{"/nonexistent"}}, reason: job.Exit, code: 127, stderr: "ccrun: exec /nonexistent: no such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.s.Image == "" {
				tc.s.Image, tc.s.Pull = testRef, PullNever
			}
			if tc.stdin != "" {
				tc.s.Streams.Stdin = strings.NewReader(tc.stdin)
			}
			ctx := context.Background()
			if tc.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.cancel)
				defer cancel()
			}
			r, err := e.Run(ctx, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if r.Reason != tc.reason || r.ExitCode != tc.code {
				t.Fatalf("reason %s, exit %d; want %s, %d (detail %q, stderr %q)", r.Reason, r.ExitCode, tc.reason, tc.code, r.Detail, r.Stderr)
			}
			if tc.stdout != "" && string(r.Stdout) != tc.stdout {
				t.Errorf("stdout %d bytes %.40q, want %d bytes %.40q", len(r.Stdout), r.Stdout, len(tc.stdout), tc.stdout)
			}
			if tc.stderr != "" && string(r.Stderr) != tc.stderr {
				t.Errorf("stderr %d bytes %.40q, want %d bytes %.40q", len(r.Stderr), r.Stderr, len(tc.stderr), tc.stderr)
			}
			if tc.reason == job.OutputCap && (!r.Truncated || len(r.Stdout) != 64<<10) {
				t.Errorf("truncated %v, %d bytes", r.Truncated, len(r.Stdout))
			}
		})
	}
	t.Cleanup(func() {
		// Every pod of the table deleted: timeout, cancel and cap at once.
		if pods := ownPods(t, fmt.Sprintf("%s=%s,!%s,%s=%d", LabelManaged, managedBy, LabelTemplate, LabelPID, os.Getpid())); len(pods) != 0 {
			var left []string
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					left = append(left, p.Name)
				}
			}
			if len(left) > 0 {
				t.Errorf("pods left: %v", left)
			}
		}
	})
}

// TestHardened checks the hardening from inside the pod.
func TestHardened(t *testing.T) {
	e := newTest(t)
	tests := []struct {
		name, script, want string
	}{
		{"uid and gid", "id -u; id -g", "65534\n65534\n"},
		{"no effective capabilities", "grep CapEff /proc/self/status", "CapEff:\t0000000000000000\n"},
		{"no permitted capabilities", "grep CapPrm /proc/self/status", "CapPrm:\t0000000000000000\n"},
		{"no bounding capabilities", "grep CapBnd /proc/self/status", "CapBnd:\t0000000000000000\n"},
		{"no new privileges", "grep NoNewPrivs /proc/self/status", "NoNewPrivs:\t1\n"},
		{"seccomp filter on", "grep '^Seccomp:' /proc/self/status", "Seccomp:\t2\n"},
		{"root read-only", "touch /x 2>/dev/null && echo wrote || echo ro", "ro\n"},
		{"bin read-only", "touch /bin/x 2>/dev/null && echo wrote || echo ro", "ro\n"},
		{"helpers read-only", "touch /.ccrun/once 2>/dev/null && echo wrote || echo ro", "ro\n"},
		{"no service-account token", "ls /var/run/secrets/kubernetes.io/serviceaccount 2>/dev/null || echo none", "none\n"},
		// The kubelet always adds KUBERNETES_SERVICE_*; enableServiceLinks
		// false keeps out every other service's.
		{"no service links", "env | grep _SERVICE_HOST | grep -vc ^KUBERNETES_ || true", "0\n"},
		{"tmp writable", "echo x > /tmp/f && cat /tmp/f", "x\n"},
		{"tmp on tmpfs, capped", "df -k /tmp | tail -1 | awk '{print $1, $2}'", "tmpfs 65536\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := e.Run(context.Background(), spec("sh", "-c", tc.script))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && string(r.Stdout) != tc.want {
				t.Errorf("got %q (stderr %q), want %q", r.Stdout, r.Stderr, tc.want)
			}
			if tc.want == "" {
				t.Logf("%s: %q", tc.name, r.Stdout)
			}
		})
	}
	t.Run("deny-all policy selects the pod", func(t *testing.T) {
		np, err := clientset(t).NetworkingV1().NetworkPolicies(testNamespace).Get(context.Background(), denyAllPolicy, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if np.Spec.PodSelector.MatchLabels[LabelNetwork] != "none" || len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
			t.Errorf("%+v", np.Spec)
		}
	})
}

// TestMounts: a read-only mount is copied in and stays read-only; a
// writable one comes back, less the protected paths (the implant table).
func TestMounts(t *testing.T) {
	e := newTest(t)
	ro, rw := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ro, "in.txt"), []byte("from the host\n"), 0o644)
	os.MkdirAll(filepath.Join(rw, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(rw, ".git", "config"), []byte("orig"), 0o644)
	os.WriteFile(filepath.Join(rw, "old.txt"), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(rw, "gone.txt"), []byte("gone"), 0o644)
	s := spec("sh", "-c", `cat /in/in.txt; touch /in/x 2>/dev/null && echo ro-writable;
echo new > /out/new.txt; echo changed > /out/old.txt; rm /out/gone.txt
echo evil > /out/.git/hooks/pre-commit; echo evil > /out/.git/config; echo evil > /out/.envrc
ln -s /etc /out/link; mkdir -p /out/sub/deep; echo d > /out/sub/deep/f`)
	s.Mounts = []job.Mount{{Host: ro, Guest: "/in"}, {Host: rw, Guest: "/out", Writable: true}}
	r, err := e.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || string(r.Stdout) != "from the host\n" {
		t.Fatalf("%s %d stdout %q stderr %q detail %q", r.Reason, r.ExitCode, r.Stdout, r.Stderr, r.Detail)
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(rw, p)); return string(b) }
	for p, want := range map[string]string{"new.txt": "new\n", "old.txt": "changed\n", "sub/deep/f": "d\n", ".git/config": "orig", ".git/hooks/pre-commit": "", ".envrc": "", "gone.txt": ""} {
		if got := read(p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(rw, "link")); err != nil || l != "/etc" {
		t.Errorf("link: %q %v", l, err)
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git/config", ".envrc"} {
		if !strings.Contains(r.Detail, p) {
			t.Errorf("detail %q does not name %s", r.Detail, p)
		}
	}
	if _, err := os.Stat(filepath.Join(ro, "x")); err == nil {
		t.Error("the read-only mount changed on the host")
	}
}

// TestGCAfterKill: a ccrun killed with SIGKILL mid-run leaves its pod;
// GC removes it, and only pods of ccrun whose owner is gone.
func TestGCAfterKill(t *testing.T) {
	if os.Getenv("CCRUN_KUBE_GC_CHILD") == "1" {
		e := newTest(t)
		e.Run(context.Background(), spec("sleep", "300"))
		return
	}
	e := newTest(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestGCAfterKill$", "-test.v")
	cmd.Env = append(os.Environ(), "CCRUN_KUBE_GC_CHILD=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sel := fmt.Sprintf("%s=%s,%s=%d", LabelManaged, managedBy, LabelPID, cmd.Process.Pid)
	deadline := time.Now().Add(60 * time.Second)
	for len(ownPods(t, sel)) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if len(ownPods(t, sel)) == 0 {
		cmd.Process.Kill()
		t.Fatal("the child made no pod")
	}
	before := ownPods(t, sel)
	// A pod of another owner that is not ccrun's: GC leaves it.
	cs := clientset(t)
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-ccrun-" + randHex(3), Labels: map[string]string{LabelPID: fmt.Sprint(cmd.Process.Pid)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: testRef, Command: []string{"/nonexistent"}, ImagePullPolicy: corev1.PullNever}}}}
	if _, err := cs.CoreV1().Pods(testNamespace).Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cs.CoreV1().Pods(testNamespace).Delete(context.Background(), other.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	cmd.Process.Kill()
	cmd.Wait()
	listed, err := e.Garbage(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range before {
		if !slices.Contains(listed, p.Name) {
			t.Errorf("Garbage listed %v, not the child's pod %s", listed, p.Name)
		}
	}
	gone, err := e.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range before {
		if !slices.Contains(gone, p.Name) {
			t.Errorf("GC removed %v, not the child's pod %s", gone, p.Name)
		}
	}
	for _, p := range ownPods(t, sel) {
		if p.DeletionTimestamp == nil {
			t.Errorf("left: %s", p.Name)
		}
	}
	if _, err := cs.CoreV1().Pods(testNamespace).Get(context.Background(), other.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("GC touched a pod that is not ccrun's: %v", err)
	}
}

// TestPool: 32 concurrent calls against a pool of 4 on two nodes: every
// call in a pod of its own (none used twice), the pool refilled after.
func TestPool(t *testing.T) {
	e := newTest(t, WithPool(4))
	s := spec("sh", "-c", "cat /proc/sys/kernel/hostname; test ! -e /tmp/used && touch /tmp/used")
	s.Pool = true
	s.Limits.Memory = 32 << 20
	s.Limits.CPUs = 0.2
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.Warm(ctx, s); err != nil {
		t.Fatal(err)
	}
	const n = 32
	var mu sync.Mutex
	hosts := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.Run(ctx, s)
			if err != nil {
				t.Error(err)
				return
			}
			if !r.OK() {
				t.Errorf("%s %d %q %q", r.Reason, r.ExitCode, r.Stdout, r.Stderr)
				return
			}
			mu.Lock()
			hosts[strings.TrimSpace(string(r.Stdout))]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	for h, c := range hosts {
		if c != 1 {
			t.Errorf("pod %s served %d calls", h, c)
		}
	}
	t.Logf("%d calls, %d pods, %d served warm", n, len(hosts), e.pooledRuns.Load())
	if e.pooledRuns.Load() == 0 {
		t.Error("no call was served by the pool")
	}
	nodes := map[string]bool{}
	deadline := time.Now().Add(2 * time.Minute)
	wp := e.warmPool(s, s.Limits.WithDefaults())
	for {
		pods, _ := e.poolPods(ctx, wp, poolWarm)
		ready := 0
		for i := range pods {
			if readyPod(&pods[i]) {
				ready++
				nodes[pods[i].Spec.NodeName] = true
			}
		}
		if ready >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool not refilled: %d ready", ready)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("refilled on nodes %v", nodes)
	if _, err := e.DrainPool(ctx); err != nil {
		t.Error(err)
	}
}

func readyPod(p *corev1.Pod) bool { return ready(p) }

// TestClaimRace: many claimants, one warm pod: exactly one wins.
func TestClaimRace(t *testing.T) {
	e := newTest(t, WithPool(1))
	s := spec("true")
	s.Limits.Memory = 16 << 20
	s.Limits.CPUs = 0.1
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.Warm(ctx, s); err != nil {
		t.Fatal(err)
	}
	wp := e.warmPool(s, s.Limits.WithDefaults())
	var wins, mu = 0, sync.Mutex{}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := e.claim(ctx, wp)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d claimants got the one warm pod", wins)
	}
	e.DrainPool(ctx)
}

// TestDeletedFromOutside: a pod deleted by someone else mid-run is
// ErrUnavailable, promptly.
func TestDeletedFromOutside(t *testing.T) {
	e := newTest(t)
	s := spec("sleep", "120")
	s.Limits.Timeout = 90 * time.Second
	var name string
	go func() {
		for {
			pods := ownPods(t, fmt.Sprintf("%s=%d", LabelPID, os.Getpid()))
			for _, p := range pods {
				if st := status(&p, containerRun); st != nil && st.State.Running != nil && p.Labels[LabelTemplate] == "" {
					name = p.Name
					time.Sleep(time.Second)
					clientset(t).CoreV1().Pods(testNamespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{})
					return
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	begin := time.Now()
	_, err := e.Run(context.Background(), s)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	t.Logf("pod %s: %v after %s", name, err, time.Since(begin).Round(time.Millisecond))
}

// TestKubeletKilled: the node's kubelet killed mid-run: the call ends
// with ErrUnavailable within its timeout, and GC removes the pod once the
// node is back.
func TestKubeletKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a kubelet")
	}
	e := newTest(t)
	s := spec("sleep", "300")
	s.Limits.Timeout = 60 * time.Second
	type out struct {
		err error
		d   time.Duration
	}
	done := make(chan out, 1)
	begin := time.Now()
	go func() { _, err := e.Run(context.Background(), s); done <- out{err, time.Since(begin)} }()
	var node, pod string
	for node == "" {
		for _, p := range ownPods(t, fmt.Sprintf("%s=%d", LabelPID, os.Getpid())) {
			if st := status(&p, containerRun); st != nil && st.State.Running != nil {
				node, pod = p.Spec.NodeName, p.Name
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	kubelet := "kubelet-" + strings.TrimPrefix(node, "ccrun-node")
	if b, err := exec.Command(clusterScript(), "stop", kubelet).CombinedOutput(); err != nil {
		t.Fatalf("stop %s: %v %s", kubelet, err, b)
	}
	// Started again once, here or on the way out: a second start would
	// leave two kubelets of one node (cluster.sh now refuses it), and
	// the next run's stop would kill only one of them.
	restarted := false
	restart := func() error {
		if restarted {
			return nil
		}
		restarted = true
		b, err := exec.Command(clusterScript(), "start", kubelet).CombinedOutput()
		if err != nil {
			return fmt.Errorf("start %s: %v %s", kubelet, err, b)
		}
		return nil
	}
	defer func() {
		if err := restart(); err != nil {
			t.Error(err)
		}
	}()
	o := <-done
	if !errors.Is(o.err, ErrUnavailable) || o.d > s.Limits.Timeout {
		t.Fatalf("after %s: %v; want ErrUnavailable within %s", o.d, o.err, s.Limits.Timeout)
	}
	t.Logf("%s on %s: %v after %s", pod, node, o.err, o.d.Round(time.Millisecond))
	if err := restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		e.GC(context.Background())
		_, err := clientset(t).CoreV1().Pods(testNamespace).Get(context.Background(), pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s still there after the node came back: %v", pod, err)
		}
		time.Sleep(time.Second)
	}
}

// TestAPIServerStopped: the API server stopped mid-run: ErrUnavailable
// within the call's timeout, never a hang.
func TestAPIServerStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the API server")
	}
	e := newTest(t)
	s := spec("sleep", "300")
	s.Limits.Timeout = 45 * time.Second
	done := make(chan error, 1)
	begin := time.Now()
	go func() { _, err := e.Run(context.Background(), s); done <- err }()
	for running := false; !running; time.Sleep(200 * time.Millisecond) {
		for _, p := range ownPods(t, fmt.Sprintf("%s=%d", LabelPID, os.Getpid())) {
			if st := status(&p, containerRun); st != nil && st.State.Running != nil {
				running = true
			}
		}
	}
	if b, err := exec.Command(clusterScript(), "stop", "apiserver").CombinedOutput(); err != nil {
		t.Fatalf("stop apiserver: %v %s", err, b)
	}
	err := <-done
	d := time.Since(begin)
	if b, serr := exec.Command(clusterScript(), "start", "apiserver").CombinedOutput(); serr != nil {
		t.Errorf("start apiserver: %v %s", serr, b)
	}
	if !errors.Is(err, ErrUnavailable) || d > s.Limits.Timeout+10*time.Second {
		t.Fatalf("after %s: %v; want ErrUnavailable within the timeout", d, err)
	}
	t.Logf("%v after %s", err, d.Round(time.Millisecond))
	// Its pod could not be deleted while the API server was down: its
	// deadline ends it, GC once this process is gone; here, delete it.
	for _, p := range ownPods(t, fmt.Sprintf("%s=%d", LabelPID, os.Getpid())) {
		e.deletePod(context.Background(), p.Name)
	}
}

// TestClaimantDies: a warm pod claimed by a process that died before
// deleting it is GC's; an idle warm pod is not.
func TestClaimantDies(t *testing.T) {
	e := newTest(t, WithPool(2))
	s := spec("true")
	s.Limits.Memory, s.Limits.CPUs = 16<<20, 0.1
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.Warm(ctx, s); err != nil {
		t.Fatal(err)
	}
	// A claimant that is gone: a child that exited, its pid and start.
	child := exec.Command("/bin/true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	dead := newTest(t, WithPool(2))
	dead.owner = owner{PID: child.Process.Pid, Start: "1"}
	if err := dead.ensure(ctx); err != nil { // the pods' architecture, for the template
		t.Fatal(err)
	}
	p, ok, err := dead.claim(ctx, dead.warmPool(s, s.Limits.WithDefaults()))
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	gone, err := e.GC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(gone, p.Name) {
		t.Errorf("GC removed %v, not the dead claimant's %s", gone, p.Name)
	}
	wp := e.warmPool(s, s.Limits.WithDefaults())
	if idle, _ := e.poolPods(ctx, wp, poolWarm); len(idle) != 1 || slices.Contains(gone, idle[0].Name) {
		t.Errorf("idle warm pods after GC: %d, want the other one left", len(idle))
	}
	e.DrainPool(ctx)
}

// TestRunWarm is TestRun's table through warm pods: each call served by a
// pod of the pool (the OOM one too, which reports the memory reason).
func TestRunWarm(t *testing.T) {
	e := newTest(t, WithPool(1))
	tests := []struct {
		name   string
		s      Spec
		stdin  string
		reason job.Reason
		code   int
		stdout string
		stderr string
	}{
		{name: "exit 3", s: spec("sh", "-c", "exit 3"), reason: job.Exit, code: 3},
		{name: "stdout and stderr apart", s: spec("sh", "-c", "echo out; echo err >&2"), reason: job.Exit, stdout: "out\n", stderr: "err\n"},
		{name: "stdin", s: spec("cat"), stdin: "hello\nworld\n", reason: job.Exit, stdout: "hello\nworld\n"},
		{name: "output at exit not missed", s: spec("sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x"), reason: job.Exit, stdout: strings.Repeat("x", 1<<20)},
		{name: "both streams whole at exit", s: spec("sh", "-c", bothStreams), reason: job.Exit, stdout: strings.Repeat("x", 2<<20), stderr: strings.Repeat("y", 64<<10)},
		{name: "output cap", s: func() Spec { s := spec("yes"); s.Limits.Output = 64 << 10; return s }(), reason: job.OutputCap, code: job.KilledExitCode},
		{name: "timeout", s: func() Spec { s := spec("sleep", "60"); s.Limits.Timeout = 2 * time.Second; return s }(), reason: job.Timeout, code: job.TimeoutExit},
		{name: "killed", s: spec("sh", "-c", "kill -9 $$"), reason: job.Exit, code: job.KilledExitCode},
		{name: "oom", s: func() Spec {
			s := spec("sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo $x | head -c 1")
			s.Limits.Memory = 32 << 20
			return s
		}(), reason: job.Memory, code: job.KilledExitCode},
		// once adds the call's environment to the container's, replacing
		// what it names (PATH here).
		{name: "env", s: func() Spec {
			s := spec("sh", "-c", `echo "$A"; echo "$PATH"`)
			s.Env = []string{"A=b c", "PATH=/x:/bin"}
			return s
		}(), reason: job.Exit, stdout: "b c\n/x:/bin\n"},
		{name: "program not found", s: Spec{Cmd: []string{"/nonexistent"}}, reason: job.Exit, code: 127, stderr: "ccrun: exec /nonexistent: no such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			if tc.s.Image == "" {
				tc.s.Image, tc.s.Pull = testRef, PullNever
			}
			defer cancel()
			tc.s.Pool = true
			if tc.s.Limits.Memory == 0 {
				tc.s.Limits.Memory = 64 << 20
			}
			if err := e.Warm(ctx, tc.s); err != nil {
				t.Fatal(err)
			}
			if tc.stdin != "" {
				tc.s.Streams.Stdin = strings.NewReader(tc.stdin)
			}
			before := e.pooledRuns.Load()
			r, err := e.Run(ctx, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if e.pooledRuns.Load() != before+1 {
				t.Error("not served by a warm pod")
			}
			if r.Reason != tc.reason || r.ExitCode != tc.code {
				t.Fatalf("reason %s, exit %d; want %s, %d (detail %q, stderr %q)", r.Reason, r.ExitCode, tc.reason, tc.code, r.Detail, r.Stderr)
			}
			if tc.stdout != "" && string(r.Stdout) != tc.stdout {
				t.Errorf("stdout %d bytes %.40q, want %d bytes %.40q", len(r.Stdout), r.Stdout, len(tc.stdout), tc.stdout)
			}
			if tc.stderr != "" && string(r.Stderr) != tc.stderr {
				t.Errorf("stderr %d bytes %.40q, want %d bytes %.40q", len(r.Stderr), r.Stderr, len(tc.stderr), tc.stderr)
			}
		})
	}
	e.DrainPool(context.Background())
}
