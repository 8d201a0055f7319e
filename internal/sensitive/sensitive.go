// Package sensitive is the one table of dangerous paths: the files whose
// reading puts a secret in an agent's conversation (Leak), and the files
// whose writing makes something run later, every time (Implant). Four
// users read it: the gate's dangerous-path step, the @shell interpreter's
// exec and open handlers, the Landlock ruleset of read-only commands, and
// the @wasm and @docker sandboxes' writable mounts. Nothing else keeps a
// list of its own.
//
// A row matches a run of path components anywhere in a path (a copy of
// ~/.ssh is as secret as the original), as a directory the path is in or as
// its last components; a component is a glob (path.Match). Rows marked Abs
// match only from the root (/etc/shadow). The table and its functions are
// safe for concurrent use.
package sensitive

import (
	"path"
	"slices"
	"strings"
	"sync"
)

// Kind says why a path is dangerous.
type Kind string

// The kinds.
const (
	// Leak: reading it puts a secret in the conversation, writing it
	// replaces a credential. Asked for reads and writes.
	Leak Kind = "leak"
	// Implant: one write makes something run later (a shell rc file, a git
	// hook or config, an editor's or agent's settings, ccrun's own files).
	// Asked for writes.
	Implant Kind = "implant"
)

// Row is one entry of the table.
type Row struct {
	Seq  []string // path components, globs
	Dir  bool     // the row names a directory: everything under it matches
	Abs  bool     // the row matches from the root only
	Kind Kind
	What string // what lives there, for the person asked: the row's reason

	names []name // Seq compiled
}

// name is one compiled component: a literal, prefix*suffix, or a glob
// left to path.Match.
type name struct {
	lit, pre, suf string
	kind          byte // 'l' literal, 's' one star, 'g' glob
}

func compile(pat string) name {
	pat = strings.ToLower(pat)
	switch {
	case !isGlob(pat):
		return name{lit: pat, kind: 'l'}
	case !strings.ContainsAny(pat, "?[\\") && strings.Count(pat, "*") == 1:
		i := strings.IndexByte(pat, '*')
		return name{pre: pat[:i], suf: pat[i+1:], kind: 's'}
	}
	return name{lit: pat, kind: 'g'}
}

// match reports whether the name matches s, a component already in lower
// case (lower).
func (n name) match(s string) bool {
	switch n.kind {
	case 'l':
		return s == n.lit
	case 's':
		return len(s) >= len(n.pre)+len(n.suf) && strings.HasPrefix(s, n.pre) && strings.HasSuffix(s, n.suf)
	}
	m, _ := path.Match(n.lit, s)
	return m
}

// Pattern is the row as a path ("/etc/shadow", ".ssh/").
func (r Row) Pattern() string {
	s := strings.Join(r.Seq, "/")
	if r.Abs {
		s = "/" + s
	}
	if r.Dir {
		s += "/"
	}
	return s
}

// EmptyMatters reports whether an empty file or directory at the row's
// path is not nothing to the program that reads it, so that no empty
// stand-in may be put there to keep the name taken: git stops on an empty
// .git/commondir, and takes an empty .git/rebase-merge/ for a rebase in
// progress.
func (r Row) EmptyMatters() bool {
	switch r.Pattern() {
	case ".git/commondir", ".git/rebase-merge/":
		return true
	}
	return false
}

// Table returns the table, first match wins (Leak rows come first, so
// that a secret inside an implant directory, ~/.claude/.credentials.json,
// is a leak for reads too). docs/policy.md lists it. It is built on first
// use, not in the package's init: a ccrun process that never looks at a
// path (ccrun version, a command of builtins) does not pay for it.
func Table() []Row { return built().rows }

