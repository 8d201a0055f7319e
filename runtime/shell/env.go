package shell

import "strings"

// defaultPass is the environment a tool sees when nothing else is passed
// by name. Each name is a location, a locale or a display preference: none
// is a secret and none changes what program runs. A name ending in "*" is a
// prefix.
var defaultPass = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL",
	"LANG", "LANGUAGE", "LC_*",
	"TERM", "COLORTERM", "NO_COLOR",
	"TZ", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
}

// FilterEnv returns the entries of environ (KEY=VALUE, as os.Environ gives
// them) that a @shell tool may see, in their original order.
//
// An entry passes when its name is in the default list or in pass. The
// default list is exactly:
//
//	PATH HOME USER LOGNAME SHELL
//	LANG LANGUAGE LC_*
//	TERM COLORTERM NO_COLOR
//	TZ TMPDIR
//	XDG_CONFIG_HOME XDG_CACHE_HOME XDG_DATA_HOME XDG_STATE_HOME
//
// Everything else is dropped. That includes, on purpose, secrets (*_TOKEN,
// *_KEY, *SECRET*, *PASSWORD*, *_CREDENTIALS, AWS_*, GITHUB_*, GH_*,
// SSH_AUTH_SOCK, ...) and variables that change what a program runs or how
// a shell reads its input (BASH_ENV, ENV, LD_*, DYLD_*, PYTHONPATH,
// PYTHONSTARTUP, NODE_OPTIONS, PERL5OPT, RUBYOPT, GIT_*, PROMPT_COMMAND, IFS,
// CDPATH, GLOBIGNORE, SHELLOPTS, BASHOPTS, PS4). PWD is not taken from the
// parent either: the shell sets it from the run's working directory.
//
// pass names further variables, for instance from the project
// configuration; a name ending in "*" passes every variable with that
// prefix ("NPM_CONFIG_*"). A variable passed by name passes even when it
// looks like a secret: somebody asked for it.
//
// Entries without "=" or with an empty name are dropped. FilterEnv does not
// modify its arguments.
//
// The filter keeps secrets from being handed to tools, which then pass them
// on, log them or send them away by accident. It does not hide them from a
// tool that looks for them: a @shell tool runs with the user's rights and
// can read /proc/$$/environ (ccrun's own environment) as it can read
// ~/.aws/credentials.
func FilterEnv(environ []string, pass []string) []string {
	out := make([]string, 0, len(defaultPass)+len(pass))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if matchAny(defaultPass, name) || matchAny(pass, name) {
			out = append(out, kv)
		}
	}
	return out
}

// matchAny reports whether name is one of names, where a name ending in "*"
// matches by prefix.
func matchAny(names []string, name string) bool {
	for _, n := range names {
		if prefix, ok := strings.CutSuffix(n, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if n == name {
			return true
		}
	}
	return false
}
