package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ImageCommand is what a call that names no program runs in image, as
// `docker run IMAGE` runs it: the Entrypoint of the image's configuration
// followed by its Cmd. It returns the digest-pinned reference the command
// belongs to (image itself when pinned already; a tag is resolved first,
// by Resolve with policy, so that the command and the image the node runs
// are one image's) and the command.
//
// The configuration is read from the image's registry (a manifest and the
// configuration blob, by digest: content the digest names, verified as it
// arrives; of an index, the manifest of the pods' architecture), with the
// credentials Resolve uses, and kept per digest for the Executor's life.
// So this sends the reference off this machine: call it only for a call
// that was allowed (Run does, as it runs). The nodes report their images
// without their configuration, so:
//
//   - under PullNever no registry is asked, and a call with no program is
//     ErrInvalidArgument saying to name the program, or to allow the
//     registry (pull policy missing);
//   - an image the registry does not have (one loaded into the nodes
//     only), or a registry that refuses or does not answer, is an error
//     of Resolve's classes, saying that the program must be named in the
//     call;
//   - an image whose configuration has neither Entrypoint nor Cmd is
//     ErrInvalidArgument.
func (e *Executor) ImageCommand(ctx context.Context, image string, policy PullPolicy) (pinned string, cmd []string, err error) {
	if !policy.Known() {
		return "", nil, newError(ErrInvalidArgument, nil, "kube: pull policy %q: want never, missing or always", policy)
	}
	if policy.OrDefault() == PullNever {
		return "", nil, newError(ErrInvalidArgument, nil,
			"kube: image %s: the call names no program, and its entrypoint and command are in the image's configuration, which the nodes do not report and, under pull policy never, ccrun does not read from the registry %s: name the program in the call (the image's ENTRYPOINT and CMD, as docker image inspect %s shows them), or use pull policy missing",
			image, Registry(image), image)
	}
	pinned = image
	if !strings.Contains(image, "@sha256:") {
		if pinned, err = e.Resolve(ctx, image, policy); err != nil {
			return "", nil, err
		}
	}
	if cmd, ok := e.cmds.get(pinned); ok {
		return pinned, cmd, nil
	}
	cfg, err := e.imageConfig(ctx, pinned)
	if err != nil {
		return "", nil, err
	}
	cmd = append(append([]string(nil), cfg.Entrypoint...), cfg.Cmd...)
	if len(cmd) == 0 {
		return "", nil, newError(ErrInvalidArgument, nil, "kube: image %s: the call names no program, and the image's configuration names none either (no Entrypoint, no Cmd): name the program in the call", image)
	}
	e.cmds.put(pinned, cmd)
	return pinned, cmd, nil
}

// imageConfig reads the configuration of the pinned image from its
// registry, for the pods' architecture.
func (e *Executor) imageConfig(ctx context.Context, pinned string) (v1.Config, error) {
	r, err := name.ParseReference(pinned, name.StrictValidation)
	if err != nil {
		return v1.Config{}, newError(ErrInvalidArgument, err, "kube: image %s is not a reference a registry can be asked for", pinned)
	}
	if err := e.ensure(ctx); err != nil {
		return v1.Config{}, err // the architecture: of an index, the nodes' image
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	opts, err := e.registryOptions(rctx)
	if err != nil {
		return v1.Config{}, err
	}
	opts = append(opts, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: e.podArch()}))
	var cf *v1.ConfigFile
	img, err := remote.Image(r, opts...)
	if err == nil {
		cf, err = img.ConfigFile()
	}
	if err != nil {
		classified := registryError(pinned, Registry(pinned), e.pullSecrets, err)
		if errors.Is(classified, context.Canceled) {
			return v1.Config{}, classified
		}
		return v1.Config{}, &ctr.Error{Class: classOf(classified), Cause: classified,
			Msg:  fmt.Sprintf("kube: the call names no program, and the entrypoint and command of %s could not be read from its registry", pinned),
			Hint: "name the program in the call (an image known only from the cluster's nodes, loaded there, has no configuration in a registry for ccrun to read)"}
	}
	return cf.Config, nil
}

// classOf is the class of a classified error (registryError's).
func classOf(err error) error {
	for _, class := range []error{ErrNotFound, ctr.ErrRefused, ErrInvalidArgument} {
		if errors.Is(err, class) {
			return class
		}
	}
	return ErrUnavailable
}

// cmdCache is ImageCommand's: digest-pinned reference -> command. A digest
// names one configuration for good; the cache is bounded all the same.
type cmdCache struct {
	mu sync.Mutex
	m  map[string][]string
}

const cmdCacheMax = 256

func (c *cmdCache) get(pinned string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cmd, ok := c.m[pinned]
	return append([]string(nil), cmd...), ok
}

func (c *cmdCache) put(pinned string, cmd []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= cmdCacheMax {
		c.m = map[string][]string{}
	}
	c.m[pinned] = append([]string(nil), cmd...)
}
