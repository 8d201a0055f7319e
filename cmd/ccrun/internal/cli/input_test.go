package cli

import (
	"errors"
	"strings"
	"testing"
)

// An --input that is not a JSON object says what it is, and where the
// text went wrong, in the person's words rather than Go's types.
func TestInputNotAnObject(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`[1]`, "got an array"},
		{`"x"`, "got a string"},
		{`null`, "got null"},
		{`3`, "got a number"},
		{`{"a":`, "ends too early (at 1:6)"},
		{"{\n \"a\": tru}", "not JSON at 2:10"},
		{`{"a": 1} {}`, "got more after it"},
	} {
		_, _, err := readInput(c.in, nil)
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "interface") {
			t.Errorf("--input %q: %v; want a usage error saying %q", c.in, err, c.want)
		}
	}
	if got, _, err := readInput(`{"a": [1]}`, nil); err != nil || string(got) != `{"a": [1]}` {
		t.Errorf("an object: %s, %v", got, err)
	}
}
