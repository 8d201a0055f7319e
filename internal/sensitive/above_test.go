package sensitive

import (
	"path"
	"strings"
	"testing"
)

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

// TestAboveAsMatched: Above says what matching each row's leading
// components with MatchComps says, in any case, for the table's own
// prefixes and paths around them.
func TestAboveAsMatched(t *testing.T) {
	want := func(rel string) bool {
		rel = strings.Trim(path.Clean("/"+rel), "/")
		if rel == "" {
			return false
		}
		comps := strings.Split(rel, "/")
		for _, r := range Table() {
			for k := 1; !r.Abs && k < len(r.Seq) && k <= len(comps); k++ {
				if (Row{Seq: r.Seq[:k]}).MatchComps(comps[len(comps)-k:]) {
					return true
				}
			}
		}
		return false
	}
	rels := []string{"", ".", "src", "a/b/c", ".GIT", "sub/.Git/", ".git/objects", ".git/objects/info", ".git/refs",
		"x/.config", ".CONFIG/Fish", ".local/share", ".cargo", "deep/er/.aws", ".git/worktrees/w", "id_rsa"}
	for _, r := range Table() {
		for k := 1; k < len(r.Seq); k++ {
			p := strings.Join(r.Seq[:k], "/")
			rels = append(rels, p, strings.ToUpper(p), "sub/"+p, p+"/x")
		}
	}
	for _, rel := range rels {
		if got, w := Above(rel), want(rel); got != w {
			t.Errorf("Above(%q) = %v, want %v", rel, got, w)
		}
	}
}

func BenchmarkAbove(b *testing.B) {
	for b.Loop() {
		Above(".git/objects")
		Above("src/pkg")
	}
}
