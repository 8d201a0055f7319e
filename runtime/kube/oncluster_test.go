package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/gittest"
	"github.com/ccrun/ccrun/internal/registrytest"
	"github.com/ccrun/ccrun/runtime/job"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// registryAddr is the registry the test cluster's nodes pull from
// (cluster.sh env: CCRUN_K8S_REGISTRY), where the tests serve one.
func registryAddr(t testing.TB) string {
	t.Helper()
	kubeconfig(t)
	a := os.Getenv("CCRUN_K8S_REGISTRY")
	if a == "" {
		t.Fatal("no CCRUN_K8S_REGISTRY: a cluster of cluster.sh up prints it with its kubeconfig (eval $(testdata/k8s/cluster.sh env))")
	}
	return a
}

// TestRegistryOnCluster: an image that no node has, pushed to a registry
// the test serves on 127.0.0.1 (logging every request), by tag. The
// lookup made before any decision sends the registry nothing and says
// where the image would be pulled from; once allowed, the tag is resolved
// there, the nodes pull the digest and run it, the program named without
// a slash is found on the image's PATH (a directory only the image's
// configuration names); a tag moved in the registry is another digest,
// and runs the other image.
func TestRegistryOnCluster(t *testing.T) {
	reg := registrytest.Start(t, registryAddr(t))
	e := newTest(t)
	ctx := context.Background()
	ref := fmt.Sprintf("%s/ccrun-reg-%s:v1", reg.Host, randHex(4)) // a name no node has had
	env := []string{"PATH=/opt/ccrun-tools:/bin"}
	hello := map[string]string{"opt/ccrun-tools/hello": "#!/bin/sh\necho hello from $0 on PATH\n"}
	d1 := reg.Push(t, ref, registrytest.BusyboxImage(t, env, hello))
	reg.Reset()

	_, err := e.Resolve(ctx, ref, PullNever)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "would be pulled from "+reg.Host) {
		t.Fatalf("before the decision: %v; want ErrNotFound, would be pulled from %s", err, reg.Host)
	}
	if r := reg.Requests(); len(r) != 0 {
		t.Fatalf("before the decision the registry was sent %q", r)
	}

	pinned, err := e.Resolve(ctx, ref, PullMissing)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(ref, ":v1") + "@" + d1.String(); pinned != want {
		t.Fatalf("resolved %s, want %s", pinned, want)
	}
	run := func(image string, cmd ...string) *job.Result {
		t.Helper()
		r, err := e.Run(ctx, Spec{Image: image, Cmd: cmd, Pull: PullMissing})
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() {
			t.Fatalf("%v: %s %d stdout %q stderr %q detail %q", cmd, r.Reason, r.ExitCode, r.Stdout, r.Stderr, r.Detail)
		}
		return r
	}
	if r := run(pinned, "hello"); string(r.Stdout) != "hello from /opt/ccrun-tools/hello on PATH\n" {
		t.Errorf("hello: stdout %q", r.Stdout)
	}
	pulled := false
	for _, q := range reg.Requests() {
		pulled = pulled || strings.Contains(q, "/manifests/"+d1.String())
	}
	if !pulled {
		t.Errorf("no node pulled %s: the registry saw %q", d1, reg.Requests())
	}
	if r := run(pinned, "sh", "-c", "echo $PATH"); string(r.Stdout) != "/opt/ccrun-tools:/bin\n" {
		t.Errorf("the program's PATH is %q, want the image's", r.Stdout)
	}

	// The tag moved: another digest (a grant bound to the first is asked
	// again), which runs the other image.
	moved := map[string]string{"opt/ccrun-tools/hello": "#!/bin/sh\necho moved\n"}
	d2 := reg.Push(t, ref, registrytest.BusyboxImage(t, env, moved))
	again, err := e.Resolve(ctx, ref, PullMissing)
	if err != nil || again != strings.TrimSuffix(ref, ":v1")+"@"+d2.String() {
		t.Fatalf("after the tag moved: %s, %v; want the digest %s", again, err, d2)
	}
	if r := run(again, "hello"); string(r.Stdout) != "moved\n" {
		t.Errorf("the moved tag ran %q", r.Stdout)
	}
}