type table struct {
	rows []Row
	// index files the rows that may match a path under a literal
	// component: their first one, or, for a file row whose first
	// component is a glob (/proc/*/environ, *.pem), their last one.
	// lastGlobs are the file rows whose last component is a glob too
	// (id_rsa*, *.pem): tried only when the path's last component matches
	// it. globs are the rest, tried on every path.
	index            map[string][]int
	lastGlobs, globs []int
	// gitFirst files the rows under .git/ (.git/config, .git/hooks) by
	// their second component: what Git looks for in a directory of any
	// name that git takes for a repository.
	gitFirst map[string][]int
}

var built = sync.OnceValue(builtFn)

func builtFn() *table {
	rows := tableRows()
	t := &table{rows: rows, index: make(map[string][]int, len(rows)), gitFirst: map[string][]int{}}
	for i, r := range rows {
		if !r.Abs && len(r.Seq) > 1 && r.Seq[0] == ".git" {
			k := strings.ToLower(r.Seq[1])
			t.gitFirst[k] = append(t.gitFirst[k], i)
		}
		first, last := strings.ToLower(r.Seq[0]), strings.ToLower(r.Seq[len(r.Seq)-1])
		switch {
		case !isGlob(first):
			t.index[first] = append(t.index[first], i)
		case !r.Dir && !isGlob(last):
			t.index[last] = append(t.index[last], i)
		case !r.Dir:
			t.lastGlobs = append(t.lastGlobs, i)
		default:
			t.globs = append(t.globs, i)
		}
	}
	return t
}

// group is a run of rows of one kind and reason.
type group struct {
	kind  Kind
	dir   bool
	what  string
	paths []string // "/"-separated; a leading "/" makes the row Abs
}

