package shell

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestListProcs: the walk down through the children files (when the kernel
// has them) finds the same descendants as a scan of all of /proc. Not
// parallel: other tests' processes would come and go between the two.
func TestListProcs(t *testing.T) {
	if !hasChildrenFiles() {
		t.Skip("kernel without /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN): only the scan is used")
	}
	cmd := exec.Command("sh", "-c", "sleep 1000 & sleep 1000 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(100 * time.Millisecond) // let the grandchildren start; not an assertion
	self := os.Getpid()
	descendants := func(procs map[int]proc) []int {
		var out []int
		for _, p := range attribute(procs, self, []int{cmd.Process.Pid}, nil, "") {
			out = append(out, p.pid)
		}
		slices.Sort(out)
		return out
	}
	walked, scanned := descendants(listProcs(self)), descendants(scan())
	if !slices.Equal(walked, scanned) || len(walked) != 3 {
		t.Errorf("walk found %v, scan %v; want the same 3", walked, scanned)
	}
	for _, pid := range walked {
		_ = killGroup(pid)
	}
}

func init() {
	if os.Getenv("CCRUN_SHELL_TEST_SCAN_ONLY") == "1" {
		scanOnly = true
	}
}

// TestScanOnly runs the process tree tests again in a child test process
// that finds processes by scanning all of /proc, the way kernels without
// children files do.
func TestScanOnly(t *testing.T) {
	if os.Getenv("CCRUN_SHELL_TEST_SCAN_ONLY") == "1" {
		t.Skip("already scanning only")
	}
	if !hasChildrenFiles() {
		t.Skip("this kernel scans anyway")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run", "^(TestTimeoutKillsTree|TestCancelKillsTree|TestLeftoversKilledAtExit|TestDaemonKilled|TestNothingOutlivesRun)$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CCRUN_SHELL_TEST_SCAN_ONLY=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with a scan of /proc only: %v\n%s", err, out)
	}
}
