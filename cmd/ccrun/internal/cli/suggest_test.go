package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
)

// A mistyped flag or capability name is a usage error that says what was
// probably meant, as an unknown command does.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	if _, err := capabilities.Scaffold(dir, "fmt", ceiling.Wasm); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--shel", "true"}, "Did you mean this?\n\t--shell\n"},
		{[]string{"exec", "--dokcer=x"}, "\t--docker\n"},
		{[]string{"check", "--jsn", "--shell", "true"}, "\t--json\n"},
		{[]string{"exec", "fmtt"}, "(did you mean fmt?)"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"--project-dir", dir}, c.args...), stdio{strings.NewReader(""), &out, &errb})
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), exitUsage, c.want)
		}
	}
}
