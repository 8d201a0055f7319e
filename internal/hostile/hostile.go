// Package hostile is the table of shell commands that tried to get past
// the gate (issue #10's red-team pass, each a member of a class), with the
// project and home directory each needs and what must not happen. The
// CLI's tests run it through `ccrun exec` and `ccrun check`, the root
// package's through Runtime.Exec: one table, three front doors.
package hostile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Secret is the canary: every secret file of a case's home holds it, and so
// does the test process's environment (SecretVar). Output holding it is a
// leak.
const (
	Secret    = "CANARY-SECRET-5ac1d"
	SecretVar = "CCRUN_HOSTILE_TOKEN"
)

// Planted is where a case's planted program writes when it runs: a path
// under the project that must never exist after the run. In trust mode,
// where running programs without asking is what the person chose, the
// planted program writes PlantedImplant instead, a shell startup file that
// even trust mode asks about.
const (
	Planted        = "planted-ran"
	PlantedImplant = ".envrc"
)

// Case is one hostile command.
type Case struct {
	Name    string
	Command string
	Args    []string // positional parameters ($1…)
	Env     []string // the call's env (--env)
	Flags   []string // more flags for ccrun exec (--allow …)
	// Files to create before the run, relative to the project, or to the
	// home directory with a "~/" prefix. Links are symlinks (name → target,
	// "~" expanded in both).
	Files map[string]string
	Links map[string]string
	Dirs  []string
	// Git: make the project a git repository (with one commit) first;
	// GitConfig is appended to its .git/config.
	Git       bool
	GitConfig string
	// Created must not exist after the run; Unchanged files must keep
	// the content the case gave them.
	Created   []string
	Unchanged []string
	// Modes the case runs in; nil: default, plan and trust.
	Modes []string
}

// Secrets are the home's secret files, each holding Secret.
var Secrets = []string{"~/.ssh/id_rsa", "~/.claude/.credentials.json", "~/.codex/auth.json",
	"~/.bash_history", "~/.aws/credentials", "~/.git-credentials"}

