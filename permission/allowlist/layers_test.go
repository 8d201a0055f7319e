package allowlist

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayers: the stores sit below the gate. They build on keys, the
// ceiling and internal helpers only; permission (which forwards to them)
// and the root must never be among what they import, nor a backend.
func TestLayers(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".", "../keys").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/ccrun/ccrun", dep == "github.com/ccrun/ccrun/permission",
			strings.HasPrefix(dep, "github.com/ccrun/ccrun/runtime/"), strings.HasPrefix(dep, "github.com/ccrun/ccrun/internal/backend"):
			t.Errorf("permission/allowlist or permission/keys imports %s", dep)
		}
	}
}
