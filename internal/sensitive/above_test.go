package sensitive

import "testing"

func TestAbove(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string]bool{
		".git": true, "sub/.git": true, ".config": true, ".config/git": true, ".local/share": true,
		"sub/.cargo": true, "Library": true,
		"": false, ".": false, "src": false, ".git/config": false, ".vscode": false, "git": false,
	} {
		if got := Above(rel); got != want {
			t.Errorf("Above(%q) = %v, want %v", rel, got, want)
		}
	}
}
