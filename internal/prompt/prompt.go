// Package prompt is the terminal approver: it shows a person what a call
// asks for and reads their choice.
//
// It shows the tool, its environment and description, the command or
// module or image with its arguments, what the call adds to the
// environment, its working directory and stdin, every mount with its source
// resolved, the key, what the call loosens, why it is asked (the decision's
// reason and diagnostics), warnings, and what a lasting grant covers. Text
// that comes from the call is escaped: no control or non-ASCII character
// reaches the terminal as is. The arrows ccrun writes itself ("→") are
// kept.
//
// The answers are letters that never change meaning: o (once), s (this
// session), p (this project), u (run once outside the sandbox), d (deny);
// each is shown only when offered, and Enter alone is the default, deny.
// Anything else is answered with what is on offer, never taken silently. A
// @shell key is never offered "this project", a call that touches a
// dangerous path is offered "once" only, "this session" is offered only
// when a session is running, and u only where the decision offers it
// (permission.Decision.OfferUnconfined) and the prompt was asked through
// ApproveUnconfined.
package prompt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/shellcmd"
)

// Errors Approve returns when nobody answered; the gate then denies. Test
// them with errors.Is.
var (
	// ErrInterrupted: the person pressed Ctrl-C at the prompt (the
	// context was cancelled). It is of class context.Canceled, as
	// errdefs.IsCanceled has it: ccrun was interrupted and nothing ran, so
	// the CLI exits 130 (README, "Exit codes").
	ErrInterrupted error = interrupted{}
	// ErrClosed: the prompt's input ended (Ctrl-D at the terminal).
	ErrClosed = errors.New("the prompt's input ended (Ctrl-D)")
)

// interrupted is ErrInterrupted: its own text, of class context.Canceled
// (which errdefs has no WithMessage for).
type interrupted struct{}

func (interrupted) Error() string { return "interrupted at the prompt (Ctrl-C)" }
func (interrupted) Unwrap() error { return context.Canceled }

// Terminal asks on Out and reads answers from In, one line each. It is not
// safe for concurrent use: one prompt at a time, as on one terminal.
type Terminal struct {
	In  io.Reader
	Out io.Writer
	// Session says whether a session is running that a "this session"
	// answer can live in. Default false: "this session" is not offered,
	// and the prompt says how to start a session.
	Session bool
	// Describe returns the description of a tool (a capability's), shown
	// under the tool's name; nil or "": none shown.
	Describe func(tool string) string

	// ResetTerminal says that Out is a terminal on which a tool's output
	// may have come before the prompt: each prompt first resets what that
	// output could have set to hide or fake it (ResetSequence), and starts
	// on a line of its own. Default false: Out gets the prompt alone.
	ResetTerminal bool

	r       *bufio.Reader
	pending chan line // a read still under way (after a Ctrl-C), taken by the next prompt
}

// ResetSequence undoes what a program's output can leave a terminal in so
// that the next text is hidden or misread: it resets the character
// attributes (concealed, colours the same as the background), shows the
// cursor, leaves the alternate screen, selects the ASCII character set,
// turns autowrap on and insert mode off. Then a carriage return and a new
// line: the prompt starts at the beginning of a line of its own, never
// after text a program printed to look like its start.
const ResetSequence = "\x1b[0m\x1b[?25h\x1b[?1049l\x1b(B\x1b[?7h\x1b[4l\r\n"

// line is what one read of the input gave.
type line struct {
	s   string
	err error
}

