package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/internal/hostile"
)

// TestHostileShell runs every command of the red-team table
// (internal/hostile) through `ccrun exec` in the default, plan and trust
// modes, with a canary home and nobody to ask: none may read the canary,
// plant a file or change a protected one. `ccrun check` must agree: a
// command it says would run is one the table says is harmless here, or it
// says the command is decided again at execution.
//
// Each case runs twice: with the kernel layer, and with it forced off
// (CCRUN_LANDLOCK=off), where the interpreter's checks and the policy's
// fallback asks must stop it on their own.
func TestHostileShell(t *testing.T) {
	t.Setenv("CCRUN_SESSION_DIR", t.TempDir())
	for _, kernel := range []string{"landlock", "off"} {
		t.Run(kernel, func(t *testing.T) {
			if kernel == "off" {
				t.Setenv("CCRUN_LANDLOCK", "off")
			}
			testHostileShell(t)
		})
	}
}

func testHostileShell(t *testing.T) {
	for _, c := range hostile.Cases {
		for _, mode := range c.ModesOf() {
			t.Run(mode+"/"+c.Name, func(t *testing.T) {
				project, home := hostile.Setup(t, c, mode)
				before := hostile.Snapshot(t, c, project)
				args := []string{"--project-dir", project, "exec", "--mode", mode, "--timeout", "20s"}
				for _, e := range c.EnvIn(mode) {
					args = append(args, "--env", e)
				}
				args = append(args, c.Flags...)
				args = append(args, "--shell", c.Text(mode))
				if a := c.ArgsIn(home); len(a) > 0 {
					args = append(append(args, "--"), a...)
				}
				var out, errb bytes.Buffer
				code := run(args, stdio{strings.NewReader(""), &out, &errb})
				hostile.Verify(t, c, project, before, out.String()+errb.String())
				if code == 0 && strings.Contains(out.String()+errb.String(), hostile.Secret) {
					t.Errorf("exit 0 with the secret")
				}

				// check agrees, or says the run decides again.
				cargs := []string{"--project-dir", project, "check", "--json", "--mode", mode}
				cargs = append(cargs, checkFlags(c.Flags)...)
				cargs = append(cargs, "--shell", c.Text(mode))
				var cout, cerr bytes.Buffer
				if run(cargs, stdio{strings.NewReader(""), &cout, &cerr}) != 0 {
					t.Fatalf("check: %s", cerr.String())
				}
				var rep checkReport
				if err := json.Unmarshal(cout.Bytes(), &rep); err != nil {
					t.Fatalf("check output %q: %v", cout.String(), err)
				}
				if rep.WouldRun && code == exitDenied && !again(rep.Diagnostics) {
					t.Errorf("check says it would run (%s: %s) and exec refused it (%s), without saying it is decided again at execution",
						rep.Layer, rep.Reason, strings.TrimSpace(errb.String()))
				}
			})
		}
	}
}

// checkFlags keeps the flags ccrun check takes too.
func checkFlags(flags []string) []string {
	var out []string
	for i := 0; i+1 < len(flags); i += 2 {
		switch flags[i] {
		case "--allow", "--ask", "--deny":
			out = append(out, flags[i], flags[i+1])
		}
	}
	return out
}

func again(diags []string) bool {
	for _, d := range diags {
		if strings.Contains(d, "decided again at execution") {
			return true
		}
	}
	return false
}
