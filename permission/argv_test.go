package permission

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/shellcmd"
)

func TestReadOnlyArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		env  []string
		want bool
	}{
		{[]string{"git", "status"}, nil, true},
		{[]string{"cat", "a b", "{x,y}"}, nil, true}, // expanded words: a brace is text
		{[]string{"ls", "-la"}, []string{"LC_ALL=C"}, true},
		{[]string{"git", "status"}, []string{"GIT_CONFIG_COUNT=1"}, false},
		{[]string{"bash", "-c", "true"}, []string{"BASH_ENV=x.sh"}, false},
		{[]string{"ls"}, []string{"LD_PRELOAD=/tmp/x.so"}, false},
		{[]string{"rg", "x"}, []string{"RIPGREP_CONFIG_PATH=/tmp/rc"}, false},
		{[]string{"cat", "x"}, []string{"PATH=/tmp"}, false},
		{[]string{"rm", "x"}, nil, false},
		{[]string{"cat", "a\rb"}, nil, false},
		{nil, nil, false},
	}
	for _, tt := range tests {
		if got, why := ReadOnlyArgv(tt.argv, tt.env); got != tt.want {
			t.Errorf("ReadOnlyArgv(%q, %q) = %v (%s), want %v", tt.argv, tt.env, got, why, tt.want)
		}
	}
}

func TestKeyOfArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"git", "status"}, "run_command:git:status"},
		{[]string{"git", "--no-pager", "log"}, "run_command:git:log"},
		{[]string{"git", "--git-dir=x", "status"}, `run_command:"git '--git-dir=x' status"`},
		{[]string{"git", "-C", "d", "status"}, `run_command:"git -C d status"`},
		{[]string{"git", "-c", "k=v", "status"}, `run_command:"git -c 'k=v' status"`},
		{[]string{"/usr/bin/git", "push"}, "run_command:/usr/bin/git:push"},
		{[]string{"cat", "a b"}, `run_command:"cat 'a b'"`},
		{[]string{"rm", "*.log"}, `run_command:"rm '*.log'"`},
		{[]string{"timeout", "60", "true"}, `run_command:"timeout 60 true"`},
		{[]string{"rm", "-rf", "/"}, `run_command:"rm -rf /"`},
		{[]string{"rm", "/", "-rf"}, "run_command:rm:/"},
		{[]string{"ls", "-la"}, `run_command:"ls -la"`},
		{[]string{"git", "status", "--porcelain"}, "run_command:git:status"},
		{[]string{"a b", "x"}, `run_command:"'a b' x"`},
		{nil, `run_command:"#empty"`},
	}
	for _, tt := range tests {
		if got := KeyOfArgv(tt.argv).String(); got != tt.want {
			t.Errorf("KeyOfArgv(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}

func TestRunsPrograms(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"GIT_CONFIG_COUNT", "GIT_SSH_COMMAND", "BASH_ENV", "ENV", "LD_PRELOAD",
		"PAGER", "GIT_PAGER", "LESSOPEN", "LESSCLOSE", "RIPGREP_CONFIG_PATH", "PYTHONSTARTUP", "NODE_OPTIONS",
		"PERL5OPT", "RUBYOPT", "IFS", "PATH", "PS4", "PROMPT_COMMAND", "EDITOR", "VISUAL", "SSH_ASKPASS",
		"MANPAGER", "BASH_FUNC_ls%%", "", "1X", "a-b",
		// make and the build tools it drives
		"MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "CC", "CXX", "LD", "CARGO_BUILD_RUSTC_WRAPPER",
		"CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER", "RUSTFLAGS", "CGO_CFLAGS", "GOENV", "GOTOOLCHAIN",
		"npm_config_script_shell", "NPM_CONFIG_NODE_OPTIONS", "KUBECONFIG", "DOCKER_CONFIG", "AWS_CONFIG_FILE",
		"VIMINIT", "EXINIT"} {
		if why, ok := shellcmd.RunsPrograms(name); !ok || why == "" {
			t.Errorf("RunsPrograms(%q) = %q, %v; want a reason, true", name, why, ok)
		}
	}
	for _, name := range []string{"LANG", "LC_ALL", "TZ", "NO_COLOR", "COLUMNS", "FOO"} {
		if why, ok := shellcmd.RunsPrograms(name); ok {
			t.Errorf("RunsPrograms(%q) = %q, true; want false", name, why)
		}
	}
}

// A command that sets a variable make reads options from is not read-only:
// MAKEFLAGS='--eval=$(shell CMD)' runs CMD in any make, make -n included.
func TestMakeflagsNotReadOnly(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{
		`MAKEFLAGS='--eval=$(shell touch pwned)' make -n`,
		`env MAKEFLAGS='--eval=$(shell touch pwned)' make -n`,
		`GNUMAKEFLAGS=--eval=x make -q`,
		`MAKEFILES=evil.mk make -n`,
	} {
		if ok, _ := IsReadOnlyText(cmd); ok {
			t.Errorf("%s: read-only, want not", cmd)
		}
	}
}

// Without the kernel layer the static reading is all there is: a command
// that reads files no word of it names (recursively, from a list, from a
// response file), or writes an output file through an option-looking word,
// is not auto-allowed; the same programs on plain files are.
func TestStaticClassesWithoutKernel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd        string
		readOnly   bool // judged read-only at all
		needKernel bool // only if the kernel layer holds
	}{
		{"xxd -r -p payload.hex -/../.git/config", false, false},
		{"uniq in -/out", false, false},
		{"diff -rN ~ EMPTY", true, true},
		{"diff --recursive a b", true, true},
		{"sha256sum -c sums.txt", true, true},
		{"file -f names.txt", true, true},
		{"strings @notes.txt", true, true},
		{"xxd file", true, false},
		{"diff a b", true, false},
		{"strings bin", true, false},
	} {
		f, err := syntax.NewParser().Parse(strings.NewReader(c.cmd), "")
		if err != nil {
			t.Fatal(err)
		}
		v := shellcmd.Classify(f, shellcmd.Call{})
		if v.ReadOnly != c.readOnly || c.readOnly && (v.Kernel != "") != c.needKernel {
			t.Errorf("%s: %+v; want read-only %v, needs the kernel %v", c.cmd, v, c.readOnly, c.needKernel)
		}
	}
}
