package capabilities

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/egress"
	"github.com/ccrun/ccrun/internal/jsonpos"
	"github.com/ccrun/ccrun/runtime/job"
)

// Parse checks data as the capability.json named file (used only in
// messages) and returns the manifest. It runs every check that needs no
// file system: the schema, then the rules the schema cannot say (paths stay
// local, sizes and durations in range, parameters a valid schema). Load adds
// the checks against the directory. The error is a *ManifestError listing
// every problem found (class ErrInvalidManifest).
func Parse(file string, data []byte) (*Manifest, error) {
	m, _, _, err := parse(file, data)
	return m, err
}

// Validate is Parse for a caller that only wants the verdict.
func Validate(file string, data []byte) error {
	_, _, _, err := parse(file, data)
	return err
}

// parse returns the manifest, its compiled parameters and the parsed
// document (for the positions of later errors).
func parse(file string, data []byte) (*Manifest, *compiled, *document, error) {
	fail := func(errs ...*FieldError) (*Manifest, *compiled, *document, error) {
		return nil, nil, nil, &ManifestError{File: file, Errors: errs}
	}
	if len(data) > MaxManifestSize {
		return fail(&FieldError{File: file, Message: fmt.Sprintf("manifest is larger than %s; a capability.json is at most that", FormatSize(MaxManifestSize))})
	}
	doc, fe := parseDocument(file, data)
	if fe != nil {
		return fail(fe)
	}
	var errs []*FieldError
	ms, err := manifestSchema()
	if err != nil {
		return fail(&FieldError{File: file, Message: err.Error(), Err: err})
	}
	if problems := ms.validate(doc); problems != nil {
		errs = schemaErrors(doc, problems)
	}
	for _, fe := range checkLimits(doc) {
		if !hasPointer(errs, fe.Pointer) {
			errs = append(errs, fe)
		}
	}
	// Decode even past schema errors: when the types are right, the rules
	// below still run, so that one pass reports as much as it can.
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		// Drop the fields already found wrong and decode the rest.
		if len(errs) == 0 || decodeWithout(doc.Value, errs, &m) != nil {
			sortByPosition(errs)
			if len(errs) == 0 {
				errs = append(errs, doc.errorFor("", "malformed manifest: "+err.Error(), nil))
			}
			return fail(errs...)
		}
	}
	sem, params := checkManifest(doc, &m)
	for _, fe := range sem {
		if !hasPointer(errs, fe.Pointer) {
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		sortByPosition(errs)
		return fail(errs...)
	}
	return &m, params, doc, nil
}

func hasPointer(errs []*FieldError, ptr string) bool {
	for _, fe := range errs {
		if fe.Pointer == ptr {
			return true
		}
	}
	return false
}

// decodeWithout decodes v into m with the values at the errors' pointers
// set to null (so the decoder leaves them zero).
func decodeWithout(v any, errs []*FieldError, m *Manifest) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var cp any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&cp); err != nil {
		return err
	}
	for _, fe := range errs {
		if fe.Pointer == "" {
			return errors.New("the document itself is wrong")
		}
		nullAt(cp, strings.Split(fe.Pointer[1:], "/"))
	}
	if b, err = json.Marshal(cp); err != nil {
		return err
	}
	return json.Unmarshal(b, m)
}

// nullAt sets the value at the reference tokens path to null, if present.
func nullAt(v any, path []string) {
	for i, tok := range path {
		tok = jsonpos.UnescapePointer(tok)
		last := i == len(path)-1
		switch c := v.(type) {
		case map[string]any:
			if _, ok := c[tok]; !ok {
				return
			}
			if last {
				c[tok] = nil
				return
			}
			v = c[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return
			}
			if last {
				c[n] = nil
				return
			}
			v = c[n]
		default:
			return
		}
	}
}

// checkLimits checks the values of the limits whose forms the schema
// checks: durations and sizes that parse but are out of range. It works on
// the raw document, so it runs even when the manifest cannot be decoded.
func checkLimits(doc *document) []*FieldError {
	var errs []*FieldError
	bad := func(ptr, format string, args ...any) {
		errs = append(errs, doc.errorFor(ptr, fmt.Sprintf(format, args...), nil))
	}
	top, _ := doc.Value.(map[string]any)
	if lim, ok := top["limits"].(map[string]any); ok {
		if s, ok := lim["timeout"].(string); ok {
			if d, err := time.ParseDuration(s); err != nil {
				bad("/limits/timeout", "duration %s: %v", strconv.QuoteToASCII(s), err)
			} else if d <= 0 {
				bad("/limits/timeout", "want a timeout above zero")
			}
		}
		for _, f := range []string{"memory", "output"} {
			var n int64
			switch v := lim[f].(type) {
			case string:
				var err error
				if n, err = ParseSize(v); err != nil {
					bad("/limits/"+f, "%v", err)
					continue
				}
			case json.Number:
				var err error
				if n, err = v.Int64(); err != nil {
					bad("/limits/"+f, "size %s: want a whole number of bytes that fits in 63 bits", v)
					continue
				}
			default:
				continue
			}
			if n <= 0 {
				bad("/limits/"+f, "want a size above zero")
			}
		}
	}

	return errs
}

