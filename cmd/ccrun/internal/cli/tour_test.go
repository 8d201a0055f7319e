package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tourStep is one command of the tour: its arguments, the exit codes it
// may end with (none listed: 0), and the paths the person asks it to write
// (a file, or a directory ending in /), which git may show from then on.
type tourStep struct {
	args  []string
	codes []int
	asks  []string
}

// TestTourLeavesProjectClean: every command that needs no Docker Engine,
// run as a person would in a fresh git repository (each a process of its
// own, from the repository's directory, the project found as git's top
// level), leaves `git status --porcelain` as it was after each command,
// except for what the person asked for: the capability `capability new`
// wrote and the ccrun.json that a project grant writes. ccrun's
// housekeeping is in .ccrun/ (ignored by git from its first byte, so a
// `git add .` between two commands takes none of it) or in the state
// directory; no other file appears at the root, ignored or not.
func TestTourLeavesProjectClean(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	bin := mcpBinary(t)
	fakeHome(t)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	dir := filepath.Join(t.TempDir(), "repo")
	writeFiles(t, dir, map[string]string{"README.md": "# a project\n"})
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "add", "README.md")
	gitRun(t, dir, "commit", "-qm", "first")
	env := os.Environ()

	var asked []string // what the person asked for so far
	clean := func(after string) {
		t.Helper()
		cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all", "--ignored=no")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git status: %v", err)
		}
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			path := strings.TrimSpace(line[min(3, len(line)):])
			if line != "" && !slices.ContainsFunc(asked, func(a string) bool { return path == a || strings.HasSuffix(a, "/") && strings.HasPrefix(path, a) }) {
				t.Errorf("after %s, git status --porcelain shows what nobody asked for: %s", after, line)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !slices.Contains([]string{".git", ".ccrun", "README.md", "ccrun.json"}, e.Name()) {
				t.Errorf("after %s, the project's root holds %s", after, e.Name())
			}
		}
	}

	ccrun := func(s tourStep) string {
		t.Helper()
		cmd := exec.Command(bin, s.args...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("ccrun %q: %v", s.args, err)
		}
		want := s.codes
		if len(want) == 0 {
			want = []int{exitOK}
		}
		if !slices.Contains(want, code) {
			t.Errorf("ccrun %q: exit %d, want one of %v\nstdout: %s\nstderr: %s", s.args, code, want, stdout.String(), stderr.String())
		}
		asked = append(asked, s.asks...)
		clean(fmt.Sprintf("ccrun %q", s.args))
		return stdout.String()
	}
	steps := func(ss ...tourStep) {
		t.Helper()
		for _, s := range ss {
			ccrun(s)
		}
	}
	step := func(args ...string) tourStep { return tourStep{args: args} }
	exits := func(codes []int, args ...string) tourStep { return tourStep{args: args, codes: codes} }

	steps(
		step("--help"), step("help", "exec"), step("version"), step("version", "--json"),
		step("doctor"), step("doctor", "--json"),
		step("completion", "bash"), step("completion", "zsh"), step("completion", "fish"), step("completion", "powershell"),
		step("__complete", "exec", ""),
		step("key", "git status"), step("key", "--json", "make test && make lint"),
		step("check", "--shell", "git push"), step("check", "--json", "--shell", "ls"),
		// read-only commands run without a question
		step("exec", "--shell", "ls -la"), step("exec", "--shell", "git status --porcelain"), step("exec", "--shell", "cat README.md"),
		// one that is not, with nobody to ask: denied, and audited
		exits([]int{exitDenied}, "exec", "--shell", "rm -f no-such-file"),
		exits([]int{exitUsage}, "exec", "--wasm", "no-such.wasm"),
		// the capability the person asks for, run as scaffolded
		tourStep{args: []string{"capability", "new", "hello", "--env", "@wasm"}, asks: []string{".ccrun/capabilities/hello/"}},
		step("capability", "list"), step("capability", "list", "--json"), step("capability", "validate"), step("capability", "validate", "hello"),
		step("exec", "--approve", "once", "hello"),
		step("exec", "--approve", "once", "--wasm", ".ccrun/capabilities/hello/hello.wasm"),
		tourStep{args: []string{"exec", "--approve", "project", "hello"}, asks: []string{"ccrun.json"}},
		step("exec", "hello"),
		step("allowlist", "list"), step("allowlist", "list", "--json"),
		step("allowlist", "add", "run_wasm:tools/x.wasm", "--scope", "project"),
		step("allowlist", "remove", "run_wasm:tools/x.wasm"),
		step("allowlist", "lint"),
		step("trust"), step("trust", "--digest"), step("trust", "--list"), step("trust", "--list", "--json"),
		step("trust", "--yes"), step("trust", "--revoke"), step("trust", "--yes"),
		step("session", "status"),
		step("gc"), step("gc", "--dry-run"), step("gc", "--json"), step("gc", "--dry-run", "--json"),
		step("demo"),
	)

	// A session: started, a grant kept in it, shown, ended.
	m := regexp.MustCompile(`^export CCRUN_SESSION=([0-9a-f]{32})\n$`).FindStringSubmatch(ccrun(step("session", "start")))
	if m == nil {
		t.Fatal("session start printed no export line")
	}
	env = append(env, "CCRUN_SESSION="+m[1])
	steps(
		step("exec", "--approve", "session", "--shell", "rm -f no-such-file"),
		step("exec", "--shell", "rm -f no-such-file"),
		step("allowlist", "add", "run_command:rm", "--scope", "session"),
		step("session", "status"), step("session", "status", "--json"),
		step("session", "end"),
	)
	env = env[:len(env)-1]

	// ccrun mcp, over stdio and over HTTP: the tools listed, a read-only
	// command run, one that would ask denied (the client cannot ask).
	cs := mcpStdio(t, dir, env, nil, "")
	tourMCP(t, cs)
	cs.Close()
	clean("ccrun mcp")
	url, token := mcpHTTP(t, dir, env)
	cs = mcpHTTPClient(t, url, token, nil)
	tourMCP(t, cs)
	cs.Close()

	clean("ccrun mcp --http")
	cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
	cmd.Dir = dir
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "ccrun.json") || !strings.Contains(string(out), ".ccrun/capabilities/hello/") {
		t.Errorf("git status --porcelain lacks what the person asked for (ccrun.json, the capability): %v\n%s", err, out)
	}
}

