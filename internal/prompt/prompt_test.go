package prompt

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

func shellPrompt(cmd string) *permission.Prompt {
	c := permission.ParseCommand(cmd)
	return &permission.Prompt{
		Request:  &permission.Request{Tool: "run_command", Environment: ceiling.Shell, Command: c, Display: cmd, Permission: permission.Ask(c.Key)},
		Decision: &permission.Decision{Verdict: permission.AskUser, Key: c.Key, Offer: ceiling.AlwaysThisSession, Reason: "mode default asks for exec"},
	}
}

// Every answer is a letter that means one thing, offered only when on
// offer; anything else is answered, never taken.
func TestApproveAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		session bool
		env     ceiling.Environment
		offer   ceiling.Grant
		input   string
		want    ceiling.Grant
		wantErr error
		shows   []string
		hides   []string
	}{
		{name: "once", session: true, input: "o\n", want: ceiling.Once,
			shows: []string{"[o] once  [s] this session  [d] deny  (Enter: deny): "}, hides: []string{"[p]", "[1]"}},
		{name: "word", session: true, input: "Session\n", want: ceiling.AlwaysThisSession},
		{name: "enter is deny", session: true, input: "\n", want: ceiling.Deny},
		{name: "y is not an answer", session: true, input: "y\nd\n", want: ceiling.Deny,
			shows: []string{`"y": not an answer; answer o, s, d (Enter: deny): `}},
		{name: "digits are not answers", session: true, input: "1\no\n", want: ceiling.Once,
			shows: []string{`"1": not an answer`}},
		{name: "project not offered for shell", session: true, input: "p\no\n", want: ceiling.Once,
			shows: []string{`"p": "this project" is not offered: a @shell command runs with your own rights`}},
		{name: "no session", input: "s\no\n", want: ceiling.Once,
			shows: []string{"[o] once  [d] deny", `"s": "this session" is not offered: no session is running (start one with eval "$(ccrun session start)"`},
			hides: []string{"[s]"}},
		{name: "wasm offers project", env: ceiling.Wasm, offer: ceiling.AlwaysThisProject, session: true, input: "p\n", want: ceiling.AlwaysThisProject,
			shows: []string{"[o] once  [s] this session  [p] this project  [d] deny"}},
		{name: "dangerous path once only", env: ceiling.Wasm, offer: ceiling.Once, session: true, input: "s\np\nd\n", want: ceiling.Deny,
			shows: []string{"[o] once  [d] deny", `only "once" is offered: the call touches a dangerous path`}, hides: []string{"[s]", "[p]"}},
		{name: "ctrl-d", session: true, input: "", want: ceiling.Deny, wantErr: ErrClosed, shows: []string{"denied: no answer (Ctrl-D)"}},
		{name: "ctrl-d after a wrong answer", session: true, input: "x\n", want: ceiling.Deny, wantErr: ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := shellPrompt("touch x")
			if tc.env != "" {
				p.Request.Environment, p.Request.Tool, p.Decision.Offer = tc.env, "run_wasm", tc.offer
			}
			var out strings.Builder
			term := &Terminal{In: strings.NewReader(tc.input), Out: &out, Session: tc.session}
			got, err := term.Approve(context.Background(), p)
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("Approve = %v, %v; want %v, %v; screen:\n%s", got, err, tc.want, tc.wantErr, out.String())
			}
			if tc.wantErr == nil && err != nil {
				t.Errorf("Approve error %v", err)
			}
			for _, s := range tc.shows {
				if !strings.Contains(out.String(), s) {
					t.Errorf("the prompt lacks %q; it showed:\n%s", s, out.String())
				}
			}
			for _, s := range tc.hides {
				if strings.Contains(out.String(), s) {
					t.Errorf("the prompt shows %q; it showed:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestApproveInterrupted(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	term := &Terminal{In: r, Out: &out, Session: true}
	done := make(chan error, 1)
	go func() {
		_, err := term.Approve(ctx, shellPrompt("touch x"))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) || !errdefs.IsCanceled(err) {
		t.Fatalf("Approve after cancel: %v, want ErrInterrupted, of class context.Canceled", err)
	}
	if !strings.Contains(out.String(), "denied: interrupted (Ctrl-C)") {
		t.Errorf("no interrupted message; screen:\n%s", out.String())
	}
	// The read left under way is the next prompt's: no line is lost.
	go func() { _, _ = io.WriteString(w, "o\n") }()
	if g, err := term.Approve(context.Background(), shellPrompt("touch y")); g != ceiling.Once || err != nil {
		t.Errorf("second Approve = %v, %v; want once", g, err)
	}
}

// What the call carries is shown, escaped; ccrun's own arrows are kept;
// mounts are resolved to where they point.
func TestRenderShowsEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "gone")
	key := keys.MustParseKey("run_docker:busybox:latest")
	p := &permission.Prompt{
		Request: &permission.Request{
			Tool: "run_docker", Environment: ceiling.Docker, Permission: permission.Ask(key),
			Display: "busybox:latest sh\nimage: sha256:abc",
			Args:    []string{"sh", "-c", "echo \x1b[31mhi"},
			Env:     []string{"FOO=b\u0430r", "LANG=C"},
			Stdin:   "file /tmp/in.json",
			Paths:   []string{link, missing},
			Loosens: []string{"writable mount " + missing + ":/out:rw", "network: bridge"},
			Digest:  "sha256:def",
		},
		Decision: &permission.Decision{Verdict: permission.AskUser, Key: key, Offer: ceiling.AlwaysThisProject,
			Reason:      "this project is not trusted: run `ccrun trust`",
			Diagnostics: []string{"~/.ssh (secret: keys) → /home/u/.ssh", "h\u0456dden → x"},
			Warnings:    []string{"network"}},
	}
	got := Render(p, true, func(string) string { return "Reads\x07 things" })
	for _, want := range []string{
		"ccrun: run_docker (@docker) asks to run\n",
		"  about:     Reads\\a things\n",
		"    busybox:latest sh\n    image: sha256:abc\n",
		`  args:      "sh" "-c" "echo \x1b[31mhi"` + "\n",
		`  env:       FOO="b\u0430r"` + "\n",
		`  env:       LANG="C"` + "\n",
		"  stdin:     file /tmp/in.json\n",
		"  mount:     " + link + " → " + real + " (read-only)\n",
		"  mount:     " + missing + " (does not exist) (read-write)\n",
		"  key:       run_docker:busybox:latest\n",
		"  loosens:   network: bridge\n",
		"  why asked: this project is not trusted: run `ccrun trust`\n",
		"  note:      ~/.ssh (secret: keys) → /home/u/.ssh\n",
		`  note:      h\u0456dden → x` + "\n",
		"  WARNING:   network\n",
		`  a grant:   "this session" or "this project" covers every command of this image (this image ID) with these mounts and network, whatever its arguments`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Render lacks %q; it wrote:\n%s", want, got)
		}
	}
	for _, r := range got {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r > 0x7f && r != '→') {
			t.Errorf("Render wrote %U to the terminal:\n%s", r, got)
		}
	}
}

