package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/kubetest"
	"github.com/ccrun/ccrun/internal/once"
	"github.com/ccrun/ccrun/runtime/job"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestHelpers: the helpers ConfigMap holds, for each architecture once
// is built for, the holder of internal/ctr and once (run by
// internal/once), each a static executable of that machine; a pod
// projects those of its architecture onto /.ccrun/hold and /.ccrun/once.
func TestHelpers(t *testing.T) {
	h := helpers()
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if len(h) != 2*len(machines) {
		t.Errorf("%d helpers, want hold and once for each of %v", len(h), once.Arches())
	}
	for arch, machine := range machines {
		if !bytes.Equal(h["hold-"+arch], ctr.Holder(arch)) || !bytes.Equal(h["once-"+arch], once.ELF(arch)) {
			t.Errorf("%s: the helpers are not ctr.Holder and once.ELF", arch)
		}
		for _, name := range []string{"hold-" + arch, "once-" + arch} {
			f, err := elf.NewFile(bytes.NewReader(h[name]))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if f.Machine != machine || f.Type != elf.ET_EXEC {
				t.Errorf("%s: machine %s, type %s", name, f.Machine, f.Type)
			}
		}
		var items []string
		for _, it := range helperItems(arch) {
			items = append(items, it.Key+">"+helpersDir+"/"+it.Path)
		}
		if want := []string{"hold-" + arch + ">" + holdPath, "once-" + arch + ">" + oncePath}; !slices.Equal(items, want) {
			t.Errorf("%s: items %v, want %v", arch, items, want)
		}
	}
}

// node is a node of arch, ready or not.
func node(name, arch string, ready bool) corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		NodeInfo:   corev1.NodeSystemInfo{Architecture: arch},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
	}}
}

// TestChooseArch: the pods' architecture is the nodes', not ccrun's: the
// one once is built for with the most ready nodes; nodes of no such
// architecture only are ErrUnavailable, naming them; no node known is
// ccrun's own.
func TestChooseArch(t *testing.T) {
	cordoned := node("c", "arm64", true)
	cordoned.Spec.Unschedulable = true
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  string
	}{
		{"amd64 nodes", []corev1.Node{node("a", "amd64", true), node("b", "amd64", true)}, "amd64"},
		{"arm64 nodes", []corev1.Node{node("a", "arm64", true), node("b", "arm64", false)}, "arm64"},
		{"more ready arm64", []corev1.Node{node("a", "amd64", true), node("b", "arm64", true), node("c", "arm64", true), node("d", "amd64", false)}, "arm64"},
		{"the ready one", []corev1.Node{node("a", "amd64", false), node("b", "amd64", false), node("c", "arm64", true)}, "arm64"},
		{"a cordoned node is not ready", []corev1.Node{node("a", "amd64", true), cordoned, node("d", "arm64", false)}, "amd64"},
		{"none ready: the most", []corev1.Node{node("a", "amd64", false), node("b", "arm64", false), node("c", "arm64", false)}, "arm64"},
		{"a tie: amd64", []corev1.Node{node("b", "arm64", true), node("a", "amd64", true)}, "amd64"},
		{"others passed by", []corev1.Node{node("a", "s390x", true), node("b", "s390x", true), node("c", "arm64", false)}, "arm64"},
		{"no node", nil, defaultArch()},
	} {
		if got, err := chooseArch("https://k", tc.nodes); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	_, err := chooseArch("https://k", []corev1.Node{node("z1", "s390x", true), node("r1", "riscv64", true)})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "z1 (s390x)") || !strings.Contains(err.Error(), "r1 (riscv64)") {
		t.Errorf("no node once runs on: %v, want ErrUnavailable naming them", err)
	}
}

