package shellcmd

import (
	"strings"
	"testing"
)

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
		f, ok := parseFile(cmd)
		if !ok {
			t.Fatalf("%q does not parse", cmd)
		}
		progs := map[string]bool{}
		for _, s := range Segments(f) {
			if p, lit := s.Program(); lit {
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
	f, ok := parseFile(cmd)
	if !ok {
		t.Fatal("does not parse")
	}
	if n := len(Segments(f)); n > 2*maxSegments {
		t.Errorf("%d segments, want at most %d", n, 2*maxSegments)
	}
}

func TestSegmentsDepthBounded(t *testing.T) {
	t.Parallel()
	cmd := strings.Repeat("eval ", 20) + "ls"
	f, ok := parseFile(cmd)
	if !ok {
		t.Fatal("does not parse")
	}
	opaque := false
	for _, s := range Segments(f) {
		opaque = opaque || s.Opaque
	}
	if !opaque {
		t.Error("deep nesting is not opaque")
	}
}
