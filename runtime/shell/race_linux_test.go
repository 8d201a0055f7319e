package shell

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// swapper is a perl program that swaps, with renameat2(RENAME_EXCHANGE),
// the directory x and the symbolic link y -> .git in the working
// directory, times times, as fast as it can: the other writer of #28's
// race, a process with the project that no lock of ccrun keeps out.
func swapper(t *testing.T, times int) string {
	nr := map[string]int{"amd64": 316, "arm64": 276}[runtime.GOARCH]
	if nr == 0 {
		t.Skip("renameat2's number is not known for " + runtime.GOARCH)
	}
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl")
	}
	return fmt.Sprintf(`perl -e 'my ($a, $b, $n) = ("x", "y", 0); for (1..%d) { $n++ if syscall(%d, -100, $a, -100, $b, 2) == 0 } print "swapped $n\n"'`, times, nr)
}

// writer writes x/config and x/hooks/pre-commit in a loop, by the
// script's own redirections and by a program (sh), and prints how many
// writes of each landed.
const raceWriter = `n=0; i=0; while [ $i -lt 1000 ]; do
  echo evil >x/config 2>/dev/null && n=$((n+1)); echo evil >x/hooks/pre-commit 2>/dev/null && n=$((n+1)); i=$((i+1))
done; echo "script $n"
sh -c 'n=0; i=0; while [ $i -lt 6000 ]; do [ $((i%100)) = 0 ] && mkdir -p x/hooks 2>/dev/null
  { echo evil >x/config; } 2>/dev/null && n=$((n+1)); { echo evil >x/hooks/pre-commit; } 2>/dev/null && n=$((n+1)); i=$((i+1))
done; echo "program $n"'`

// TestWorkspaceSwapRace: #28's race against the workspace tier. While a
// confined command writes x/config and x/hooks/pre-commit in a loop,
// another writer swaps the directory x with a symbolic link to .git
// (RENAME_EXCHANGE) as fast as it can: a host process, or a workspace
// run of another project that may write this one. The binds sit on the protected
// files themselves in the command's mount namespace, so a path that
// reaches one by any name, at any moment, meets a read-only mount: no
// write reaches .git/config or .git/hooks, while the ordinary writes land
// (both counted). With .git/hooks absent (nothing to bind), what the
// swap lets the command make there is removed by the sweep and reported.
// No mount lock is involved: none could keep out the host process.
func TestWorkspaceSwapRace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hooks    bool // .git/hooks exists (bound read-only)
		confined bool // the swapper is a second workspace run
	}{
		{"host swapper", true, false},
		{"host swapper, no hooks", false, false},
		{"sandboxed swapper", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newConfineWorld(t)
			t.Setenv("TMPDIR", t.TempDir())
			if !tc.hooks {
				if err := os.RemoveAll(w.project + "/.git/hooks"); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(w.project+"/x", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(".git", w.project+"/y"); err != nil {
				t.Fatal(err)
			}
			config, _ := os.ReadFile(w.project + "/.git/config")
			e := newExecutor(t)
			ws := func(src string) Spec { return w.workspaceSpec(t, src) }
			swap := swapper(t, 100000)
			writer := ws(raceWriter)
			stop := make(chan struct{})
			swaps := make(chan string, 1)
			go func() {
				if tc.confined {
					// A workspace run of the same project would wait for the
					// writer's lock (and, started first, make the writer wait
					// for a swapper that stops only when the writer is done).
					// So the sandboxed swapper is a workspace run of another
					// project that names this one writable: a second writer
					// no lock of this project keeps out.
					c, _, err := WorkspaceConfinement(w.home, w.outside, []string{w.project})
					if err != nil {
						swaps <- err.Error()
						return
					}
					s := w.spec(t, `while :; do `+swap+`; done`)
					s.Confine = c
					ctx, cancel := context.WithCancel(context.Background())
					go func() { <-stop; cancel() }()
					res, err := e.Run(ctx, s)
					if err != nil {
						swaps <- err.Error()
						return
					}
					swaps <- fmt.Sprintf("sandboxed swapper: %q %q", res.Stdout, res.Stderr)
					return
				}
				cmd := exec.Command("sh", "-c", `while :; do `+swap+`; done`)
				cmd.Dir = w.project
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					swaps <- err.Error()
					return
				}
				<-stop
				cmd.Process.Kill()
				cmd.Wait()
				swaps <- "host swapper: " + out.String()
			}()
			res, err := e.Run(context.Background(), writer)
			close(stop)
			t.Log(<-swaps)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("exit %d, stdout %q, detail %q", res.ExitCode, res.Stdout, res.Detail)
			landed := 0
			for _, f := range strings.Fields(string(res.Stdout)) {
				if n, err := strconv.Atoi(f); err == nil {
					landed += n
				}
			}
			if landed == 0 {
				t.Errorf("no ordinary write landed: stdout %q, stderr %q", res.Stdout, res.Stderr)
			}
			if b, _ := os.ReadFile(w.project + "/.git/config"); !bytes.Equal(b, config) {
				t.Errorf(".git/config changed: %q", b)
			}
			if _, err := os.Lstat(w.project + "/.git/hooks/pre-commit"); err == nil {
				t.Error(".git/hooks/pre-commit was made")
			}
			if !tc.hooks {
				if _, err := os.Lstat(w.project + "/.git/hooks"); err == nil {
					t.Error(".git/hooks was made and left")
				}
			}
		})
	}
}

// TestWorkspaceLock: two workspace runs of one project do not overlap
// (the second waits for the first's lock and says so), and the one that
// waited searches the project again: a protected path its search found
// and that is gone by the time it runs (here removed while it waited)
// does not fail its start.
func TestWorkspaceLock(t *testing.T) {
	w := newConfineWorld(t)
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	if err := os.Mkdir(w.project+"/.vscode", 0o755); err != nil {
		t.Fatal(err)
	}
	ws := func(src string) Spec { return w.workspaceSpec(t, src) }
	e := newExecutor(t)
	first, second := ws(`echo a >>order; sleep 1; echo a >>order`), ws(`echo b >>order`)
	done := make(chan error, 1)
	go func() {
		res, err := e.Run(context.Background(), first)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("first: exit %d: %s %s", res.ExitCode, res.Stderr, res.Detail)
		}
		done <- err
	}()
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(w.project + "/order"); len(b) > 0 {
			break
		}
		if i == 500 {
			t.Fatal("the first run did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(w.project + "/.vscode"); err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Detail, "waited") {
		t.Errorf("second: exit %d, stderr %q, detail %q: want a clean run that waited", res.ExitCode, res.Stderr, res.Detail)
	}
	if b, _ := os.ReadFile(w.project + "/order"); string(b) != "a\na\nb\n" {
		t.Errorf("order %q: the runs overlapped", b)
	}
}

// workspaceSpec is spec in the workspace tier of the project.
func (w confineWorld) workspaceSpec(t *testing.T, src string) Spec {
	t.Helper()
	c, _, err := WorkspaceConfinement(w.home, w.project, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := w.spec(t, src)
	s.Confine = c
	return s
}