// Choices returns the grants a person may be offered for decision d of
// request req, most restrictive first (Deny is always offered besides),
// and why any was left out (one note per grant left out): "this project"
// never for a @shell key (its ceiling), only "once" for a dangerous path,
// "this session" only when session says a session is running. Every front
// end that asks a person offers these and no others; the gate refuses
// anything else. Where d.OfferUnconfined, a front end that is a
// permission.UnconfinedApprover may also offer to run the call once
// outside its sandbox, as a choice of its own.
func Choices(req *permission.Request, d *permission.Decision, session bool) (offered []ceiling.Grant, notes []string) {
	limit := d.Offer
	if limit == ceiling.Deny {
		limit = ceiling.Of(req.Environment)
	}
	for _, g := range []ceiling.Grant{ceiling.Once, ceiling.AlwaysThisSession, ceiling.AlwaysThisProject} {
		if g > limit {
			continue
		}
		if g == ceiling.AlwaysThisSession && !session {
			continue
		}
		offered = append(offered, g)
	}
	switch {
	case limit == ceiling.Once:
		notes = append(notes, `only "once" is offered: the call touches a dangerous path`)
	default:
		if !session {
			notes = append(notes, `"this session" is not offered: no session is running (start one with eval "$(ccrun session start)", then run this again)`)
		}
		if limit < ceiling.AlwaysThisProject && req.Environment == ceiling.Shell {
			notes = append(notes, `"this project" is not offered: a @shell command runs with your own rights, so its grant ends with the session at most`)
		}
	}
	return offered, notes
}

// answer is one choice the prompt offers.
type answer struct {
	letter, word, label string
	grant               ceiling.Grant
	unconfined          bool // Once, outside the sandbox
}

var answers = []answer{
	{"o", "once", "once", ceiling.Once, false},
	{"s", "session", "this session", ceiling.AlwaysThisSession, false},
	{"p", "project", "this project", ceiling.AlwaysThisProject, false},
}

// Unconfined is the answer that runs the one call asked about outside the
// sandbox, with the person's full rights: a letter and a text of its own,
// never folded into "once".
var unconfined = answer{"u", "unconfined", UnconfinedLabel, ceiling.Once, true}

// UnconfinedLabel is what the unconfined choice says, on the terminal and
// in the MCP question alike.
const UnconfinedLabel = "run once outside the sandbox"

var deny = answer{"d", "deny", "deny", ceiling.Deny, false}

// Render writes what Approve shows for p, up to (not including) the
// question, as text for a terminal. session says whether a session is
// running; describe may be nil.
func Render(p *permission.Prompt, session bool, describe func(string) string) string {
	req, d := p.Request, p.Decision
	offered, notes := Choices(req, d, session)
	var b strings.Builder
	fmt.Fprintf(&b, "\nccrun: %s (%s) asks to run\n", shellcmd.Escape(req.Tool), req.Environment)
	if describe != nil {
		if s := describe(req.Tool); s != "" {
			fmt.Fprintf(&b, "  about:     %s\n", shellcmd.Escape(s))
		}
	}
	if req.Display != "" {
		for _, line := range strings.Split(req.Display, "\n") {
			fmt.Fprintf(&b, "    %s\n", shellcmd.Escape(line))
		}
	}
	if len(req.Args) > 0 {
		q := make([]string, len(req.Args))
		for i, a := range req.Args {
			q[i] = strconv.QuoteToASCII(a)
		}
		fmt.Fprintf(&b, "  args:      %s\n", strings.Join(q, " "))
	}
	for _, kv := range req.Env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "  env:       %s=%s\n", shellcmd.Escape(k), strconv.QuoteToASCII(v))
	}
	if req.Dir != "" {
		fmt.Fprintf(&b, "  dir:       %s\n", resolved(req.Dir))
	}
	if req.Stdin != "" {
		fmt.Fprintf(&b, "  stdin:     %s\n", shellcmd.Escape(req.Stdin))
	}
	if len(req.Mounts) > 0 {
		for _, m := range req.Mounts {
			fmt.Fprintf(&b, "  mount:     %s\n", own(m))
		}
	} else {
		label := "path:     "
		if req.Environment == ceiling.Wasm || req.Environment == ceiling.Docker {
			label = "mount:    "
		}
		for _, path := range req.Paths {
			fmt.Fprintf(&b, "  %s %s%s\n", label, resolved(path), mountMode(req, path))
		}
	}
	fmt.Fprintf(&b, "  key:       %s\n", d.Key)
	if req.Digest != "" {
		fmt.Fprintf(&b, "  digest:    %s\n", req.Digest)
	}
	for _, l := range req.Loosens {
		fmt.Fprintf(&b, "  loosens:   %s\n", own(l))
	}
	if d.Reason != "" {
		fmt.Fprintf(&b, "  why asked: %s\n", own(d.Reason))
	}
	for _, x := range d.Diagnostics {
		fmt.Fprintf(&b, "  note:      %s\n", own(x))
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(&b, "  WARNING:   %s\n", own(w))
	}
	if c := covers(req, d, offered); c != "" {
		fmt.Fprintf(&b, "  a grant:   %s\n", c)
	}
	if d.OfferUnconfined {
		b.WriteString("  sandbox:   approved, it runs in the workspace sandbox: it writes only the project (not its\n" +
			"             protected paths), its own TMPDIR and the directories the settings name, and reads\n" +
			"             no dangerous path; what it starts stays inside\n")
		fmt.Fprintf(&b, "  outside:   %q runs this call alone with all your rights;\n"+
			"             the next call is sandboxed again, and no grant ever runs one outside\n", UnconfinedLabel)
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "  (%s)\n", n)
	}
	return b.String()
}

