package ccrun_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/audit"
	"github.com/ccrun/ccrun/internal/confine"
	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/ccrun/ccrun/internal/housekeep"
	"github.com/ccrun/ccrun/internal/prompt"
	"github.com/ccrun/ccrun/internal/trust"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/allowlist"
	"github.com/ccrun/ccrun/permission/keys"
	"github.com/ccrun/ccrun/runtime/docker"
	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/kube"
	"github.com/ccrun/ccrun/runtime/shell"
	"github.com/ccrun/ccrun/runtime/wasm"
	"github.com/ccrun/ccrun/shellcmd"
)

// TestErrorClasses checks that every named error of the packages is of
// exactly one class, the one its doc says, so that a caller (and the CLI's
// exit codes) can go by the class.
func TestErrorClasses(t *testing.T) {
	t.Parallel()
	classes := map[string]error{
		"invalid argument":  ccrun.ErrInvalidArgument,
		"not found":         ccrun.ErrNotFound,
		"invalid config":    ccrun.ErrInvalidConfig,
		"permission denied": ccrun.ErrPermissionDenied,
		"unavailable":       ccrun.ErrUnavailable,
		"timeout":           ccrun.ErrTimeout,
	}
	for _, tc := range []struct {
		name  string
		err   error
		class string
	}{
		{"ccrun.ErrInvalidCall", ccrun.ErrInvalidCall, "invalid argument"},
		{"ccrun.ErrUnknownKey", ccrun.ErrUnknownKey, "invalid argument"},
		{"ceiling.ErrUnknownEnvironment", ceiling.ErrUnknownEnvironment, "invalid argument"},
		{"ceiling.ErrUnknownGrant", ceiling.ErrUnknownGrant, "invalid argument"},
		{"ceiling.ErrViolation", ceiling.ErrViolation, "permission denied"},
		{"a ceiling.Violation", ceiling.Check(ceiling.Shell, "run_command:git", ceiling.AlwaysThisProject), "permission denied"},
		{"ErrInvalidKey", keys.ErrInvalidKey, "invalid argument"},
		{"ErrInvalidEntry", allowlist.ErrInvalidEntry, "invalid argument"},
		{"ErrSessionNotFound", allowlist.ErrSessionNotFound, "not found"},
		{"ErrUnsafeStorage", allowlist.ErrUnsafeStorage, "permission denied"},
		{"ErrNotTrusted", allowlist.ErrNotTrusted, "permission denied"},
		{"permission.ErrDepthExceeded", permission.ErrDepthExceeded, "permission denied"},
		{"ErrUnparsable", shellcmd.ErrUnparsable, "invalid argument"},
		{"capabilities.ErrInvalidManifest", capabilities.ErrInvalidManifest, "invalid config"},
		{"a capabilities.ManifestError", &capabilities.ManifestError{Errors: []*capabilities.FieldError{{Message: "x"}}}, "invalid config"},
		{"capabilities.ErrNotFound", capabilities.ErrNotFound, "not found"},
		{"capabilities.ErrInvalidInput", capabilities.ErrInvalidInput, "invalid argument"},
		{"a capabilities.InputError", &capabilities.InputError{Errors: []*capabilities.FieldError{{Message: "x"}}}, "invalid argument"},
		{"capabilities.ErrChanged", capabilities.ErrChanged, "permission denied"},
		{"capabilities.ErrInvalidArgument", capabilities.ErrInvalidArgument, "invalid argument"},
		{"capabilities.ErrInvalidSize", capabilities.ErrInvalidSize, "invalid argument"},
		{"job.ErrInvalidMount", job.ErrInvalidMount, "invalid argument"},
		{"shell.ErrInvalidSpec", shell.ErrInvalidSpec, "invalid argument"},
		{"shell.ErrInvalidOption", shell.ErrInvalidOption, "invalid argument"},
		{"shell.ErrConfineUnavailable", shell.ErrConfineUnavailable, "unavailable"},
		{"confine.ErrInvalidPolicy", confine.ErrInvalidPolicy, "invalid argument"},
		{"wasm.ErrNotWasm", wasm.ErrNotWasm, "invalid argument"},
		{"wasm.ErrTruncated", wasm.ErrTruncated, "invalid argument"},
		{"wasm.ErrInvalidModule", wasm.ErrInvalidModule, "invalid argument"},
		{"wasm.ErrMissingStart", wasm.ErrMissingStart, "invalid argument"},
		{"wasm.ErrInvalidSpec", wasm.ErrInvalidSpec, "invalid argument"},
		{"wasm.ErrClosed", wasm.ErrClosed, "unavailable"},
		{"wasm.ErrServerGone", wasm.ErrServerGone, "unavailable"},
		{"wasm.ErrUnsafeSocket", wasm.ErrUnsafeSocket, "permission denied"},
		{"docker.ErrUnavailable", docker.ErrUnavailable, "unavailable"},
		{"ctr.ErrRefused (an engine refuses us)", ctr.ErrRefused, "unavailable"},
		{"docker.ErrNotFound", docker.ErrNotFound, "not found"},
		{"docker.ErrInvalidArgument", docker.ErrInvalidArgument, "invalid argument"},
		{"kube.ErrUnavailable", kube.ErrUnavailable, "unavailable"},
		{"kube.ErrNotFound", kube.ErrNotFound, "not found"},
		{"audit.ErrUnsafe", audit.ErrUnsafe, "permission denied"},
		{"trust.ErrUnsafe", trust.ErrUnsafe, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for name, class := range classes {
				if got, want := errors.Is(tc.err, class), name == tc.class; got != want {
					t.Errorf("errors.Is(%v, %s) = %v, want %v", tc.err, name, got, want)
				}
			}
		})
	}
	// Names within a class stay apart: the two ErrInvalidSpec are two.
	if errors.Is(wasm.ErrInvalidSpec, shell.ErrInvalidSpec) || errors.Is(capabilities.ErrNotFound, allowlist.ErrSessionNotFound) {
		t.Error("two named errors of one class match each other")
	}
	// Ctrl-C at the prompt is of no class above: it is the caller's cancel.
	interrupted := fmt.Errorf("asked: %w", prompt.ErrInterrupted) // as a caller meets it
	if !errors.Is(interrupted, context.Canceled) {
		t.Error("prompt.ErrInterrupted is not a context.Canceled")
	}
	for name, class := range classes {
		if errors.Is(interrupted, class) {
			t.Errorf("prompt.ErrInterrupted is of class %s", name)
		}
	}
	if !errdefs.IsInvalidArgument(ccrun.ErrInvalidCall) || !errdefs.IsUnavailable(wasm.ErrClosed) {
		t.Error("errdefs.IsXXX disagrees with errors.Is")
	}
}