// checkManifest runs the rules the schema cannot say. It returns the
// compiled parameters schema when it compiles.
func checkManifest(doc *document, m *Manifest) ([]*FieldError, *compiled) {
	var errs []*FieldError
	bad := func(ptr, format string, args ...any) {
		errs = append(errs, doc.errorFor(ptr, fmt.Sprintf(format, args...), nil))
	}
	env := m.Environment
	if !env.Valid() {
		errs = append(errs, doc.errorFor("/environment", unknownEnvironment(string(env)), ceiling.ErrUnknownEnvironment))
	}
	args := func(ptr string, list []string) {
		for i, a := range list {
			if strings.ContainsRune(a, 0) {
				bad(ptr+"/"+strconv.Itoa(i), "argument contains a NUL byte")
			}
		}
	}

	if doc.Has("/limits/cpus") && !validCPUs(m.Limits.CPUs) {
		bad("/limits/cpus", "want a number of cores above 0 and at most 1024")
	}
	if env == ceiling.Docker && m.Limits.Memory > 0 && m.Limits.Memory < job.MinMemory {
		bad("/limits/memory", "%s is below %s, the least a container starts with", FormatSize(int64(m.Limits.Memory)), FormatSize(job.MinMemory))
	}

	// Entry.
	e := m.Entry
	switch env {
	case ceiling.Shell:
		if strings.TrimSpace(e.Command) == "" {
			bad("/entry/command", "empty command")
		} else if strings.ContainsRune(e.Command, 0) {
			bad("/entry/command", "command contains a NUL byte")
		}
		if e.Workdir != "" {
			if _, why := localPath(e.Workdir); why != "" {
				bad("/entry/workdir", "%s: %s (the project root)", show(e.Workdir), why)
			}
		}
	case ceiling.Wasm:
		if _, why := localPath(e.Module); why != "" {
			bad("/entry/module", "%s: %s (the capability's directory)", show(e.Module), why)
		} else if c, _ := localPath(e.Module); c == "." {
			bad("/entry/module", "want a file, not the capability's directory")
		}
		args("/entry/args", e.Args)
	case ceiling.Docker:
		args("/entry/command", e.Argv)
		if len(e.Argv) > 0 && e.Argv[0] == "" {
			bad("/entry/command/0", "empty program")
		}
		if strings.ContainsAny(e.Image, " \t\r\n\x00") {
			bad("/entry/image", "image %s: white space or NUL in an image reference", show(e.Image))
		}
		if e.Workdir != "" {
			if why := guestPath(e.Workdir); why != "" {
				bad("/entry/workdir", "%s: %s (a path in the container)", show(e.Workdir), why)
			}
		}
	default: // one a Go program adds (its Runtime says whether it runs it), or not a name and reported above
		if !env.Valid() {
			break
		}
		if strings.TrimSpace(e.Target) == "" {
			bad("/entry/target", "%s", emptyTarget(string(env)))
		} else if strings.ContainsRune(e.Target, 0) {
			bad("/entry/target", "target contains a NUL byte")
		}
		args("/entry/args", e.Args)
	}

	// Mounts.
	guests := map[string]int{}
	for i, mt := range m.Mounts {
		ptr := "/mounts/" + strconv.Itoa(i)
		if _, why := localPath(mt.Host); why != "" {
			bad(ptr+"/host", "%s: %s (the project root)", show(mt.Host), why)
		}
		if why := guestPath(mt.Guest); why != "" {
			bad(ptr+"/guest", "%s: %s", show(mt.Guest), why)
		} else if env == ceiling.Docker && mt.Guest == "/" {
			bad(ptr+"/guest", "a container's root cannot be a mount")
		} else if j, dup := guests[mt.Guest]; dup {
			bad(ptr+"/guest", "%s is already mounted by /mounts/%d", show(mt.Guest), j)
		} else {
			guests[mt.Guest] = i
		}
		if strings.ContainsRune(mt.Host, ':') {
			bad(ptr+"/host", "':' in a host path is not allowed (it separates fields of --mount)")
		}
	}

	// Hosts.
	if h := m.Hosts; h != nil {
		if n := m.NetworkOrDefault(); n != NetworkNone {
			bad("/hosts", "with network %s: a tool whose hosts are named reaches them only through ccrun's proxy; drop \"network\" (or \"hosts\")", show(string(n)))
		}
		for _, l := range []struct {
			ptr  string
			list []string
		}{{"/hosts/allow", h.Allow}, {"/hosts/deny", h.Deny}} {
			for i, e := range l.list {
				if err := egress.CheckEntry(e); err != nil {
					bad(l.ptr+"/"+strconv.Itoa(i), "%s: %v", show(e), err)
				}
			}
		}
	}

	// Env.
	for k, v := range m.Env {
		if strings.ContainsRune(v, 0) {
			bad("/env/"+escapePointer(k), "value contains a NUL byte")
		}
	}

	// Parameters: a schema of an object, compiled without loading
	// anything from outside.
	var params *compiled
	if len(m.Parameters) > 0 {
		var err error
		params, err = compileParameters(m.Parameters)
		if err != nil {
			bad("/parameters", "not a valid JSON Schema: %v", err)
		} else if !objectSchema(params) {
			bad("/parameters", `want a schema of an object ("type": "object"): a call's input is an object of named parameters`)
		}
	} else {
		params, _ = compileParameters(json.RawMessage(`{"type":"object"}`))
	}
	return errs, params
}

// compileParameters compiles a parameters schema. References outside it are
// refused, never loaded.
func compileParameters(raw json.RawMessage) (*compiled, error) { return compileSchema(raw) }

// validateInput checks input against params: the one check of a tool's
// input (internal/inputschema's Check), in a capability's words.
func validateInput(name string, params *compiled, input json.RawMessage) error {
	if params == nil {
		return &InputError{Capability: name, Errors: []*FieldError{{File: "input", Message: "capability has no compiled parameters schema"}}}
	}
	if errs := params.check(input); errs != nil {
		return &InputError{Capability: name, Errors: errs}
	}
	return nil
}
