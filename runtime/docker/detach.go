package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
)

// refillRequest is what a detached refiller reads on its stdin: the pooled
// container to make (its owner labels are the refiller's own) and the used
// one to remove.
type refillRequest struct {
	Key    string
	Config *container.Config
	Host   *container.HostConfig
	Remove string `json:",omitempty"`
	// PoolDir is the requester's pool directory: where the claim markers
	// are (see Executor.marker).
	PoolDir string `json:",omitempty"`
}

// maxRefillRequest bounds what RefillMain reads; a request is a few KiB.
const maxRefillRequest = 1 << 20

// refillTimeout bounds a detached refiller's whole life.
const refillTimeout = 2 * time.Minute

// WithDetachedRefill makes the warm pool refill in a process of its own:
// the program name with args, started in a session of its own, given the
// refill on its stdin and not waited for. The program must call RefillMain
// (ccrun: a hidden subcommand of its own binary). A process that runs one
// pooled program and exits then waits neither for the refill nor for the
// removal of the used container (the refiller does both, and outlives it).
// Default: both are done in this process, in the background, which suits a
// long-lived process; Close waits for them at most 3 s.
func WithDetachedRefill(name string, args ...string) Option {
	return func(e *Executor) error {
		if name == "" {
			return newError(ErrInvalidArgument, nil, "docker: detached refill: no program")
		}
		e.detach = append([]string{name}, args...)
		return nil
	}
}

// spawnRefill starts the detached refiller for r. The request is written
// into the pipe before the start (it fits its buffer), so this process
// need not outlive the start; a refiller that cannot be started is only a
// cold next run.
func (e *Executor) spawnRefill(r refillRequest) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return
	}
	defer pr.Close()
	_, werr := pw.Write(b)
	if cerr := pw.Close(); werr != nil || cerr != nil {
		return
	}
	cmd := exec.Command(e.detach[0], e.detach[1:]...)
	cmd.Stdin = pr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return
	}
	go func() { _ = cmd.Wait() }() // reaped, if this process lives on
}

// RefillMain is the body of the detached refiller of WithDetachedRefill:
// it reads one refill on stdin, checks it, removes the used container it
// names (only a claimed one of the same pool: with a claim marker) and makes the pool's idle
// container, on the engine of the environment. It returns the process's
// exit code: 0, or 1 when the request is unreadable, is not a hardened
// pooled container, or the engine does not answer. Nothing is printed.
//
// ccrun's main calls it, for its hidden subcommand, before anything else:
//
//	if len(os.Args) > 1 && os.Args[1] == "__docker-refill" {
//		os.Exit(docker.RefillMain())
//	}
func RefillMain() int {
	// A refiller outlives the ccrun that started it by design (it is
	// detached so that ccrun can exit): its own time bounds it, even should
	// an engine call not heed its context; `ccrun gc` ends one found later.
	time.AfterFunc(refillTimeout+30*time.Second, func() { os.Exit(1) })
	if err := refillMain(os.Stdin); err != nil {
		return 1
	}
	return 0
}

func refillMain(in io.Reader) error {
	var r refillRequest
	if err := json.NewDecoder(io.LimitReader(in, maxRefillRequest)).Decode(&r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), refillTimeout)
	defer cancel()
	opts := []Option{withEngineArch("")} // it runs no once: no need to ask
	if r.PoolDir != "" {
		opts = append(opts, WithPoolDir(r.PoolDir))
	}
	e, err := New(ctx, opts...)
	if err != nil {
		return err
	}
	defer e.Close()
	if err := e.checkRefill(ctx, r); err != nil {
		return err
	}
	labels := e.labels()
	labels[LabelPool] = r.Key
	r.Config.Labels = labels
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r.Remove == "" {
			return
		}
		ins, err := e.eng.ContainerInspect(ctx, r.Remove)
		_, marked := e.markedBy(r.Remove)
		if err == nil && ins.Config != nil && ins.Config.Labels[LabelPool] == r.Key && (marked || claimed([]string{ins.Name})) {
			e.remove(ctx, r.Remove)
			e.unmark(r.Remove)
		}
	}()
	e.fill(ctx, r.Key, r.Config, r.Host)
	<-done
	return nil
}

// errNotPooled: a refill request for anything but a hardened pooled
// container of its key.
var errNotPooled = errors.New("docker: refill: not a hardened pooled container of its key")

// checkRefill refuses a request that is not what runPooled asks for: a
// container running once, as hardened as the cold path, whose key is
// the one it names. The refiller trusts its parent, but creates nothing
// else if handed something else.
func (e *Executor) checkRefill(ctx context.Context, r refillRequest) error {
	if r.Key == "" || r.Config == nil || r.Host == nil {
		return errNotPooled
	}
	c, h := r.Config, r.Host
	if !slices.Equal(c.Entrypoint, []string{oncePath}) || len(c.Cmd) != 0 || len(c.Env) != 0 ||
		h.Privileged || !h.ReadonlyRootfs || !slices.Equal(h.CapDrop, []string{"ALL"}) || len(h.CapAdd) != 0 ||
		!slices.Contains(h.SecurityOpt, "no-new-privileges") || len(h.SecurityOpt) != 1 ||
		h.Init == nil || !*h.Init || h.PidsLimit == nil || h.Memory <= 0 || h.MemorySwap != h.Memory ||
		len(h.Binds) != 0 || len(h.Devices) != 0 || h.PidMode != "" || h.IpcMode != "" || h.UsernsMode != "" {
		return errNotPooled
	}
	img, err := e.eng.ImageInspect(ctx, c.Image)
	if err != nil {
		return fmt.Errorf("docker: refill: inspect image %s: %w", c.Image, err)
	}
	cfg := *c
	if key, err := poolKey(img.ID, &cfg, h); err != nil || key != r.Key {
		return errNotPooled
	}
	return nil
}
