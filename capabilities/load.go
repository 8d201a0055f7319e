package capabilities

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/suggest"
	"github.com/ccrun/ccrun/runtime/job"
)

// Dir is where a project keeps its capabilities, relative to its root.
const Dir = ".ccrun/capabilities"

// nameRE is compiled on first use: ccrun starts often, and most runs name
// no capability.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`) })

// ValidName reports whether name can name a capability: 1 to 63 lowercase
// letters, digits and dashes, not starting with a dash.
func ValidName(name string) bool { return nameRE().MatchString(name) }

// Capability is a loaded, checked capability. Its fields are read-only
// once Load returns; a *Capability is safe for concurrent use.
type Capability struct {
	// Dir is the capability's directory, absolute.
	Dir string
	// Project is the project root that mounts and a @shell command are
	// relative to: the directory holding .ccrun/ when Dir is
	// <root>/.ccrun/capabilities/<name>, and Dir itself otherwise (the
	// narrowest choice).
	Project  string
	Manifest Manifest
	// Digest is sha256:<hex> over the manifest and every file of Dir
	// (see the package doc). Grants are bound to it.
	Digest string

	params *compiled
	// envAt is where the manifest names its environment, for
	// CheckEnvironment's error.
	envAt FieldError
}

// Load reads the capability in dir: its capability.json, checked as Parse
// does, then against the file system (the name equals the directory's, the
// module is a regular file inside dir, mounts exist inside the project),
// and digests it. A missing directory or manifest is of class ErrNotFound;
// a bad manifest is a *ManifestError (class ErrInvalidManifest). Load never
// writes anything.
func Load(dir string) (*Capability, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("capability %s: %w", dir, err)
	}
	file := filepath.Join(abs, ManifestFile)
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("capability %s: no such directory: %w", dir, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("capability %s: %w", dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, manifestErr(file, "", "the capability's directory is a symbolic link; want a real directory")
	case !fi.IsDir():
		return nil, fmt.Errorf("capability %s: not a directory: %w", dir, ErrNotFound)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("capability %s: %w", dir, err)
	}
	defer root.Close()

	data, err := readManifest(root, file)
	if err != nil {
		return nil, err
	}
	m, params, doc, err := parse(file, data)
	if err != nil {
		return nil, err
	}
	c := &Capability{Dir: abs, Project: projectOf(abs), Manifest: *m, params: params, envAt: *doc.errorFor("/environment", "", nil)}
	var errs []*FieldError
	if base := filepath.Base(abs); m.Name != base {
		errs = append(errs, doc.errorFor("/name", fmt.Sprintf("name %s differs from the directory's name %s", show(m.Name), show(base)), nil))
	}
	if m.Environment == ceiling.Wasm {
		if why := checkInside(root, m.Entry.Module, true); why != "" {
			errs = append(errs, doc.errorFor("/entry/module", fmt.Sprintf("%s: %s", show(m.Entry.Module), why), nil))
		}
	}
	if len(m.Mounts) > 0 {
		proj, err := os.OpenRoot(c.Project)
		if err != nil {
			return nil, fmt.Errorf("capability %s: project root: %w", dir, err)
		}
		for i, mt := range m.Mounts {
			if why := checkMountHost(proj, c.Project, mt.Host, m.Environment == ceiling.Wasm); why != "" {
				errs = append(errs, doc.errorFor(fmt.Sprintf("/mounts/%d/host", i), fmt.Sprintf("%s: %s", show(mt.Host), why), nil))
			}
		}
		proj.Close()
	}
	if m.Environment == ceiling.Shell && m.Entry.Workdir != "" {
		if why := checkMountHost(nil, c.Project, m.Entry.Workdir, true); why != "" {
			errs = append(errs, doc.errorFor("/entry/workdir", fmt.Sprintf("%s: %s", show(m.Entry.Workdir), why), nil))
		}
	}
	if len(errs) > 0 {
		return nil, &ManifestError{File: file, Errors: errs}
	}
	c.Digest, _, err = digest(root, abs, data, "")
	if err != nil {
		return nil, err
	}
	return c, nil
}

