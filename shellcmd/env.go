package shellcmd

import "strings"

// EnvRow is one row of the table of environment variables that change
// what programs run: a variable a shell, the dynamic loader or a program
// reads to find code to run, a program to start, or a configuration that
// names one.
type EnvRow struct {
	Name   string // the variable, or the start of its name when Prefix
	Prefix bool   // every variable whose name starts with Name
	Reason string // what it does, for the person asked
}

// EnvTable is the one table of variables that change what programs run.
// A call or command that sets any of them is never read-only; the
// interpreter's exec-time guard reads the same table (RunsPrograms).
var EnvTable = []EnvRow{
	{"BASH_ENV", false, "bash sources the file it names before running a script"},
	{"ENV", false, "sh and bash in POSIX mode source the file it names"},
	{"BASH_FUNC_", true, "bash imports shell functions from it, which replace commands"},
	{"SHELLOPTS", false, "turns on shell options (xtrace, which expands PS4) in every bash started"},
	{"BASHOPTS", false, "turns on shell options in every bash started"},
	{"BASH_XTRACEFD", false, "makes bash write its trace to a file descriptor"},
	{"BASH_LOADABLES_PATH", false, "where bash's enable -f loads builtins (code) from"},
	{"PROMPT_COMMAND", false, "a shell runs it before each prompt"},
	{"PS0", false, "prompt strings are expanded, running command substitutions"},
	{"PS1", false, "prompt strings are expanded, running command substitutions"},
	{"PS2", false, "prompt strings are expanded, running command substitutions"},
	{"PS3", false, "prompt strings are expanded, running command substitutions"},
	{"PS4", false, "expanded for every traced command, running command substitutions"},
	{"IFS", false, "changes how the shell splits words, so what it runs"},
	{"PATH", false, "changes which program a name runs"},
	{"FPATH", false, "where zsh and ksh load functions from"},
	{"ZDOTDIR", false, "where zsh reads its startup files from"},
	{"CDPATH", false, "changes where cd goes, so which files later commands read and write"},
	{"SHELL", false, "programs that run a shell (less !, man, editors) run this one"},
	{"HOME", false, "where programs read their configuration from (git's ~/.gitconfig can name programs)"},
	{"XDG_CONFIG_HOME", false, "where programs read their configuration from (git's config can name programs)"},
	{"XDG_CONFIG_DIRS", false, "where programs read their configuration from"},
	{"LD_", true, "the dynamic loader loads or audits the libraries it names (code in every program)"},
	{"DYLD_", true, "the macOS dynamic loader loads the libraries it names"},
	{"GCONV_PATH", false, "glibc loads character-set converters (code) from it"},
	{"GLIBC_TUNABLES", false, "changes glibc's behaviour in every program (and has been an exploit vector)"},
	{"LOCPATH", false, "glibc loads locale data from it"},
	{"NLSPATH", false, "programs load message catalogs from it"},
	{"MALLOC_", true, "changes glibc's allocator in every program"},
	{"GIT_", true, "git reads its configuration (GIT_CONFIG_*), repository (GIT_DIR), programs (GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_EDITOR, GIT_ASKPASS) and trace files from it"},
	{"PAGER", false, "programs page their output through the program it names"},
	{"MANPAGER", false, "man pages through the program it names"},
	{"MANOPT", false, "options man adds to every run"},
	{"SYSTEMD_PAGER", false, "systemd tools page through the program it names"},
	{"SYSTEMD_LESS", false, "options systemd tools give less"},
	{"BAT_PAGER", false, "bat pages through the program it names"},
	{"BAT_CONFIG_PATH", false, "bat reads options (a pager) from the file it names"},
	{"LESS", true, "less runs LESSOPEN/LESSCLOSE and takes commands (+!cmd) from LESS"},
	{"EDITOR", false, "programs start the editor it names"},
	{"VISUAL", false, "programs start the editor it names"},
	{"SUDO_EDITOR", false, "sudoedit starts the editor it names"},
	{"FCEDIT", false, "fc starts the editor it names"},
	{"BROWSER", false, "programs open links with the program it names"},
	{"SSH_ASKPASS", false, "ssh runs it to ask for a passphrase"},
	{"SSH_ASKPASS_REQUIRE", false, "makes ssh run SSH_ASKPASS"},
	{"SUDO_ASKPASS", false, "sudo -A runs it to ask for a password"},
	{"RSYNC_RSH", false, "rsync runs it to reach the remote side"},
	{"RSYNC_CONNECT_PROG", false, "rsync runs it to connect"},
	{"CVS_RSH", false, "cvs runs it to reach the server"},
	{"TAR_OPTIONS", false, "options tar adds to every run (--to-command, --use-compress-program)"},
	{"RIPGREP_CONFIG_PATH", false, "rg reads options (--pre runs a program) from the file it names"},
	{"GREP_OPTIONS", false, "options old greps add to every run"},
	{"PYTHON", true, "python runs startup code (PYTHONSTARTUP), loads modules (PYTHONPATH) or changes behaviour from it"},
	{"NODE_", true, "node loads code (NODE_OPTIONS=--require, NODE_PATH) from it"},
	{"PERL5", true, "perl takes options (PERL5OPT=-M…) and modules (PERL5LIB) from it"},
	{"PERLLIB", false, "perl loads modules from it"},
	{"PERL_", true, "perl reads debugger and module settings from it"},
	{"RUBY", true, "ruby takes options (RUBYOPT=-r…) and modules (RUBYLIB) from it"},
	{"LUA_", true, "lua runs LUA_INIT and loads modules from LUA_PATH/LUA_CPATH"},
	{"PHPRC", false, "php reads its configuration (auto_prepend_file) from it"},
	{"PHP_INI_SCAN_DIR", false, "php reads configuration from it"},
	{"JAVA_TOOL_OPTIONS", false, "every JVM takes options (-javaagent) from it"},
	{"_JAVA_OPTIONS", false, "every JVM takes options from it"},
	{"JDK_JAVA_OPTIONS", false, "the java launcher takes options from it"},
	{"DOTNET_STARTUP_HOOKS", false, ".NET loads the assemblies it names"},
	{"GOFLAGS", false, "go takes flags (-toolexec runs a program) from it"},
	{"RUSTC_WRAPPER", false, "cargo runs rustc through the program it names"},
	{"OPENSSL_CONF", false, "OpenSSL reads its configuration (engines: code) from it"},
	{"OPENSSL_ENGINES", false, "OpenSSL loads engines (code) from it"},
	{"PROMPT_COMMANDS", false, "a shell runs it before each prompt"},
	{"MAKEFLAGS", false, "make takes options from it (--eval=$(shell CMD) runs a command)"},
	{"MFLAGS", false, "make takes options from it"},
	{"GNUMAKEFLAGS", false, "GNU make takes options from it (--eval runs commands)"},
	{"MAKEFILES", false, "make reads the makefiles it names first (their recipes and $(shell) run)"},
	{"CC", false, "make's rules and build tools run the compiler it names"},
	{"CXX", false, "make's rules and build tools run the compiler it names"},
	{"CPP", false, "make's rules run the preprocessor it names"},
	{"LD", false, "make's rules and build tools run the linker it names"},
	{"AR", false, "make's rules run the archiver it names"},
	{"CARGO_", true, "cargo runs wrappers, runners and linkers it names (CARGO_BUILD_RUSTC_WRAPPER, CARGO_TARGET_*_RUNNER)"},
	{"RUSTFLAGS", false, "rustc takes flags from it (-C linker= runs a program)"},
	{"RUSTC", false, "cargo runs the compiler it names"},
	{"CGO_", true, "go passes compiler and linker flags from it (a compiler plugin is code)"},
	{"GOENV", false, "go reads its environment (GOFLAGS=-toolexec) from the file it names"},
	{"GOTOOLCHAIN", false, "go runs (and fetches) the toolchain it names"},
	{"NPM_CONFIG_", true, "npm takes its configuration (script-shell, node-options) from it"},
	{"npm_config_", true, "npm takes its configuration (script-shell, node-options) from it"},
	{"YARN_", true, "yarn takes its configuration (the yarn path it runs) from it"},
	{"KUBECONFIG", false, "kubectl reads a configuration whose exec credential plugins it runs"},
	{"DOCKER_CONFIG", false, "docker reads a configuration whose credential helpers it runs"},
	{"AWS_CONFIG_FILE", false, "the AWS tools read a configuration whose credential_process they run"},
	{"VIMINIT", false, "vim runs the commands it holds"},
	{"EXINIT", false, "vi and ex run the commands it holds"},
	{"MYVIMRC", false, "vim reads the file it names"},
	{"EMACSLOADPATH", false, "emacs loads code from it"},
	{"CURL_HOME", false, "curl reads .curlrc (options) from it"},
	{"WGETRC", false, "wget reads options from the file it names"},
}

// RunsPrograms reports whether setting the environment variable name can
// change what programs run, and why (a row of EnvTable). A name that is
// not a variable name (empty, or with a character other than letters,
// digits and _, or starting with a digit) is reported too: a program may
// still read it, and nothing can be said about it. It is safe for
// concurrent use.
func RunsPrograms(name string) (reason string, ok bool) {
	if !validName(name) {
		return "not a plain variable name", true
	}
	for _, r := range EnvTable {
		if name == r.Name || r.Prefix && strings.HasPrefix(name, r.Name) {
			return r.Reason, true
		}
	}
	return "", false
}

func validName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
