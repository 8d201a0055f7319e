package guard

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccrun/ccrun/internal/sensitive"
	"github.com/ccrun/ccrun/runtime/shell"
)

// gitPrograms says which program the repository's own configuration would
// have a read-only git command run ("" when none). The choice (RATIONALE
// "git's configuration"): git is auto-allowed only where the configuration
// that came with the repository — .git/config, .git/config.worktree and
// what they include — names no program: a fsmonitor, a pager, a diff or
// merge driver, a textconv, a filter, a credential helper, an ssh command,
// an alias to a shell command, a hooks path; and where the hooks directory
// holds no hook. The person's own configuration (system, global) is theirs
// and counts as consent. Neutralising the keys instead (git -c k=) cannot
// cover drivers and filters whose names only the repository knows.
//
// git is asked for its configuration with the program's own environment and
// directory, so the answer is about the repository that will be read. own
// says a person saw the command line: then what it sets itself (git -c,
// GIT_CONFIG_* of the call) is theirs too.
func gitPrograms(ctx context.Context, p shell.Program, own bool) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	args := append(globalOptions(p.Argv[1:]), "config", "--list", "--show-scope", "--includes", "-z")
	cmd := exec.CommandContext(ctx, p.Path, args...)
	cmd.Dir, cmd.Env = p.Dir, p.Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && errb.Len() == 0 {
			return "" // no configuration at all
		}
		return fmt.Sprintf("git's configuration could not be read (%v: %s)", err, strings.TrimSpace(errb.String()))
	}
	// --show-scope -z: SCOPE NUL KEY LF VALUE NUL, repeated.
	toks := bytes.Split(out.Bytes(), []byte{0})
	for i := 0; i+1 < len(toks); i += 2 {
		scope := string(toks[i])
		key, value, _ := bytes.Cut(toks[i+1], []byte{'\n'})
		switch {
		case scope == "local", scope == "worktree":
		case scope == "command" && !own:
			// git -c and GIT_CONFIG_* set by the call: nobody saw them
		default:
			continue
		}
		if why := programKey(strings.ToLower(string(key)), string(value)); why != "" {
			return fmt.Sprintf("the repository's git configuration names a program: %s (%s)", key, why)
		}
	}
	if hook := gitHook(p.Dir); hook != "" {
		return "the repository has a git hook: " + hook
	}
	return nestedPrograms(ctx, p)
}

// maxNested bounds the repositories nestedPrograms reads besides the top
// one: past it, the command is asked rather than run unchecked.
const maxNested = 256

// nestedPrograms says which program the configuration of another
// repository git reads during a command would have it run: git status,
// diff and the like recurse into the submodules, and run a submodule's
// core.fsmonitor, pager or diff driver as they would the top
// repository's. Every submodule's git directory is read: those absorbed
// into the top's (.git/modules/…, nested ones included) and those named by
// .gitmodules, in the submodule's own working tree (a .git directory or a
// gitfile naming one, wherever it points), recursively. A hook in any of
// them counts too. "" when none names a program.
func nestedPrograms(ctx context.Context, p shell.Program) string {
	top, gd := repoOf(p.Dir)
	if gd == "" {
		return ""
	}
	seen := map[string]bool{gd: true}
	var dirs []string
	add := func(d string) bool {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
		return len(dirs) <= maxNested
	}
	// absorbed submodules: every directory under modules/ that holds a
	// config is a git directory git may read
	tooMany := false
	filepath.WalkDir(filepath.Join(gd, "modules"), func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() != "config" {
			return nil
		}
		if !add(filepath.Dir(path)) {
			tooMany = true
			return filepath.SkipAll
		}
		return nil
	})
	// submodules in their own working trees, as .gitmodules names them
	trees := []string{top}
	for i := 0; i < len(trees) && !tooMany; i++ {
		for _, sub := range submodulePaths(ctx, p, trees[i]) {
			wt := filepath.Join(trees[i], sub)
			if _, d := repoAt(wt); d != "" {
				if !add(d) {
					tooMany = true
					break
				}
				trees = append(trees, wt)
			}
		}
	}
	if tooMany {
		return fmt.Sprintf("the repository has more than %d submodules, whose git configuration was not all read", maxNested)
	}
	for _, d := range dirs {
		if why := localPrograms(ctx, p, d); why != "" {
			return why
		}
		if hook := firstHook(filepath.Join(d, "hooks")); hook != "" {
			return "a submodule has a git hook: " + hook
		}
	}
	return ""
}

// localPrograms checks the configuration of the git directory gd (its
// own scope only: the person's global and system configuration are
// theirs).
func localPrograms(ctx context.Context, p shell.Program, gd string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Path, "--git-dir="+gd, "config", "--list", "--show-scope", "--includes", "-z")
	cmd.Dir, cmd.Env = gd, p.Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && errb.Len() == 0 {
			return ""
		}
		return fmt.Sprintf("the git configuration of the submodule at %s could not be read (%v: %s)", gd, err, strings.TrimSpace(errb.String()))
	}
	toks := bytes.Split(out.Bytes(), []byte{0})
	for i := 0; i+1 < len(toks); i += 2 {
		if scope := string(toks[i]); scope != "local" && scope != "worktree" {
			continue
		}
		key, value, _ := bytes.Cut(toks[i+1], []byte{'\n'})
		if why := programKey(strings.ToLower(string(key)), string(value)); why != "" {
			return fmt.Sprintf("a submodule's git configuration names a program: %s in %s (%s)", key, gd, why)
		}
	}
	return ""
}