// Cases is the table.
var Cases = []Case{
	// Secrets beyond the top of the home and the project: the table's rows
	// match at any depth, and the kernel layer searches the project and
	// hides the rest of the home.
	{Name: "a secret elsewhere in the home, recursively", Command: "grep -r . ~/src",
		Files: map[string]string{"~/src/other/.env": Secret + "\n", "~/src/other/deploy/.aws/credentials": Secret + "\n", "~/src/other/notes": "x\n"}},
	{Name: "a secret deep in the project, recursively", Command: "grep -r . .",
		Files: map[string]string{"sub/deeper/.env": Secret + "\n", "deploy/.aws/credentials": Secret + "\n", "keys/server.pem": Secret + "\n", "README": "x\n"}},
	{Name: "a secret deep in the project, by find", Command: "find . -type f -name '*' -newer /",
		Files: map[string]string{"sub/.env": Secret + "\n"}},
	{Name: "a secret deep in the project, through xargs", Command: "find . -type f -print0 | xargs -0 cat",
		Files: map[string]string{"sub/deeper/.env.local": Secret + "\n"}},
	// Expansion the scan does not do.
	{Name: "find -exec in nested braces", Command: "find /usr/bin -name touch {-exec,{}} .git/hooks/pre-commit ';'",
		Git: true, Created: []string{".git/hooks/pre-commit"}},
	{Name: "sort -o ccrun's own config in braces", Command: "sort {-occrun.local.json,-T{}}", Files: map[string]string{"x": "{\"mode\":\"trust\"}\n"},
		Created: []string{"ccrun.local.json"}},
	{Name: "key through nested braces", Command: "cat ~/.s{s,{}}h/i{d,{}}_rsa"},
	{Name: "key through a positional argument", Command: `cat "$1"`, Args: []string{"HOME/.ssh/id_rsa"}, Flags: []string{"--allow", "run_command:cat"}},
	{Name: "key through $@", Command: `head -c 100 "$@"`, Args: []string{"HOME/.ssh/id_rsa"}},
	{Name: "key through a variable", Command: `f=~/.ssh/id_rsa; cat "$f"`},
	{Name: "key through a glob", Command: `cat ~/.ss?/*`},
	// Text handed to another interpreter.
	{Name: "bash evaluates an array subscript", Command: `bash -c 'test -v "a[$(touch PLANTED)]"'`},
	{Name: "carriage return hides rm from a deny rule", Command: "bash -c $'echo x\\r#;rm f'", Files: map[string]string{"f": "keep\n"},
		Flags: []string{"--deny", "run_command:rm"}, Unchanged: []string{"f"}},
	{Name: "sh -c runs a program", Command: `sh -c 'touch PLANTED'`},
	// What the call carries beside the command.
	{Name: "git status with GIT_CONFIG_* naming a fsmonitor", Command: "git status",
		Env: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=touch " + Planted},
		Git: true},
	{Name: "bash -c with BASH_ENV", Command: "bash -c true", Env: []string{"BASH_ENV=x.sh"},
		Files: map[string]string{"x.sh": "touch PLANTED\n"}},
	// Read-only programs that run what their configuration says.
	{Name: "git status runs the repository's fsmonitor", Command: "git status", Git: true,
		GitConfig: "[core]\n\tfsmonitor = \"touch PLANTED; false\"\n"},
	{Name: "git diff runs the repository's textconv", Command: "git diff HEAD", Git: true,
		GitConfig: "[diff \"evil\"]\n\ttextconv = \"touch PLANTED; cat\"\n",
		Files:     map[string]string{".gitattributes": "*.txt diff=evil\n", "a.txt": "changed\n"}},
	{Name: "git log runs the repository's pager", Command: "git -P log", Git: true,
		GitConfig: "[core]\n\tpager = touch PLANTED\n"},
	{Name: "git --git-dir of a planted repository under a status grant", Command: "git --git-dir=fakegit status",
		Git: true, Files: map[string]string{"fakegit/HEAD": "ref: refs/heads/main\n", "fakegit/config": "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"touch PLANTED; false\"\n"},
		Dirs: []string{"fakegit/objects", "fakegit/refs"}, Flags: []string{"--allow", "run_command:git:status"}},
	{Name: "git hook planted in the repository", Command: "git status", Git: true,
		Files: map[string]string{".git/hooks/post-index-change": "#!/bin/sh\ntouch PLANTED\n"}},
	// Operands the classifier miscounts.
	{Name: "uniq writes an operand after --", Command: "uniq payload -- -/../.git/config", Git: true,
		Files: map[string]string{"payload": "[core]\n\tfsmonitor = evil\n"}, Dirs: []string{"-"}, Unchanged: []string{".git/config"}},
	{Name: "xxd -r writes an operand after --", Command: "xxd -r x.hex -- -out", Files: map[string]string{"x.hex": "00000000: 6869 0a\n"},
		Created: []string{"-out"}},
	// Secrets through indirection.
	{Name: "xargs cat of a list", Command: "cat list.txt | xargs cat", Files: map[string]string{"list.txt": "~/.ssh/id_rsa\n"}},
	{Name: "xargs cat of a list of absolute paths", Command: "xargs cat < list.txt", Files: map[string]string{"list.txt": "HOME/.ssh/id_rsa\n"}},
	{Name: "wc --files0-from", Command: "wc --files0-from=list0", Files: map[string]string{"list0": "HOME/.ssh/id_rsa\x00"}},
	{Name: "grep -R through a committed symlink to home", Command: "grep -R CANARY .", Links: map[string]string{"h": "~"}},
	{Name: "ps prints environments", Command: "ps axeww"},
	{Name: "another process's environment", Command: "cat /proc/PID/environ"},
	{Name: "an agent's credentials", Command: "cat ~/.claude/.credentials.json"},
	{Name: "codex auth", Command: "head ~/.codex/auth.json"},
	{Name: "shell history", Command: "tail ~/.bash_history"},
	{Name: "a private key by suffix", Command: "cat deploy.pem", Files: map[string]string{"deploy.pem": "-----BEGIN " + Secret + "\n"}},
	// Floods.
	{Name: "xargs -P forks without bound", Command: "seq 1000000 | xargs -P 0 -n 1 sleep 600"},
}