// tourMCP lists the tools on cs, runs a read-only command and one that
// asks (denied: nobody to ask).
func tourMCP(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if res := callTool(t, cs, "run_command", map[string]any{"command": "ls"}); res.IsError {
		t.Errorf("run_command ls: %s", text(res))
	}
	if res := callTool(t, cs, "run_command", map[string]any{"command": "rm -f no-such-file"}); !res.IsError {
		t.Errorf("run_command rm with nobody to ask: %s, want denied", text(res))
	}
	if res := callTool(t, cs, "hello", map[string]any{}); res.IsError {
		t.Errorf("hello (granted for the project): %s", text(res))
	}
}

// TestTourOutsideProject: commands run outside any project (no ccrun.json,
// no git repository upwards) write nothing into the current directory.
func TestTourOutsideProject(t *testing.T) {
	bin := mcpBinary(t)
	fakeHome(t)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	dir := t.TempDir()
	for _, args := range [][]string{
		{"version"}, {"doctor"}, {"key", "ls"}, {"check", "--shell", "ls"},
		{"exec", "--shell", "ls"}, {"exec", "--shell", "rm -f no-such-file"},
		{"capability", "list"}, {"allowlist", "list"}, {"trust"}, {"trust", "--digest"}, {"gc"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() < 0 {
			t.Fatalf("ccrun %q: %v\n%s", args, err, out)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("ccrun %q outside a project left %s in the current directory", args, e.Name())
		}
	}
}