// TestSpecRefused: what the cluster would refuse, or accept wrongly, is
// ErrInvalidArgument before any API call.
func TestSpecRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	ok := Spec{Image: "i", Cmd: []string{"/bin/true"}}
	tests := []struct {
		name string
		mod  func(*Spec)
	}{
		{"host network", func(s *Spec) { s.Network = "host" }},
		{"unknown network", func(s *Spec) { s.Network = "weave" }},
		{"no image", func(s *Spec) { s.Image = "" }},
		{"no command", func(s *Spec) { s.Cmd = nil }},
		{"empty program", func(s *Spec) { s.Cmd = []string{"", "-c", "x"} }},
		{"user by name", func(s *Spec) { s.User = "root" }},
		{"negative uid", func(s *Spec) { s.User = "-1" }},
		{"memory too small", func(s *Spec) { s.Limits.Memory = 1 << 20 }},
		{"relative dir", func(s *Spec) { s.Dir = "work" }},
		{"bad env", func(s *Spec) { s.Env = []string{"=x"} }},
		// A NUL would split a string of once's request: a piece of an
		// argument could become an environment entry.
		{"NUL in an argument", func(s *Spec) { s.Cmd = []string{"/bin/sh", "-c", "true\x00LD_PRELOAD=/tmp/x.so"} }},
		{"NUL in the environment", func(s *Spec) { s.Env = []string{"A=b\x00LD_PRELOAD=/tmp/x.so"} }},
		{"command too large for once", func(s *Spec) { s.Cmd = []string{"/bin/echo", strings.Repeat("x", 1<<20)} }},
		{"pull policy", func(s *Spec) { s.Pull = "sometimes" }},
		{"mount over /tmp", func(s *Spec) { s.Mounts = []job.Mount{{Host: dir, Guest: "/tmp"}} }},
		{"mount over the helpers", func(s *Spec) { s.Mounts = []job.Mount{{Host: dir, Guest: "/.ccrun/x"}} }},
		{"mount at /", func(s *Spec) { s.Mounts = []job.Mount{{Host: dir, Guest: "/"}} }},
		{"mount relative host", func(s *Spec) { s.Mounts = []job.Mount{{Host: "rel", Guest: "/w"}} }},
		{"mount missing host", func(s *Spec) { s.Mounts = []job.Mount{{Host: filepath.Join(dir, "nope"), Guest: "/w"}} }},
		{"mount of a file", func(s *Spec) { s.Mounts = []job.Mount{{Host: file, Guest: "/w"}} }},
		{"mount twice", func(s *Spec) { s.Mounts = []job.Mount{{Host: dir, Guest: "/w"}, {Host: dir, Guest: "/w/"}} }},
	}
	for _, tc := range tests {
		s := ok
		tc.mod(&s)
		if err := s.validate(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	if err := ok.validate(); err != nil {
		t.Errorf("the good spec: %v", err)
	}
	// A program named without a slash is looked for on the image's PATH
	// (by once, in the pod), as on the local engine.
	onPath := ok
	onPath.Cmd = []string{"sh", "-c", "x"}
	if err := onPath.validate(); err != nil {
		t.Errorf("a program on PATH: %v", err)
	}
}

// TestPodHardened checks the pod ccrun asks for, field by field.
func TestPodHardened(t *testing.T) {
	s := Spec{Image: "img@sha256:ab", Cmd: []string{"/bin/x"}, Limits: job.Limits{Timeout: 30 * time.Second, Memory: 64 << 20, CPUs: 0.5},
		Mounts: []job.Mount{{Host: "/h", Guest: "/ro"}, {Host: "/h2", Guest: "/rw", Writable: true}}}
	lim := s.Limits.WithDefaults()
	p := s.pod(lim, podOptions{name: "n", helpers: "h", program: []string{oncePath}, stdin: true, stdinKept: true, copyside: true, mountMax: 1 << 20})
	sp := p.Spec
	if sp.HostNetwork || sp.HostPID || sp.HostIPC || *sp.AutomountServiceAccountToken || *sp.EnableServiceLinks {
		t.Error("host namespace, token or service links")
	}
	if sp.RestartPolicy != corev1.RestartPolicyNever || *sp.ActiveDeadlineSeconds != 90 {
		t.Errorf("restart %s, deadline %d", sp.RestartPolicy, *sp.ActiveDeadlineSeconds)
	}
	for _, v := range sp.Volumes {
		if v.HostPath != nil {
			t.Errorf("host path volume %s", v.Name)
		}
		if v.Name == volumeTmp && (v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit.Value() != TmpSize) {
			t.Errorf("tmp %+v", v.EmptyDir)
		}
	}
	if len(sp.Containers) != 2 {
		t.Fatalf("%d containers", len(sp.Containers))
	}
	for _, c := range sp.Containers {
		sc := c.SecurityContext
		if *sc.RunAsUser != DefaultUID || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || *sc.Privileged || !*sc.ReadOnlyRootFilesystem ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 ||
			sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s: %+v", c.Name, sc)
		}
		if c.Resources.Limits.Memory().Value() == 0 || c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.StorageEphemeral().IsZero() {
			t.Errorf("container %s: limits %v", c.Name, c.Resources.Limits)
		}
	}
	run := sp.Containers[0]
	if run.Resources.Limits.Memory().Value() != 64<<20 || run.Resources.Limits.Cpu().MilliValue() != 500 {
		t.Errorf("run limits %v", run.Resources.Limits)
	}
	ro := map[string]bool{}
	for _, m := range run.VolumeMounts {
		ro[m.MountPath] = m.ReadOnly
	}
	if !ro["/ro"] || ro["/rw"] || !ro[helpersDir] || ro["/tmp"] {
		t.Errorf("mounts %v", ro)
	}
}

