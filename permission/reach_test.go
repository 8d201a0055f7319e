package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadOnlyBeyondTheProject: a read-only command that names a path in a
// home directory outside the project is asked, not run unasked: the kernel
// layer hides the rest of the home from what runs unasked (a secret can lie
// anywhere in it: ~/src/other/.env), so it would only fail.
func TestReadOnlyBeyondTheProject(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	project := filepath.Join(home, "src", "proj")
	for _, d := range []string{project + "/sub", home + "/src/other", home + "/.config/git"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home+"/src/other", project+"/other"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	pol, err := NewPolicy(PolicyConfig{ProjectDir: project, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		src string
		ro  bool
	}{
		{"cat README", true},
		{"grep -r MARK sub", true},
		{"ls", true},
		{"cat " + project + "/README", true},
		{"git status", true},
		{"cat ~/.gitconfig", true},
		{"cat ~/.config/git/ignore", true},
		{"echo ~", true},
		{"printf '%s\\n' ~/notes.txt", true},
		{"grep -r MARK ~/src", false},
		{"grep -r MARK ~/src/other", false},
		{"cat ~/notes.txt", false},
		{"cat $HOME/notes.txt", false},
		{"cat \"$HOME\"/notes.txt", false},
		{"ls ~", false},
		{"ls ..", false},
		{"cat ../other/x", false},
		{"cat other/x", false}, // a symlink out of the project, into the home
		{"cat ~/src/*/x", false},
		{"cat ~/.config/settings.ini", false},
		{"cat /home/someone/notes", false},
		{"cat /root/notes", false},
		{"wc -l < ~/notes.txt", false},
		{"git -C ~/src/other log", false},
		{"cat README && cat ~/notes.txt", false},
		{"echo $(cat ~/notes.txt)", false},
		{"find ~/src -name '*.go'", false},
		{"cat --file=~/notes.txt", false},
	} {
		req := shellRequest(tt.src)
		req.Command = ParseCommand(tt.src)
		req.Dir = project
		if got := pol.ReadOnlyCall(req); got != tt.ro {
			_, _, why, _ := pol.effectiveClass(&inside{req: req})
			t.Errorf("%q: read-only %v, want %v (%s)", tt.src, got, tt.ro, why)
		}
		d, _, why := pol.Decide(req)
		if !tt.ro && d == Allow {
			t.Errorf("%q: allowed in the default mode: %s", tt.src, why)
		}
	}
}
