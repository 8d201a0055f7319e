// Package prompt is the terminal approver: it shows a person what a call
// asks for and reads their choice.
//
// It shows the tool, its environment, the key, the command or arguments
// (escaped: no control or non-ASCII character reaches the terminal as is),
// what the call loosens, diagnostics and warnings, and only the choices the
// gate offers: a @shell key is never offered "this project", and a call that
// touches a dangerous path is offered "once" only.
package prompt

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
)

// Terminal asks on Out and reads answers from In. It is not safe for
// concurrent use: one prompt at a time, as on one terminal.
type Terminal struct {
	In  io.Reader
	Out io.Writer
	r   *bufio.Reader
}

type choice struct {
	keys  []string
	label string
	grant ceiling.Grant
}

// Choices returns the grants offered for d, most restrictive first, and why
// any was left out.
func Choices(req *permission.Request, d *permission.Decision) (offered []ceiling.Grant, note string) {
	limit := d.Offer
	if limit == ceiling.Deny {
		limit = ceiling.Of(req.Environment)
	}
	for _, g := range []ceiling.Grant{ceiling.Once, ceiling.AlwaysThisSession, ceiling.AlwaysThisProject} {
		if g <= limit {
			offered = append(offered, g)
		}
	}
	switch {
	case limit == ceiling.Once:
		note = "only \"once\" is offered: the call touches a dangerous path"
	case limit < ceiling.AlwaysThisProject && req.Environment == ceiling.Shell:
		note = "\"this project\" is not offered: a @shell command runs with your own rights, so its grant ends with the session"
	}
	return offered, note
}

// Approve implements permission.Approver.
func (t *Terminal) Approve(ctx context.Context, p *permission.Prompt) (ceiling.Grant, error) {
	if t.r == nil {
		t.r = bufio.NewReader(t.In)
	}
	req, d := p.Request, p.Decision
	offered, note := Choices(req, d)
	var b strings.Builder
	fmt.Fprintf(&b, "\nccrun: %s (%s) asks to run\n", permission.Escape(req.Tool), req.Environment)
	if req.Display != "" {
		for _, line := range strings.Split(req.Display, "\n") {
			fmt.Fprintf(&b, "    %s\n", permission.Escape(line))
		}
	}
	fmt.Fprintf(&b, "  key:      %s\n", d.Key)
	if req.Digest != "" {
		fmt.Fprintf(&b, "  digest:   %s\n", req.Digest)
	}
	for _, l := range req.Loosens {
		fmt.Fprintf(&b, "  loosens:  %s\n", permission.Escape(l))
	}
	if d.Reason != "" {
		fmt.Fprintf(&b, "  why asked: %s\n", permission.Escape(d.Reason))
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(&b, "  WARNING:  %s\n", permission.Escape(w))
	}
	for _, x := range d.Diagnostics {
		fmt.Fprintf(&b, "  note:     %s\n", permission.Escape(x))
	}
	if note != "" {
		fmt.Fprintf(&b, "  (%s)\n", note)
	}
	choices := make([]choice, 0, 4)
	for i, g := range offered {
		c := choice{grant: g, keys: []string{fmt.Sprint(i + 1)}}
		switch g {
		case ceiling.Once:
			c.label, c.keys = "once", append(c.keys, "o", "once", "y", "yes")
		case ceiling.AlwaysThisSession:
			c.label, c.keys = "this session", append(c.keys, "s", "session")
		case ceiling.AlwaysThisProject:
			c.label, c.keys = "this project", append(c.keys, "p", "project")
		}
		choices = append(choices, c)
	}
	choices = append(choices, choice{label: "deny", grant: ceiling.Deny,
		keys: []string{fmt.Sprint(len(offered) + 1), "d", "deny", "n", "no"}})
	b.WriteString("  allow? ")
	for i, c := range choices {
		if i > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "[%s] %s", c.keys[0], c.label)
	}
	b.WriteString(": ")
	if _, err := io.WriteString(t.Out, b.String()); err != nil {
		return ceiling.Deny, err
	}
	for {
		line, err := t.readLine(ctx)
		if err != nil {
			fmt.Fprintln(t.Out)
			return ceiling.Deny, fmt.Errorf("prompt: no answer: %w", err)
		}
		ans := strings.ToLower(strings.TrimSpace(line))
		for _, c := range choices {
			for _, k := range c.keys {
				if ans == k {
					return c.grant, nil
				}
			}
		}
		fmt.Fprintf(t.Out, "  answer with a number (1-%d) or o/s/p/d: ", len(choices))
	}
}

func (t *Terminal) readLine(ctx context.Context) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := t.r.ReadString('\n')
		if err == io.EOF && s != "" {
			err = nil
		}
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
