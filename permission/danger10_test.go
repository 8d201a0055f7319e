package permission

import "testing"

// TestDangerousPathsIssue10: what the words do not say outright — brace
// expansions, positional arguments, expansions inside a path, an option's
// attached value — is still found.
func TestDangerousPathsIssue10(t *testing.T) {
	t.Parallel()
	project, home := fakeHome(t)
	withArgs := func(cmd string, args ...string) *Request {
		r := shellRequest(cmd)
		r.Args = args
		return r
	}
	tests := []struct {
		name string
		req  *Request
		want bool
	}{
		{"nested braces", shellRequest("cat ~/.s{s,{}}h/i{d,{}}_ed25519"), true},
		{"brace alternatives", shellRequest("cat ~/{notes.txt,.ssh/id_ed25519}"), true},
		{"brace sequence", shellRequest("cat ~/.ssh/id_ed2551{8..9}"), true},
		{"brace to ccrun config", shellRequest("sort {-occrun.local.json,-T{}}"), true},
		{"option's attached value", shellRequest("sort -occrun.json in"), true},
		{"huge brace expansion", shellRequest("echo {1..9}{1..9}{1..9}{1..9}"), true},
		{"positional argument", withArgs(`cat "$1"`, home+"/.ssh/id_ed25519"), true},
		{"positional through $@", withArgs(`cat "$@"`, "README.md", "~/.ssh/id_ed25519"), true},
		{"argument not referenced", withArgs(`true`, "~/.ssh/id_ed25519"), true},
		{"another process's environment", shellRequest("cat /proc/$$/environ"), true},
		{"environ of pid 1", shellRequest("cat /proc/1/environ"), true},
		{"shadow", shellRequest("cat /etc/shadow"), true},
		{"agent credentials", shellRequest("cat ~/.claude/.credentials.json"), true},
		{"a pem by suffix", shellRequest("cat server.pem"), true},
		{"harmless braces", shellRequest("echo {a,b}"), false},
		{"harmless argument", withArgs(`cat "$1"`, "README.md"), false},
		{"harmless expansion", shellRequest("cat src/$X"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DangerousPaths(tt.req, project, home)
			if (len(got) > 0) != tt.want {
				t.Errorf("DangerousPaths(%q, args %q) = %v, want found %v", tt.req.Command.Source, tt.req.Args, got, tt.want)
			}
		})
	}
}

// TestPositionalArgs: a command that expands $1, $@ or $* is read-only
// only when the expanded words are.
func TestPositionalArgs(t *testing.T) {
	t.Parallel()
	p, _ := NewPolicy(PolicyConfig{})
	tests := []struct {
		cmd  string
		args []string
		want bool // allowed as read-only
	}{
		{`cat "$1"`, []string{"README.md"}, true},
		{`cat "$@"`, []string{"a", "b c"}, true},
		{`cat $1`, []string{"a"}, true},
		{`cat $1`, []string{"a b"}, false},     // split
		{`cat $1`, []string{"*"}, false},       // globbed
		{`cat $1`, nil, false},                 // vanishes
		{`sort "$1" x`, []string{"-o"}, false}, // an option
		{`sort $@`, []string{"--compress-program=sh"}, false},
		{`uniq "$1" "$2"`, []string{"in", "out"}, false},
		{`git "$1"`, []string{"push"}, false},
		{`"$1" x`, []string{"rm"}, false},
		{`echo "$#" "$*"`, []string{"a", "b"}, true},
		{`cat "$0"`, nil, false},
		{`cat "${1:-x}"`, nil, false},
	}
	for _, tt := range tests {
		r := shellRequest(tt.cmd)
		r.Args = tt.args
		v, layer, why := p.Decide(r)
		if got := v == Allow && layer == LayerReadOnly; got != tt.want {
			t.Errorf("Decide(%q, args %q) = %s %s (%s), want read-only %v", tt.cmd, tt.args, v, layer, why, tt.want)
		}
	}
}

// TestCallEnvNotReadOnly: a call's environment that changes what programs
// run makes a read-only command asked.
func TestCallEnvNotReadOnly(t *testing.T) {
	t.Parallel()
	p, _ := NewPolicy(PolicyConfig{})
	for _, env := range [][]string{
		{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=touch /tmp/x"},
		{"BASH_ENV=x.sh"}, {"LD_PRELOAD=/tmp/x.so"}, {"PAGER=x"}, {"PATH=/tmp"}, {"FOO=1"},
	} {
		r := shellRequest("git status")
		r.Env = env
		if v, layer, why := p.Decide(r); v == Allow {
			t.Errorf("Decide(git status, env %q) = allow (%s: %s), want ask", env, layer, why)
		}
	}
	r := shellRequest("git status")
	r.Env = []string{"LC_ALL=C", "NO_COLOR=1"}
	if v, layer, _ := p.Decide(r); v != Allow || layer != LayerReadOnly {
		t.Errorf("Decide(git status, env LC_ALL NO_COLOR) = %s %s, want allow read-only", v, layer)
	}
}
