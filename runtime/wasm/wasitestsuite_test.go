package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ccrun/ccrun/runtime/job"
)

// TestWASITestsuite runs WebAssembly/wasi-testsuite (branch
// prod/testsuite-base, tests/*/testsuite/wasm32-wasip1) through the
// Executor, and through `wazero run` too when CCRUN_WAZERO names that
// binary, and logs both pass counts. It runs only when
// CCRUN_WASI_TESTSUITE is the suite's checkout; `make wasi-testsuite` sets
// it up. Each test gets a fresh copy of its root directory, mounted
// writable at /, as the suite's wazero adapter does.
func TestWASITestsuite(t *testing.T) {
	suite := os.Getenv("CCRUN_WASI_TESTSUITE")
	if suite == "" {
		t.Skip("CCRUN_WASI_TESTSUITE is not set")
	}
	peer := os.Getenv("CCRUN_WAZERO")
	wasms, err := filepath.Glob(filepath.Join(suite, "tests", "*", "testsuite", "wasm32-wasip1", "*.wasm"))
	if err != nil || len(wasms) == 0 {
		t.Fatalf("no tests under %s: %v", suite, err)
	}
	sort.Strings(wasms)
	var ours, theirs, total int
	var failed []string
	for _, w := range wasms {
		name := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(w)))) + "/" + strings.TrimSuffix(filepath.Base(w), ".wasm")
		t.Run(name, func(t *testing.T) {
			spec, err := readSuiteSpec(strings.TrimSuffix(w, ".wasm") + ".json")
			if err != nil {
				t.Fatalf("%s: %v", w, err)
			}
			total++
			msg := runSuiteOurs(t, w, spec)
			why, known := suiteKnown[name]
			switch {
			case msg == "":
				ours++
				if known {
					t.Logf("passes now: take it off suiteKnown (%s)", why)
				}
			case known:
				failed = append(failed, "ccrun  "+name+": "+firstLine(msg)+" [known: "+why+"]")
			default:
				failed = append(failed, "ccrun  "+name+": "+firstLine(msg))
				t.Errorf("ccrun fails it, and it is not in suiteKnown: %s", msg)
			}
			if peer != "" {
				if msg := runSuitePeer(t, peer, w, spec); msg == "" {
					theirs++
				} else {
					failed = append(failed, "wazero "+name+": "+firstLine(msg))
				}
			}
		})
	}
	t.Logf("wasi-testsuite wasm32-wasip1: ccrun %d/%d passed", ours, total)
	if peer != "" {
		t.Logf("wasi-testsuite wasm32-wasip1: wazero run %d/%d passed", theirs, total)
	}
	t.Logf("failures:\n%s", strings.Join(failed, "\n"))
}

// suiteKnown are the tests ccrun fails, each with its reason (docs/wasm.md
// lists them too). A test that fails and is not here fails
// TestWASITestsuite.
var suiteKnown = map[string]string{}

type suiteSpec struct {
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Root     string            `json:"root"`
	ExitCode int               `json:"exit_code"`
	Stdout   *string           `json:"stdout"`
	Stderr   *string           `json:"stderr"`
	dir      string
}

func readSuiteSpec(path string) (suiteSpec, error) {
	s := suiteSpec{dir: filepath.Dir(path)}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// root copies the spec's root directory to a fresh temporary one.
func (s suiteSpec) root(t *testing.T) string {
	if s.Root == "" {
		return ""
	}
	dst := filepath.Join(t.TempDir(), "root")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(s.dir, s.Root))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func (s suiteSpec) check(code int, stdout, stderr []byte) string {
	switch {
	case code != s.ExitCode:
		return "exit code " + fmtInt(code) + ", want " + fmtInt(s.ExitCode) + ": " + strings.TrimSpace(string(stderr))
	case s.Stdout != nil && string(stdout) != *s.Stdout:
		return "stdout " + string(stdout) + ", want " + *s.Stdout
	case s.Stderr != nil && string(stderr) != *s.Stderr:
		return "stderr " + string(stderr) + ", want " + *s.Stderr
	}
	return ""
}

func runSuiteOurs(t *testing.T, wasm string, s suiteSpec) string {
	var env []string
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	spec := Spec{Path: wasm, Args: s.Args, Env: env, Limits: job.Limits{Timeout: time.Minute}}
	if root := s.root(t); root != "" {
		spec.Mounts = []job.Mount{{Host: root, Guest: "/", Writable: true}}
	}
	res, err := shared.Run(context.Background(), spec)
	if err != nil {
		return err.Error()
	}
	if res.Reason != job.Exit {
		return string(res.Reason) + " " + res.Detail
	}
	return s.check(res.ExitCode, res.Stdout, res.Stderr)
}

func runSuitePeer(t *testing.T, peer, wasm string, s suiteSpec) string {
	args := []string{"run", "-cachedir", filepath.Join(sharedCache, "peer")}
	for k, v := range s.Env {
		args = append(args, "-env", k+"="+v)
	}
	if root := s.root(t); root != "" {
		args = append(args, "-mount", root+":/")
	}
	args = append(append(args, wasm), s.Args...)
	cmd := exec.Command(peer, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return err.Error()
		}
		code = ee.ExitCode()
	}
	return s.check(code, out.Bytes(), errb.Bytes())
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
