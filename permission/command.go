package permission

import (
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// Command is a shell command as the gate and the @shell executor see it:
// parsed once, keyed from that parse, and run from that same parse.
//
// The @shell executor must run File (with mvdan.cc/sh/v3/interp), never
// hand Source to another shell: mvdan.cc/sh reads some text unlike GNU Bash
// (an unquoted carriage return is a blank, so git\rstatus is git status),
// and only File is what was keyed. A nil File (text that does not parse)
// must not run.
//
// A Command is not modified after ParseCommand returns it and may then be
// read from many goroutines; File must be treated as read-only.
type Command struct {
	// Source is the text as given.
	Source string
	// File is the parse tree the executor runs; nil when the text does not
	// parse. For a command keyed exactly (a compound command, and a simple
	// one keyed by its whole text) it is the parse of Canonical, so that
	// two commands with the same key run the very same tree; for any other
	// simple command it is the parse of Source, from which the key was
	// taken.
	File *syntax.File
	// Canonical is the syntax printer's output for the parse of Source,
	// without its final newline. It is CanonicalEmpty for a command with
	// no statement, and UnparsedPrefix+Source for text that does not
	// parse (see ParseCommand). Compound keys are made of it.
	Canonical string
	// Compound is set for anything but one plain simple command (see
	// ParseCommand).
	Compound bool
	// Key is run_command:PROGRAM[:DETAIL] for a simple command whose
	// detail is a plain word (or that has none), and the exact key
	// run_command:"CANONICAL" for a compound one and for a simple one
	// whose detail no plain word can name (see ParseCommand).
	Key keys.Key
	// Program and Args are the words of a simple command (empty for a
	// compound one). Program is after quote removal. Args[i] is the
	// argument's value after quote removal when Literal[i] is set, and
	// otherwise the word as the printer writes it (e.g. "$HOME", *.go):
	// a word that expands to something not known before it runs.
	Program string
	Args    []string
	// Literal[i] reports whether Args[i] is a fully literal word: only
	// plain text and '…' or "…" quoting, with no expansion of any kind
	// (parameter, tilde, glob, brace) left in it.
	Literal []bool
	// Err says why the text does not parse (class ErrUnparsable); nil
	// otherwise.
	Err error
}

// ParseCommand parses src with shellcmd.Parse, the one guarded parser
// (syntax.LangBash, comments dropped), and keys it. It never fails: text that does not parse is a
// compound command with a nil File and Err set. It is safe for concurrent
// use.
//
// A command is simple when it is exactly one statement that is a plain
// call: no assignment, redirection, &, !, coprocess or time; no command
// or process substitution, arithmetic expansion, or parameter expansion
// beyond a plain $name or ${name} in any word; and a program word that is
// literal text, quotes allowed, whose value after quote removal is bare
// (letters, digits and . _ / + - @ % , = #), with no ~, no line
// continuation and no control byte in its source. A simple command keys
// by its program as written, path and all (./git is not git), with as
// detail its first argument, an operand (a word not starting with '-';
// options after it are not looked at), or no detail when it has no
// argument at all:
//
//	git status             run_command:git:status
//	git status --short     run_command:git:status
//	"git" status           run_command:git:status (so do g''it and \git)
//	./git status           run_command:./git:status
//	ls                     run_command:ls
//
// A detail that no plain word can name narrows the key, never widens it:
// the command keys exactly by its canonical text, as a compound one does,
// when that first argument is not literal and bare (a glob, a parameter,
// a tilde, quoted text with blanks); when an option comes before it (--
// included), or the command has options and no operand, for an option's
// value can take the detail's place and an option can change what runs
// (kubectl -n prod get pods, make -C dir deploy, rm -rf, sort
// --output=FILE), git's options that change nothing (--no-pager, -P…)
// passed over; and, whatever its words, when the program is a wrapper,
// whose words name another program or code to run (shellcmd.Wraps: env,
// timeout, nice, sudo, xargs, sh, python3…):
//
//	rm *.log           run_command:"rm *.log"
//	rm 'a b.txt'       run_command:"rm 'a b.txt'"
//	git -C dir push    run_command:"git -C dir push"
//	ls -la             run_command:"ls -la"
//	kubectl -n p get   run_command:"kubectl -n p get"
//	timeout 60 true    run_command:"timeout 60 true"
//
// Everything else is compound and keys exactly by its canonical text:
//
//	git status && git push    run_command:"git status && git push"
//
// Comments are dropped (they do not run). The tree a command keyed
// exactly runs is the parse of its canonical text, checked to be the tree
// of the source but for positions and spellings that run the same (`…` as
// $(…), $[…] as $((…)), the tabs of a <<- here-document): so one key is
// one program, and a person approving the key approves what runs.
//
// Text with no statement keys as run_command:"#empty". Text that does not
// parse keys as run_command:"#unparsed:SOURCE", with a nil File, and so
// does text beyond MaxCommandBytes or MaxCommandOperators, and text the
// parser would misread or the printer misprint: text with a NUL byte (the
// parser silently drops it), and text whose printed form parses to another
// tree (a$()<() is one word, printed as two). Neither can collide with a
// parsed command's key: printer output never starts with '#'.
func ParseCommand(src string) *Command {
	p := shellcmd.Parse(src)
	c := &Command{Source: p.Source, File: p.File, Canonical: p.Canonical, Compound: p.Compound,
		Program: p.Program, Args: p.Args, Literal: p.Literal, Err: p.Err}
	if p.Exact {
		c.Key = keys.Key{Tool: keys.ShellTool, Action: p.Canonical, Exact: true}
	} else {
		c.Key = keys.Key{Tool: keys.ShellTool, Action: p.Program, Detail: p.Detail}
	}
	return c
}