// covers says what a lasting grant would cover, when one is offered.
func covers(req *permission.Request, d *permission.Decision, offered []ceiling.Grant) string {
	lasting := ""
	for _, g := range offered {
		switch g {
		case ceiling.AlwaysThisSession:
			lasting = `"this session"`
		case ceiling.AlwaysThisProject:
			if lasting != "" {
				lasting += ` or "this project"`
			} else {
				lasting = `"this project"`
			}
		}
	}
	if lasting == "" {
		return ""
	}
	switch {
	case req.Tool == keys.DockerTool:
		return lasting + " covers every command of this image (this image ID) with these mounts and network, whatever its arguments"
	case req.Tool == keys.WasmTool:
		return lasting + " covers every run of this module (these bytes) with these mounts, whatever its arguments"
	case req.Environment == ceiling.Shell && req.Command != nil && !d.Key.Exact && req.Tool == keys.ShellTool && d.Key.Detail == "":
		return fmt.Sprintf("%s covers the key %s only: %s with no operand, not with one", lasting, d.Key, shellcmd.Escape(d.Key.Action))
	case req.Environment == ceiling.Shell && req.Command != nil && !d.Key.Exact && req.Tool == keys.ShellTool:
		return fmt.Sprintf("%s covers every command under the key %s, whatever its further arguments", lasting, d.Key)
	case req.Tool == keys.ShellTool:
		return lasting + " covers this exact command only"
	case req.Environment == ceiling.Docker:
		return lasting + " covers every call of this capability while its files and image stay as they are, whatever its input and arguments"
	default:
		return lasting + " covers every call of this capability while its files stay as they are, whatever its input and arguments"
	}
}

// mountMode labels an ad-hoc mount read-only or read-write (a capability's
// mounts are listed with their modes under "loosens").
func mountMode(req *permission.Request, path string) string {
	if req.Tool != keys.WasmTool && req.Tool != keys.DockerTool {
		return ""
	}
	for _, l := range req.Loosens {
		if strings.HasPrefix(l, "writable mount "+path+":") {
			return " (read-write)"
		}
	}
	return " (read-only)"
}

// resolved shows path escaped, followed by where it really points when a
// symlink makes that differ.
func resolved(path string) string {
	s := shellcmd.Escape(path)
	real, err := filepath.EvalSymlinks(path)
	switch {
	case err != nil:
		return s + " (does not exist)"
	case filepath.IsAbs(path) && real != filepath.Clean(path):
		return s + " → " + shellcmd.Escape(real)
	}
	return s
}

// own escapes text that ccrun wrote around parts it did not: every part is
// escaped, the arrows between them are kept.
func own(s string) string {
	parts := strings.Split(s, "→")
	for i, p := range parts {
		parts[i] = shellcmd.Escape(p)
	}
	return strings.Join(parts, "→")
}

// question is the line that asks, with the answers offered and the
// default.
func question(offered []answer) string {
	var b strings.Builder
	b.WriteString("  allow? ")
	for _, a := range offered {
		fmt.Fprintf(&b, "[%s] %s  ", a.letter, a.label)
	}
	b.WriteString("(Enter: deny): ")
	return b.String()
}

