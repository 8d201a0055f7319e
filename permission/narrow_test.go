package permission

import (
	"path"
	"testing"

	"github.com/ccrun/ccrun/internal/hostile"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// narrowPairs are commands a red team keyed alike, or keyed so that a
// grant of the first covered the second: a wrapper keyed by its own first
// argument (timeout 60 true as run_command:timeout:60), a detail
// position holding a word that is not a plain word (rm *.log as
// run_command:rm, every rm), a command of options only (rm -f as
// run_command:rm, every rm), and an option before the first operand, whose
// value took the detail's place (kubectl -n prod get pods as
// run_command:kubectl:prod) or whose meaning the detail did not say
// (rm -f build and rm -rf build as run_command:rm:build). Each pair must key apart, and the grant a
// person makes of either (PatternOf its key, as the gate stores it, and
// that pattern written out and read back, as a rule or the execution
// guard reads it) must cover that command and not the other.
var narrowPairs = [][2]string{
	{"timeout 60 true", "timeout 60 sh -c 'x'"},
	{"timeout 60 true", "timeout 60 sh"},
	{"env CI=1 npm test", "env CI=1 sh"},
	{"env CI=1 npm test", "env CI=1 npm publish"},
	{"rm *.log", "rm -rf /"},
	{"rm *.log", "rm *.txt"},
	{"rm *.log", "rm x"},
	{"rm 'old notes.txt'", "rm x"},
	{"rm 'old notes.txt'", "rm -rf ~"},
	{"sudo ls", "sudo rm"},
	{"sudo ls", "sudo ls -la /root"},
	{"nice -n 5 make", "nice -n 5 sh"},
	{"xargs rm", "xargs cat"},
	{"nohup make", "nohup sh"},
	{"stdbuf -oL make", "stdbuf -oL sh"},
	{"ionice -c 3 make", "ionice -c 3 sh"},
	{"chrt 5 make", "chrt 5 sh"},
	{"taskset 1 make", "taskset 1 sh"},
	{"setsid make", "setsid sh"},
	{"flock /tmp/l make", "flock /tmp/l sh"},
	{"doas ls", "doas rm"},
	{"command ls", "command rm"},
	{"builtin echo", "builtin eval"},
	{"exec ls", "exec rm"},
	{"watch ls", "watch rm"},
	{"strace ls", "strace rm"},
	{"ltrace ls", "ltrace rm"},
	{"unbuffer ls", "unbuffer rm"},
	{"'time' ls", "'time' rm"},
	{"/usr/bin/timeout 60 true", "/usr/bin/timeout 60 sh"},
	{"bash -c ls", "bash -c rm"},
	{"bash -c 'ls -la'", "bash -c 'rm -rf /'"},
	{"sh script.sh", "sh -c evil"},
	{"eval ls", "eval rm"},
	{"find . -name x", "find . -delete"},
	{"find . -name x", "find . -exec sh -c x ;"},
	{"ssh host ls", "ssh host rm"},
	{"python3 x.py", "python3 x.py -c evil"},
	{"perl -I lib x.pl", "perl -I lib -e evil"},
	{"git -C d status", "git -C d push"},
	{"git -c core.pager=cat log", "git -c core.pager=sh push"},
	{"git --git-dir=x status", "git --git-dir=x push"},
	{"git $X status", "git $X push"},
	{`git "$X" push`, "git status"},
	{"cat $F", "cat x"},
	{"cat ~/x", "cat x"},
	{"echo {a,b}", "echo a"},
	{"rm -- -x", "rm -- -rf"},
	{"ls -- x", "ls -la"},
	{"echo 'hello world'", "echo hi"},
	{"rm -f", "rm -rf"},
	{"rm -f", "rm -rf /"},
	{"rm -f", "rm"},
	{"sort -n", "sort --output=x"},
	{"sort -n", "sort -o x"},
	{"npm -v", "npm --unsafe-perm"},
	{"npm -v", "npm install"},
	{"ls -la", "ls -R"},
	{"ls -la", "ls /etc"},
	{"kubectl -n prod get pods", "kubectl -n prod delete pods"},
	{"kubectl -n prod get pods", "kubectl -n prod"},
	{"kubectl -n prod get pods", "kubectl get pods"},
	{"make -C a build", "make -C a deploy"},
	{"make -C a build", "make -C b build"},
	{"make -C a build", "make build"},
	{"rm -f build", "rm -rf build"},
	{"rm -f build", "rm build"},
	{"docker -H ssh://h ps", "docker -H ssh://h rm x"},
	{"cargo -q build", "cargo -q publish"},
	{"git --no-pager log", "git --no-pager -c core.pager=sh log"},
}

func TestNarrowKeys(t *testing.T) {
	t.Parallel()
	for _, pair := range narrowPairs {
		t.Run(shellcmd.Escape(pair[0])+" vs "+shellcmd.Escape(pair[1]), func(t *testing.T) {
			t.Parallel()
			a, b := ParseCommand(pair[0]), ParseCommand(pair[1])
			checkCommand(t, a)
			checkCommand(t, b)
			if a.Key == b.Key {
				t.Fatalf("%q and %q share the key %s", pair[0], pair[1], a.Key)
			}
			for _, c := range [][2]*Command{{a, b}, {b, a}} {
				granted, other := c[0], c[1]
				pats := []keys.Pattern{keys.PatternOf(granted.Key)}
				if p, err := keys.ParsePattern(keys.PatternOf(granted.Key).String()); err != nil {
					t.Fatalf("the grant %s of %q does not read back: %v", keys.PatternOf(granted.Key), granted.Source, err)
				} else {
					pats = append(pats, p)
				}
				for _, p := range pats {
					if !p.Match(granted.Key) {
						t.Errorf("the grant %s of %q does not cover it (key %s)", p, granted.Source, granted.Key)
					}
					if p.Match(other.Key) {
						t.Errorf("the grant %s of %q covers %q (key %s)", p, granted.Source, other.Source, other.Key)
					}
				}
			}
		})
	}
}

// TestNarrowedKeysAreExact: a wrapper, a command whose detail position
// holds a word that is not a plain word, a command of options only and a
// command with an option before its first operand key by their whole text; no
// wildcard rule covers them (run_command:*, run_command:rm).
func TestNarrowedKeysAreExact(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"timeout 60 true", "env CI=1 npm test", "env", "rm *.log", "rm 'old notes.txt'", "rm -rf *",
		"sudo ls", "nice -n 5 make", "xargs rm", "rm -- -x", `cat "$1"`, "git -C d status",
		"git -c core.pager=cat log", "git -ccore.pager=cat", "git --git-dir=x", "/usr/bin/sudo ls",
		"./timeout 1 x", "sh", "bash script.sh", "node server.js", "echo \u00ff", "rm $X file",
		"rm -f", "rm -rf", "ls -la", "sort -n", "sort --output=x", "npm -v", "git -v", "rm --",
		"cat -", "kubectl -n prod get pods", "make -C a build", "rm -rf build", "git --no-pager -v",
		"git -P --paginate log",
	} {
		c := ParseCommand(src)
		checkCommand(t, c)
		if c.Compound || !c.Key.Exact || c.Key.Action != c.Canonical || c.Program == "" {
			t.Errorf("%q: Compound %v, key %s, Program %q; want a simple command keyed exactly by its canonical text",
				src, c.Compound, c.Key, c.Program)
		}
		for _, s := range []string{"run_command:*", "run_command:**", "run_command:" + path.Base(c.Program), "run_command:" + path.Base(c.Program) + ":*"} {
			if p, err := keys.ParsePattern(s); err == nil && p.Match(c.Key) {
				t.Errorf("%s matches %q (key %s)", s, src, c.Key)
			}
		}
		// A rule written as that command is a valid rule of it.
		p, err := keys.ParsePattern(`run_command:` + quoteKey(src))
		if err != nil {
			t.Fatalf("%q as a rule: %v", src, err)
		}
		if err := keys.CheckPattern(p); err != nil {
			t.Errorf("CheckPattern(%s) = %v, want nil: the command is keyed exactly", p, err)
		}
		if !p.Match(c.Key) {
			t.Errorf("the rule %s does not match %q (key %s)", p, src, c.Key)
		}
	}
}