// groups are the table's rows, by kind and reason, in order (first match
// wins): static data, so that building the table (tableRows) allocates
// three slices and no string.
var groups = []group{
	{Leak, true, "SSH keys", []string{".ssh"}},
	{Leak, false, "an AI agent's credentials", []string{".claude/.credentials.json",
		".codex/auth.json", ".gemini/oauth_creds.json", ".gemini/google_accounts.json",
		".config/github-copilot/hosts.json", ".config/github-copilot/apps.json", ".aider.conf.yml"}},
	{Leak, true, "cloud credentials", []string{".aws", ".azure", ".config/gcloud", ".kube",
		".docker", ".config/gh", ".terraform.d", ".oci", ".config/doctl", ".config/rclone",
		".config/hub", ".config/glab-cli", ".config/op", ".fly", ".config/heroku"}},
	{Leak, true, "keys", []string{".gnupg", ".password-store", ".local/share/keyrings", ".pki"}},
	{Leak, false, "package registry credentials", []string{".npmrc", ".pypirc",
		".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".yarnrc.yml",
		".config/pip/pip.conf", ".m2/settings.xml", ".gradle/gradle.properties",
		".nuget/NuGet/NuGet.Config", ".composer/auth.json"}},
	{Leak, false, "stored passwords", []string{".netrc", "_netrc", ".pgpass", ".git-credentials",
		".my.cnf", ".vault-token", ".config/git/credentials", ".s3cfg", ".boto", ".dockercfg",
		".config/rclone/rclone.conf", ".wgetrc", ".curlrc"}},
	{Leak, false, "private keys", []string{"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
		"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk", "*.kdbx"}},
	{Leak, false, "environment secrets", []string{".env", ".env.*"}},
	{Leak, false, "shell and REPL histories", []string{".bash_history", ".zsh_history", ".zhistory",
		".histfile", ".sh_history", ".python_history", ".node_repl_history", ".psql_history",
		".mysql_history", ".sqlite_history", ".lesshst", ".irb_history",
		".local/share/fish/fish_history", ".rediscli_history"}},
	{Leak, false, "the system's password hashes", []string{"/etc/shadow", "/etc/shadow-",
		"/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/security/opasswd"}},
	{Leak, true, "the system's password hashes", []string{"/etc/sudoers.d"}},
	{Leak, false, "the host's SSH keys", []string{"/etc/ssh/ssh_host_*_key"}},
	{Leak, false, "ccrun's own secrets (the MCP server's bearer token)", []string{".config/ccrun/mcp-token",
		".config/ccrun/*token*", ".config/ccrun/*.key"}},
	{Leak, false, "another process's memory (its secrets)", []string{"/proc/*/mem", "/proc/*/task/*/mem"}},
	{Leak, true, "another process's memory (its secrets)", []string{"/proc/*/map_files", "/proc/*/task/*/map_files"}},
	{Leak, false, "another process's environment (its secrets)", []string{"/proc/*/environ",
		"/proc/*/task/*/environ"}},
	{Implant, false, "a shell startup file", []string{".bashrc", ".bash_profile", ".bash_login",
		".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
		".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".envrc", ".inputrc", ".tool-versions",
		".mise.toml", "mise.toml"}},
	{Implant, true, "a shell startup file", []string{".config/fish", ".oh-my-zsh",
		".config/environment.d", ".config/mise", ".config/direnv"}},
	// The rows under .git/ are git's own files that it reads as
	// configuration or code (gitrepository-layout(5)); they apply too in
	// a directory of any name that git takes for a repository (Git).
	{Implant, true, "git hooks", []string{".git/hooks", ".husky"}},
	{Implant, false, "a file git runs programs from", []string{".git/config",
		".git/config.worktree", ".git/info/attributes", ".gitconfig", ".config/git/config",
		".config/git/attributes", ".gitattributes", ".gitmodules", ".lfsconfig"}},
	{Implant, false, "a file naming the directory whose config and hooks git uses", []string{".git/commondir"}},
	{Implant, true, "another repository's files (its config, hooks, commondir)", []string{".git/worktrees",
		".git/modules"}},
	{Implant, true, "git's remotes: where fetch and push go", []string{".git/branches", ".git/remotes"}},
	{Implant, false, "another object store git reads as the repository's own", []string{
		".git/objects/info/alternates", ".git/objects/info/http-alternates"}},
	{Implant, true, "a rebase's to-do list, whose exec lines git runs", []string{".git/rebase-merge"}},
	{Implant, true, "an editor's or agent's configuration", []string{".vscode", ".idea", ".claude",
		".cursor", ".codex", ".gemini", ".windsurf", ".continue", ".devcontainer", ".config/nvim",
		".vim", ".config/autostart", ".config/systemd", "Library/LaunchAgents", ".zed", ".aider",
		".config/opencode", ".opencode"}},
	{Implant, false, "an editor's or agent's configuration", []string{".mcp.json", ".claude.json",
		".vimrc", ".exrc", ".cursorrules", ".nvim.lua", ".nvimrc", "opencode.json"}},
	{Implant, false, "ccrun's own configuration", []string{"ccrun.json", "ccrun.local.json"}},
	{Implant, true, "ccrun's own configuration", []string{".ccrun", ".config/ccrun"}},
	{Implant, true, "ccrun's trust records (a forged one trusts a project)", []string{".local/state/ccrun"}},
}

// tableRows makes the rows of groups: one slice of rows, one of their
// components and one of the compiled components, sliced (a new process
// builds the table for the first command it looks at).
func tableRows() []Row {
	nrows, ncomps := 0, 0
	for _, g := range groups {
		nrows += len(g.paths)
		for _, p := range g.paths {
			ncomps += strings.Count(strings.TrimPrefix(p, "/"), "/") + 1
		}
	}
	rows := make([]Row, 0, nrows)
	comps := make([]string, 0, ncomps)
	names := make([]name, 0, ncomps)
	for _, g := range groups {
		for _, p := range g.paths {
			rest, abs := strings.CutPrefix(p, "/")
			first := len(comps)
			for {
				c, after, more := strings.Cut(rest, "/")
				comps = append(comps, c)
				names = append(names, compile(c))
				if !more {
					break
				}
				rest = after
			}
			rows = append(rows, Row{Seq: comps[first:len(comps):len(comps)], Dir: g.dir, Abs: abs, Kind: g.kind,
				What: g.what, names: names[first:len(names):len(names)]})
		}
	}
	return rows
}