func manifestErr(file, ptr, msg string) error {
	return &ManifestError{File: file, Errors: []*FieldError{{File: file, Pointer: ptr, Message: msg}}}
}

// readManifest reads capability.json through root: a regular file (not a
// link, a FIFO or a device), at most MaxManifestSize bytes.
func readManifest(root *os.Root, file string) ([]byte, error) {
	fi, err := root.Lstat(ManifestFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("capability %s: no %s: %w", filepath.Dir(file), ManifestFile, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("capability %s: %w", filepath.Dir(file), err)
	case !fi.Mode().IsRegular():
		return nil, manifestErr(file, "", fmt.Sprintf("a %s, not a regular file; want a plain file", fileKind(fi.Mode())))
	}
	f, err := root.OpenFile(ManifestFile, openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("capability %s: %w", filepath.Dir(file), err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, manifestErr(file, "", "not a regular file; want a plain file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("capability %s: reading %s: %w", filepath.Dir(file), ManifestFile, err)
	}
	if len(data) > MaxManifestSize {
		return nil, manifestErr(file, "", fmt.Sprintf("manifest is larger than %s; a capability.json is at most that", FormatSize(MaxManifestSize)))
	}
	return data, nil
}

// fileKind names the type of a file for a person.
func fileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file (" + t.String() + ")"
	}
}

// projectOf returns the project root of a capability directory: three
// levels up when dir is <root>/.ccrun/capabilities/<name>, dir otherwise.
func projectOf(dir string) string {
	caps := filepath.Dir(dir)
	ccrun := filepath.Dir(caps)
	if filepath.Base(caps) == "capabilities" && filepath.Base(ccrun) == ".ccrun" {
		return filepath.Dir(ccrun)
	}
	return dir
}

// checkInside says why name (already a local path) is not a regular file
// inside root, following links only as far as they stay inside; "" if it is.
func checkInside(root *os.Root, name string, regular bool) string {
	fi, err := root.Stat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "no such file in the capability's directory"
		}
		return "not inside the capability's directory (a link that leads out?)"
	}
	if regular && !fi.Mode().IsRegular() {
		return "not a regular file"
	}
	return ""
}

// checkMountHost says why host (relative to the project) is not an existing
// path inside it; "" if it is. wantDir asks for a directory.
func checkMountHost(proj *os.Root, project, host string, wantDir bool) string {
	if proj == nil {
		var err error
		if proj, err = os.OpenRoot(project); err != nil {
			return "project root: " + err.Error()
		}
		defer proj.Close()
	}
	if _, err := os.Stat(filepath.Join(project, filepath.FromSlash(host))); errors.Is(err, fs.ErrNotExist) {
		return "no such file or directory in the project"
	}
	fi, err := proj.Stat(filepath.FromSlash(host))
	if err != nil {
		return "leaves the project root (through a symbolic link)"
	}
	if wantDir && !fi.IsDir() {
		return "not a directory"
	}
	return ""
}

// CheckEnvironment refuses c when envs does not hold its environment: a
// manifest names its environment (Load checks only the name's form), and
// the Runtime that would run it says whether it runs it. The error is a
// *ManifestError at the manifest's "environment" (class
// ErrInvalidManifest, and ceiling.ErrUnknownEnvironment) that lists the
// environments envs holds.
func (c *Capability) CheckEnvironment(envs ceiling.Set) error {
	err := envs.Require(c.Manifest.Environment)
	if err == nil {
		return nil
	}
	fe := c.envAt
	fe.Message, fe.Err = err.Error(), err
	return &ManifestError{File: fe.File, Errors: []*FieldError{&fe}}
}

// LoadAll loads every capability under projectDir/.ccrun/capabilities, in
// name order. It returns those that load and, separately, an error for
// each that does not; a missing directory is no capabilities and no error.
// Entries that are not directories, and names starting with ".", are
// skipped; a symbolic link is an error (a capability lives in the project).
func LoadAll(projectDir string) ([]*Capability, []error) {
	base := filepath.Join(projectDir, filepath.FromSlash(Dir))
	ents, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{fmt.Errorf("capabilities %s: %w", base, err)}
	}
	var caps []*Capability
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		dir := filepath.Join(base, name)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			errs = append(errs, manifestErr(filepath.Join(dir, ManifestFile), "", "the capability's directory is a symbolic link; want a real directory"))
			continue
		case !e.IsDir():
			continue
		}
		c, err := Load(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		caps = append(caps, c)
	}
	slices.SortFunc(caps, func(a, b *Capability) int { return strings.Compare(a.Manifest.Name, b.Manifest.Name) })
	return caps, errs
}

