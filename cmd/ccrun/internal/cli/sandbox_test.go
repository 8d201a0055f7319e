package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/confine"
)

// needKernelSandbox skips a test of the kernel's tiers where Landlock is
// missing, unless CCRUN_REQUIRE_LANDLOCK=1 makes that a failure.
func needKernelSandbox(t *testing.T) {
	t.Helper()
	if _, err := confine.Available(); err != nil {
		if os.Getenv("CCRUN_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("landlock required: %v", err)
		}
		t.Skipf("no landlock: %v", err)
	}
}

// TestSandboxApprovedMake: a cloned repository whose `make test` is
// granted for the session runs it in the workspace tier. Its Makefile
// writes the home's rc file, authorized_keys and ccrun's own config, a git
// hook and .git/config, ccrun.local.json and .envrc; reads the home's keys
// and /proc/1/environ; leaves a process behind; writes through a committed
// symlink to the home; renames a protected file away and puts a new one
// in; hard-links a protected file. None succeeds, and each is reported.
// A build's own writes land.
func TestSandboxApprovedMake(t *testing.T) {
	needKernelSandbox(t)
	home := fakeHome(t)
	const secret = "SECRET-KEY-9c1f"
	writeFiles(t, home, map[string]string{".bashrc": "# rc\n", ".ssh/id_rsa": secret + "\n", ".aws/credentials": secret + "\n",
		".config/ccrun/config.json": "{}\n"})
	script := strings.Join([]string{
		"echo evil >> $HOME/.bashrc",
		"mkdir -p $HOME/.ssh; echo key >> $HOME/.ssh/authorized_keys",
		`echo '{"mode":"trust"}' > $HOME/.config/ccrun/config.json`,
		`printf '#!/bin/sh\ntouch pwned\n' > .git/hooks/pre-commit`,
		"echo '[core] fsmonitor = touch pwned' >> .git/config",
		`echo '{"mode":"trust"}' > ccrun.local.json`,
		"echo 'touch pwned' > .envrc",
		"cat $HOME/.ssh/id_rsa $HOME/.aws/credentials /proc/1/environ",
		"(sleep 41; touch $PWD/late) &",
		"echo evil >> homelink/.bashrc",
		"mv .git/config .git/config.away; echo evil > .git/config",
		"ln .git/config hardlink",
		"mkdir -p build && echo obj > build/out.o",
		"echo done",
	}, "\n")
	project := hostileRepo(t, nil, map[string]string{"Makefile": "test:\n\tsh ./hostile.sh\n", "hostile.sh": script + "\n"},
		map[string]string{"homelink": home})
	gitConfig, err := os.ReadFile(filepath.Join(project, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}

	out, errOut, code := ccrunIn(t, project, "exec", "--approve", "session", "--shell", "make test")
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	if strings.Contains(out+errOut, secret) {
		t.Errorf("a secret was read")
	}
	if !strings.Contains(out, "done") {
		t.Errorf("the build did not run to its end")
	}
	if b, _ := os.ReadFile(filepath.Join(project, "build", "out.o")); string(b) != "obj\n" {
		t.Errorf("the build's own output did not land: %q", b)
	}
	for f, want := range map[string]string{filepath.Join(home, ".bashrc"): "# rc\n", filepath.Join(home, ".config/ccrun/config.json"): "{}\n",
		filepath.Join(project, ".git", "config"): string(gitConfig)} {
		if b, err := os.ReadFile(f); err != nil || string(b) != want {
			t.Errorf("%s changed: %q %v", f, b, err)
		}
	}
	for _, f := range []string{filepath.Join(home, ".ssh/authorized_keys"), ".git/hooks/pre-commit", "ccrun.local.json", ".envrc",
		".git/config.away", "hardlink"} {
		if !filepath.IsAbs(f) {
			f = filepath.Join(project, f)
		}
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s was made", f)
		}
	}
	// each is reported
	for _, want := range []string{"Read-only file system", "Permission denied", "sandbox refused: removed protected paths the command made: "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q", want)
		}
	}
	for _, name := range []string{"ccrun.local.json", ".envrc"} {
		if !strings.Contains(errOut, name) {
			t.Errorf("stderr does not name the removed %s", name)
		}
	}
	// nothing was left behind to finish the job later
	for end := time.Now().Add(10 * time.Second); len(sleepers("41")) > 0 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if left := sleepers("41"); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// TestSandboxOffInUserSettings: "shell": {"sandbox": "off"} in the user's
