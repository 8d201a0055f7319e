package capabilities

import (
	"bytes"
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/internal/jsonpos"
	"github.com/ccrun/ccrun/internal/suggest"
)

//go:embed capability.schema.json
var schemaJSON []byte

// SchemaID is the $id of the published manifest schema.
const SchemaID = "https://github.com/ccrun/ccrun/capabilities/capability.schema.json"

// Schema returns the JSON Schema (draft 2020-12) that every capability.json
// must satisfy, as published in schema/capability.schema.json (a copy of
// capabilities/capability.schema.json, kept identical by a test). The
// caller owns the returned copy.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// manifestSchema compiles the embedded schema once; it is safe for
// concurrent use afterwards. It has no error to give: the embedded schema
// compiles, as every test of a manifest shows.
var manifestSchema = sync.OnceValues(func() (*compiled, error) {
	return compileSchema(schemaJSON)
})

// schemaErrors turns the problems of a manifest into field errors, one per
// problem, in document order, in the manifest's own words where the
// schema's would not help.
func schemaErrors(doc *document, problems []problem) []*FieldError {
	env, _ := topString(doc.Value, "environment")
	// Which fields an entry needs and which it may not have depends on the
	// environment: for one ccrun does not know it cannot say, so it says
	// only that the environment is unknown (checkManifest).
	unknownEnv := !ceiling.Environment(env).Valid()
	var out []*FieldError
	seen := map[string]bool{}
	notAllowed := map[string]bool{} // a field not allowed at all needs no other complaint
	add := func(fe *FieldError) {
		k := fe.Pointer + "\x00" + fe.Message
		if !seen[k] {
			seen[k] = true
			out = append(out, fe)
		}
	}
	for _, p := range problems {
		ptr := p.ptr
		parent, field := splitPointer(ptr)
		switch p.keyword {
		case "propertyNames":
			if parent == "/env" {
				add(doc.errorFor(ptr, fmt.Sprintf("variable name %s: want letters, digits and _, not starting with a digit", strconv.QuoteToASCII(field)), nil))
				continue
			}
		case "additionalProperties":
			msg := "unknown field " + strconv.QuoteToASCII(field)
			if s := nearestField(parent, field); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			add(doc.errorFor(ptr, msg, nil))
			continue
		case "required":
			if unknownEnv && parent == "/entry" {
				continue
			}
			add(doc.errorFor(ptr, "missing required field", nil))
			continue
		case "false":
			if unknownEnv {
				continue
			}
			notAllowed[ptr] = true
			add(doc.errorFor(ptr, fmt.Sprintf("not allowed for %s%s", env, notAllowedWhy(ceiling.Environment(env), ptr)), nil))
			continue
		}
		if fe := manifestMessage(doc, p); fe != nil {
			add(fe)
			continue
		}
		add(doc.errorFor(ptr, p.msg, nil))
	}
	kept := out[:0]
	for _, fe := range out {
		if !notAllowed[fe.Pointer] || strings.HasPrefix(fe.Message, "not allowed for ") {
			kept = append(kept, fe)
		}
	}
	sortByPosition(kept)
	return kept
}

// manifestMessage says in the manifest's own words what a field needs, for
// the fields whose generic schema message would not help.
func manifestMessage(doc *document, p problem) *FieldError {
	ptr := p.ptr
	if ptr == "/environment" {
		got, _ := topString(doc.Value, "environment")
		return doc.errorFor(ptr, unknownEnvironment(got), ceiling.ErrUnknownEnvironment)
	}
	switch p.keyword {
	case "minLength":
		if ptr == "/entry/target" {
			env, _ := topString(doc.Value, "environment")
			return doc.errorFor(ptr, emptyTarget(env), nil)
		}
	case "enum":
		if ptr == "/network" {
			return doc.errorFor(ptr, "want none, bridge or host", nil)
		}
	case "pattern":
		switch {
		case ptr == "/name":
			return doc.errorFor(ptr, fmt.Sprintf("name %s: want 1 to 63 lowercase letters, digits and dashes, not starting with a dash",
				strconv.QuoteToASCII(p.got)), nil)
		case ptr == "/limits/timeout":
			return doc.errorFor(ptr, fmt.Sprintf("duration %s: want a duration like 30s, 2m or 1h30m",
				strconv.QuoteToASCII(p.got)), nil)
		case ptr == "/limits/memory" || ptr == "/limits/output":
			return doc.errorFor(ptr, fmt.Sprintf("size %s: want a number of bytes with an optional unit (k, KiB, M, MiB, G, GiB, T), e.g. 64MiB",
				strconv.QuoteToASCII(p.got)), nil)
		case strings.HasPrefix(ptr, "/mounts/") && strings.HasSuffix(ptr, "/guest"):
			return doc.errorFor(ptr, fmt.Sprintf("guest path %s: want an absolute path", strconv.QuoteToASCII(p.got)), nil)
		}
	}
	return nil
}