func TestRenderCovers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cmd string
		want      string
	}{
		{"simple", "git push origin", `"this session" covers every command under the key run_command:git:push, whatever its further arguments`},
		{"compound", "git status && git push", `"this session" covers this exact command only`},
		// a command with no operand: the grant is of the program alone
		{"no operand", "make", `"this session" covers the key run_command:make only: make with no operand, not with one`},
		{"harmless option", "git --no-pager", `"this session" covers the key run_command:git only: git with no operand, not with one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Render(shellPrompt(tc.cmd), true, nil); !strings.Contains(got, tc.want) {
				t.Errorf("Render lacks %q:\n%s", tc.want, got)
			}
		})
	}
	if got := Render(shellPrompt("git push"), false, nil); strings.Contains(got, "a grant:") {
		t.Errorf("with once only on offer, no lasting grant is described:\n%s", got)
	}
}

// TestApproveDeadline: a prompt whose context's deadline passes is not a
// Ctrl-C: the error is of class context.DeadlineExceeded, not
// ErrInterrupted, and the screen says so.
func TestApproveDeadline(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0)) // already past
	defer cancel()
	var out strings.Builder
	term := &Terminal{In: r, Out: &out, Session: true}
	_, err := term.Approve(ctx, shellPrompt("touch x"))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrInterrupted) || errors.Is(err, context.Canceled) {
		t.Fatalf("Approve past its deadline: %v, want context.DeadlineExceeded only", err)
	}
	if !strings.Contains(out.String(), "denied: no answer in time") {
		t.Errorf("no deadline message; screen:\n%s", out.String())
	}
}

// The unconfined choice has a letter and a text of its own, is offered
// only through ApproveUnconfined where the decision offers it, and answers
// Once; o stays confined; u is refused where it is not offered.
func TestApproveUnconfined(t *testing.T) {
	t.Parallel()
	const letter = "[u] run once outside the sandbox"
	for _, tc := range []struct {
		name           string
		offer          bool // Decision.OfferUnconfined
		plain          bool // asked through Approve
		input          string
		want           ceiling.Grant
		wantUnconfined bool
		shows, hides   []string
	}{
		{name: "u", offer: true, input: "u\n", want: ceiling.Once, wantUnconfined: true,
			shows: []string{"[o] once  [s] this session  " + letter + "  [d] deny  (Enter: deny): ", "sandbox:   approved, it runs in the workspace sandbox",
				`outside:   "run once outside the sandbox" runs this call alone with all your rights;`}},
		{name: "the word", offer: true, input: "Unconfined\n", want: ceiling.Once, wantUnconfined: true},
		{name: "o stays confined", offer: true, input: "o\n", want: ceiling.Once, shows: []string{letter}},
		{name: "s stays confined", offer: true, input: "s\n", want: ceiling.AlwaysThisSession, shows: []string{letter}},
		{name: "not offered", input: "u\no\n", want: ceiling.Once,
			shows: []string{`"u": "run once outside the sandbox" is not offered here (only for a @shell command that would run in the workspace sandbox)`},
			hides: []string{letter, "sandbox:"}},
		{name: "offered, asked through Approve", offer: true, plain: true, input: "u\nd\n", want: ceiling.Deny,
			shows: []string{`"u": "run once outside the sandbox" is not offered here`}, hides: []string{letter, "outside:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := shellPrompt("make test")
			p.Decision.OfferUnconfined = tc.offer
			var out strings.Builder
			term := &Terminal{In: strings.NewReader(tc.input), Out: &out, Session: true}
			var got ceiling.Grant
			var unconfined bool
			var err error
			if tc.plain {
				got, err = term.Approve(context.Background(), p)
			} else {
				got, unconfined, err = term.ApproveUnconfined(context.Background(), p)
			}
			if err != nil || got != tc.want || unconfined != tc.wantUnconfined {
				t.Fatalf("got %v unconfined=%v %v; want %v unconfined=%v; screen:\n%s", got, unconfined, err, tc.want, tc.wantUnconfined, out.String())
			}
			for _, s := range tc.shows {
				if !strings.Contains(out.String(), s) {
					t.Errorf("the prompt lacks %q; it showed:\n%s", s, out.String())
				}
			}
			for _, s := range tc.hides {
				if strings.Contains(out.String(), s) {
					t.Errorf("the prompt shows %q; it showed:\n%s", s, out.String())
				}
			}
			if !p.Decision.OfferUnconfined && tc.offer {
				t.Error("the prompt changed the decision it was shown")
			}
		})
	}
}