// MatchComps reports whether the row covers a path already cut into its
// components (an absolute path, without the leading empty one).
func (r Row) MatchComps(comps []string) bool { return r.matchLower(lower(comps)) }

// lower returns comps in lower case: comps itself when they are already.
func lower(comps []string) []string {
	for i, c := range comps {
		if l := strings.ToLower(c); l != c {
			out := slices.Clone(comps)
			out[i] = l
			for j := i + 1; j < len(out); j++ {
				out[j] = strings.ToLower(out[j])
			}
			return out
		}
	}
	return comps
}

// matchLower is MatchComps for components already in lower case.
func (r Row) matchLower(comps []string) bool {
	n := len(r.Seq)
	for i := 0; i+n <= len(comps); i++ {
		if r.Abs && i > 0 {
			return false
		}
		if !r.Dir && i+n != len(comps) {
			continue
		}
		ok := true
		for j, pat := range r.Seq {
			if !r.nameAt(j, pat).match(comps[i+j]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// MatchPattern reports whether a glob's components could name a path the
// row covers (either side may be the wider glob).
func (r Row) MatchPattern(comps []string) bool {
	n := len(r.Seq)
	for i := 0; i+n <= len(comps); i++ {
		if r.Abs && i > 0 {
			return false
		}
		if !r.Dir && i+n != len(comps) {
			continue
		}
		ok := true
		for j, name := range r.Seq {
			c := strings.ToLower(comps[i+j])
			name = strings.ToLower(name)
			m1, _ := path.Match(name, c)
			m2, _ := path.Match(c, name)
			if !(m1 || m2) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(c, ".")) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[\\") }

// nameAt is the compiled j-th component (compiled now for a Row made
// outside the table).
func (r Row) nameAt(j int, pat string) name {
	if j < len(r.names) {
		return r.names[j]
	}
	return compile(pat)
}

// First returns the index in Table() of the first row that covers the
// absolute, clean, slash-separated path p — Implant rows only when write —
// or -1.
func First(p string, write bool) int {
	var buf [32]string // the components, on the stack for a path of up to 32
	comps := buf[:0]
	for rest := strings.Trim(p, "/"); ; {
		c, after, more := strings.Cut(rest, "/")
		comps = append(comps, c)
		if !more {
			break
		}
		rest = after
	}
	return FirstComps(comps, write)
}

// FirstComps is First for a path already cut into its components (an
// absolute path, without the leading empty one): what a walk of a tree
// keeps as it goes down. comps must not be empty.
func FirstComps(comps []string, write bool) int {
	comps = lower(comps)
	t := built()
	rs := t.rows
	best := -1
	try := func(i int) {
		if (best >= 0 && i >= best) || (rs[i].Kind == Implant && !write) {
			return
		}
		if rs[i].matchLower(comps) {
			best = i
		}
	}
	for _, c := range comps {
		for _, i := range t.index[c] {
			try(i)
		}
	}
	last := comps[len(comps)-1]
	for _, i := range t.lastGlobs {
		r := &rs[i]
		if r.names[len(r.names)-1].match(last) {
			try(i)
		}
	}
	for _, i := range t.globs {
		try(i)
	}
	return best
}

// Match returns the first row that covers the absolute, clean path p
// (Implant rows only when write).
func Match(p string, write bool) (Row, bool) {
	if i := First(p, write); i >= 0 {
		return Table()[i], true
	}
	return Row{}, false
}

// Under reports whether p, relative to a directory and slash-separated
// (".git/hooks/pre-commit", "sub/.envrc"), is covered by a row, either kind:
// what a sandbox may not write under a writable mount. An empty or "." p is
// the directory itself and is never covered.
func Under(rel string) (Row, bool) {
	rel = strings.Trim(path.Clean("/"+rel), "/")
	if rel == "" {
		return Row{}, false
	}
	comps := strings.Split(rel, "/")
	for _, r := range Table() {
		if !r.Abs && r.MatchComps(comps) {
			return r, true
		}
	}
	return Row{}, false
}

// Contains reports whether the directory dir (absolute, clean) holds, at
// some depth, the home-anchored or absolute locations of the table: it is
// $HOME, an ancestor of it, /, or /etc. A mount of such a directory hands a
// sandbox keys and credentials.
func Contains(dir, home string) bool {
	dir = path.Clean(dir)
	if dir == "/" {
		return true
	}
	in := func(d, p string) bool { return d == p || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") }
	if home != "" && home != "/" && in(dir, path.Clean(home)) {
		return true
	}
	for _, r := range Table() {
		if r.Abs && !strings.ContainsAny(r.Seq[0], "*?[") && in(dir, "/"+strings.Join(r.Seq, "/")) {
			return true
		}
	}
	return false
}

// Private returns the directories that hold other people's and the user's
// own files as a whole — the home directory, /home and /root — whose
// content a command judged read-only does not reach, but for the project,
// its working directory and Visible's files: a secret can lie anywhere in
// a home (~/src/other/.env), under any name, and only its project is
// searched for the table's rows. Nothing for an empty or "/" home.
func Private(home string) []string {
	out := []string{"/home", "/root"}
	if home != "" && home != "/" {
		home = path.Clean(home)
		if !slices.Contains(out, home) {
			out = append(out, home)
		}
	}
	return out
}

// Visible returns the files and directories in a Private directory that
// read-only programs read on their own and that hold no secret by the
// table's reckoning: git's user configuration (~/.gitconfig,
// $XDG_CONFIG_HOME/git, by default ~/.config/git), so that git status
// runs as it does unconfined. xdgConfig is $XDG_CONFIG_HOME ("": unset).
func Visible(home, xdgConfig string) []string {
	if home == "" || home == "/" {
		return nil
	}
	if xdgConfig == "" || !path.IsAbs(xdgConfig) {
		xdgConfig = path.Join(home, ".config")
	}
	return []string{path.Join(home, ".gitconfig"), path.Join(path.Clean(xdgConfig), "git")}
}

// Anchored returns the table's locations on this machine that a kernel
// ruleset can hide: every row of literal components joined to home, and
// every absolute row without globs, as absolute paths (files and
// directories alike; whether they exist is the caller's business). Rows
// with globs (id_rsa*, *.pem, /proc/*/environ) cannot be anchored.
func Anchored(home string) []string {
	var out []string
	for _, r := range Table() {
		lit := true
		for _, c := range r.Seq {
			if strings.ContainsAny(c, "*?[\\") {
				lit = false
				break
			}
		}
		if !lit {
			continue
		}
		switch {
		case r.Abs:
			out = append(out, "/"+strings.Join(r.Seq, "/"))
		case home != "" && home != "/":
			out = append(out, path.Join(append([]string{home}, r.Seq...)...))
		}
	}
	return out
}

// Above reports whether a path below rel (relative, slash-separated) could
// be covered by a row that rel itself is not: rel ends with the leading
// components of a longer row (".git" for .git/config, ".config" for
// .config/fish, "sub/.cargo" for .cargo/credentials). A symbolic link or a
// renamed directory at such a path gives a sandbox a second name for what
// the host will read there.
func Above(rel string) bool {
	rel = strings.Trim(path.Clean("/"+rel), "/")
	if rel == "" {
		return false
	}
	comps := lower(strings.Split(rel, "/")) // once, not for every row
	for _, r := range Table() {
		if r.Abs {
			continue
		}
		for k := 1; k < len(r.Seq) && k <= len(comps); k++ {
			// the row's first k components, as compiled with the table
			prefix := Row{Seq: r.Seq[:k], names: r.names[:min(k, len(r.names))]}
			if prefix.matchLower(comps[len(comps)-k:]) {
				return true
			}
		}
	}
	return false
}