// splitPointer splits a JSON pointer into its parent's and its last
// reference token (unescaped).
func splitPointer(ptr string) (parent, field string) {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return "", ""
	}
	return ptr[:i], jsonpos.UnescapePointer(ptr[i+1:])
}

// unknownEnvironment says that got is not the name of an environment, and
// what one is. Whether a Runtime runs the environment a manifest names is
// the Runtime's to say (Capability.CheckEnvironment).
func unknownEnvironment(got string) string {
	return fmt.Sprintf("environment %s: want @shell, @wasm, @docker, or the name of one a Go program adds (@ and a lowercase letter, then lowercase letters, digits and -, at most 32)",
		strconv.QuoteToASCII(got))
}

// emptyTarget says an added environment's entry names nothing.
func emptyTarget(env string) string {
	if !ceiling.Environment(env).Valid() {
		return "empty target"
	}
	return fmt.Sprintf("empty target: want what the %s backend runs", env)
}

// notAllowedWhy says why a field is not allowed for env, where the schema's
// "not allowed" alone would not tell: a registered environment's manifest
// may not say what only a built-in environment gives a meaning to.
func notAllowedWhy(env ceiling.Environment, ptr string) string {
	if env.Builtin() {
		if ptr == "/entry/target" {
			return ": target is the entry of an environment a Go program registered"
		}
		return ""
	}
	switch ptr {
	case "/mounts":
		return ": mounts are what @wasm and @docker let a tool see; ccrun cannot hold a registered environment's backend to them"
	case "/network", "/pool":
		return fmt.Sprintf(": %s is @docker's", ptr[1:])
	case "/entry/module":
		return ": module is @wasm's entry; a registered environment's is target and args"
	case "/entry/command":
		return ": command is @shell's and @docker's entry; a registered environment's is target and args"
	case "/entry/image":
		return ": image is @docker's entry; a registered environment's is target and args"
	case "/entry/workdir":
		return ": workdir is where @shell and @docker run; a registered environment's backend decides where it runs"
	case "/limits/memory", "/limits/pids", "/limits/cpus":
		return fmt.Sprintf(": ccrun holds a registered environment's backend to timeout and output only, and would not enforce %s", ptr[len("/limits/"):])
	}
	return ""
}

// knownFields lists the fields of each object of a manifest, for "did you
// mean" hints.
var knownFields = map[string][]string{
	"":        {"$schema", "name", "description", "environment", "entry", "parameters", "mounts", "limits", "env", "network", "pool", "hosts"},
	"/hosts":  {"allow", "deny"},
	"/entry":  {"module", "args", "command", "image", "workdir", "target"},
	"/limits": {"timeout", "memory", "output", "pids", "cpus"},
	"/mounts": {"host", "guest", "rw", "implants"},
}

// nearestField returns the known field closest to name in the object at
// ptr, or "" when none is close.
func nearestField(ptr, name string) string {
	if strings.HasPrefix(ptr, "/mounts/") {
		ptr = "/mounts"
	}
	if near := suggest.Closest(name, knownFields[ptr]); len(near) > 0 {
		return near[0]
	}
	return ""
}

func topString(v any, field string) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	s, ok := m[field].(string)
	return s, ok
}

// sortByPosition orders errors by line and column, then pointer.
func sortByPosition(errs []*FieldError) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Pointer < b.Pointer
	})
}
