// Package backend is the vocabulary of the seam between the root package
// and the backends behind it: the call a backend prepares (Invocation),
// what it tells the gate (Prepared), and the helpers every backend binds a
// grant with. The root package defines the Backend interface where it uses
// it and names these types by alias (ccrun.Invocation, ccrun.Prepared), so
// a backend of a Go program's own implements it without importing this
// package. The built-in backends live beside it: shellenv, wasmenv,
// dockerenv.
//
// It imports no backend but runtime/shell's two enforcement types (Guard,
// Confinement), which the root fills for a call that runs a shell script
// on the host.
//
// A built-in backend refuses a call it cannot prepare with an error of
// class errdefs.ErrInvalidArgument; the root reports that refusal as
// ccrun.ErrInvalidCall, whose one definition is the root's.
package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/shell"
)

// Invocation is one call as its backend sees it. The root fills it from
// the call, validated (the environment variables, the input, the mounts:
// absolute, existing), before Prepare; Prepare may set Args, Dir and Plan;
// after the gate it is the backend's to run, unchanged.
type Invocation struct {
	Environment ceiling.Environment // where the call runs
	// Tool is the tool's name: a built-in tool's (run_command…), a
	// capability's, or what Prepared.Key names.
	Tool string
	// Target is what an ad-hoc call names: the command, the module file
	// (an absolute path), the image reference, or a registered backend's
	// target as the backend reads it. For a capability: the entry's
	// target in a registered environment, which ccrun passes on unread
	// (its digest covers what is in Capability.Dir), and "" in a built-in
	// one.
	Target string
	// Capability is set when the call runs a capability: its manifest was
	// validated and its input checked against its schema.
	Capability *capabilities.Capability
	// ProjectDir is the project root, absolute.
	ProjectDir string
	// Command is the parsed shell command (@shell): the same parse tree
	// the key came from (Prepared.Command).
	Command *permission.Command
	// Args are the program's arguments: the call's, after those of a
	// capability's entry (put first by the root in a registered
	// environment, by the backend's Prepare in a built-in one).
	Args []string
	// Dir is the working directory: on the host (@shell) or in the
	// container (@docker).
	Dir    string
	Env    []string    // the program's whole environment, KEY=value
	Mounts []job.Mount // the host directories the program sees
	Limits job.Limits  // the run's limits, as the call set them
	// Network is the network the call's sandbox asks for ("" or "none":
	// none): a capability's manifest's, set by the root, or what the
	// backend's Prepare reads from Options (a @docker call's network).
	// The root refuses a call that names hosts (AllowHosts, the lists)
	// and sets it to another network.
	Network string
	// Options are the call's options of its environment (Call.Options),
	// as given: nil, or options whose Environment is this call's (the
	// root refuses any other before Prepare). The backend reads them,
	// and says in Prepared what they loosen.
	Options EnvironmentOptions
	Streams job.Streams // the call's input and where its output goes as it comes
	// Guard (@shell) enforces the gate's decision where the command runs:
	// every program and every file the script opens is checked (see
	// internal/guard). Set by the root once the gate has allowed a call
	// whose Prepared.Command is set; a backend of @shell must pass it on.
	Guard *shell.Guard
	// Confine (@shell), when set, runs the command under the kernel's
	// confinement (Landlock): set by the root for a command nobody
	// approved as such.
	Confine *shell.Confinement
	// Egress (@docker), when set, is the only way out the container gets:
	// the egress proxy ccrun serves for the call, which checks every
	// destination against the call's network lists. Set by the root once
	// the gate has allowed a call whose lists name hosts; a backend that
	// cannot put its container behind it must refuse the call.
	Egress *Egress
	// Plan is the backend's own: what Prepare (and Bind) made ready to
	// run, such as the module's bytes or the image's ID. The root never
	// reads it.
	Plan any
}

// EnvironmentOptions are the options of a call that one environment
// reads, such as @docker's network and pull policy (engines.DockerOptions):
// the environment's own, not every call's. Environment names the
// environment they are for; the root refuses them, before anything is
// asked, on a call of any other.
type EnvironmentOptions interface {
	Environment() ceiling.Environment // the environment they are for
}

