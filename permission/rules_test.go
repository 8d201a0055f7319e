package permission

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"run_command:git:push": "run_command:git:push",
		"write_file":           "write_file:*",
		"run_command:git:*":    "run_command:git:*",
		`run_command:"a && b"`: `run_command:"a && b"`,
	} {
		p, err := ParseRule(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseRule(%q) = %s, %v; want %s", in, p, err, want)
		}
	}
	for _, bad := range []string{"", "run_command:", "*:x", "run_command:git status", `run_command:"unterminated`} {
		if _, err := ParseRule(bad); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseRule(%q) error = %v, want ErrInvalidConfig and ErrInvalidKey", bad, err)
		}
	}
}

func TestSegmentsLookThroughWrappers(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{ // command → programs that must be among its segments
		"env A=1 B=2 git push":                    {"env", "git"},
		"env -S 'git push'":                       {"env", "git"},
		"timeout -s KILL 5 make":                  {"timeout", "make"},
		"sudo -u root -- rm x":                    {"sudo", "rm"},
		"xargs -n 1 -I {} curl {}":                {"xargs", "curl"},
		"find . -execdir chmod 777 {} +":          {"find", "chmod"},
		"watch -n 1 'make test'":                  {"watch", "make"},
		"nohup nice -n 1 ionice -c 3 make":        {"nohup", "nice", "ionice", "make"},
		"busybox sh -c 'wget x'":                  {"busybox", "wget"},
		"sh -ec 'curl x'":                         {"sh", "curl"},
		"bash -o pipefail -c 'curl x'":            {"bash", "curl"},
		"command git push":                        {"command", "git"},
		"exec -a name git push":                   {"exec", "git"},
		"a=$(curl x) true":                        {"curl", "true"},
		"echo ${x:-$(curl x)}":                    {"echo", "curl"},
		"cat <<EOF\n$(curl x)\nEOF":               {"cat", "curl"},
		"for i in $(seq 3); do make; done":        {"seq", "make"},
		"[[ $(id) ]] && case x in x) make;; esac": {"id", "make"},
	}
	for cmd, want := range tests {
		f, ok := parseShell(cmd)
		if !ok {
			t.Fatalf("%q does not parse", cmd)
		}
		progs := map[string]bool{}
		for _, s := range segments(f) {
			if p, lit := s.program(); lit {
				progs[p] = true
			}
		}
		for _, w := range want {
			if !progs[w] {
				t.Errorf("segments(%q) = %v, missing %s", cmd, progs, w)
			}
		}
	}
}

func TestSegmentsBounded(t *testing.T) {
	t.Parallel()
	cmd := strings.Repeat("strace ", 40) + "git push"
	f, ok := parseShell(cmd)
	if !ok {
		t.Fatal("does not parse")
	}
	if n := len(segments(f)); n > 2*maxSegments {
		t.Errorf("%d segments, want at most %d", n, 2*maxSegments)
	}
}

func TestSegmentsDepthBounded(t *testing.T) {
	t.Parallel()
	cmd := strings.Repeat("eval ", 20) + "ls"
	f, ok := parseShell(cmd)
	if !ok {
		t.Fatal("does not parse")
	}
	opaque := false
	for _, s := range segments(f) {
		opaque = opaque || s.opaque
	}
	if !opaque {
		t.Error("deep nesting is not opaque")
	}
}

// FuzzPolicy: the hooks never panic on any command text.
func FuzzPolicy(f *testing.F) {
	for _, e := range loadCorpus(f, "hostile") {
		f.Add(e.Command)
	}
	p, err := NewPolicy(PolicyConfig{ProjectDir: "/nonexistent/project", Home: "/nonexistent/home", Layers: []*Settings{{Origin: OriginUser,
		Deny: []Pattern{MustParsePattern("run_command:git:push")}, Ask: []Pattern{MustParsePattern("run_command:npm")},
		Allow: []Pattern{MustParsePattern("run_command:*")}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		req := shellRequest(src)
		p.DenyRule(req)
		p.Restricted(req)
		p.Decide(req)
		p.Dangerous(req)
		Warnings(req)
	})
}