// submodulePaths lists the submodule paths the .gitmodules of the working
// tree wt names (read as a file: nothing of it runs).
func submodulePaths(ctx context.Context, p shell.Program, wt string) []string {
	f := filepath.Join(wt, ".gitmodules")
	if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Path, "config", "-f", f, "-z", "--get-regexp", `^submodule\..*\.path$`)
	cmd.Dir, cmd.Env = wt, p.Env
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var paths []string
	for _, tok := range bytes.Split(out, []byte{0}) {
		if _, v, ok := bytes.Cut(tok, []byte{'\n'}); ok && len(v) > 0 {
			paths = append(paths, filepath.Clean(string(v)))
		}
	}
	return paths
}

// repoOf finds the repository that holds dir, as git does (the nearest
// .git upwards): its working tree and git directory; "" when none.
func repoOf(dir string) (top, gitdir string) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if t, g := repoAt(d); g != "" {
			return t, g
		}
		if d == "/" || d == "." {
			return "", ""
		}
	}
}

// repoAt returns dir and its git directory when dir holds a .git (a
// directory, or a gitfile naming one); "" otherwise.
func repoAt(dir string) (top, gitdir string) {
	g := filepath.Join(dir, ".git")
	fi, err := os.Lstat(g)
	switch {
	case err != nil:
		return "", ""
	case fi.IsDir():
		return dir, g
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(g)
		if err != nil {
			return "", ""
		}
		target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return "", ""
		}
		target = strings.TrimSpace(target)
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		return dir, target
	}
	return "", ""
}

// globalOptions returns git's own options at the start of args (those
// before the subcommand): they choose the repository and configuration
// that will be read (--git-dir, -C, -c, --work-tree, …), so the
// configuration is read with them.
func globalOptions(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "--" {
			break
		}
		switch a {
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--exec-path":
			if a == "--exec-path" {
				break // without a value it prints the path
			}
			if i+1 < len(args) {
				out = append(out, a, args[i+1])
				i++
			}
			continue
		}
		switch {
		case a == "-p", a == "--paginate", a == "-P", a == "--no-pager":
			continue // about the pager, which the configuration check covers
		}
		out = append(out, a)
	}
	return out
}

// programKey says why a configuration key names a program git may run.
func programKey(key, value string) string {
	section, name := key, ""
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		section, name = key[:i], key[i+1:]
	}
	top, _, _ := strings.Cut(section, ".")
	switch {
	case key == "core.fsmonitor":
		if isFalse(value) {
			return ""
		}
		return "a file-system monitor git starts"
	case key == "core.pager", top == "pager", key == "core.editor", key == "sequence.editor",
		key == "core.sshcommand", key == "core.askpass", key == "core.gitproxy", key == "diff.external",
		key == "interactive.difffilter", key == "gpg.program", top == "gpg" && name == "program",
		key == "uploadpack.packobjectshook", key == "core.hookspath", key == "ssh.variant":
		return "a program git runs"
	case top == "credential" && name == "helper":
		return "a credential helper"
	case top == "diff" && (name == "textconv" || name == "command"):
		return "a diff driver"
	case top == "merge" && name == "driver":
		return "a merge driver"
	case top == "filter" && (name == "clean" || name == "smudge" || name == "process"):
		return "a content filter"
	case top == "remote" && (name == "uploadpack" || name == "receivepack" || name == "vcs" || name == "proxy"):
		return "a transport program"
	case top == "alias":
		return "an alias (git runs it in place of a command)"
	case top == "include", top == "includeif":
		return "" // --includes has read what they name
	}
	return ""
}

func isFalse(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "no", "off", "0", "":
		return true
	}
	return false
}

// gitHook returns the first hook in the hooks directory of the repository
// that holds dir ("" when none). Found by walking up to the nearest .git
// (a directory, or a file naming one), as git does.
func gitHook(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		gitdir := filepath.Join(d, ".git")
		if fi, err := os.Lstat(gitdir); err == nil {
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(gitdir)
				if err != nil {
					return gitdir + " (unreadable)"
				}
				target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
				if !ok {
					return ""
				}
				gitdir = strings.TrimSpace(target)
				if !filepath.IsAbs(gitdir) {
					gitdir = filepath.Join(d, gitdir)
				}
			}
			return firstHook(filepath.Join(gitdir, "hooks"))
		}
		if d == "/" || d == "." {
			return ""
		}
	}
}

func firstHook(hooks string) string {
	ents, err := os.ReadDir(hooks)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sample") || e.IsDir() {
			continue
		}
		if _, ok := sensitive.Under(path.Join(".git/hooks", e.Name())); ok {
			return filepath.Join(hooks, e.Name())
		}
	}
	return ""
}
