package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"version"}, true},
		{[]string{"version", "--json"}, true},
		{[]string{"version", "--json=false"}, true},
		{[]string{"version", "-h"}, false},
		{[]string{"version", "--help"}, false},
		{[]string{"key", "git status"}, true},
		{[]string{"key", "--", "-rf"}, true},
		{[]string{"exec", "--shell", "true"}, true},
		{[]string{"exec", "--shell=true"}, true},
		{[]string{"exec", "--approve", "once", "--env", "A=1", "--timeout", "1s", "--shell", "x"}, true},
		{[]string{"exec", "--allow", "run_command:git", "--mode", "plan", "--shell", "x"}, true},
		{[]string{"exec", "--shell", "--wasm"}, true}, // the value of --shell
		{[]string{"exec", "--env", "--shell"}, false}, // the value of --env: no --shell
		{[]string{"exec", "--shell", "x", "--wasm", "m.wasm"}, false},
		{[]string{"exec", "--shell", "x", "--docker", "img"}, false},
		{[]string{"exec", "--shell", "x", "--engine", "kubernetes"}, false},
		{[]string{"exec", "--shell", "x", "--mount", "a:/b"}, false},
		{[]string{"exec", "--shell", "x", "--wasm-worker"}, false},
		{[]string{"exec", "--shell", "x", "-h"}, false},
		{[]string{"exec", "--shell", "x", "---y"}, false},
		{[]string{"exec", "--", "--shell", "x"}, false},
		{[]string{"exec", "name"}, false},
		{[]string{"exec", "--input", "{}", "name"}, false},
		{[]string{"check", "--shell", "ls", "--json"}, true},
		{[]string{"check", "--session-allow", "run_command:git", "--shell", "git push"}, true},
		{[]string{"check", "--wasm", "m.wasm"}, false},
		{[]string{"--project-dir", ".", "exec", "--shell", "x"}, true},
		{[]string{"--project-dir=.", "--trust-digest", "sha256:0", "version"}, true},
		{[]string{"--project-dir"}, false},
		{[]string{"--bogus", "version"}, false},
		{[]string{"-h"}, false},
		{[]string{"help", "exec"}, false},
		{[]string{"demo"}, false},
		{[]string{"mcp"}, false},
		{[]string{"gc", "--dry-run"}, false},
		{[]string{"allowlist", "list"}, false},
		{[]string{"version", "--project-dir", "."}, true},
		{[]string{"version", "--mode", "plan"}, false}, // not a flag of version
	} {
		if got := Serves(tc.args); got != tc.want {
			t.Errorf("Serves(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestFull(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "ccrun")
	if _, err := Full(exe); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("no ccrun-full: %v, want it said missing", err)
	}
	full := filepath.Join(dir, FullName)
	if err := os.WriteFile(full, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Full(exe); err == nil || !strings.Contains(err.Error(), "not an executable file") {
		t.Errorf("not executable: %v", err)
	}
	if err := os.Chmod(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Full(exe); err != nil || got != full {
		t.Errorf("Full = %q, %v; want %q", got, err, full)
	}
}
