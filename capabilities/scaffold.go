package capabilities

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/dotccrun"
)

// ScaffoldImage is the image a @docker scaffold names: the test image the
// Makefile builds FROM scratch with busybox-static (make testimage).
const ScaffoldImage = "ccrun-test:busybox"

// Scaffold writes a new capability called name into
// projectDir/.ccrun/capabilities/<name>/ and returns its directory. What it
// writes loads and runs as written:
//
//   - @shell: capability.json and run.sh (executable), which prints the
//     call's input (given on stdin) back;
//   - @wasm: capability.json, hello.wasm (a minimal WASI module, assembled
//     here, that prints "hello") and README.md on building a real module;
//   - @docker: capability.json running /bin/busybox echo hello in the
//     image ScaffoldImage.
//
// When projectDir/.ccrun/ has no .gitignore, it writes one
// (internal/dotccrun's): ccrun's own files there (the audit log and its
// rotation) stay out of the repository, the capabilities go in.
//
// It refuses to touch an existing directory (class fs.ErrExist), and an
// invalid name, an environment that is not a name, and one a Go program
// adds, whose entry only its backend can say (ScaffoldTarget), with class
// ErrInvalidArgument. On failure it removes what it wrote.
func Scaffold(projectDir, name string, env ceiling.Environment) (dir string, err error) {
	if err := checkScaffold(name, env); err != nil {
		return "", err
	}
	if !env.Builtin() {
		// what runs there is its backend's to say: no entry ccrun writes
		// would load and run as written
		return "", fmt.Errorf("capability %s: environment %s: one a Go program adds, whose backend reads the entry's target; its backend writes the scaffold (ScaffoldTarget), or write capability.json by hand (entry: target, args): %w",
			name, env, ErrInvalidArgument)
	}
	m := newManifest(name, env)
	files := map[string]scaffoldFile{}
	switch env {
	case ceiling.Shell:
		m.Description = "Prints the call's input back (scaffold: edit run.sh)"
		m.Entry.Command = "run.sh"
		files["run.sh"] = scaffoldFile{[]byte(shellScript), 0o755}
	case ceiling.Wasm:
		m.Description = "Prints hello (scaffold: replace hello.wasm with your module)"
		m.Entry.Module = "hello.wasm"
		files["hello.wasm"] = scaffoldFile{HelloWasm(), 0o644}
		files["README.md"] = scaffoldFile{[]byte(wasmReadme(name)), 0o644}
	case ceiling.Docker:
		m.Description = "Prints hello in a container (scaffold: set your image and command)"
		m.Entry.Image = ScaffoldImage
		m.Entry.Argv = []string{"/bin/busybox", "echo", "hello"}
	}
	return writeScaffold(projectDir, m, files, "a bug in ccrun")
}

// Template is what the backend of an environment a Go program adds says a
// new capability of it is (ScaffoldTarget): the manifest's description, the
// entry's target and args, and the files beside capability.json, by their
// paths relative to the capability's directory (written 0644).
type Template struct {
	Description string
	Target      string
	Args        []string
	Files       map[string][]byte
}

// ScaffoldTarget writes a new capability called name of env, an
// environment a Go program adds, from what its backend says (t), as
// Scaffold writes one of a built-in environment: a capability.json with
// t's entry and a 30 s timeout, and t's files, checked by Load before it
// returns. It refuses what Scaffold refuses, a built-in environment, a
// file path that is not local to the capability's directory or is
// capability.json, and a scaffold that does not load (class
// ErrInvalidArgument, or the *ManifestError), and removes what it wrote.
func ScaffoldTarget(projectDir, name string, env ceiling.Environment, t Template) (string, error) {
	if err := checkScaffold(name, env); err != nil {
		return "", err
	}
	if env.Builtin() {
		return "", fmt.Errorf("capability %s: environment %s: built in; Scaffold writes its scaffold: %w", name, env, ErrInvalidArgument)
	}
	m := newManifest(name, env)
	m.Description, m.Entry.Target, m.Entry.Args = t.Description, t.Target, t.Args
	files := map[string]scaffoldFile{}
	for f, data := range t.Files {
		if !filepath.IsLocal(f) || filepath.Clean(f) == ManifestFile {
			return "", fmt.Errorf("capability %s: scaffold file %s: want a path inside the capability's directory, not %s: %w", name, show(f), ManifestFile, ErrInvalidArgument)
		}
		files[filepath.Clean(f)] = scaffoldFile{data, 0o644}
	}
	return writeScaffold(projectDir, m, files, "the "+string(env)+" backend's scaffold")
}

