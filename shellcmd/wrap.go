package shellcmd

import (
	"path"
	"slices"
	"strings"
)

// wrappers are the programs whose words name another program to run, or
// code to run: a key of PROGRAM:DETAIL would take the wrapper's first
// operand (a duration, an assignment, a user, a host, a script) for what
// runs, and a grant of timeout 60 true would cover timeout 60 sh -c '…'.
// A simple command of one of them keys by its whole text (see Parse). It
// holds every program Segments looks through (a test keeps them in step),
// the shells, and the interpreters and tools whose arguments are code.
var wrappers = map[string]bool{}

func init() {
	for _, group := range []string{
		// run the rest of their words as a command
		"env nice nohup setsid time timeout gtimeout stdbuf ionice chrt taskset flock xargs parallel watch " +
			"unbuffer caffeinate catchsegv sudo doas run0 pkexec su runuser sg newgrp fakeroot faketime " +
			"chroot unshare nsenter firejail bwrap systemd-run proxychains proxychains4 torsocks direnv " +
			"dbus-run-session xvfb-run with-contenv strace ltrace valgrind script expect tmux screen ssh",
		// shell builtins that run, or change what a later word runs
		"command builtin exec eval trap source . alias hash enable fc shopt",
		// shells
		"bash sh zsh dash ksh mksh ash busybox rbash fish yash tcsh csh",
		// interpreters, and tools whose arguments are code or name a command
		"python python2 python3 node nodejs deno bun perl ruby php lua Rscript osascript pwsh powershell " +
			"tclsh jshell awk gawk mawk nawk sed find fd",
	} {
		for _, name := range strings.Fields(group) {
			wrappers[name] = true
		}
	}
}

// Wraps reports whether program (a path or a name; its base name is
// looked up) is a wrapper: a program whose words name another program or
// code to run (timeout, env, sudo, xargs, bash, python3…). Such a
// command keys by its whole text, never by program and first operand.
func Wraps(program string) bool { return wrappers[path.Base(program)] }

// Wrappers returns the names Wraps knows, sorted.
func Wrappers() []string {
	names := make([]string, 0, len(wrappers))
	for n := range wrappers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// detailOf returns the detail of the key of the simple command
// PROGRAM ARGS (lit[i]: Args[i] is fully literal), or exact when the
// command must be keyed by its whole text: no plain word can say what it
// runs. The detail is the first argument, which must be an operand: a
// literal bare word not starting with '-'. The key is exact when the
// program is a wrapper (Wraps); when that argument is not literal (a
// glob, a parameter, a brace, a tilde: it expands to what nobody has
// seen) or not bare (quoted text with blanks or punctuation); and when an
// option (a word starting with '-', -- included) comes before the first
// operand, or the command has options and no operand at all: an option's
// value can stand in the detail's place (kubectl -n prod get pods would
// key as kubectl:prod), an option can change what the operand does (make
// -C dir deploy, rm -rf build), and with no operand the options are all
// there is to say what runs (rm -f vs rm -rf, sort -n vs sort
// --output=FILE). Only git's global options that change nothing
// (gitGlobal: --no-pager, -P…) are passed over. Options after the detail
// are not looked at (git status --porcelain is git:status). A command
// with no argument at all (ls, git, git --no-pager) has no detail and is
// not exact.
func detailOf(program string, args []string, lit []bool) (detail string, exact bool) {
	if Wraps(program) {
		return "", true
	}
	git := path.Base(program) == "git"
	for i, a := range args {
		switch {
		case !lit[i]:
			return "", true
		case git && slices.Contains(gitGlobal, a):
			continue // git --no-pager log runs what git log does
		case strings.HasPrefix(a, "-"), !Bare(a):
			return "", true
		}
		return a, false
	}
	return "", false
}
