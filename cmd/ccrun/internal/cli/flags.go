package cli

import (
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ccrun/ccrun/permission"
)

// enumFlags are the flags that take one of a fixed list of values: every
// one of the CLI's. Each is strict: any other value, an alias, another
// case or the empty string, is refused as the command line is parsed,
// before anything is read or decided, with the valid ones listed
// (notValid), and exits 64. The same list completes the flag.
// TestEnumFlags holds every string flag of the CLI either here or in
// freeFlags, so a new flag with fixed values cannot miss the list.
var enumFlags = []struct {
	cmds  []string // the commands' paths below the root
	flag  string
	valid []string
	why   string // said after the valid values, if any
}{
	{[]string{"exec", "check"}, "mode", names(permission.Modes), ""},
	{[]string{"exec", "check"}, "directive", names(permission.Directives), ""},
	{[]string{"exec", "check"}, "pull", []string{"missing", "never", "always"}, ""},
	{[]string{"exec", "check"}, "network", []string{"none", "bridge", "host"}, ""},
	{[]string{"exec", "check", "doctor", "gc"}, "engine", []string{"docker", "kubernetes"}, ""},
	{[]string{"exec"}, "approve", []string{"once", "session", "project", "unconfined"}, ""},
	{[]string{"exec"}, "events", []string{"json"}, ""},
	{[]string{"allowlist add"}, "scope", []string{"session", "project"}, ""},
	{[]string{"allowlist remove"}, "scope", []string{"project"}, removeScopeWhy},
}

// names are the values of a list of string-kinded constants.
func names[S ~string](vs []S) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// notValid is the error of a flag given a value that is not one of valid;
// why, if any, follows.
func notValid(flag, value string, valid []string, why string) error {
	if why != "" {
		why = " (" + why + ")"
	}
	return usagef("%q is not a valid --%s; valid: %s%s", value, flag, strings.Join(valid, ", "), why)
}

// enumValue is a string flag that refuses any value but its valid ones.
type enumValue struct {
	pflag.Value
	flag, why string
	valid     []string
}

func (e enumValue) Set(v string) error {
	if !slices.Contains(e.valid, v) {
		return notValid(e.flag, v, e.valid, e.why)
	}
	return e.Value.Set(v)
}

// strictFlags makes the enumerated flags of root's commands strict, and
// completes them with their values where nothing else does. A command the
// build does not have (the front's) is passed over.
func strictFlags(root *cobra.Command) {
	for _, ef := range enumFlags {
		for _, path := range ef.cmds {
			c, _, err := root.Find(strings.Fields(path))
			if err != nil || c.CommandPath() != root.Name()+" "+path {
				continue
			}
			f := c.Flags().Lookup(ef.flag)
			if f == nil {
				continue
			}
			f.Value = enumValue{Value: f.Value, flag: ef.flag, valid: ef.valid, why: ef.why}
			if _, ok := c.GetFlagCompletionFunc(ef.flag); !ok {
				_ = c.RegisterFlagCompletionFunc(ef.flag, completeWords(ef.valid...))
			}
		}
	}
}

// flagValueError words the error of a value a flag's Set refused without
// pflag's `invalid argument "V" for "--F" flag:` before the parser's own
// text, which names the value again: an enumerated flag's is notValid's,
// and a duration's, a number's or a boolean's says what it wants.
func flagValueError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	var ue usageError
	if errors.As(iv.Unwrap(), &ue) {
		return ue
	}
	f := iv.GetFlag()
	want := map[string]string{
		"duration": "a duration such as 30s or 1m30s",
		"int":      "a whole number",
		"bool":     "true or false",
	}[f.Value.Type()]
	if want == "" {
		return usagef("--%s %q: %w", f.Name, iv.GetValue(), iv.Unwrap())
	}
	return usagef("%q is not a valid --%s; want %s", iv.GetValue(), f.Name, want)
}
