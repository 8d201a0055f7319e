package permission

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// KeyOfArgv returns the key a simple command of these literal words gets:
// the key ParseCommand gives the text that quotes each word so that it
// reads back as itself. A word that cannot be quoted (a NUL byte), a
// program word that is not bare, a wrapper, a detail that is not a plain
// word, an option before the first operand and options with no operand
// make the key the exact one of that text, as for any compound command;
// no words key as run_command:"#empty".
func KeyOfArgv(argv []string) keys.Key {
	if len(argv) == 0 {
		return keys.Key{Tool: keys.ShellTool, Action: shellcmd.CanonicalEmpty, Exact: true}
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, shellcmd.Variant)
		if err != nil {
			return keys.Key{Tool: keys.ShellTool, Action: shellcmd.UnparsedPrefix + strings.Join(argv, " "), Exact: true}
		}
		words[i] = q
	}
	return ParseCommand(strings.Join(words, " ")).Key
}
