package permission

import "mvdan.cc/sh/v3/syntax"

// Command is a shell command as the gate and the @shell executor see it:
// parsed once, keyed from that parse, and run from that same parse.
type Command struct {
	// Source is the text as given.
	Source string
	// File is the parse tree; nil when the text does not parse.
	File *syntax.File
	// Canonical is the syntax printer's output for File (Source when it
	// does not parse). Compound keys are made of it.
	Canonical string
	// Compound is set for anything but one plain simple command.
	Compound bool
	// Key is run_command:PROGRAM[:DETAIL] for a simple command, and the
	// exact key run_command:"CANONICAL" for a compound one.
	Key Key
	// Program and Args are the literal words of a simple command.
	Program string
	Args    []string
}

// ParseCommand parses src as a shell command and keys it. It never fails:
// text that does not parse is a compound command.
func ParseCommand(src string) *Command {
	panic("TODO: issue 2 keys helper")
}
