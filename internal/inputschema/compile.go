// Package inputschema is ccrun's one JSON Schema validator: the schemas of
// tools' inputs (a capability's parameters, a library tool's InputSchema,
// the built-in tools' parameters) and of capability manifests are compiled
// here, and every document is checked against them here, with one error
// format.
//
// The verdict is always github.com/google/jsonschema-go's: a value is
// valid exactly when that library says so. The library stops at its first
// problem, picks it in Go's map order and names schema locations, not the
// value's, so Validate says where: it walks the schema's structure (the
// keywords that apply a subschema to the value itself or to one of its
// members or items), asks the library of each subschema whether the value
// there is valid, and reports each invalid value it reaches in document
// order, with the library's message, at the value's JSON pointer, line and
// column (from internal/jsonpos). Nothing here decides validity itself.
//
// Compile refuses, before the library sees it, what the library would
// mishandle: a $ref cycle (the library recurses until the stack runs
// out), a schema whose checking can grow exponentially with the depth of
// a value (subschemas applied to one value, at each level, through
// allOf, anyOf, refs and the like), references outside the schema (never
// loaded: no file, no network), keywords the library would read in
// another case ("Required"), a draft's keyword the other draft ignores,
// and shapes a meta-schema refuses. Patterns are Go regular expressions
// (RE2): matching is linear in the text. Documents nest at most MaxDepth,
// and a number past what a float64 holds is refused where it is.
//
// A compiled Schema is safe for concurrent use.
package inputschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ccrun/ccrun/internal/jsonpos"
)

// MaxSize is the largest schema Compile takes, 1 MiB: a capability.json is
// at most that.
const MaxSize = 1 << 20

// MaxCost bounds how many subschemas may be applied along one path from
// the top of a value to a leaf (MaxDepth deep at most): past it a hostile
// schema (allOf of two references to itself under a property, say) would
// make the check of a small value take exponential time.
const MaxCost = 10000

// baseURI names every schema while it is resolved; messages never show it.
const baseURI = "urn:ccrun:schema"

// Supported values of $schema.
const (
	draft2020URL = "https://json-schema.org/draft/2020-12/schema"
	draft7URL    = "http://json-schema.org/draft-07/schema#"
	draft7URLS   = "https://json-schema.org/draft-07/schema#"
)

// Schema is a compiled JSON Schema.
type Schema struct {
	raw      any // the schema as parsed (a map or a bool), for its structure
	draft7   bool
	lib      *jsonschema.Schema // as the library reads it
	resolved *jsonschema.Resolved
	patterns map[string]*regexp.Regexp // of patternProperties
	refs     map[string]string         // $ref → the pointer it names

	mu     sync.Mutex
	probes map[string]*jsonschema.Resolved // by schema pointer
}

// errNoRemote refuses every $ref that leaves the document.
var errNoRemote = errors.New("references outside the schema are not loaded")

// Compile checks raw as a JSON Schema (draft 2020-12 unless its $schema
// says draft-07) and compiles it. Defaults are checked against their
// schemas. The error says where in the schema (a JSON pointer) and what is
// wrong.
func Compile(raw []byte) (*Schema, error) {
	if len(raw) > MaxSize {
		return nil, fmt.Errorf("schema of %d bytes: past the limit of %d bytes (1 MiB)", len(raw), MaxSize)
	}
	doc, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s := &Schema{raw: doc.Value, patterns: map[string]*regexp.Regexp{}, refs: map[string]string{}, probes: map[string]*jsonschema.Resolved{}}
	top, _ := doc.Value.(map[string]any)
	switch top["$schema"] {
	case nil, draft2020URL:
	case draft7URL, draft7URLS:
		s.draft7 = true
	default:
		return nil, fmt.Errorf("schema: $schema %s: want draft 2020-12 (%s) or draft-07", strconv.Quote(fmt.Sprint(top["$schema"])), draft2020URL)
	}
	g := &graph{s: s, nodes: map[string]*node{}}
	if err := g.check(doc.Value, "", true); err != nil {
		return nil, err
	}
	if err := g.refs(); err != nil {
		return nil, err
	}
	if err := g.bounded(); err != nil {
		return nil, err
	}
	var lib jsonschema.Schema
	if err := json.Unmarshal(raw, &lib); err != nil {
		return nil, fmt.Errorf("schema: %v", err)
	}
	rs, err := lib.Resolve(&jsonschema.ResolveOptions{BaseURI: baseURI, ValidateDefaults: true,
		Loader: func(*url.URL) (*jsonschema.Schema, error) { return nil, errNoRemote }})
	if err != nil {
		return nil, fmt.Errorf("schema: %s", clean(err.Error()))
	}
	s.lib, s.resolved = &lib, rs
	return s, nil
}

