package capabilities

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/ccrun/ccrun/ceiling"
)

//go:embed capability.schema.json
var schemaJSON []byte

// SchemaID is the $id of the published manifest schema.
const SchemaID = "https://github.com/ccrun/ccrun/capabilities/capability.schema.json"

// Schema returns the JSON Schema (draft 2020-12) that every capability.json
// must satisfy, as published in capabilities/capability.schema.json. The
// caller owns the returned copy.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// manifestSchema compiles the embedded schema once; it is safe for
// concurrent use afterwards.
var manifestSchema = sync.OnceValue(func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		panic(fmt.Sprintf("capabilities: embedded schema: %v", err))
	}
	c := newCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		panic(fmt.Sprintf("capabilities: embedded schema: %v", err))
	}
	return c.MustCompile(SchemaID)
})

// errNoRemote refuses every $ref that leaves the document: a manifest's
// parameters must not make ccrun read a file or reach the network.
var errNoRemote = errors.New("references outside the schema are not loaded")

type noLoader struct{}

func (noLoader) Load(url string) (any, error) { return nil, errNoRemote }

// newCompiler returns a compiler that loads nothing from outside (the
// draft meta-schemas are built into the library).
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	return c
}

// schemaErrors turns a validation error into field errors of doc, one per
// problem, in document order.
func schemaErrors(doc *document, err error, manifest bool) []*FieldError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []*FieldError{doc.errorFor("", err.Error(), nil)}
	}
	env, _ := topString(doc.value, "environment")
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
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		ptr := pointer(e.InstanceLocation)
		if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			// The causes point at the object, not the name: say it here.
			ptr = doc.objectWith(len(e.InstanceLocation), k.Property, ptr)
			msg := fmt.Sprintf("field name %s: %s", strconv.QuoteToASCII(k.Property), leafMessages(e))
			if manifest && ptr == "/env" {
				msg = fmt.Sprintf("variable name %s: want letters, digits and _, not starting with a digit", strconv.QuoteToASCII(k.Property))
			}
			add(doc.errorFor(ptr+"/"+escapePointer(k.Property), msg, nil))
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				visit(c)
			}
			return
		}
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				msg := "unknown field " + strconv.QuoteToASCII(p)
				if manifest {
					if s := suggest(ptr, p); s != "" {
						msg += fmt.Sprintf(" (did you mean %q?)", s)
					}
				}
				add(doc.errorFor(ptr+"/"+escapePointer(p), msg, nil))
			}
			return
		case *kind.Required:
			for _, p := range k.Missing {
				add(doc.errorFor(ptr+"/"+escapePointer(p), "missing required field", nil))
			}
			return
		case *kind.FalseSchema:
			if manifest {
				notAllowed[ptr] = true
				add(doc.errorFor(ptr, fmt.Sprintf("not allowed for %s", env), nil))
				return
			}
		}
		if manifest {
			if fe := manifestMessage(doc, ptr, e.ErrorKind); fe != nil {
				add(fe)
				return
			}
		}
		add(doc.errorFor(ptr, e.BasicOutput().Error.String(), nil))
	}
	visit(ve)
	kept := out[:0]
	for _, fe := range out {
		if !notAllowed[fe.Pointer] || strings.HasPrefix(fe.Message, "not allowed for ") {
			kept = append(kept, fe)
		}
	}
	sortByPosition(kept)
	return kept
}

// objectWith finds the object at depth that has a member called prop. The
// library (v6.0.3) reports propertyNames errors with an instance location
// whose length is right but whose tokens may be another value's (a shared
// slice), so the location is found again here; guess is kept when it fits
// or when no single object does.
func (d *document) objectWith(depth int, prop, guess string) string {
	suffix := "/" + escapePointer(prop)
	if _, ok := d.pos[guess+suffix]; ok {
		return guess
	}
	found := ""
	for p := range d.pos {
		if !strings.HasSuffix(p, suffix) {
			continue
		}
		parent := strings.TrimSuffix(p, suffix)
		if strings.Count(parent, "/") != depth {
			continue
		}
		if found != "" {
			return guess
		}
		found = parent
	}
	if found == "" {
		return guess
	}
	return found
}

// leafMessages joins the messages of e's innermost causes.
func leafMessages(e *jsonschema.ValidationError) string {
	if len(e.Causes) == 0 {
		return e.BasicOutput().Error.String()
	}
	msgs := make([]string, 0, len(e.Causes))
	for _, c := range e.Causes {
		msgs = append(msgs, leafMessages(c))
	}
	return strings.Join(msgs, "; ")
}

// manifestMessage says in the manifest's own words what a field needs, for
// the fields whose generic schema message would not help.
func manifestMessage(doc *document, ptr string, k jsonschema.ErrorKind) *FieldError {
	switch k := k.(type) {
	case *kind.Enum:
		if ptr == "/environment" {
			got, _ := topString(doc.value, "environment")
			return doc.errorFor(ptr, fmt.Sprintf("unknown environment %s: want @shell, @wasm or @docker",
				strconv.QuoteToASCII(got)), ceiling.ErrUnknownEnvironment)
		}
		if ptr == "/network" {
			return doc.errorFor(ptr, "want none, bridge or host", nil)
		}
	case *kind.Pattern:
		switch {
		case ptr == "/name":
			return doc.errorFor(ptr, fmt.Sprintf("name %s: want 1 to 63 lowercase letters, digits and dashes, not starting with a dash",
				strconv.QuoteToASCII(k.Got)), nil)
		case ptr == "/limits/timeout":
			return doc.errorFor(ptr, fmt.Sprintf("duration %s: want a duration like 30s, 2m or 1h30m",
				strconv.QuoteToASCII(k.Got)), nil)
		case ptr == "/limits/memory" || ptr == "/limits/output":
			return doc.errorFor(ptr, fmt.Sprintf("size %s: want a number of bytes with an optional unit (k, KiB, M, MiB, G, GiB, T), e.g. 64MiB",
				strconv.QuoteToASCII(k.Got)), nil)
		case strings.HasPrefix(ptr, "/mounts/") && strings.HasSuffix(ptr, "/guest"):
			return doc.errorFor(ptr, fmt.Sprintf("guest path %s: want an absolute path", strconv.QuoteToASCII(k.Got)), nil)
		}
	}
	return nil
}

// knownFields lists the fields of each object of a manifest, for "did you
// mean" hints.
var knownFields = map[string][]string{
	"":        {"$schema", "name", "description", "environment", "entry", "parameters", "mounts", "limits", "env", "network", "pool"},
	"/entry":  {"module", "args", "command", "image", "workdir"},
	"/limits": {"timeout", "memory", "output", "pids", "cpus"},
	"/mounts": {"host", "guest", "rw"},
}

// suggest returns the known field closest to name in the object at ptr,
// or "" when none is close.
func suggest(ptr, name string) string {
	if strings.HasPrefix(ptr, "/mounts/") {
		ptr = "/mounts"
	}
	best, bestD := "", 3
	for _, f := range knownFields[ptr] {
		if d := distance(strings.ToLower(name), f); d < bestD {
			best, bestD = f, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