func TestLabelValue(t *testing.T) {
	for _, in := range []string{"host", "a.b-c_d", strings.Repeat("x", 80), "bad host!", "-x-"} {
		v := labelValue(in)
		if len(v) > 63 || labelUnsafe.MatchString(v) || strings.HasPrefix(v, "-") || strings.HasSuffix(v, "-") {
			t.Errorf("labelValue(%q) = %q", in, v)
		}
	}
	if labelValue(strings.Repeat("x", 80)) == labelValue(strings.Repeat("x", 81)) {
		t.Error("two long hostnames share a label")
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                   "docker.io/library/busybox:latest",
		"ccrun-test:busybox":        "docker.io/library/ccrun-test:busybox",
		"me/tool:1":                 "docker.io/me/tool:1",
		"registry.example:5000/x":   "registry.example:5000/x:latest",
		"localhost/x:2":             "localhost/x:2",
		"ghcr.io/o/r:v1.2":          "ghcr.io/o/r:v1.2",
		"registry.example:5000/y:3": "registry.example:5000/y:3",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestClassify: client-go errors by class, never by text.
func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err  error
		want error
	}{
		{apierrors.NewForbidden(gr, "x", errors.New("rbac")), ctr.ErrRefused},
		{apierrors.NewUnauthorized("no"), ctr.ErrRefused},
		{apierrors.NewNotFound(gr, "x"), ErrNotFound},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil), ErrInvalidArgument},
		{apierrors.NewServiceUnavailable("down"), ErrUnavailable},
		{apierrors.NewTooManyRequests("slow", 1), ErrUnavailable},
		{context.DeadlineExceeded, ErrUnavailable},
	}
	for _, tc := range tests {
		if got := classify("https://x", "op", tc.err); !errors.Is(got, tc.want) {
			t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestCreateRefused: the API server refusing the pod (admission, RBAC) is
// an error of its class, and no pod is left to delete (a fake API server
// that answers New and the namespace's setup, then refuses the pod).
func TestCreateRefused(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		err  *apierrors.StatusError
		want error
	}{
		{apierrors.NewForbidden(gr, "", errors.New("pod security")), ctr.ErrRefused},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "", nil), ErrInvalidArgument},
	} {
		e := fakeAPI(t, []corev1.Node{node("n", "amd64", true)}, nil, func(w http.ResponseWriter, r *http.Request, reply func(int, any)) bool {
			if r.Method+" "+r.URL.Path != "POST /api/v1/namespaces/default/pods" {
				return false
			}
			st := tc.err.ErrStatus
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			reply(int(st.Code), &st)
			return true
		})
		_, err := e.Run(context.Background(), Spec{Image: "i", Cmd: []string{"/bin/true"}})
		if !errors.Is(err, tc.want) {
			t.Errorf("%v: got %v", tc.err, err)
		}
	}
}

// fakeAPI returns an Executor of an API server that answers New and the
// Executor's setup: the namespace, the nodes, the helpers ConfigMap
// (decoded into cm unless it is nil) and the NetworkPolicy. Every other
// request goes to rest, which reports whether it answered it; one nobody
// answers fails t.
func fakeAPI(t *testing.T, nodes []corev1.Node, cm *corev1.ConfigMap, rest func(w http.ResponseWriter, r *http.Request, reply func(int, any)) bool) *Executor {
	srv := fakeAPIServer(t, nodes, cm, rest)
	e, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, srv.URL)), WithNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// fakeAPIServer is fakeAPI's server.
