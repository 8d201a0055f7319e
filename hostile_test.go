package ccrun_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/hostile"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
)

var limits20s = job.Limits{Timeout: 20 * time.Second}

// TestHostileShellLibrary runs the red-team table (internal/hostile)
// through Runtime.Exec, with no approver, in the default, plan and trust
// modes: nothing gets through the library either.
func TestHostileShellLibrary(t *testing.T) {
	t.Setenv("CCRUN_SESSION_DIR", t.TempDir())
	for _, c := range hostile.Cases {
		for _, mode := range c.ModesOf() {
			t.Run(mode+"/"+c.Name, func(t *testing.T) {
				project, home := hostile.Setup(t, c, mode)
				before := hostile.Snapshot(t, c, project)
				layer := &permission.Settings{Origin: permission.OriginFlags, Name: "test", Mode: permission.Mode(mode)}
				for i := 0; i+1 < len(c.Flags); i += 2 {
					p, err := keys.ParsePattern(c.Flags[i+1])
					if err != nil {
						t.Fatal(err)
					}
					switch c.Flags[i] {
					case "--allow":
						layer.Allow = append(layer.Allow, p)
					case "--deny":
						layer.Deny = append(layer.Deny, p)
					case "--ask":
						layer.Ask = append(layer.Ask, p)
					}
				}
				rt, err := ccrun.New(ccrun.WithProjectDir(project), ccrun.WithSettings(layer))
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var out, errb bytes.Buffer
				o, err := rt.Exec(ctx, &ccrun.Call{Command: c.Text(mode), Args: c.ArgsIn(home), Env: c.EnvIn(mode),
					Limits: limits20s, Stdout: &out, Stderr: &errb})
				hostile.Verify(t, c, project, before, out.String()+errb.String())
				if err != nil && !errors.Is(err, ccrun.ErrPermissionDenied) {
					t.Errorf("error %v: want a denial or a result", err)
				}
				if err == nil && o.Result != nil && o.Result.OK() && (len(c.Created) > 0 || len(before) > 0) {
					t.Logf("ran and exited 0 without doing harm: %s", o.Result.Detail)
				}
			})
		}
	}
}
