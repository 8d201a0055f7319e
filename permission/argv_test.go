package permission

import (
	"testing"
)

func TestKeyOfArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"git", "status"}, "run_command:git:status"},
		{[]string{"git", "--no-pager", "log"}, "run_command:git:log"},
		{[]string{"git", "--git-dir=x", "status"}, `run_command:"git '--git-dir=x' status"`},
		{[]string{"git", "-C", "d", "status"}, `run_command:"git -C d status"`},
		{[]string{"git", "-c", "k=v", "status"}, `run_command:"git -c 'k=v' status"`},
		{[]string{"/usr/bin/git", "push"}, "run_command:/usr/bin/git:push"},
		{[]string{"cat", "a b"}, `run_command:"cat 'a b'"`},
		{[]string{"rm", "*.log"}, `run_command:"rm '*.log'"`},
		{[]string{"timeout", "60", "true"}, `run_command:"timeout 60 true"`},
		{[]string{"rm", "-rf", "/"}, `run_command:"rm -rf /"`},
		{[]string{"rm", "/", "-rf"}, "run_command:rm:/"},
		{[]string{"ls", "-la"}, `run_command:"ls -la"`},
		{[]string{"git", "status", "--porcelain"}, "run_command:git:status"},
		{[]string{"a b", "x"}, `run_command:"'a b' x"`},
		{nil, `run_command:"#empty"`},
	}
	for _, tt := range tests {
		if got := KeyOfArgv(tt.argv).String(); got != tt.want {
			t.Errorf("KeyOfArgv(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}