func quoteKey(s string) string { return keys.Key{Tool: "t", Action: s, Exact: true}.String()[2:] }

// TestKeyControls: commands whose detail is a plain word with no option
// before it (options after it, and git's options that change nothing,
// allowed), and commands with no argument at all, keep their keys.
func TestKeyControls(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"git status":             "run_command:git:status",
		"npm test":               "run_command:npm:test",
		"go test ./...":          "run_command:go:test",
		"go test -run X ./...":   "run_command:go:test",
		"git --no-pager log":     "run_command:git:log",
		"git -P --no-pager log":  "run_command:git:log",
		"git --no-pager":         "run_command:git",
		"git status --porcelain": "run_command:git:status",
		"git push origin main":   "run_command:git:push",
		"git":                    "run_command:git",
		"ls":                     "run_command:ls",
		"ls src":                 "run_command:ls:src",
		"make":                   "run_command:make",
		"make test":              "run_command:make:test",
		"cargo build --release":  "run_command:cargo:build",
		"rm build -rf":           "run_command:rm:build",
		"npm test -- --watch":    "run_command:npm:test",
		"npm run build $X":       "run_command:npm:run",
		"./x.sh deploy":          "run_command:./x.sh:deploy",
		`"git" status`:           "run_command:git:status",
		"docker compose up -d":   "run_command:docker:compose",
		"kubectl get pods -A":    "run_command:kubectl:get",
		"gitk":                   "run_command:gitk",
		"envsubst x":             "run_command:envsubst:x",
		"timeoutx 60 true":       "run_command:timeoutx:60",
		"git commit -m 'a b' -q": "run_command:git:commit",
	} {
		c := ParseCommand(src)
		checkCommand(t, c)
		if got := c.Key.String(); got != want {
			t.Errorf("ParseCommand(%q).Key = %s, want %s", src, got, want)
		}
	}
}