// checkScaffold refuses a name or an environment no scaffold can have.
func checkScaffold(name string, env ceiling.Environment) error {
	if !ValidName(name) {
		return fmt.Errorf("capability %s: want 1 to 63 lowercase letters, digits and dashes, not starting with a dash: %w", show(name), ErrInvalidArgument)
	}
	if !env.Valid() {
		return fmt.Errorf("capability %s: %s: %w", name, unknownEnvironment(string(env)), errors.Join(ErrInvalidArgument, ceiling.ErrUnknownEnvironment))
	}
	return nil
}

// newManifest is a scaffold's manifest before its entry: an object's
// parameters, a 30 s timeout.
func newManifest(name string, env ceiling.Environment) Manifest {
	m := Manifest{Name: name, Environment: env, Parameters: json.RawMessage(`{"type": "object"}`)}
	m.Limits.Timeout = Duration(30e9)
	return m
}

type scaffoldFile struct {
	data []byte
	mode fs.FileMode
}

// writeScaffold writes the capability m with files into a new directory
// of projectDir's capabilities, Loads it (a failure is whose's, for the
// message), and writes .ccrun/.gitignore when there is none. On failure it
// removes the capability's directory.
func writeScaffold(projectDir string, m Manifest, files map[string]scaffoldFile, whose string) (dir string, err error) {
	name := m.Name
	base := filepath.Join(projectDir, filepath.FromSlash(Dir))
	if err := dotccrun.Mkdir(filepath.Dir(base), 0o755); err != nil {
		return "", fmt.Errorf("capability %s: %w", name, err)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("capability %s: %w", name, err)
	}
	dir = filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("capability %s: %s already exists; not overwriting it: %w", name, dir, fs.ErrExist)
		}
		return "", fmt.Errorf("capability %s: %w", name, err)
	}
	made := dir
	defer func() {
		if err != nil {
			os.RemoveAll(made) // dir is "" by now: the return set it
		}
	}()
	manifest, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("capability %s: %w", name, err)
	}
	files[ManifestFile] = scaffoldFile{append(manifest, '\n'), 0o644}
	for f, c := range files {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("capability %s: %w", name, err)
		}
		if err := writeNew(path, c.data, c.mode); err != nil {
			return "", fmt.Errorf("capability %s: %w", name, err)
		}
	}
	if _, err := Load(dir); err != nil {
		return "", fmt.Errorf("capability %s: the scaffold does not load (%s): %w", name, whose, err)
	}
	ignore := filepath.Join(filepath.Dir(base), ".gitignore")
	if err := writeNew(ignore, []byte(dotccrun.Gitignore), 0o644); err != nil && !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ELOOP) {
		return "", fmt.Errorf("capability %s: %w", name, err)
	}
	return dir, nil
}

// writeNew creates path, failing if it exists (a symbolic link included),
// with mode (umask aside).
func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

const shellScript = `#!/bin/sh
# A ccrun @shell capability. It runs on the host with your rights, from the
# project root, with this directory first on PATH (so the entry command
# is just run.sh); CCRUN_CAPABILITY_DIR is this directory. The call's input
# (JSON, checked against "parameters") arrives on stdin.
set -eu
cat
echo
`

func wasmReadme(name string) string {
	return "# " + name + "\n\n" +
		"A ccrun @wasm capability. `hello.wasm` is a minimal WASI module that prints\n" +
		"`hello`; replace it with your own module and update `entry.module`.\n\n" +
		"Build a module from Go:\n\n" +
		"    GOOS=wasip1 GOARCH=wasm go build -o " + name + ".wasm .\n\n" +
		"or from WAT with wabt:\n\n" +
		"    wat2wasm " + name + ".wat -o " + name + ".wasm\n\n" +
		"The module sees no host files, environment or network unless the manifest\n" +
		"declares them (`mounts`, `env`). Any change to a file here changes the\n" +
		"capability's digest, and a project grant for it is asked again.\n"
}
