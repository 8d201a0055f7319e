package shellcmd

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Warnings returns short notes for the person asked about a shell command
// of a destructive form: rm -rf, git reset --hard, git push --force, git
// clean -f, DROP TABLE, terraform destroy, kubectl delete, sudo, chmod -R
// 777, dd of=, mkfs, a fork bomb, curl … | sh… found anywhere in the
// command (every segment, substitutions, bash -c, eval, wrappers). Warnings never change a decision; they err
// towards warning (git clean -nf warns too). f is the parse of source;
// nil when it does not parse (then source is searched as text).
func Warnings(f *syntax.File, source string) []string {
	return WarningsWith(f, source, nil)
}

// WarningsWith is Warnings for a caller that has Segments(f) already:
// segs; nil, and Warnings computes them.
func WarningsWith(f *syntax.File, source string, segs []Segment) []string {
	var notes warnings
	if f == nil {
		if mayDrop(source) {
			notes.add("may drop database objects")
		}
		return notes
	}
	download, shell := false, false
	if segs == nil {
		segs = Segments(f)
	}
	for _, seg := range segs {
		if seg.Opaque {
			continue
		}
		if w := segmentWarning(seg); w != "" {
			notes.add(w)
		}
		prog, _ := seg.Program()
		switch path.Base(prog) {
		case "curl", "wget", "fetch", "aria2c", "nc", "ncat", "socat", "http", "https":
			download = true
		case "sh", "bash", "zsh", "dash", "ksh", "ash", "fish", "eval", "source", ".", "python", "python3",
			"perl", "ruby", "node", "php":
			shell = true
		}
	}
	if download && shell {
		notes.add("may run a downloaded script (curl … | sh)")
	}
	syntax.Walk(f, notes.node)
	return notes
}

// warnings are the notes of WarningsWith, each once.
type warnings []string

func (ws *warnings) add(s string) {
	if !slices.Contains(*ws, s) {
		*ws = append(*ws, s)
	}
}

// node adds the notes of one node of the tree: a fork bomb, SQL that
// drops.
func (ws *warnings) node(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.FuncDecl:
		if n.Name != nil && calls(n.Body, n.Name.Value) {
			ws.add("defines a function that calls itself (a fork bomb?)")
		}
	case *syntax.Word:
		if w := WordOf(n); mayDrop(w.Val) {
			ws.add("may drop database objects")
		}
	}
	return true
}

// mayDrop reports whether s holds SQL that drops (sqlDrop). Every match
// holds one of the words dropWords in some case, and most shell words
// hold none: for them the regexp is not compiled at all (~40 µs of a new
// process). None of the words' letters has a case fold outside ASCII.
func mayDrop(s string) bool {
	for _, w := range dropWords {
		if containsASCIIFold(s, w) {
			return sqlDrop().MatchString(s)
		}
	}
	return false
}

var dropWords = [...]string{"drop", "truncate", "delete"}

