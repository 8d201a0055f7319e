package docker

import (
	"context"
	"errors"
	"fmt"
	"github.com/ccrun/ccrun/internal/ctr"
	"os"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
)

// owner names a process: its pid and its start time (field 22 of
// /proc/PID/stat), so that a reused pid does not pass for the owner.
type owner struct {
	pid   int
	start string
}

func self() owner {
	pid := os.Getpid()
	return owner{pid: pid, start: ctr.ProcStart(pid)}
}

// alive reports whether o still runs on this host.
func (o owner) alive() bool { return ctr.Alive(o.pid, o.start) }

// claimedPrefix starts the name of a pooled container once a run claims
// it: ccrun-run.PID.START.RANDOM names the claiming process, which the
// labels (set when the container was created) cannot.
const claimedPrefix = "ccrun-run."

func claimedName(o owner) string {
	return fmt.Sprintf("%s%d.%s.%s", claimedPrefix, o.pid, o.start, randHex(4))
}

// ownerOf is the process a container belongs to: its claimer when it is a
// claimed pool container, else the process that created it.
func ownerOf(names []string, labels map[string]string) owner {
	for _, n := range names {
		n = strings.TrimPrefix(n, "/")
		if rest, ok := strings.CutPrefix(n, claimedPrefix); ok {
			parts := strings.Split(rest, ".")
			if len(parts) == 3 {
				pid, _ := strconv.Atoi(parts[0])
				return owner{pid: pid, start: parts[1]}
			}
		}
	}
	pid, _ := strconv.Atoi(labels[LabelPID])
	return owner{pid: pid, start: labels[LabelStart]}
}

// idle reports whether c waits in the warm pool: pooled, its holder
// running, and not claimed.
func idle(c container.Summary) bool {
	return c.Labels[LabelPool] != "" && c.State == "running" && !claimed(c.Names)
}

func claimed(names []string) bool {
	for _, n := range names {
		if strings.HasPrefix(strings.TrimPrefix(n, "/"), claimedPrefix) {
			return true
		}
	}
	return false
}

// GC removes, and returns the ids of, the ccrun containers of this host
// whose owning process is gone: what a ccrun killed mid-run left behind.
// It leaves alone the containers of live processes, those created from
// another host (their owner cannot be checked from here), and the idle
// containers of the warm pool, which are left behind on purpose (DrainPool
// removes those).
//
// Among those are the relays of runs behind the egress proxy (RunBehind)
// of a ccrun that is gone; the directories they were bound, of this user's
// in the temporary directory, are removed too. It then removes, and
// returns the ids of, the networks ccrun made on this host whose owner is
// gone (an egress network of an older ccrun's RunBehind): once their
// containers are.
func (e *Executor) GC(ctx context.Context) ([]string, error) {
	removed, err := e.sweep(ctx, func(c container.Summary) bool {
		return !idle(c) && !ownerOf(c.Names, c.Labels).alive()
	})
	sweepRelayDirs()
	nets, nerr := e.sweepNetworks(ctx, true)
	return append(removed, nets...), errors.Join(err, nerr)
}

// sweepNetworks lists, and with remove removes, the egress networks of
// this host whose owning process is gone, and returns their ids.
func (e *Executor) sweepNetworks(ctx context.Context, remove bool) ([]string, error) {
	list, err := e.eng.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", LabelOwned+"=1"),
		filters.Arg("label", LabelHost+"="+e.hostname),
	)})
	if err != nil {
		return nil, classify(e.host, "list networks", err)
	}
	var ids []string
	var errs []error
	for _, n := range list {
		if ownerOf(nil, n.Labels).alive() {
			continue
		}
		if remove {
			if err := e.eng.NetworkRemove(ctx, n.ID); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, classify(e.host, "remove network "+n.Name, err))
				continue
			}
		}
		ids = append(ids, n.ID)
	}
	return ids, errors.Join(errs...)
}

// DrainPool removes, and returns the ids of, every warm-pool container of
// this host that no run claimed: the idle ones, and those a refill left
// half-made or whose holder stopped. It holds the pool lock and checks each
// container's name and claim marker again under it, so it never removes
// one that a run has just claimed. It first waits for this Executor's background work (a
// refill in flight would fill the pool again), as long as ctx allows.
func (e *Executor) DrainPool(ctx context.Context) ([]string, error) {
	done := make(chan struct{})
	go func() { e.bgWork.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("docker: drain pool: %w", ctx.Err())
	}
	lock, err := e.lockFile()
	if err != nil {
		return nil, fmt.Errorf("docker: pool lock: %w", err)
	}
	poolMu.Lock()
	defer poolMu.Unlock()
	if err := lock.Lock(); err != nil {
		return nil, fmt.Errorf("docker: pool lock: %w", err)
	}
	defer lock.Unlock()
	return e.sweep(ctx, func(c container.Summary) bool {
		if c.Labels[LabelPool] == "" || claimed(c.Names) {
			return false
		}
		ins, err := e.eng.ContainerInspect(ctx, c.ID)
		return err == nil && !claimed([]string{ins.Name}) && !e.inUse(c)
	})
}

// Garbage returns the ids of the containers and networks GC would
// remove and, with pool, of the warm-pool containers DrainPool would
// remove (those no run has claimed, as listed now): what ccrun gc
// --dry-run shows. It removes nothing and takes no lock.
func (e *Executor) Garbage(ctx context.Context, pool bool) ([]string, error) {
	list, err := e.owned(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range list {
		gone := !idle(c) && !ownerOf(c.Names, c.Labels).alive()
		drained := pool && c.Labels[LabelPool] != "" && !claimed(c.Names) && !e.inUse(c)
		if gone || drained {
			ids = append(ids, c.ID)
		}
	}
	nets, err := e.sweepNetworks(ctx, false)
	return append(ids, nets...), err
}

// owned lists the containers of ccrun created from this host.
func (e *Executor) owned(ctx context.Context) ([]container.Summary, error) {
	list, err := e.eng.ContainerList(ctx, container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", LabelOwned+"=1"),
			filters.Arg("label", LabelHost+"="+e.hostname),
		),
	})
	if err != nil {
		return nil, classify(e.host, "list containers", err)
	}
	return list, nil
}

func (e *Executor) sweep(ctx context.Context, remove func(container.Summary) bool) ([]string, error) {
	list, err := e.owned(ctx)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, c := range list {
		if !remove(c) {
			continue
		}
		err := e.eng.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			removed = append(removed, c.ID)
		case errdefs.IsNotFound(err), errdefs.IsConflict(err):
			// Gone already, or being removed by someone else.
		default:
			errs = append(errs, classify(e.host, "remove container "+c.ID, err))
		}
	}
	return removed, errors.Join(errs...)
}