// Find loads the capability called name in projectDir. A name that cannot
// name a capability (it would leave the directory: "../x", "a/b") and a
// capability that does not exist are both of class ErrNotFound.
func Find(projectDir, name string) (*Capability, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("capability %s: not a capability name (want lowercase letters, digits and dashes): %w", show(name), ErrNotFound)
	}
	base := filepath.Join(projectDir, filepath.FromSlash(Dir))
	c, err := Load(filepath.Join(base, name))
	if err != nil && errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("capability %s: not in %s%s: %w", name, base, didYouMean(base, name), ErrNotFound)
	}
	return c, err
}

// didYouMean names the capabilities in base whose names are close to
// name, as " (did you mean fmt?)", or "" when none is.
func didYouMean(base, name string) string {
	ents, err := os.ReadDir(base)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && ValidName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	near := suggest.Closest(name, names)
	if len(near) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(near, ", ") + "?)"
}

// ValidateInput checks a call's input against the capability's parameters
// schema. Empty input means {}. The error is an *InputError (class
// ErrInvalidInput) whose field errors point into the input.
func (c *Capability) ValidateInput(input json.RawMessage) error {
	params := c.params
	if params == nil {
		var err error
		if params, err = compileParameters(c.Manifest.ParametersOrDefault()); err != nil {
			return &InputError{Capability: c.Manifest.Name, Errors: []*FieldError{{File: "input", Message: "parameters schema: " + err.Error()}}}
		}
	}
	return validateInput(c.Manifest.Name, params, input)
}

// Mounts returns the manifest's mounts with Host made absolute and
// resolved (symbolic links followed), checked again to be inside the
// project root. Call it right before a run: it is what the executor should
// mount.
func (c *Capability) Mounts() ([]job.Mount, error) {
	if len(c.Manifest.Mounts) == 0 {
		return nil, nil
	}
	proj, err := filepath.EvalSymlinks(c.Project)
	if err != nil {
		return nil, fmt.Errorf("capability %s: project root: %w", c.Manifest.Name, err)
	}
	out := make([]job.Mount, 0, len(c.Manifest.Mounts))
	for i, mt := range c.Manifest.Mounts {
		host, why := localPath(mt.Host)
		if why != "" {
			return nil, manifestErr(filepath.Join(c.Dir, ManifestFile), fmt.Sprintf("/mounts/%d/host", i), why)
		}
		real, err := filepath.EvalSymlinks(filepath.Join(proj, filepath.FromSlash(host)))
		if err != nil {
			return nil, fmt.Errorf("capability %s: mount %s: %w", c.Manifest.Name, show(mt.Host), err)
		}
		if rel, err := filepath.Rel(proj, real); err != nil || !filepath.IsLocal(rel) && rel != "." {
			return nil, manifestErr(filepath.Join(c.Dir, ManifestFile), fmt.Sprintf("/mounts/%d/host", i),
				fmt.Sprintf("%s: leaves the project root (through a symbolic link)", show(mt.Host)))
		}
		jm := job.Mount{Host: real, Guest: mt.Guest, Writable: mt.Writable, Implants: mt.Implants}
		if len(mt.Implants) > 0 && !mt.Writable {
			return nil, manifestErr(filepath.Join(c.Dir, ManifestFile), fmt.Sprintf("/mounts/%d/implants", i),
				"implants name protected paths a writable mount may change: give rw: true, or drop them")
		}
		if err := jm.CheckImplants(); err != nil {
			return nil, manifestErr(filepath.Join(c.Dir, ManifestFile), fmt.Sprintf("/mounts/%d/implants", i), err.Error())
		}
		out = append(out, jm)
	}
	return out, nil
}
