// Package advice says how a call the gate denied could be allowed, once for
// every front end of ccrun: the CLI (cmd/ccrun) and the MCP server
// (mcpserver) print the same advice for the same denial, each with the
// words of its own channel around it (a terminal and --approve; a client
// that shows ccrun's question). The advice never names a grant above the
// ceiling of the call's environment. Its functions are safe for concurrent
// use.
package advice

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// Denial is a call the gate denied, as a front end has it.
type Denial struct {
	Request  *permission.Request
	Decision *permission.Decision
	// Err is the error the call was denied with: it tells a grant above
	// the ceiling (ceiling.ErrViolation) from the rest.
	Err error
	// Ceiling is the highest grant the call's environment may reach
	// (ceiling.Of for the Runtime's environments). The advice names no
	// grant above it, nor above what the gate offered (Decision.Offer).
	Ceiling ceiling.Grant
}

// Advice is how a denied call could be allowed.
type Advice struct {
	// Why, Answer and Ahead are what both front ends print after "to
	// allow it, ", in this order (Text), each putting the words of its
	// own channel after Answer. Why says what limits the answers (a
	// dangerous path, the ceiling a grant went beyond), ending in ": ",
	// or is ""; Answer gives the answers that would allow the call when a
	// person is asked, or with Fixed what to change; Ahead, the grant or
	// rule that would allow it ahead of the call (", or …"), or "".
	Why, Answer, Ahead string
	// Fixed says that no answer allows the call: a deny rule, the mode, a
	// directive or the caller's scope denies it.
	Fixed bool
	// Answers are what a person asked may answer to allow the call,
	// lowest first: Once, and AlwaysThisSession and AlwaysThisProject
	// where the ceiling reaches them. None when Fixed.
	Answers []ceiling.Grant
	// Pattern is the key pattern a grant or a rule of the call names:
	// the grant of its key exactly (keys.PatternOf).
	Pattern keys.Pattern
	// Session is the command that grants Pattern for a running ccrun
	// session (CCRUN_SESSION) where the session is the most a grant
	// reaches (where the project is, Ahead grants it for the project): a
	// way of the CLI's, whose sessions outlive a call (an MCP
	// connection's session is its own). "" otherwise.
	Session string
}

// Text is Why, Answer and Ahead.
func (a Advice) Text() string { return a.Why + a.Answer + a.Ahead }

// Max is the highest grant of the answers, ceiling.Deny when there is none.
func (a Advice) Max() ceiling.Grant {
	if len(a.Answers) == 0 {
		return ceiling.Deny
	}
	return a.Answers[len(a.Answers)-1]
}

// Words are the answers as the prompt and the MCP question take them
// ("once", "session", "project"), joined with sep.
func (a Advice) Words(sep string) string {
	w := make([]string, len(a.Answers))
	for i, g := range a.Answers {
		w[i] = word(g)
	}
	return strings.Join(w, sep)
}

// For returns the advice of d.
func For(d Denial) Advice {
	dec, req := d.Decision, d.Request
	limit := d.Ceiling
	if dec.Offer > ceiling.Deny && dec.Offer < limit {
		limit = dec.Offer
	}
	a := Advice{Pattern: keys.PatternOf(dec.Key)}
	switch dec.Layer {
	case permission.LayerDenyRule, permission.LayerScope, permission.LayerDirective:
		a.Fixed = true
		a.Answer = "change what denies it: a deny rule or the mode in the settings (ccrun.json, ccrun.local.json, the user config), or the call's directive"
		return a
	}
	for _, g := range []ceiling.Grant{ceiling.Once, ceiling.AlwaysThisSession, ceiling.AlwaysThisProject} {
		if g <= limit {
			a.Answers = append(a.Answers, g)
		}
	}
	if len(a.Answers) == 0 { // an environment ccrun cannot place: Once at most
		a.Answers = []ceiling.Grant{ceiling.Once}
	}
	a.Answer = "answer " + a.Words(", ") + " when asked"
	if n := strings.LastIndex(a.Answer, ", "); n >= 0 {
		a.Answer = a.Answer[:n] + " or " + a.Answer[n+2:] // once, session or project
	}
	if a.Max() == ceiling.AlwaysThisSession {
		a.Session = "ccrun allowlist add " + quote(a.Pattern.String()) + " --scope session"
	}
	switch {
	case errors.Is(d.Err, ceiling.ErrViolation):
		a.Why = fmt.Sprintf("a %s key can be granted at most %s: ", req.Environment, scope(a.Max()))
	case dec.Offer == ceiling.Once && d.Ceiling > ceiling.Once:
		a.Why = "it is asked for this call alone (a dangerous path, or a deny rule that may cover it), so only this allows it: "
		return a
	}
	switch a.Max() {
	case ceiling.AlwaysThisProject:
		a.Ahead = ", or grant it for the project ahead: ccrun allowlist add " + quote(a.Pattern.String()) + " --scope project"
	case ceiling.AlwaysThisSession:
		a.Ahead = fmt.Sprintf(`, or allow it with a rule: add %q to "permissions": {"allow": [...]} in the user config, or in ccrun.local.json of a trusted project`, a.Pattern.String())
		if a.Pattern.Tool == keys.ShellTool {
			a.Ahead += " (`ccrun key` prints the rule of a command)"
		}
	}
	return a
}

// word is how a person answers with g.
func word(g ceiling.Grant) string {
	switch g {
	case ceiling.AlwaysThisSession:
		return "session"
	case ceiling.AlwaysThisProject:
		return "project"
	}
	return "once"
}

// scope says how long g lasts.
func scope(g ceiling.Grant) string {
	if w := word(g); w != "once" {
		return "for the " + w
	}
	return "once"
}

// quote quotes s for a POSIX shell, so that a printed command line can be
// pasted as is.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