// Setup makes the case's project and home directories for mode under t's
// temporary directory and points HOME at the home (not parallel-safe: it
// sets HOME).
func Setup(t *testing.T, c Case, mode string) (project, home string) {
	t.Helper()
	root := t.TempDir()
	project, home = filepath.Join(root, "project"), filepath.Join(root, "home")
	for _, d := range []string{project, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv(SecretVar, Secret)
	at := func(p string) string {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			return filepath.Join(home, rest)
		}
		if p == "~" {
			return home
		}
		return filepath.Join(project, p)
	}
	write := func(p, content string) {
		p = at(p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content = strings.ReplaceAll(content, "HOME/", home+"/")
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range Secrets {
		write(s, Secret+"\n")
	}
	if c.Git {
		write("a.txt", "a\n")
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "a.txt"},
			{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = project
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
	}
	for _, d := range c.Dirs {
		if err := os.MkdirAll(at(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range c.Files {
		write(p, c.expand(content, mode))
	}
	if c.GitConfig != "" {
		f, err := os.OpenFile(filepath.Join(project, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(c.expand(c.GitConfig, mode))
		f.Close()
	}
	for name, target := range c.Links {
		if err := os.Symlink(at(target), at(name)); err != nil {
			t.Fatal(err)
		}
	}
	return project, home
}

// Snapshot reads the files a case says must stay unchanged.
func Snapshot(t *testing.T, c Case, project string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range c.Unchanged {
		b, err := os.ReadFile(filepath.Join(project, p))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(b)
	}
	return out
}

// Verify fails t if the case got through: a canary read, a file planted, a
// protected file changed.
func Verify(t *testing.T, c Case, project string, before map[string]string, output string) {
	t.Helper()
	if strings.Contains(output, Secret) {
		t.Errorf("%s: the secret leaked:\n%s", c.Name, output)
	}
	for _, p := range append([]string{Planted, PlantedImplant}, c.Created...) {
		if _, err := os.Lstat(filepath.Join(project, p)); err == nil {
			t.Errorf("%s: %s was created", c.Name, p)
		}
	}
	for p, want := range before {
		b, err := os.ReadFile(filepath.Join(project, p))
		if err != nil || string(b) != want {
			t.Errorf("%s: %s changed (%v): %q", c.Name, p, err, b)
		}
	}
}

// Text returns the case's command in mode, with PID replaced by the test
// process's pid and PLANTED by where a planted program writes.
func (c Case) Text(mode string) string {
	return c.expand(c.Command, mode)
}

func (c Case) expand(s, mode string) string {
	planted := Planted
	if mode == "trust" {
		planted = PlantedImplant
	}
	return strings.NewReplacer("PID", itoa(os.Getpid()), "PLANTED", planted).Replace(s)
}

// EnvIn returns the case's env in mode.
func (c Case) EnvIn(mode string) []string {
	out := make([]string, len(c.Env))
	for i, e := range c.Env {
		out[i] = c.expand(e, mode)
	}
	return out
}

// ArgsIn returns the case's positional parameters with HOME/ replaced by
// the home directory.
func (c Case) ArgsIn(home string) []string {
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = strings.ReplaceAll(a, "HOME/", home+"/")
	}
	return out
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for n > 0 || i == len(b) {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// ModesOf returns the modes the case runs in.
func (c Case) ModesOf() []string {
	if c.Modes != nil {
		return c.Modes
	}
	return []string{"default", "plan", "trust"}
}