func fakeAPIServer(t *testing.T, nodes []corev1.Node, cm *corev1.ConfigMap, rest func(w http.ResponseWriter, r *http.Request, reply func(int, any)) bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		reply := func(code int, v any) { w.WriteHeader(code); json.NewEncoder(w).Encode(v) }
		switch r.Method + " " + r.URL.Path {
		case "GET /api/v1/namespaces/default":
			reply(http.StatusOK, &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}})
		case "GET /api/v1/nodes":
			reply(http.StatusOK, &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: nodes})
		case "POST /api/v1/namespaces/default/configmaps":
			if cm != nil {
				decode(t, r, cm)
			}
			reply(http.StatusCreated, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}})
		case "POST /apis/networking.k8s.io/v1/namespaces/default/networkpolicies":
			reply(http.StatusCreated, &networkingv1.NetworkPolicy{TypeMeta: metav1.TypeMeta{Kind: "NetworkPolicy", APIVersion: "networking.k8s.io/v1"}})
		default:
			if !rest(w, r, reply) {
				t.Errorf("unexpected request %s %s", r.Method, r.URL)
				reply(http.StatusNotFound, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "").ErrStatus)
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// decode reads the object of a request (the client sends protobuf) into into.
func decode(t *testing.T, r *http.Request, into kruntime.Object) {
	b, err := io.ReadAll(r.Body)
	if err == nil {
		_, _, err = scheme.Codecs.UniversalDeserializer().Decode(b, nil, into)
	}
	if err != nil {
		t.Errorf("%s %s: %v", r.Method, r.URL, err)
	}
}

// TestPodOnNodeArch: on a cluster of arm64 nodes, driven from whatever
// ccrun runs on, the helpers ConfigMap holds once for every architecture,
// and the pod gets arm64's and is scheduled to an arm64 node; a cluster of
// nodes once is not built for gets no pod at all (a fake API server that
// records the ConfigMap and the pod, and refuses the pod).
func TestPodOnNodeArch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		arch  string // "": no pod
		want  error
	}{
		{"arm64 nodes", []corev1.Node{node("a1", "arm64", true), node("a2", "arm64", true), node("x1", "amd64", false)}, "arm64", ctr.ErrRefused},
		{"amd64 nodes", []corev1.Node{node("x1", "amd64", true)}, "amd64", ctr.ErrRefused},
		{"no node once runs on", []corev1.Node{node("z1", "s390x", true)}, "", ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cm corev1.ConfigMap
			pods := make(chan corev1.Pod, 1)
			e := fakeAPI(t, tc.nodes, &cm, func(w http.ResponseWriter, r *http.Request, reply func(int, any)) bool {
				if r.Method+" "+r.URL.Path != "POST /api/v1/namespaces/default/pods" {
					return false
				}
				var p corev1.Pod
				decode(t, r, &p)
				pods <- p
				st := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("recorded")).ErrStatus
				st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
				reply(int(st.Code), &st)
				return true
			})
			dir := t.TempDir()
			_, err := e.Run(context.Background(), Spec{Image: "i", Cmd: []string{"/bin/true"}, Mounts: []job.Mount{{Host: dir, Guest: "/w"}}})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Run: %v, want %v", err, tc.want)
			}
			if tc.arch == "" {
				if len(pods) != 0 || cm.Name != "" {
					t.Error("a pod or a ConfigMap for nodes once cannot run on")
				}
				if !strings.Contains(err.Error(), "z1 (s390x)") {
					t.Errorf("%v does not name the nodes", err)
				}
				return
			}
			for _, arch := range once.Arches() {
				if !bytes.Equal(cm.BinaryData["once-"+arch], once.ELF(arch)) || !bytes.Equal(cm.BinaryData["hold-"+arch], ctr.Holder(arch)) {
					t.Errorf("the ConfigMap does not hold the helpers of %s", arch)
				}
			}
			p := <-pods
			if got := p.Spec.NodeSelector[archLabel]; got != tc.arch || len(p.Spec.NodeSelector) != 1 {
				t.Errorf("nodeSelector %v, want %s=%s", p.Spec.NodeSelector, archLabel, tc.arch)
			}
			var items []corev1.KeyToPath
			for _, v := range p.Spec.Volumes {
				if v.Name == volumeHelpers {
					items = v.ConfigMap.Items
				}
			}
			if !slices.Equal(items, helperItems(tc.arch)) {
				t.Errorf("helpers volume items %v, want %v", items, helperItems(tc.arch))
			}
			if len(p.Spec.Containers) != 2 || p.Spec.Containers[0].Command[0] != oncePath || p.Spec.Containers[1].Command[0] != holdPath {
				t.Errorf("containers %+v: want once, then the holder", p.Spec.Containers)
			}
		})
	}
}

