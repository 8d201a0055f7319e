package remote

import (
	"testing"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/wasm/internal/wasmtest"
)

// TestStoppedRunIsStopped: stopping a run cuts the guest's stdin, and a
// guest copying stdin may exit 0 on that EOF before the kill lands (CI saw
// it once: "exit 0" for a run stopped at its timeout). Whatever the guest
// did once the run was stopped, the run is reported as stopped: here
// through the worker, whose reply says exit 0 (runtime/wasm's test of the
// same name has the run in process).
func TestStoppedRunIsStopped(t *testing.T) {
	exited := workerReply{Result: &job.Result{Reason: job.Exit, ExitCode: 0}}
	wasmtest.StoppedIsStopped(t, "worker", func(job.Limits) (job.Status, error) { return workerStatus(exited, nil, nil) })
}
