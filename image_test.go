package ccrun_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/testimage"
	"github.com/ccrun/ccrun/permission"
)

// TestDockerGrantBoundToImage: a project grant for an image reference
// holds for the image it named when approved. The same tag moved to
// another image is asked about again (refused, with nobody to ask); moved
// back, the grant applies again. And what runs is the image approved even
// when the tag moves while the person is being asked.
func TestDockerGrantBoundToImage(t *testing.T) {
	dockerOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	tag := "ccrun-test:moved-" + hex.EncodeToString(suffix)
	idA, err := testimage.Variant(ctx, tag+"-a", "ENV CCRUN_VARIANT=a")
	if err != nil {
		t.Fatal(err)
	}
	idB, err := testimage.Variant(ctx, tag+"-b", "ENV CCRUN_VARIANT=b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testimage.Remove(context.Background(), tag, tag+"-a", tag+"-b") })
	point := func(id string) {
		t.Helper()
		if err := testimage.Tag(ctx, id, tag); err != nil {
			t.Fatal(err)
		}
	}
	point(idA)

	var asked atomic.Int32
	var answer atomic.Value
	answer.Store(ceiling.AlwaysThisProject)
	approver := permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
		asked.Add(1)
		return answer.Load().(ceiling.Grant), nil
	})
	dir := t.TempDir()
	rt, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(dir), ccrun.WithApprover(approver), ccrun.WithAuditLog(""))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	variant := func() (string, error) {
		t.Helper()
		out, err := rt.Exec(ctx, &ccrun.Call{Image: tag, Args: []string{"/bin/busybox", "sh", "-c", "echo $CCRUN_VARIANT"}})
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(out.Result.Stdout)), nil
	}

	if v, err := variant(); err != nil || v != "a" || asked.Load() != 1 {
		t.Fatalf("first run: %q %v, asked %d times", v, err, asked.Load())
	}
	if v, err := variant(); err != nil || v != "a" || asked.Load() != 1 {
		t.Fatalf("with the grant: %q %v, asked %d times (want no new ask)", v, err, asked.Load())
	}

	point(idB)
	answer.Store(ceiling.Deny)
	if v, err := variant(); !errors.Is(err, ccrun.ErrPermissionDenied) || asked.Load() != 2 {
		t.Fatalf("tag moved to another image: %q %v, asked %d times; want asked again and denied", v, err, asked.Load())
	}
	out, err := rt.Check(context.Background(), &ccrun.Call{Image: tag})
	if err != nil || out.Decision.Verdict != permission.AskUser {
		t.Fatalf("Check with the tag moved: %v %+v", err, out.Decision)
	}

	point(idA)
	if v, err := variant(); err != nil || v != "a" || asked.Load() != 2 {
		t.Fatalf("tag moved back: %q %v, asked %d times (want no new ask)", v, err, asked.Load())
	}
	if out, err := rt.Check(context.Background(), &ccrun.Call{Image: tag}); err != nil || out.Decision.Verdict != permission.Allow {
		t.Fatalf("Check with the tag back: %v %+v", err, out.Decision)
	}

	// In a project with no grant, the tag moves to B while the person is
	// asked about A: A, the image approved, is what runs.
	moved := false
	racer, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""),
		ccrun.WithApprover(permission.ApproverFunc(func(_ context.Context, p *permission.Prompt) (ceiling.Grant, error) {
			point(idB)
			moved = true
			return ceiling.Once, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer racer.Close()
	out, err = racer.Exec(ctx, &ccrun.Call{Image: tag, Args: []string{"/bin/busybox", "sh", "-c", "echo $CCRUN_VARIANT"}})
	if err != nil || !moved || strings.TrimSpace(string(out.Result.Stdout)) != "a" {
		t.Fatalf("tag moved during the approval: %v, moved %v, ran %q; want variant a", err, moved, out.Result.Stdout)
	}
}

// A @docker call the gate refuses whatever its digest never reaches the
// engine (here, none answers: the refusal is immediate and says nothing of
// it); one it would ask about fails on the unreachable engine before anyone
// is asked.
func TestDockerRefusedWithoutEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/none.sock")
	deny, err := permission.FlagSettings("", nil, nil, []string{"run_docker:*"})
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	approver := permission.ApproverFunc(func(context.Context, *permission.Prompt) (ceiling.Grant, error) {
		asked = true
		return ceiling.Once, nil
	})
	rt, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""), ccrun.WithApprover(approver), ccrun.WithSettings(deny))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	out, err := rt.Check(context.Background(), &ccrun.Call{Image: "anything:1"})
	if err != nil || out.Decision.Verdict != permission.Refuse || len(out.Decision.Diagnostics) != 0 {
		t.Errorf("Check with a deny rule: %v %+v", err, out.Decision)
	}
	if _, err := rt.Exec(context.Background(), &ccrun.Call{Image: "anything:1"}); !errors.Is(err, ccrun.ErrPermissionDenied) {
		t.Errorf("Exec with a deny rule: %v, want denied", err)
	}

	open, err := ccrun.New(engines.Docker(), ccrun.WithProjectDir(t.TempDir()), ccrun.WithAuditLog(""), ccrun.WithApprover(approver))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if _, err := open.Exec(context.Background(), &ccrun.Call{Image: "anything:1"}); err == nil || asked {
		t.Errorf("Exec with no engine: %v, asked %v; want an error before anyone is asked", err, asked)
	}
	out, err = open.Check(context.Background(), &ccrun.Call{Image: "anything:1"})
	if err != nil || out.Decision.Verdict == permission.Allow || len(out.Decision.Diagnostics) == 0 {
		t.Errorf("Check with no engine: %v %+v; want no allow, and why", err, out.Decision)
	}
}
