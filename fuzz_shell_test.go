package ccrun_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/internal/hostile"
	"github.com/ccrun/ccrun/runtime/job"
)

// The vocabulary FuzzReadOnlyEnforced builds commands from: read-only
// programs, and words that the static reading may misjudge (braces, globs,
// quotes, --, variables, positional parameters, options with values, paths
// to the canary and to implant files).
var (
	fuzzPrograms = []string{"cat", "ls", "head", "tail", "wc", "grep", "find", "sort", "uniq", "xxd", "git",
		"echo", "printf", "diff", "stat", "file", "du", "tree", "rg", "xargs", "env", "test", "sed", "awk",
		"cut", "tr", "od", "basename", "dirname", "realpath", "readlink", "tac", "nl", "comm", "join"}
	fuzzWords = []string{"-", "--", "-o", "-r", "-R", "-exec", "{}", ";", "'{}'", "-delete", "-fprint", "-T",
		"{-exec,{}}", "{a,{b,c}}", "{1..3}", "*", ".*", "?", "~", "~/.ssh/id_rsa", "~/.s{s,{}}h/i{d,{}}_rsa",
		"$1", `"$1"`, "$@", "$HOME", "${HOME}/.ssh", "x.txt", "sub", "h", ".git/config", ".git/hooks/pre-commit",
		"ccrun.local.json", ".envrc", "-occrun.local.json", "--output=out", "-w", "-i", "s/a/b/w out", "-n",
		"status", "log", "diff", "-c", "core.pager=touch planted", "--files0-from=list0", "list.txt", "-/../.git/config",
		"|", "&&", ";", ">", "/dev/null", "<", "$(echo x)", "`echo x`", "'a b'", `"a b"`, "\\", "=", "a=b", "-P", "0"}
)

// fuzzCommand turns bytes into a command: each byte picks a program (after
// a separator) or a word.
func fuzzCommand(b []byte) string {
	var w []string
	prog := true
	for _, c := range b {
		if prog {
			w = append(w, fuzzPrograms[int(c)%len(fuzzPrograms)])
			prog = false
			continue
		}
		word := fuzzWords[int(c)%len(fuzzWords)]
		w = append(w, word)
		prog = word == "|" || word == "&&" || word == ";"
	}
	return strings.Join(w, " ")
}

// FuzzReadOnlyEnforced runs commands made of the read-only vocabulary plus
// the tricks of the red-team table under the real @shell executor, in a
// throwaway project with a canary home, with nobody to ask: whatever the
// gate lets run may write nothing in the project or the home (beyond
// ccrun's own audit log) and may not print the canary.
func FuzzReadOnlyEnforced(f *testing.F) {
	for _, seed := range []string{"\x00", "\x01\x0c\x18", "\x06\x0d\x0e\x03\x3f", "\x00\x15", "\x00\x16",
		"\x13\x1d", "\x14\x0f\x10", "\x07\x1f", "\x0a\x22\x12\x23", "\x09\x0e", "\x08\x1a\x1b\x1c", "\x12\x26",
		"\x13\x30\x31", "\x0a\x2b\x2c\x33", "\x01\x21\x00\x20", "\x05\x30", "\x10\x13"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || len(b) > 12 {
			t.Skip()
		}
		cmd := fuzzCommand(b)
		c := hostile.Case{Name: cmd, Git: true, Files: map[string]string{"x.txt": "a\nb\n", "sub/y": "y\n",
			"list.txt": "HOME/.ssh/id_rsa\n", "list0": "HOME/.ssh/id_rsa\x00"}, Links: map[string]string{"h": "~"}}
		project, home := hostile.Setup(t, c, "default")
		before := tree(t, project, home)
		rt, err := ccrun.New(ccrun.WithProjectDir(project))
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out bytes.Buffer
		rt.Exec(ctx, &ccrun.Call{Command: cmd, Args: []string{home + "/.ssh/id_rsa"}, Stdout: &out, Stderr: &out,
			Limits: job.Limits{Timeout: 10 * time.Second}})
		if strings.Contains(out.String(), hostile.Secret) {
			t.Fatalf("%s: the canary was read:\n%s", cmd, out.String())
		}
		after := tree(t, project, home)
		for p, st := range after {
			if strings.Contains(p+"/", "/.ccrun/") {
				continue // ccrun's own audit log
			}
			if was, ok := before[p]; !ok || was != st {
				t.Fatalf("%s: %s was written (%s → %s)", cmd, p, was, st)
			}
		}
		for p := range before {
			if _, ok := after[p]; !ok {
				t.Fatalf("%s: %s was removed", cmd, p)
			}
		}
	})
}

// tree maps every path under the roots to its size, mode and mtime.
func tree(t *testing.T, roots ...string) map[string]string {
	out := map[string]string{}
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			if d.IsDir() && strings.HasSuffix(p, "/.git/objects") {
				return filepath.SkipDir // git may write objects of its own; not a planted file
			}
			st := fi.Mode().String() + " " + itoa(fi.Size())
			if !fi.IsDir() {
				st += " " + fi.ModTime().String()
			}
			out[p] = st
			return nil
		})
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