// TestNoEngineIsUnavailable runs a @docker call with DOCKER_HOST at a unix
// socket nobody listens on: the error is of class ErrUnavailable, as its
// doc says, from Exec and from CollectContainers.
func TestNoEngineIsUnavailable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	rt, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""),
		ccrun.WithApprover(permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
			return ceiling.Once, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, err = rt.Exec(context.Background(), &ccrun.Call{Image: "busybox", Args: []string{"true"}})
	if !errors.Is(err, ccrun.ErrUnavailable) {
		t.Errorf("Exec with no engine: %v, want ErrUnavailable", err)
	}
	if _, err := housekeep.CollectContainers(context.Background(), false); !errors.Is(err, ccrun.ErrUnavailable) {
		t.Errorf("CollectContainers with no engine: %v, want ErrUnavailable", err)
	}
}

// refuser is a backend whose Prepare refuses every call with the error
// err holds.
type refuser struct{ err *atomic.Value }

func (r refuser) Prepare(context.Context, *ccrun.Invocation) (*ccrun.Prepared, error) {
	return nil, r.err.Load().(error)
}
func (refuser) Run(context.Context, *ccrun.Invocation) (*job.Result, error) { return nil, nil }

// TestBackendRefusalIsInvalidCall: ErrInvalidCall has one definition, the
// root's. A backend's refusal to prepare a call of class
// ErrInvalidArgument (what the built-in backends say, which cannot import
// the root) is an ErrInvalidCall with its message unchanged; one of
// another class keeps its class alone.
func TestBackendRefusalIsInvalidCall(t *testing.T) {
	t.Parallel()
	const env = "@refusebox"
	var refuse atomic.Value
	rt, err := ccrun.New(ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""), ccrun.WithTrustDir(""),
		ccrun.WithBackend(env, ceiling.AlwaysThisSession, func(context.Context) (ccrun.Backend, error) {
			return refuser{&refuse}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	refuse.Store(fmt.Errorf("call: no such box: %w", errdefs.ErrInvalidArgument))
	_, err = rt.Check(context.Background(), &ccrun.Call{Environment: env, Target: "x"})
	if !errors.Is(err, ccrun.ErrInvalidCall) || !errors.Is(err, ccrun.ErrInvalidArgument) || err.Error() != "call: no such box: invalid argument" {
		t.Errorf("an invalid-argument refusal: %v; want ErrInvalidCall, its message unchanged", err)
	}
	refuse.Store(fmt.Errorf("call: box gone: %w", errdefs.ErrNotFound))
	if _, err = rt.Check(context.Background(), &ccrun.Call{Environment: env, Target: "x"}); errors.Is(err, ccrun.ErrInvalidCall) || !errors.Is(err, ccrun.ErrNotFound) {
		t.Errorf("a not-found refusal: %v; want ErrNotFound alone", err)
	}
	// The built-in @shell backend's refusal (mounts on the host).
	_, err = rt.Check(context.Background(), &ccrun.Call{Command: "true", Mounts: []job.Mount{{Host: "/", Guest: "/x"}}})
	if !errors.Is(err, ccrun.ErrInvalidCall) {
		t.Errorf("@shell with a mount: %v; want ErrInvalidCall", err)
	}
}
