package shellcmd

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/internal/sensitive"
)

// Reach is where a command judged read-only may read without anybody
// being asked: not in Private (the home, /home, /root: internal/sensitive
// Private), but for Allowed in them (the project, the working directory,
// git's user configuration). The kernel layer hides the rest of the
// private directories from such a command, so one that names a path there
// would only fail: it is asked instead.
type Reach struct {
	Private, Allowed []string // absolute, clean
}

// ReachOf is the Reach of a read-only command run in dir, in projectDir,
// for the user whose home is home ($XDG_CONFIG_HOME xdgConfig).
func ReachOf(home, xdgConfig, projectDir, dir string) Reach {
	r := Reach{Private: sensitive.Private(home), Allowed: sensitive.Visible(home, xdgConfig)}
	for _, d := range []string{projectDir, dir} {
		if d != "" && filepath.IsAbs(d) {
			r.Allowed = append(r.Allowed, filepath.Clean(d), resolve(d))
		}
	}
	return r
}

// quiet are programs whose words name no file they read (their
// substitutions still run, and are looked at).
var quiet = map[string]bool{"echo": true, "printf": true, "true": true, "false": true, ":": true}

// Beyond returns the first path a read-only command names outside r, as
// Dangerous finds paths (generously: every word, each piece of it, after
// expanding ~ and $HOME, with relative paths taken against dir and
// symlinks followed), but for the words of echo and printf; "" when there
// is none.
func Beyond(f *syntax.File, args []string, dir, home string, r Reach) string {
	if len(r.Private) == 0 || f == nil {
		return ""
	}
	d := newScan(dir, home, args)
	d.reach = &r
	for _, a := range args {
		d.tokens(a, false)
	}
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		if d.beyond != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				if name, ok := literal(n.Args[0]); ok && quiet[name] {
					for _, w := range n.Args[1:] {
						syntax.Walk(w, func(m syntax.Node) bool {
							switch m := m.(type) {
							case *syntax.CmdSubst, *syntax.ProcSubst:
								syntax.Walk(m, visit)
								return false
							}
							return true
						})
					}
					return false
				}
			}
		case *syntax.Redirect:
			if n.Word != nil && n.Hdoc == nil {
				d.word(n.Word, false, 0)
			}
			return n.Hdoc == nil
		case *syntax.Word:
			d.word(n, false, 0)
		}
		return true
	}
	syntax.Walk(f, visit)
	return d.beyond
}

// outside reports whether p lies in a private directory of r and in none
// of its allowed paths.
func (r *Reach) outside(p string) bool {
	in := func(dirs []string) bool {
		for _, d := range dirs {
			if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
				return true
			}
		}
		return false
	}
	return in(r.Private) && !in(r.Allowed)
}
