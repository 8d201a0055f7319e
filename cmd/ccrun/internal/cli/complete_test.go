package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
)

// completeScript drives cobra's real bash completion script for one line,
// and prints what bash would offer, a candidate a line. It uses
// bash-completion's _get_comp_words_by_ref where the package is installed,
// else the few lines of it that cobra's script calls.
const completeScript = `
if [ -f /usr/share/bash-completion/bash_completion ]; then
	source /usr/share/bash-completion/bash_completion
else
	_get_comp_words_by_ref() {
		while [ $# -gt 0 ]; do
			case $1 in
			-n) shift 2 ;;
			cur) cur=${COMP_WORDS[COMP_CWORD]}; shift ;;
			prev) prev=${COMP_WORDS[COMP_CWORD-1]}; shift ;;
			words) words=("${COMP_WORDS[@]}"); shift ;;
			cword) cword=$COMP_CWORD; shift ;;
			*) shift ;;
			esac
		done
	}
fi
source <(ccrun completion bash)
read -r -a COMP_WORDS <<<"$LINE"
[ "${LINE% }" != "$LINE" ] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE=$LINE; COMP_POINT=${#LINE}; COMP_TYPE=9
__start_ccrun ccrun "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
`

// Capability names complete in bash, through the script ccrun prints;
// after "--" the words are the capability's own and nothing is offered.
func TestBashCompletesCapabilities(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := buildCcrun(t)
	project := t.TempDir()
	os.Mkdir(filepath.Join(project, ".git"), 0o755)
	for _, name := range []string{"fmt", "fmt-json", "lint"} {
		if _, err := capabilities.Scaffold(project, name, ceiling.Wasm); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ line, want string }{
		{"ccrun exec ", "fmt\nfmt-json\nlint"},
		{"ccrun exec fm", "fmt\nfmt-json"},
		{"ccrun exec l", "lint"},
		{"ccrun exec -- ", ""},
		{"ccrun exec fmt ", ""},
	} {
		cmd := exec.Command(bash, "-c", completeScript)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "LINE="+c.line)
		var stderr strings.Builder
		cmd.Stderr = &stderr // bash says compopt needs a completion in progress: not one
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.line, err, stderr.String())
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			// with descriptions bash shows "name  (description)"
			if f := strings.Fields(l); len(f) > 0 {
				got = append(got, f[0])
			}
		}
		if g := strings.Join(got, "\n"); g != c.want {
			t.Errorf("%q offers %q, want %q", c.line, g, c.want)
		}
	}
}

// TestCompletionUnknownShell: `ccrun completion SHELL` for a shell cobra
// has no script for is a usage error (64) that lists the valid shells,
// not its help and 0; each valid one writes its script.
func TestCompletionUnknownShell(t *testing.T) {
	var out, errb strings.Builder
	code := run([]string{"completion", "bogus"}, stdio{strings.NewReader(""), &out, &errb})
	if want := `"bogus" is not a shell ccrun completes; valid: bash, fish, powershell, zsh`; code != exitUsage || !strings.Contains(errb.String(), want) || out.Len() != 0 {
		t.Errorf("completion bogus: exit %d, stdout %q, stderr %q; want %d and %q", code, out.String(), errb.String(), exitUsage, want)
	}
	for _, sh := range []string{"bash", "fish", "powershell", "zsh"} {
		out.Reset()
		if code := run([]string{"completion", sh}, stdio{strings.NewReader(""), &out, io.Discard}); code != 0 || !strings.Contains(out.String(), "ccrun") {
			t.Errorf("completion %s: exit %d, %d bytes", sh, code, out.Len())
		}
	}
}
