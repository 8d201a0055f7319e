package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ccrun/ccrun/internal/housekeep"
	"github.com/rogpeppe/go-internal/testscript"
)

// testEngines are the whole ccrun's, package full's: engines_test.go (of
// package cli_test, which may import package full, itself an importer of
// this one) gives them from its init, before TestMain.
var testEngines *Engines

// SetTestEngines gives the tests the whole ccrun's engines.
func SetTestEngines(e *Engines) { testEngines = e }

// run is the whole ccrun's Main without os.Exit, for tests: it parses
// args, runs the command and returns the exit code.
func run(args []string, io stdio) int {
	return (&app{eng: testEngines, io: io, args: args}).execute()
}

// asCCRun, set to 1 in the environment, makes the test binary run as
// ccrun: for tests that need ccrun as a process of its own (a terminal's
// signals).
const asCCRun = "CCRUN_TEST_AS_CCRUN"

func TestMain(m *testing.M) {
	if testEngines == nil {
		panic("no engines: engines_test.go's init gives them")
	}
	if code, ok := housekeep.Serve(os.Args[1:]); ok {
		os.Exit(code)
	}
	if os.Getenv(asCCRun) == "1" {
		os.Exit(run(os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
	}
	if os.Getenv("XDG_STATE_HOME") == "" { // keep trust records of test projects out of the real home
		if dir, err := os.MkdirTemp("", "ccrun-test-state-"); err == nil {
			os.Setenv("XDG_STATE_HOME", dir)
		}
	}
	testscript.Main(m, map[string]func(){
		"ccrun": func() { os.Exit(run(os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr})) },
	})
}

// TestScripts runs the transcripts in testdata/script: each `exec ccrun` is
// a process of its own, as when an agent calls ccrun again and again.
// Exit codes are checked through `sh -c '…; echo exit=$?'`.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("CCRUN_SESSION_DIR", filepath.Join(env.WorkDir, ".sessions"))
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state")) // trust records
			return nil
		},
		RequireExplicitExec: true,
	})
}