// containsASCIIFold reports whether s holds sub (lowercase ASCII letters)
// in any case.
func containsASCIIFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for ; j < len(sub) && s[i+j]|0x20 == sub[j]; j++ {
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// sqlDrop is compiled on first use, to keep it out of every start of ccrun.
var sqlDrop = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(drop\s+(table|database|schema|index|view|user)|truncate\s+table|delete\s+from\s+\w+\s*(;|$))`)
})

func calls(body syntax.Node, name string) bool {
	found := false
	syntax.Walk(body, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 && c.Args[0].Lit() == name {
			found = true
		}
		return !found
	})
	return found
}

func hasOpt(args []string, long string, short byte) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if long != "" && (a == long || strings.HasPrefix(a, long+"=")) {
			return true
		}
		if short != 0 && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], short) >= 0 {
			return true
		}
	}
	return false
}

func segmentWarning(seg Segment) string {
	prog, _ := seg.Program()
	if len(seg.Argv) == 0 {
		return ""
	}
	args := make([]string, 0, len(seg.Argv)-1)
	for _, a := range seg.Argv[1:] {
		args = append(args, a.Val)
	}
	sub := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			sub = a
			break
		}
	}
	switch path.Base(prog) {
	case "rm":
		if (hasOpt(args, "--recursive", 'r') || hasOpt(args, "", 'R')) && hasOpt(args, "--force", 'f') {
			return "rm -rf deletes recursively without asking"
		}
		if hasOpt(args, "--recursive", 'r') || hasOpt(args, "", 'R') {
			return "deletes recursively"
		}
	case "git":
		switch {
		case slices.Contains(args, "reset") && slices.Contains(args, "--hard"):
			return "may discard uncommitted changes (git reset --hard)"
		case slices.Contains(args, "push") && (hasOpt(args, "--force", 'f') || hasOpt(args, "--force-with-lease", 0) || hasOpt(args, "--mirror", 0) || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "+") })):
			return "may overwrite remote history (git push --force)"
		case slices.Contains(args, "push") && hasOpt(args, "--delete", 'd'):
			return "deletes a remote branch"
		case slices.Contains(args, "clean") && hasOpt(args, "--force", 'f'):
			return "may delete untracked files (git clean -f)"
		case slices.Contains(args, "checkout") && (slices.Contains(args, "--") || slices.Contains(args, ".")):
			return "may discard uncommitted changes (git checkout -- …)"
		case slices.Contains(args, "restore"):
			return "may discard uncommitted changes (git restore)"
		case slices.Contains(args, "branch") && hasOpt(args, "", 'D'):
			return "force-deletes a branch"
		case slices.Contains(args, "stash") && (slices.Contains(args, "drop") || slices.Contains(args, "clear")):
			return "drops stashed changes"
		}
	case "terraform", "tofu":
		if sub == "destroy" || (sub == "apply" && hasOpt(args, "-destroy", 0)) {
			return "may destroy infrastructure (terraform destroy)"
		}
	case "kubectl", "oc":
		if sub == "delete" || sub == "drain" {
			return "deletes cluster resources (kubectl " + sub + ")"
		}
	case "helm":
		if sub == "uninstall" || sub == "delete" {
			return "uninstalls a release"
		}
	case "sudo", "doas", "su", "run0", "pkexec":
		return "runs with elevated privileges"
	case "chmod":
		if hasOpt(args, "--recursive", 'R') && slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, "777") || a == "a+rwx" }) {
			return "makes files world-writable recursively"
		}
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, "777") }) {
			return "makes files world-writable"
		}
	case "chown":
		if hasOpt(args, "--recursive", 'R') {
			return "changes ownership recursively"
		}
	case "dd":
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "of=") }) {
			return "writes raw data (dd of=)"
		}
	case "shred", "wipefs", "fdisk", "sfdisk", "parted", "mkswap":
		return "may destroy data on a disk or file"
	case "shutdown", "reboot", "poweroff", "halt":
		return "stops the machine"
	case "docker", "podman":
		if sub == "system" && slices.Contains(args, "prune") || sub == "volume" && slices.Contains(args, "rm") {
			return "deletes containers, images or volumes"
		}
	case "npm", "pnpm", "yarn", "cargo", "twine":
		if sub == "publish" || (sub == "upload" && path.Base(prog) == "twine") {
			return "publishes a package"
		}
	case "find":
		if slices.Contains(args, "-delete") {
			return "deletes the files found (find -delete)"
		}
	case "truncate":
		return "truncates files"
	case "xargs", "parallel":
		// what it runs is given names from its input, which nobody has seen
		// (a list of secrets' paths), and -P forks without bound
		return path.Base(prog) + " runs a program on names from its input, which nobody has seen"
	case "crontab":
		if hasOpt(args, "", 'r') {
			return "removes the crontab"
		}
	}
	if strings.HasPrefix(path.Base(prog), "mkfs") {
		return "formats a file system (mkfs)"
	}
	return ""
}