// TestWrappersKeyExactly: every program of the wrapper table, by its name
// and by a path to it, keys by the whole text, with or without arguments.
func TestWrappersKeyExactly(t *testing.T) {
	t.Parallel()
	names := shellcmd.Wrappers()
	if len(names) < 40 {
		t.Fatalf("only %d wrappers", len(names))
	}
	for _, name := range names {
		for _, src := range []string{name, name + " x", name + " -x y z", "/usr/bin/" + name + " x"} {
			if !shellcmd.Bare(name) {
				continue
			}
			c := ParseCommand(src)
			if c.Err != nil {
				continue // "." alone, say, still parses; nothing here should fail
			}
			if !c.Key.Exact {
				t.Errorf("%q keys as %s, want exact", src, c.Key)
			}
		}
	}
}

// TestSegmentsImplyExact: a simple command in which the deny rules see
// another command (a wrapper's, a shell string's, an interpreter's words)
// keys by its whole text, over both corpora and the wrapper pairs: what the
// deny rules look through, a grant never reads as the wrapper's argument.
func TestSegmentsImplyExact(t *testing.T) {
	t.Parallel()
	var srcs []string
	for _, name := range []string{"hostile", "readonly"} {
		for _, e := range hostile.Corpus(t, name) {
			srcs = append(srcs, e.Command)
		}
	}
	for _, p := range narrowPairs {
		srcs = append(srcs, p[0], p[1])
	}
	n := 0
	for _, src := range srcs {
		c := ParseCommand(src)
		if c.Compound || c.File == nil {
			continue
		}
		n++
		if segs := shellcmd.Segments(c.File); len(segs) > 1 && !c.Key.Exact {
			t.Errorf("%q: the deny rules see %d commands in it, but it keys as %s", src, len(segs), c.Key)
		}
	}
	if n < 50 {
		t.Fatalf("only %d simple commands looked at", n)
	}
}