// TestProgramOnPath: the test image has no PATH of its own: a program
// named without a slash is looked for on the default PATH, cold and
// warm, as on the local engine; one that is nowhere is exit 127.
func TestProgramOnPath(t *testing.T) {
	e := newTest(t, WithPool(1))
	defer e.DrainPool(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, pool := range []bool{false, true} {
		s := Spec{Image: testRef, Cmd: []string{"busybox", "echo", "found"}, Pull: PullNever, Pool: pool}
		s.Limits.Memory = 64 << 20
		if pool {
			if err := e.Warm(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		before := e.pooledRuns.Load()
		r, err := e.Run(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || string(r.Stdout) != "found\n" {
			t.Errorf("pool %v: %s %d stdout %q stderr %q", pool, r.Reason, r.ExitCode, r.Stdout, r.Stderr)
		}
		if warm := e.pooledRuns.Load() != before; warm != pool {
			t.Errorf("pool %v: served by a warm pod: %v", pool, warm)
		}
	}
	r, err := e.Run(context.Background(), Spec{Image: testRef, Cmd: []string{"no-such-program"}, Pull: PullNever})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 127 || !strings.Contains(string(r.Stderr), "no-such-program") {
		t.Errorf("a program on no PATH: exit %d stderr %q; want 127 naming it", r.ExitCode, r.Stderr)
	}
}

// TestGitPlantsOnCluster: a pod with a repository mounted rw makes each of
// gittest's plants (the project's own .git/commondir, a gitfile, a nested
// repository's commondir, a new nested repository, a git directory under
// another name, a bare repository's config, .gitmodules). After the run,
// git's configuration and shapes on the host are as they were (what the
// pod made is not copied back, and the Result's Detail names it), git
// status there runs nothing, and an ordinary write beside them is kept.
func TestGitPlantsOnCluster(t *testing.T) {
	e := newTest(t)
	for i, p := range gittest.New(t).Plants() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			tr := gittest.New(t)
			p := tr.Plants()[i]
			before := tr.State(t)
			steps := append(append([]gittest.Step(nil), p.Steps...), gittest.Ordinary)
			s := spec("sh", "-c", gittest.Script("/w", steps))
			s.Mounts = []job.Mount{{Host: tr.Dir, Guest: "/w", Writable: true}}
			res, err := e.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.Stdout)
			t.Logf("pod: %s\ndetail: %s", strings.ReplaceAll(strings.TrimSpace(out), "\n", ", "), res.Detail)
			if !strings.Contains(out, fmt.Sprintf("DONE %d\n", len(steps)-1)) {
				t.Errorf("the ordinary write failed in the pod: %s%s", out, res.Stderr)
			}
			if b, err := os.ReadFile(filepath.Join(tr.Dir, gittest.Ordinary.Path)); err != nil || string(b) != gittest.Ordinary.Data {
				t.Errorf("ordinary.txt on the host = %q, %v", b, err)
			}
			if !strings.Contains(out, "BLOCKED") && !strings.Contains(res.Detail, "protected paths left as they were") {
				t.Errorf("nothing refused in the pod, nothing left as it was (detail %q): %s", res.Detail, out)
			}
			if d := gittest.Diff(before, tr.State(t)); d != "" {
				t.Errorf("git's configuration and shapes changed on the host:\n%s\npod: %s\ndetail: %s", d, out, res.Detail)
			}
			if ran, gitOut := tr.Ran(p); ran {
				t.Errorf("git status on the host ran the planted program:\n%s", gitOut)
			}
		})
	}
}

// TestMountLockOnCluster: two calls at once that read a counter from the
// same writable mount, wait, and write it plus one: the second waits for
// the first's copy back (the mount lock), so it reads the first's write
// and no update is lost.
func TestMountLockOnCluster(t *testing.T) {
	e := newTest(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "n"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := spec("sh", "-c", "n=$(cat /w/n); sleep 2; echo $((n+1)) > /w/n")
			s.Mounts = []job.Mount{{Host: dir, Guest: "/w", Writable: true}}
			s.Limits.Timeout = 3 * time.Minute
			r, err := e.Run(context.Background(), s)
			if err == nil && !r.OK() {
				err = fmt.Errorf("%s %d stderr %q detail %q", r.Reason, r.ExitCode, r.Stderr, r.Detail)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "n")); string(b) != "2\n" {
		t.Fatalf("the counter is %q after two calls, want 2: an update was lost", b)
	}
}