// TestUnreachable: an API server that does not answer is ErrUnavailable
// from New, with its address, within the ping's bound (a real client on a
// loopback port nobody listens on).
func TestUnreachable(t *testing.T) {
	_, err := New(context.Background(), WithKubeconfig(kubetest.Kubeconfig(t, "https://127.0.0.1:1")))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("got %v, want ErrUnavailable naming the server", err)
	}
}

// TestApply is the implant table for what comes back from a writable
// mount: protected paths are never written (nor removed), nothing goes
// through a symbolic link or out of the mount, setuid bits are dropped,
// files the program deleted are removed.
func TestApply(t *testing.T) {
	host := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(host, ".git", "hooks"), 0o755))
	must(os.WriteFile(filepath.Join(host, ".git", "config"), []byte("orig"), 0o644))
	must(os.WriteFile(filepath.Join(host, "keep.txt"), []byte("k"), 0o644))
	must(os.WriteFile(filepath.Join(host, "gone.txt"), []byte("g"), 0o644))
	must(os.Symlink(outside, filepath.Join(host, "out")))
	m := job.Mount{Host: host, Guest: "/w", Writable: true}
	sent := map[string]bool{".git": true, ".git/hooks": true, ".git/config": true, "keep.txt": true, "gone.txt": true, "out": true}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		must(tw.WriteHeader(h))
		tw.Write([]byte(body))
	}
	add(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "./keep.txt", Typeflag: tar.TypeReg}, "changed")
	add(&tar.Header{Name: "./.git/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "./.git/hooks/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "./.git/hooks/pre-commit", Typeflag: tar.TypeReg, Mode: 0o755}, "#!/bin/sh\nevil")
	add(&tar.Header{Name: "./.git/config", Typeflag: tar.TypeReg}, "[core]\nfsmonitor=evil")
	add(&tar.Header{Name: "./.envrc", Typeflag: tar.TypeReg}, "evil")
	add(&tar.Header{Name: "./sub/.envrc", Typeflag: tar.TypeReg}, "evil")
	add(&tar.Header{Name: "./out", Typeflag: tar.TypeSymlink, Linkname: outside}, "")
	add(&tar.Header{Name: "./out/planted", Typeflag: tar.TypeReg}, "evil")
	add(&tar.Header{Name: "./g", Typeflag: tar.TypeSymlink, Linkname: ".git"}, "")
	add(&tar.Header{Name: "./g/hooks/post-checkout", Typeflag: tar.TypeReg}, "evil")
	add(&tar.Header{Name: "../escape", Typeflag: tar.TypeReg}, "evil")
	add(&tar.Header{Name: "/abs", Typeflag: tar.TypeReg}, "not escaped: cleaned into the mount")
	add(&tar.Header{Name: "./suid", Typeflag: tar.TypeReg, Mode: 0o4755}, "x")
	add(&tar.Header{Name: "./fifo", Typeflag: tar.TypeFifo}, "")
	add(&tar.Header{Name: "./hard", Typeflag: tar.TypeLink, Linkname: "keep.txt"}, "")
	must(tw.Close())

	ms := &mountSet{}
	must(ms.apply(mountCopy{m: m, root: host, sent: sent}, bytes.NewReader(buf.Bytes())))

	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(host, rel))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	absent := func(p string) bool { _, err := os.Lstat(p); return errors.Is(err, os.ErrNotExist) }
	if got := read("keep.txt"); got != "changed" {
		t.Errorf("keep.txt = %q", got)
	}
	if got := read(".git/config"); got != "orig" {
		t.Errorf(".git/config = %q: a protected path was written", got)
	}
	for _, p := range []string{".git/hooks/pre-commit", ".envrc", "sub/.envrc", ".git/hooks/post-checkout", "fifo", "hard"} {
		if !absent(filepath.Join(host, p)) {
			t.Errorf("%s was written", p)
		}
	}
	if !absent(filepath.Join(outside, "planted")) || !absent(filepath.Join(filepath.Dir(host), "escape")) {
		t.Error("written outside the mount")
	}
	if !absent(filepath.Join(host, "gone.txt")) {
		t.Error("gone.txt, deleted by the program, still there")
	}
	if fi, err := os.Stat(filepath.Join(host, "suid")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("suid: %v %v", fi.Mode(), err)
	}
	note := ms.note()
	for _, want := range []string{".git/hooks/pre-commit", ".envrc", ".git/config"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q does not name %s", note, want)
		}
	}

	// Named implants may be written.
	m.Implants = []string{".envrc"}
	var buf2 bytes.Buffer
	tw = tar.NewWriter(&buf2)
	tw.WriteHeader(&tar.Header{Name: ".envrc", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2})
	tw.Write([]byte("ok"))
	tw.Close()
	must((&mountSet{}).apply(mountCopy{m: m, root: host, sent: map[string]bool{}}, bytes.NewReader(buf2.Bytes())))
	if got := read(".envrc"); got != "ok" {
		t.Errorf("named implant .envrc = %q", got)
	}
}

