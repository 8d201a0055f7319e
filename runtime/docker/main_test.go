package docker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ccrun/ccrun/internal/testimage"
)

// testImage is built by TestMain from testdata/docker when it is missing.
const testImage = testimage.Name

// skipReason is why the tests that need an engine skip; "" when one answers.
var skipReason string

// refillEnv makes the test binary a detached refiller (TestPoolDetached).
const refillEnv = "CCRUN_DOCKER_TEST_REFILL"

func TestMain(m *testing.M) {
	if os.Getenv(refillEnv) != "" {
		os.Exit(RefillMain())
	}
	if os.Getenv(childEnv) != "" || os.Getenv(permChildEnv) != "" || os.Getenv(userChildEnv) != "" {
		os.Exit(m.Run()) // a child of TestGCAfterKill, TestSocketPermission or TestCallerWrites: no setup
	}
	// ccrun's state (the mount locks, the engine record) of these tests
	// stays out of the real home; children inherit it.
	state, err := os.MkdirTemp("", "ccrun-docker-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := runTests(m)
	os.RemoveAll(state)
	os.Exit(code)
}

func runTests(m *testing.M) int {
	if err := setup(); err != nil {
		if os.Getenv("CCRUN_REQUIRE_DOCKER") == "1" {
			fmt.Fprintln(os.Stderr, "CCRUN_REQUIRE_DOCKER=1:", err)
			os.Exit(1)
		}
		skipReason = err.Error()
	}
	return m.Run()
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return testimage.Ensure(ctx)
}

// executor gives an Executor on the engine of the environment, or skips.
func executor(t testing.TB, opts ...Option) *Executor {
	t.Helper()
	if skipReason != "" {
		t.Skip("no docker engine (set CCRUN_REQUIRE_DOCKER=1 to fail instead): " + skipReason)
	}
	e, err := New(context.Background(), append([]Option{WithPoolDir(t.TempDir())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