// settings runs approved commands with the person's rights, as before;
// the same in a project file is refused.
func TestSandboxOffInUserSettings(t *testing.T) {
	needKernelSandbox(t)
	home := fakeHome(t)
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"shell": {"sandbox": "off"}}` + "\n"})
	project := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	if _, errOut, code := ccrunIn(t, project, "exec", "--approve", "once", "--shell", "echo x > "+outside); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("with the sandbox off, the approved write outside the project did not land: %v", err)
	}
	writeFiles(t, project, map[string]string{"ccrun.json": `{"shell": {"sandbox": "off"}}` + "\n"})
	if _, errOut, code := ccrunIn(t, project, "exec", "--approve", "once", "--shell", "true"); code == 0 || !strings.Contains(errOut, "not in a project file") {
		t.Errorf("a project file turning the sandbox off: exit %d: %s", code, errOut)
	}
}

// TestSandboxControls: in the workspace tier, what builds do still works:
// go build and go test of a small module (the Go build cache named
// writable in the user's settings), make writing its outputs, git add and
// commit, git checkout -b, a script writing under $TMPDIR, writes into
// node_modules.
func TestSandboxControls(t *testing.T) {
	needKernelSandbox(t)
	b, err := goCommand(nil, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	goCache := strings.TrimSpace(string(b))
	home := fakeHome(t)
	writeFiles(t, home, map[string]string{".config/ccrun/config.json": `{"shell": {"writable": ["` + goCache + `"]}}` + "\n"})
	project := hostileRepo(t, nil, map[string]string{
		"go.mod":       "module example.com/m\n\ngo 1.22\n",
		"main.go":      "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n",
		"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
		"Makefile":     "all:\n\tmkdir -p out && echo built > out/result\n",
	}, nil)
	for _, script := range []string{
		"go build -o bin/m . && ./bin/m",
		"go test ./...",
		"make && cat out/result",
		"echo change >> main.go && git add main.go && git -c user.name=t -c user.email=t@t commit -qm change && git log --format=%s -1",
		"git checkout -q -b topic && git branch --show-current",
		"echo t > $TMPDIR/x && cat $TMPDIR/x",
		"mkdir -p node_modules/pkg && echo '{}' > node_modules/pkg/package.json && cat node_modules/pkg/package.json",
	} {
		out, errOut, code := ccrunIn(t, project, "exec", "--approve", "once", "--env", "GOCACHE="+goCache, "--env", "GOPATH="+filepath.Join(home, "go"),
			"--env", "GOFLAGS=-mod=mod", "--env", "GOTOOLCHAIN=local", "--shell", script)
		if code != 0 {
			t.Errorf("%q: exit %d\n%s%s", script, code, out, errOut)
		}
	}
}

// TestSandboxNotTurnedOffByASymlink: a committed symbolic link at a
// protected name (.vscode) cannot be bound read-only, and the approved
// command is then refused: a repository cannot turn the tier off.
func TestSandboxNotTurnedOffByASymlink(t *testing.T) {
	needKernelSandbox(t)
	fakeHome(t)
	project := hostileRepo(t, nil, map[string]string{"elsewhere/settings.json": "{}\n"}, map[string]string{".vscode": "elsewhere"})
	outside := filepath.Join(t.TempDir(), "outside")
	_, errOut, code := ccrunIn(t, project, "exec", "--approve", "once", "--shell", "echo x > "+outside)
	if code == 0 || !strings.Contains(errOut, "workspace sandbox cannot be built") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("the command ran unconfined")
	}
}
