package permission

import "testing"

func TestWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		warn bool
	}{
		{"rm -rf build", true},
		{"rm -r -f build", true},
		{"git reset --hard HEAD~1", true},
		{"git push --force origin main", true},
		{"git push -f", true},
		{"git push --force-with-lease", true},
		{"git push origin +main", true},
		{"git clean -fdx", true},
		{"git clean -nf", true}, // errs towards warning
		{"psql -c 'DROP TABLE users'", true},
		{"mysql -e \"drop database prod\"", true},
		{"terraform destroy -auto-approve", true},
		{"kubectl delete ns prod", true},
		{"sudo apt-get install x", true},
		{"chmod -R 777 .", true},
		{"dd if=/dev/zero of=/dev/sda", true},
		{"mkfs.ext4 /dev/sdb1", true},
		{":(){ :|:& };:", true},
		{"git status && rm -rf /", true},
		{"echo $(rm -rf ~)", true},
		{"bash -c 'git reset --hard'", true},
		{"xargs rm -rf < list", true},
		{"git status", false},
		{"rm file.txt", false},
		{"ls -la", false},
		{"git push origin main", false},
	}
	for _, tt := range tests {
		got := Warnings(shellRequest(tt.cmd))
		if (len(got) > 0) != tt.warn {
			t.Errorf("Warnings(%q) = %q, want warning %v", tt.cmd, got, tt.warn)
		}
	}
	if w := Warnings(&Request{Tool: "write_file", Class: ClassWrite}); w != nil {
		t.Errorf("non-shell warnings = %q", w)
	}
}