// TestMountsAsCaller: a call with a writable mount made by a caller that
// is not root (1000:1001 here) runs as that uid and gid in the pod, may
// change the files copied in (they are the caller's, as on the host) and
// make new ones, and what it wrote comes back to the host, written by this
// process, as the caller.
func TestMountsAsCaller(t *testing.T) {
	e := newTest(t)
	e.user = "1000:1001" // a caller that is not root (this test may run as root)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "own.txt"), []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec("sh", "-c", "id -u; id -g; echo after > /w/own.txt && echo new > /w/new.txt && mkdir /w/d && echo x > /w/d/f")
	s.Mounts = []job.Mount{{Host: dir, Guest: "/w", Writable: true}}
	r, err := e.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || string(r.Stdout) != "1000\n1001\n" {
		t.Fatalf("%s %d stdout %q stderr %q detail %q; want 1000, 1001 and no error", r.Reason, r.ExitCode, r.Stdout, r.Stderr, r.Detail)
	}
	for p, want := range map[string]string{"own.txt": "after\n", "new.txt": "new\n", "d/f": "x\n"} {
		path := filepath.Join(dir, p)
		b, err := os.ReadFile(path)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
			continue
		}
		st, _ := os.Stat(path)
		if sys := st.Sys().(*syscall.Stat_t); int(sys.Uid) != os.Geteuid() || int(sys.Gid) != os.Getegid() {
			t.Errorf("%s is owned by %d:%d, want this process's %d:%d", p, sys.Uid, sys.Gid, os.Geteuid(), os.Getegid())
		}
	}
}

// klogLine is the header of a klog line: a severity, the date, the time.
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ `)

// TestNoClientLogs: a process that uses the engine prints nothing of
// client-go's on stderr, where it would land among the calls' output:
// the child runs a cold and a warm call, and makes client-go log as it
// does when a watch breaks or the API server warns (klog, and the
// default warning handler); its stderr has no line of either.
func TestNoClientLogs(t *testing.T) {
	if os.Getenv("CCRUN_KUBE_LOG_CHILD") == "1" {
		e := newTest(t, WithPool(1))
		for _, pool := range []bool{false, true} {
			s := spec("true")
			s.Pool = pool
			if _, err := e.Run(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
		klog.Warning("ccrun-canary: klog")
		klog.ErrorS(errors.New("x"), "ccrun-canary: klog structured")
		rest.WarningLogger{}.HandleWarningHeader(299, "", "ccrun-canary: an API server warning")
		klog.Flush()
		return
	}
	kubeconfig(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoClientLogs$", "-test.v")
	cmd.Env = append(os.Environ(), "CCRUN_KUBE_LOG_CHILD=1")
	var stderr, stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	for _, out := range [][]byte{stderr.Bytes(), stdout.Bytes()} {
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if l := sc.Text(); klogLine.MatchString(l) || strings.Contains(l, "ccrun-canary") {
				t.Errorf("client-go logged: %s", l)
			}
		}
	}
	if !strings.Contains(stdout.String(), "PASS") {
		t.Fatalf("the child did not pass:\n%s%s", stdout.Bytes(), stderr.Bytes())
	}
}

// TestEntrypointOnCluster: an image pushed to the registry that no node
// has, run by tag with no program, runs its own entrypoint and command
// (read from its configuration in the registry), cold and from the warm
// pool; with a program named, that program runs.
func TestEntrypointOnCluster(t *testing.T) {
	reg := registrytest.Start(t, registryAddr(t))
	e := newTest(t)
	ctx := context.Background()
	ref := fmt.Sprintf("%s/ccrun-entry-%s:v1", reg.Host, randHex(4))
	img := withCommand(t, registrytest.BusyboxImage(t, nil, nil), "", []string{"/bin/sh", "-c"}, []string{"echo own entrypoint as $0"})
	reg.Push(t, ref, img)
	pinned, err := e.Resolve(ctx, ref, PullMissing)
	if err != nil {
		t.Fatal(err)
	}
	for _, pool := range []bool{false, true} {
		r, err := e.Run(ctx, Spec{Image: pinned, Pull: PullMissing, Pool: pool})
		if err != nil {
			t.Fatalf("pool=%v: %v", pool, err)
		}
		if !r.OK() || string(r.Stdout) != "own entrypoint as /bin/sh\n" {
			t.Errorf("pool=%v: %s %d stdout %q stderr %q detail %q", pool, r.Reason, r.ExitCode, r.Stdout, r.Stderr, r.Detail)
		}
	}
	r, err := e.Run(ctx, Spec{Image: pinned, Cmd: []string{"/bin/sh", "-c", "echo named"}, Pull: PullMissing})
	if err != nil {
		t.Fatalf("a named program: %v", err)
	}
	if string(r.Stdout) != "named\n" {
		t.Errorf("a named program: stdout %q stderr %q", r.Stdout, r.Stderr)
	}
}