// Approve implements permission.Approver. Ctrl-C (the context cancelled)
// returns ErrInterrupted, Ctrl-D ErrClosed; the gate denies either way. It
// never offers u: only ApproveUnconfined can carry that answer.
func (t *Terminal) Approve(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	g, _, err := t.approve(ctx, p, false)
	return g, err
}

// ApproveUnconfined implements permission.UnconfinedApprover: Approve,
// with the letter u ("run once outside the sandbox") offered besides when
// the decision offers it. u answers Once, unconfined.
func (t *Terminal) ApproveUnconfined(ctx context.Context, p *permission.Prompt) (ceiling.Grant, bool, error) {
	return t.approve(ctx, p, p.Decision.OfferUnconfined)
}

func (t *Terminal) approve(ctx context.Context, p *permission.Prompt, offerUnconfined bool) (ceiling.Grant, bool, error) {
	if t.r == nil {
		t.r = bufio.NewReader(t.In)
	}
	if p.Decision.OfferUnconfined && !offerUnconfined {
		// shown as what it is: a prompt that does not offer u says nothing of it
		d := *p.Decision
		d.OfferUnconfined = false
		p = &permission.Prompt{Request: p.Request, Decision: &d}
	}
	grants, notes := Choices(p.Request, p.Decision, t.Session)
	var offered []answer
	for _, a := range answers {
		for _, g := range grants {
			if a.grant == g {
				offered = append(offered, a)
			}
		}
	}
	if offerUnconfined {
		offered = append(offered, unconfined)
	}
	offered = append(offered, deny)
	text := Render(p, t.Session, t.Describe) + question(offered)
	if t.ResetTerminal {
		text = ResetSequence + text
	}
	if _, err := io.WriteString(t.Out, text); err != nil {
		return ceiling.Deny, false, err
	}
	letters := make([]string, len(offered))
	for i, a := range offered {
		letters[i] = a.letter
	}
	valid := strings.Join(letters, ", ")
	for {
		got, err := t.readLine(ctx)
		switch {
		case errors.Is(err, context.Canceled):
			fmt.Fprintf(t.Out, "\n  denied: interrupted (Ctrl-C)\n")
			return ceiling.Deny, false, fmt.Errorf("prompt: %w", ErrInterrupted)
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintf(t.Out, "\n  denied: no answer in time\n")
			return ceiling.Deny, false, fmt.Errorf("prompt: no answer before the deadline: %w", err)
		case errors.Is(err, io.EOF):
			fmt.Fprintf(t.Out, "\n  denied: no answer (Ctrl-D)\n")
			return ceiling.Deny, false, fmt.Errorf("prompt: %w", ErrClosed)
		case err != nil:
			fmt.Fprintln(t.Out)
			return ceiling.Deny, false, fmt.Errorf("prompt: reading the answer: %w", err)
		}
		ans := strings.ToLower(strings.TrimSpace(got))
		if ans == "" {
			return ceiling.Deny, false, nil
		}
		for _, a := range offered {
			if ans == a.letter || ans == a.word {
				return a.grant, a.unconfined, nil
			}
		}
		why := "not an answer"
		for _, a := range append(answers, unconfined) {
			if ans == a.letter || ans == a.word {
				why = fmt.Sprintf("%q is not offered here", a.label)
				if a.unconfined {
					why += " (only for a @shell command that would run in the workspace sandbox)"
					break
				}
				for _, n := range notes {
					if strings.Contains(n, `"`+a.label+`"`) || strings.HasPrefix(n, `only "once"`) {
						why = n
					}
				}
			}
		}
		fmt.Fprintf(t.Out, "  %s: %s; answer %s (Enter: deny): ", strconv.QuoteToASCII(ans), why, valid)
	}
}

// readLine reads one line, or returns the context's error when it ends
// first. A line cut by the end of input is returned with no error; an end
// of input with nothing read is io.EOF.
func (t *Terminal) readLine(ctx context.Context) (string, error) {
	if t.pending == nil {
		ch := make(chan line, 1)
		go func() {
			s, err := t.r.ReadString('\n')
			if err == io.EOF && s != "" {
				err = nil
			}
			ch <- line{s, err}
		}()
		t.pending = ch
	}
	select {
	case l := <-t.pending:
		t.pending = nil
		return l.s, l.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