// TestArchiveNoFollow: copying in sends a link as a link, never what it
// points to, and refuses a tree past the size limit.
func TestArchiveNoFollow(t *testing.T) {
	host, secret := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(secret, "id_rsa"), []byte("SECRET"), 0o600)
	os.Symlink(secret, filepath.Join(host, "ssh"))
	os.WriteFile(filepath.Join(host, "a"), bytes.Repeat([]byte("a"), 100), 0o644)
	var buf bytes.Buffer
	sent := map[string]bool{}
	if err := archive(&buf, host, 1000, 65534, 65534, sent); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("SECRET")) {
		t.Fatal("a link was followed out of the mount")
	}
	if !sent["ssh"] || !sent["a"] || len(sent) != 2 {
		t.Errorf("sent %v", sent)
	}
	if err := archive(&bytes.Buffer{}, host, 50, 1, 1, map[string]bool{}); !errors.Is(err, errTooBig) {
		t.Errorf("past the limit: %v", err)
	}
}

// TestStopBeforeStart: a call stopped before its program started (the
// caller's cancel, the timeout, which counts from before the pod is
// created) is the stop's Result, which says so, and its pod is deleted (a
// fake API server that creates the pod and never says it runs).
func TestStopBeforeStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
		reason  job.Reason
		code    int
		detail  string
	}{
		{"cancel", time.Hour, true, job.Cancelled, job.KilledExitCode, "killed: the caller cancelled the run before it started (pod deleted)"},
		{"timeout", 50 * time.Millisecond, false, job.Timeout, job.TimeoutExit, "killed after the 50ms timeout, before the program started (no status from the API server; pod deleted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			created := make(chan string, 1)
			deleted := make(chan string, 1)
			e := fakeAPI(t, []corev1.Node{node("n", "amd64", true)}, nil, func(w http.ResponseWriter, r *http.Request, reply func(int, any)) bool {
				switch path := r.URL.Path; {
				case r.Method == "POST" && path == "/api/v1/namespaces/default/pods":
					reply(http.StatusCreated, &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1"}})
					created <- "p"
				case r.Method == "GET" && path == "/api/v1/namespaces/default/pods":
					<-r.Context().Done() // a watch that says nothing
				case r.Method == "DELETE" && strings.HasPrefix(path, "/api/v1/namespaces/default/pods/"):
					deleted <- strings.TrimPrefix(path, "/api/v1/namespaces/default/pods/")
					reply(http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
				default:
					return false
				}
				return true
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				go func() { <-created; cancel() }()
			}
			res, err := e.Run(ctx, Spec{Image: "i", Cmd: []string{"/bin/true"}, Limits: job.Limits{Timeout: tc.timeout}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason || res.ExitCode != tc.code || res.Detail != tc.detail {
				t.Errorf("got %s %d %q, want %s %d %q", res.Reason, res.ExitCode, res.Detail, tc.reason, tc.code, tc.detail)
			}
			select {
			case name := <-deleted:
				if name == "" {
					t.Error("deleted no pod by name")
				}
			default:
				t.Error("the pod was not deleted")
			}
		})
	}
}
