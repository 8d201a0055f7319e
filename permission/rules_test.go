package permission

import (
	"errors"
	"testing"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"run_command:git:push": "run_command:git:push",
		"write_file":           "write_file:*",
		"run_command:git:*":    "run_command:git:*",
		`run_command:"a && b"`: `run_command:"a && b"`,
	} {
		p, err := ParseRule(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseRule(%q) = %s, %v; want %s", in, p, err, want)
		}
	}
	for _, bad := range []string{"", "run_command:", "*:x", "run_command:git status", `run_command:"unterminated`} {
		if _, err := ParseRule(bad); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseRule(%q) error = %v, want ErrInvalidConfig and ErrInvalidKey", bad, err)
		}
	}
}

// FuzzPolicy: the hooks never panic on any command text.
func FuzzPolicy(f *testing.F) {
	for _, e := range loadCorpus(f, "hostile") {
		f.Add(e.Command)
	}
	p, err := NewPolicy(PolicyConfig{ProjectDir: "/nonexistent/project", Home: "/nonexistent/home", Layers: []*Settings{{Origin: OriginUser,
		Deny: []Pattern{MustParsePattern("run_command:git:push")}, Ask: []Pattern{MustParsePattern("run_command:npm")},
		Allow: []Pattern{MustParsePattern("run_command:*")}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		req := shellRequest(src)
		p.DenyRule(req)
		p.Restricted(req)
		p.Decide(req)
		p.Dangerous(req)
		Warnings(req)
	})
}
