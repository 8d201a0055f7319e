package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/gofrs/flock"
)

// poolMu serialises claims inside this process; the lock file serialises
// them between processes (flock(2) also excludes two descriptors of one
// process, the mutex only saves the system calls).
var poolMu sync.Mutex

func isNotFound(err error) bool { return errdefs.IsNotFound(err) }

// poolKey is what a pooled container must match to serve s: the whole
// container configuration (command, environment, mounts, limits, user,
// network...) and the id the image reference names now, so that a rebuilt
// image is never served from an old container. ErrNotFound: the image is
// not local.
func (e *Executor) poolKey(ctx context.Context, s Spec, cfg *container.Config, hc *container.HostConfig) (string, error) {
	img, err := e.eng.ImageInspect(ctx, s.Image)
	if err != nil {
		return "", classify(e.host, "inspect image "+s.Image, err)
	}
	c := *cfg
	c.Labels = nil // the owner differs from run to run
	b, err := json.Marshal(struct {
		Image  string
		Config container.Config
		Host   *container.HostConfig
	}{img.ID, c, hc})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

func (e *Executor) lockFile() (*flock.Flock, error) {
	if err := os.MkdirAll(e.poolDir, 0o700); err != nil {
		return nil, err
	}
	return flock.New(filepath.Join(e.poolDir, "docker-pool.lock")), nil
}

// claim takes an idle pooled container made for key, if there is one. The
// claim takes an idle pooled container made for key, if there is one: one
// that still has its idle name (an idle container is never started). Under
// the pool lock it renames the container, by that idle name, to name its
// claimer (for GC); a claimer that comes later finds the idle name gone, so
// the lock is held for one rename, not for the start.
func (e *Executor) claim(ctx context.Context, key string) (id string, ok bool) {
	list, err := e.eng.ContainerList(ctx, container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", LabelPool+"="+key),
			filters.Arg("label", LabelHost+"="+e.hostname),
			filters.Arg("status", "created"),
		),
	})
	if err != nil || len(list) == 0 {
		return "", false
	}
	lock, err := e.lockFile()
	if err != nil {
		return "", false
	}
	poolMu.Lock()
	defer poolMu.Unlock()
	if err := lock.Lock(); err != nil {
		return "", false
	}
	defer lock.Unlock()
	for _, c := range list {
		if !idle(c) || len(c.Names) == 0 {
			continue
		}
		// Renamed by its idle name, not its id: if another claimer took it
		// since the list, that name is gone and the rename fails.
		if err := e.eng.ContainerRename(ctx, strings.TrimPrefix(c.Names[0], "/"), claimedName(e.owner)); err != nil {
			continue
		}
		return c.ID, true
	}
	return "", false
}

// refill creates, in the background, an idle container for key (made for
// s) unless one already waits. Close waits for it.
func (e *Executor) refill(key string, s Spec, lim job.Limits) {
	labels := e.labels()
	labels[LabelPool] = key
	// A configuration of its own: the client normalises what it is given,
	// and the run's own create may be using the run's copy right now.
	cfg, hc := s.config(lim, labels)
	e.refillMu.Lock()
	if e.refilling == nil {
		e.refilling = make(map[string]bool)
	}
	if e.refilling[key] {
		e.refillMu.Unlock()
		return // one refill per key at a time in this process
	}
	e.refilling[key] = true
	e.refillMu.Unlock()
	e.refills.Add(1)
	go func() {
		defer e.refills.Done()
		defer func() {
			e.refillMu.Lock()
			delete(e.refilling, key)
			e.refillMu.Unlock()
		}()
		list, err := e.eng.ContainerList(e.bg, container.ListOptions{
			All: true,
			Filters: filters.NewArgs(
				filters.Arg("label", LabelPool+"="+key),
				filters.Arg("label", LabelHost+"="+e.hostname),
				filters.Arg("status", "created"),
			),
		})
		if err != nil {
			return
		}
		for _, s := range list {
			if idle(s) {
				return // one waits already
			}
		}
		_, err = e.create(e.bg, cfg, hc, "ccrun-pool-"+randHex(6))
		if err != nil && !errors.Is(err, context.Canceled) {
			return // a pool that cannot be refilled is only a cold next run
		}
	}()
}