// Egress is an egress proxy (internal/egress) a call's sandbox reaches
// the network through.
type Egress struct {
	// Socket is the proxy's unix socket, absolute, connectable by the
	// user ccrun runs as.
	Socket string
	// Env is the environment that points a program at the proxy as the
	// program reaches it at addr (HOST:PORT): egress.Proxy.Env.
	Env func(addr string) []string
}

// Prepared is what a backend tells the gate and the person asked about a
// call. The root builds the gate's request from it: the environment is the
// one the backend was registered for, and nothing here can widen what the
// gate allows (a backend cannot say a call is read-only).
type Prepared struct {
	// Key is what a grant covers. Required for an ad-hoc call; for a
	// capability the root keys it capability:NAME and ignores Key.
	Key keys.Key
	// Display is what the person sees: the command, the module or the
	// image with the arguments.
	Display string
	// Digest binds a grant to the content that runs (ContentDigest): a
	// changed content is asked again. For a capability it starts as the
	// capability's digest, which a Binder may bind further. "" binds the
	// grant to the key alone.
	Digest string
	// OptionsDigest, when set, binds the grant further to what the call's
	// Options change past what the digest covers (a capability called
	// with a network its manifest does not give): the root binds Digest
	// to it (BindOptions), for a capability too, so that a grant of the
	// call as it was approved covers no call that loosens it. "" for a
	// call whose options change nothing the digest does not cover.
	OptionsDigest string
	// Loosens lists what the call loosens past the environment's defaults,
	// one line each (a network), shown and audited.
	Loosens []string
	// Network says the call reaches a network: the gate then decides it
	// as permission.ClassNetwork.
	Network bool
	// Command is the parsed shell command the gate's policy reads, which
	// the host runs. Only a backend of @shell may set it.
	Command *permission.Command
	// Dir is the host directory a @shell command runs in, shown.
	Dir string
	// Fetch, set by a Binder's Bind, says that what runs is not on this
	// machine yet and must be fetched once the call is allowed (an image
	// to pull), and from where, in a line the person asked is shown.
	// Digest is then not bound to that content: the root has the Binder
	// fetch it after the decision and binds the grant to what arrived
	// before anything runs.
	Fetch string
	// Unbound, with Fetch, says Digest is bound to no content yet (none is
	// here): what the person approves is what Fetch brings. Without it,
	// Digest is bound to a copy here that Fetch may replace (an image
	// pulled again on every call), and a different one that arrives is
	// asked about again.
	Unbound bool
}

// ContentDigest binds an ad-hoc grant to what runs (the content, or its
// sha256), what it may reach, and, for @shell, the arguments and
// environment it is given. A sandboxed tool's grant covers any arguments
// (they cannot reach past the sandbox), and the prompt says so; a shell
// grant covers only what the person saw.
func ContentDigest(content []byte, mounts []job.Mount, network string, args, env []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "content %d\n", len(content))
	h.Write(content)
	for _, m := range mounts {
		fmt.Fprintf(h, "\nmount %q", m.String())
	}
	fmt.Fprintf(h, "\nnetwork %q", network)
	for _, a := range args {
		fmt.Fprintf(h, "\narg %q", a)
	}
	for _, e := range env {
		fmt.Fprintf(h, "\nenv %q", e)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// BindOptions binds digest (a call's, or a capability's) further to the
// options (Prepared.OptionsDigest); "" leaves it as it is.
func BindOptions(digest, options string) string {
	if options == "" {
		return digest
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\noptions %q", digest, options))
	return "sha256:" + hex.EncodeToString(h[:])
}

// Rel shows path relative to dir when it is inside it.
func Rel(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// PathKey keys a file a call runs: tool:path (quoted, and so exact, when
// the path is not plain).
func PathKey(tool, path string) keys.Key {
	k := keys.Key{Tool: tool, Action: filepath.ToSlash(path)}
	if !k.Valid() {
		k.Exact = true
	}
	return k
}

// Display is what the person sees of a call: what runs, then its
// arguments.
func Display(what string, args []string) string {
	return strings.Join(append([]string{what}, args...), " ")
}