// Object reports whether s accepts objects only ("type": "object").
func (s *Schema) Object() bool {
	top, _ := s.raw.(map[string]any)
	switch t := top["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return len(t) == 1 && t[0] == "object"
	}
	return false
}

// probe is the library's schema for the subschema at ptr: a reference to
// it, resolved with the whole schema beside it.
func (s *Schema) probe(ptr string) (*jsonschema.Resolved, error) {
	if ptr == "" {
		return s.resolved, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs, ok := s.probes[ptr]; ok {
		return rs, nil
	}
	base := s.lib.ID
	if base == "" {
		base = baseURI
	}
	wrap := &jsonschema.Schema{Schema: s.lib.Schema, Ref: base + (&url.URL{Fragment: ptr}).String()}
	rs, err := wrap.Resolve(&jsonschema.ResolveOptions{BaseURI: "urn:ccrun:probe", Loader: func(u *url.URL) (*jsonschema.Schema, error) {
		if u.String() != base {
			return nil, errNoRemote
		}
		c := s.lib.CloneSchemas()
		if c.ID == "" {
			c.ID = base
		}
		return c, nil
	}})
	if err != nil {
		return nil, err
	}
	s.probes[ptr] = rs
	return rs, nil
}

// at is the raw subschema at ptr (nil when there is none).
func (s *Schema) at(ptr string) any {
	v := s.raw
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = jsonpos.UnescapePointer(tok)
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// clean drops the internal names of schemas from a library message.
func clean(msg string) string {
	msg = strings.ReplaceAll(msg, baseURI+"#", "#")
	msg = strings.ReplaceAll(msg, baseURI, "the schema")
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	return msg
}

// Keywords whose values are schemas, by shape.
var (
	schemaKeywords = []string{"additionalProperties", "not", "if", "then", "else", "contains",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	countKeywords      = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}
	jsonTypes          = []string{"null", "boolean", "object", "array", "number", "string", "integer"}
	// every keyword the library reads, to refuse near-misses in case
	// (encoding/json would take "Required" for "required").
	libraryKeywords = func() map[string]string {
		m := map[string]string{}
		for _, k := range slices.Concat(schemaKeywords, schemaListKeywords, schemaMapKeywords, countKeywords, []string{
			"$id", "$schema", "$ref", "$comment", "$anchor", "$dynamicAnchor", "$dynamicRef", "$vocabulary",
			"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
			"type", "enum", "const", "multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
			"pattern", "items", "uniqueItems", "required", "dependentRequired", "dependencies",
			"contentEncoding", "contentMediaType", "format"}) {
			m[strings.ToLower(k)] = k
		}
		return m
	}()
)

// A node is one subschema, for the checks of references and cost.
type node struct {
	ptr     string
	ref     string   // $ref as written; "" none
	inPlace []string // subschemas applied to the value itself
	// subschemas applied to a member or item: each list's cost is its
	// largest (one member matches one of props), each of sum's adds up.
	max [][]string
	sum []string
}

// graph checks a schema's structure and references and bounds its cost.
type graph struct {
	s       *Schema
	nodes   map[string]*node
	order   []string          // nodes in document order
	anchors map[string]string // $anchor → pointer
}

func where(ptr string) string {
	if ptr == "" {
		return "schema"
	}
	return "schema at " + ptr
}

// check checks v, the subschema at ptr, as a meta-schema would, and
// records its node.
func (g *graph) check(v any, ptr string, root bool) error {
	m, ok := v.(map[string]any)
	if !ok {
		if _, ok := v.(bool); ok {
			g.add(&node{ptr: ptr})
			return nil
		}
		return fmt.Errorf("%s: want a schema (an object or a boolean)", where(ptr))
	}
	n := &node{ptr: ptr}
	g.add(n)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	sub := func(kw string, val any) (string, error) {
		p := ptr + "/" + jsonpos.EscapePointer(kw)
		return p, g.check(val, p, false)
	}
	for _, k := range keys {
		val := m[k]
		at := ptr + "/" + jsonpos.EscapePointer(k)
		if want, ok := libraryKeywords[strings.ToLower(k)]; ok && want != k {
			return fmt.Errorf("%s: unknown keyword %q (did you mean %q?)", where(ptr), k, want)
		}
		switch k {
		case "$id":
			if !root {
				return fmt.Errorf("%s: $id below the top: a schema resource inside another is not supported; use $defs and $ref", where(ptr))
			}
			id, _ := val.(string)
			if u, err := url.Parse(id); err != nil || !u.IsAbs() || u.Fragment != "" {
				return fmt.Errorf("%s: $id %s: want an absolute URI without a fragment", where(ptr), strconv.Quote(fmt.Sprint(val)))
			}
		case "$dynamicRef", "$dynamicAnchor", "$vocabulary":
			return fmt.Errorf("%s: %s is not supported", where(ptr), k)
		case "$ref":
			ref, ok := val.(string)
			if !ok {
				return fmt.Errorf("%s: $ref: want a string", where(ptr))
			}
			n.ref = ref
		case "$anchor":
			name, _ := val.(string)
			if g.anchors == nil {
				g.anchors = map[string]string{}
			}
			if _, dup := g.anchors[name]; dup {
				return fmt.Errorf("%s: $anchor %q given twice", where(ptr), name)
			}
			g.anchors[name] = ptr
		case "type":
			if err := checkType(val, ptr); err != nil {
				return err
			}
		case "multipleOf":
			if n, ok := val.(json.Number); !ok || !positive(n) {
				return fmt.Errorf("%s: multipleOf: want a number above zero", where(ptr))
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			if _, ok := val.(json.Number); !ok {
				return fmt.Errorf("%s: %s: want a number", where(ptr), k)
			}
		case "required":
			list, ok := val.([]any)
			for _, e := range list {
				if _, s := e.(string); !s {
					ok = false
				}
			}
			if !ok {
				return fmt.Errorf("%s: required: want an array of strings", where(ptr))
			}
		case "pattern":
			if _, ok := val.(string); !ok {
				return fmt.Errorf("%s: pattern: want a string", where(ptr))
			}
		case "items":
			if list, ok := val.([]any); ok {
				if !g.s.draft7 {
					return fmt.Errorf("%s: items: an array of schemas is draft-07; draft 2020-12 says prefixItems", where(ptr))
				}
				group, err := g.list(list, at)
				if err != nil {
					return err
				}
				n.max = append(n.max, group)
				continue
			}
			p, err := sub(k, val)
			if err != nil {
				return err
			}
			n.sum = append(n.sum, p)
		case "prefixItems", "unevaluatedItems", "unevaluatedProperties", "dependentSchemas", "dependentRequired":
			if g.s.draft7 {
				return fmt.Errorf("%s: %s is draft 2020-12; this schema says draft-07", where(ptr), k)
			}
		case "additionalItems", "dependencies", "definitions":
			if !g.s.draft7 && k != "definitions" {
				return fmt.Errorf("%s: %s is draft-07; draft 2020-12 says %s", where(ptr), k,
					map[string]string{"additionalItems": "items (after prefixItems)", "dependencies": "dependentRequired or dependentSchemas"}[k])
			}
			if k == "dependencies" {
				deps, ok := val.(map[string]any)
				if !ok {
					return fmt.Errorf("%s: dependencies: want an object", where(ptr))
				}
				for _, name := range sortedKeys(deps) {
					if _, ok := deps[name].([]any); ok {
						continue
					}
					p := at + "/" + jsonpos.EscapePointer(name)
					if err := g.check(deps[name], p, false); err != nil {
						return err
					}
					n.inPlace = append(n.inPlace, p)
				}
			}
		}
		if slices.Contains(countKeywords, k) {
			if n, ok := val.(json.Number); !ok || strings.HasPrefix(n.String(), "-") || !whole(n) {
				return fmt.Errorf("%s: %s: want a whole number, not negative", where(ptr), k)
			}
		}
		if slices.Contains(schemaKeywords, k) {
			p, err := sub(k, val)
			if err != nil {
				return err
			}
			switch k {
			case "not", "if", "then", "else":
				n.inPlace = append(n.inPlace, p)
			case "contentSchema":
			default:
				n.sum = append(n.sum, p)
			}
		}
		if slices.Contains(schemaListKeywords, k) {
			list, ok := val.([]any)
			if !ok || len(list) == 0 && k != "prefixItems" {
				return fmt.Errorf("%s: %s: want a non-empty array of schemas", where(ptr), k)
			}
			group, err := g.list(list, at)
			if err != nil {
				return err
			}
			if k == "prefixItems" {
				n.max = append(n.max, group)
			} else {
				n.inPlace = append(n.inPlace, group...)
			}
		}
		if slices.Contains(schemaMapKeywords, k) {
			sm, ok := val.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: %s: want an object of schemas", where(ptr), k)
			}
			var group []string
			for _, name := range sortedKeys(sm) {
				p := at + "/" + jsonpos.EscapePointer(name)
				if err := g.check(sm[name], p, false); err != nil {
					return err
				}
				group = append(group, p)
			}
			switch k {
			case "properties":
				n.max = append(n.max, group)
			case "patternProperties":
				n.sum = append(n.sum, group...)
				for _, pat := range sortedKeys(sm) {
					re, err := regexp.Compile(pat)
					if err != nil {
						return fmt.Errorf("%s: patternProperties %s: %v", where(ptr), strconv.Quote(pat), err)
					}
					g.s.patterns[pat] = re
				}
			case "dependentSchemas":
				n.inPlace = append(n.inPlace, group...)
			}
		}
	}
	return nil
}

// list checks the subschemas of an array at ptr; it returns their pointers.
func (g *graph) list(list []any, ptr string) ([]string, error) {
	var out []string
	for i, e := range list {
		p := ptr + "/" + strconv.Itoa(i)
		if err := g.check(e, p, false); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (g *graph) add(n *node) {
	g.nodes[n.ptr] = n
	g.order = append(g.order, n.ptr)
}

func checkType(val any, ptr string) error {
	var ts []any
	switch t := val.(type) {
	case string:
		ts = []any{t}
	case []any:
		if len(t) == 0 {
			return fmt.Errorf("%s: type: want at least one type", where(ptr))
		}
		ts = t
	default:
		return fmt.Errorf("%s: type: want a string or an array of strings", where(ptr))
	}
	seen := map[string]bool{}
	for _, t := range ts {
		s, ok := t.(string)
		if !ok || !slices.Contains(jsonTypes, s) {
			return fmt.Errorf("%s: type %s: want one of %s", where(ptr), strconv.Quote(fmt.Sprint(t)), strings.Join(jsonTypes, ", "))
		}
		if seen[s] {
			return fmt.Errorf("%s: type %q listed twice", where(ptr), s)
		}
		seen[s] = true
	}
	return nil
}

// refs resolves every $ref to a subschema of the document (the top's $id,
// a JSON pointer, an $anchor), refuses any other, and refuses a cycle of
// subschemas applied to the same value (a $ref to itself, through allOf
// and the like): the library would recurse without end.
func (g *graph) refs() error {
	top, _ := g.s.raw.(map[string]any)
	id, _ := top["$id"].(string)
	for _, p := range g.order {
		n := g.nodes[p]
		if n.ref == "" {
			continue
		}
		target, ok := g.resolve(n.ref, id)
		if !ok {
			return fmt.Errorf("%s: $ref %s: names nothing in this schema (%v)", where(p), strconv.Quote(n.ref), errNoRemote)
		}
		n.inPlace = append(n.inPlace, target)
		g.s.refs[n.ref] = target
	}
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var visit func(p string, path []string) error
	visit = func(p string, path []string) error {
		switch state[p] {
		case open:
			return fmt.Errorf("%s: $ref cycle: %s applies itself to the same value (%s)", where(p), show(p), strings.Join(append(path, show(p)), " → "))
		case done:
			return nil
		}
		state[p] = open
		for _, t := range g.nodes[p].inPlace {
			if err := visit(t, append(path, show(p))); err != nil {
				return err
			}
		}
		state[p] = done
		return nil
	}
	for _, p := range g.order {
		if err := visit(p, nil); err != nil {
			return err
		}
	}
	return nil
}

func show(ptr string) string {
	if ptr == "" {
		return "#"
	}
	return "#" + ptr
}

// resolve finds the pointer of the subschema ref names, relative to the
// top's $id.
func (g *graph) resolve(ref, id string) (string, bool) {
	if id != "" && strings.HasPrefix(ref, id) {
		ref = ref[len(id):]
	}
	if ref == "" {
		return "", true
	}
	if !strings.HasPrefix(ref, "#") {
		return "", false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return "", false
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		p, ok := g.anchors[frag]
		return p, ok
	}
	_, ok := g.nodes[frag]
	return frag, ok
}

// bounded refuses a schema past MaxCost: the most subschemas applied
// along one path of a value MaxDepth deep, counting every subschema
// applied in place and, at each level, the largest of those a member or
// an item may get.
func (g *graph) bounded() error {
	// The in-place subschemas form a DAG (refs checked it): order it so
	// that a node comes after those it applies.
	var topo []string
	seen := map[string]bool{}
	var visit func(p string)
	visit = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, t := range g.nodes[p].inPlace {
			visit(t)
		}
		topo = append(topo, p)
	}
	for _, p := range g.order {
		visit(p)
	}
	idx := make(map[string]int, len(topo))
	for i, p := range topo {
		idx[p] = i
	}
	ids := func(ps []string) []int {
		out := make([]int, len(ps))
		for i, p := range ps {
			out[i] = idx[p]
		}
		return out
	}
	type costs struct {
		inPlace, sum []int
		max          [][]int
	}
	cs := make([]costs, len(topo))
	for i, p := range topo {
		n := g.nodes[p]
		cs[i] = costs{inPlace: ids(n.inPlace), sum: ids(n.sum)}
		for _, group := range n.max {
			cs[i].max = append(cs[i].max, ids(group))
		}
	}
	const limit = MaxCost + 1
	root := idx[""]
	prev, cur := make([]int, len(topo)), make([]int, len(topo))
	for d := 0; d <= MaxDepth; d++ {
		for i, c := range cs {
			n := 1
			for _, t := range c.inPlace {
				n += cur[t]
			}
			if d > 0 {
				for _, group := range c.max {
					m := 0
					for _, t := range group {
						m = max(m, prev[t])
					}
					n += m
				}
				for _, t := range c.sum {
					n += prev[t]
				}
			}
			cur[i] = min(n, limit)
		}
		if cur[root] >= limit {
			return fmt.Errorf("schema: checking a value %d levels deep could apply more than %d subschemas along one path (through allOf, anyOf, oneOf, $ref and the like): too costly to check", d, MaxCost)
		}
		if d > 0 && slices.Equal(cur, prev) {
			break // no deeper value costs more
		}
		prev, cur = cur, prev
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func positive(n json.Number) bool {
	f, err := n.Float64()
	return err == nil && f > 0
}

// whole reports whether n is a whole number a count can be (below 2^53).
func whole(n json.Number) bool {
	f, err := n.Float64()
	return err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53
}
