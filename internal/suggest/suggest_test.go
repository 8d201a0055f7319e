package suggest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClosest(t *testing.T) {
	t.Parallel()
	flags := []string{"--shell", "--wasm", "--docker", "--input", "--mode", "--json"}
	for _, c := range []struct {
		word string
		in   []string
		want []string
	}{
		{"--shel", flags, []string{"--shell"}},
		{"--dokcer", flags, []string{"--docker"}},
		{"--SHELL", flags, nil}, // the same word, in another case: nothing to suggest
		{"fmtt", []string{"fmt", "fmt-json", "lint"}, []string{"fmt"}},
		{"fm", []string{"fmt", "fmt-json", "lint"}, []string{"fmt", "fmt-json"}},
		{"zzzzzz", []string{"fmt", "lint"}, nil},
		{"readonly", []string{"read-only", "plan-only", "analyze-only"}, []string{"read-only"}},
		{"", flags, nil},
	} {
		if diff := cmp.Diff(c.want, Closest(c.word, c.in)); diff != "" {
			t.Errorf("Closest(%q) (-want +got):\n%s", c.word, diff)
		}
	}
}

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"gït", "git", 1}} {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
