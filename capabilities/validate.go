//go:build !ccrunfront

package capabilities

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// compiled is a JSON Schema resolved for validation. The library decides
// whether a value is valid; explain then says where and why, since the
// library stops at the first problem and names schema locations, not
// instance ones. A compiled schema is safe for concurrent use.
type compiled struct {
	root     *jsonschema.Schema
	resolved *jsonschema.Resolved
	draft7   bool
}

// errNoRemote refuses every $ref that leaves the document: a schema must
// not make ccrun read a file or reach the network.
var errNoRemote = errors.New("references outside the schema are not loaded")

// refuseLoad is the loader of every schema: it loads nothing.
func refuseLoad(*url.URL) (*jsonschema.Schema, error) { return nil, errNoRemote }

// Supported values of $schema.
const (
	draft2020URL = "https://json-schema.org/draft/2020-12/schema"
	draft7URL    = "http://json-schema.org/draft-07/schema#"
	draft7URLS   = "https://json-schema.org/draft-07/schema#"
)

// compileSchema checks raw as a JSON Schema (draft 2020-12 unless its
// $schema says draft-07) and resolves it against base. Nothing outside raw
// is loaded.
func compileSchema(raw []byte, base string) (*compiled, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	top, _ := doc.(map[string]any)
	draft7 := top["$schema"] == draft7URL || top["$schema"] == draft7URLS
	if err := checkSchemaDoc(doc, "", true, draft7); err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{BaseURI: base, Loader: refuseLoad})
	if err != nil {
		return nil, err
	}
	return &compiled{root: &s, resolved: rs, draft7: s.Schema == draft7URL || s.Schema == draft7URLS}, nil
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

// checkSchemaDoc checks what a meta-schema would and the library does not:
// the names of types, counts that are not negative, a supported $schema,
// no keyword that differs from a known one only in case, and no draft-07
// form in a draft 2020-12 schema (the library would ignore it). v is the
// schema as decoded with UseNumber; at is its location, for messages.
func checkSchemaDoc(v any, at string, root, draft7 bool) error {
	m, ok := v.(map[string]any)
	if !ok {
		if _, ok := v.(bool); ok {
			return nil
		}
		return fmt.Errorf("%s: want a schema (an object or a boolean)", where(at))
	}
	for k, val := range m {
		if want, ok := libraryKeywords[strings.ToLower(k)]; ok && want != k {
			return fmt.Errorf("%s: unknown keyword %q (did you mean %q?)", where(at), k, want)
		}
		switch k {
		case "$schema":
			if !root {
				continue // the library reads the root's alone
			}
			s, _ := val.(string)
			if s != draft2020URL && s != draft7URL && s != draft7URLS {
				return fmt.Errorf("%s: $schema %s: want draft 2020-12 (%s) or draft-07", where(at), strconv.Quote(fmt.Sprint(val)), draft2020URL)
			}
		case "type":
			var ts []any
			switch t := val.(type) {
			case string:
				ts = []any{t}
			case []any:
				if len(t) == 0 {
					return fmt.Errorf("%s: type: want at least one type", where(at))
				}
				ts = t
			default:
				return fmt.Errorf("%s: type: want a string or an array of strings", where(at))
			}
			seen := map[string]bool{}
			for _, t := range ts {
				s, ok := t.(string)
				if !ok || !slices.Contains(jsonTypes, s) {
					return fmt.Errorf("%s: type %s: want one of %s", where(at), strconv.Quote(fmt.Sprint(t)), strings.Join(jsonTypes, ", "))
				}
				if seen[s] {
					return fmt.Errorf("%s: type %q listed twice", where(at), s)
				}
				seen[s] = true
			}
		case "multipleOf":
			if n, ok := val.(json.Number); !ok || !positive(n) {
				return fmt.Errorf("%s: multipleOf: want a number above zero", where(at))
			}
		case "items":
			if list, ok := val.([]any); ok {
				if !draft7 {
					return fmt.Errorf("%s: items: an array of schemas is draft-07; draft 2020-12 says prefixItems", where(at))
				}
				for i, s := range list {
					if err := checkSchemaDoc(s, at+"/items/"+strconv.Itoa(i), false, draft7); err != nil {
						return err
					}
				}
			} else if err := checkSchemaDoc(val, at+"/items", false, draft7); err != nil {
				return err
			}
		case "dependencies":
			if !draft7 {
				return fmt.Errorf("%s: dependencies is draft-07; draft 2020-12 says dependentRequired or dependentSchemas", where(at))
			}
			if deps, ok := val.(map[string]any); ok {
				for name, d := range deps {
					if _, ok := d.([]any); ok {
						continue
					}
					if err := checkSchemaDoc(d, at+"/dependencies/"+escapePointer(name), false, draft7); err != nil {
						return err
					}
				}
			}
		}
		if slices.Contains(countKeywords, k) {
			if n, ok := val.(json.Number); !ok || strings.HasPrefix(n.String(), "-") {
				return fmt.Errorf("%s: %s: want a whole number, not negative", where(at), k)
			}
		}
		if slices.Contains(schemaKeywords, k) {
			if err := checkSchemaDoc(val, at+"/"+k, false, draft7); err != nil {
				return err
			}
		}
		if slices.Contains(schemaListKeywords, k) {
			list, ok := val.([]any)
			if !ok || len(list) == 0 && k != "prefixItems" {
				return fmt.Errorf("%s: %s: want a non-empty array of schemas", where(at), k)
			}
			for i, s := range list {
				if err := checkSchemaDoc(s, at+"/"+k+"/"+strconv.Itoa(i), false, draft7); err != nil {
					return err
				}
			}
		}
		if slices.Contains(schemaMapKeywords, k) {
			sub, ok := val.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: %s: want an object of schemas", where(at), k)
			}
			for name, s := range sub {
				if err := checkSchemaDoc(s, at+"/"+k+"/"+escapePointer(name), false, draft7); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func where(at string) string {
	if at == "" {
		return "schema"
	}
	return "schema at " + at
}

func positive(n json.Number) bool {
	r, ok := new(big.Rat).SetString(n.String())
	return ok && r.Sign() > 0
}

// errNumberRange: a number of the instance has no float64 form.
var errNumberRange = errors.New("number out of range")

// instance turns a document decoded with UseNumber into the values the
// library validates: json.Number becomes int64 when it is a whole number
// that fits, float64 otherwise. A number too large for a float64 is an
// error at its pointer.
func instance(v any, ptr string) (any, string, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, "", nil
		}
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, ptr, errNumberRange
		}
		return f, "", nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, at, err := instance(e, ptr+"/"+escapePointer(k))
			if err != nil {
				return nil, at, err
			}
			out[k] = c
		}
		return out, "", nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, at, err := instance(e, ptr+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, at, err
			}
			out[i] = c
		}
		return out, "", nil
	}
	return v, "", nil
}

// objectSchema reports whether s only accepts objects.
func objectSchema(s *compiled) bool {
	t := s.root.Types
	if s.root.Type != "" {
		t = []string{s.root.Type}
	}
	return len(t) == 1 && t[0] == "object"
}

// validate checks v (decoded with UseNumber) against c. It returns nil
// when v is valid, else at least one problem.
func (c *compiled) validate(v any) []problem {
	inst, at, err := instance(v, "")
	if err != nil {
		return []problem{{ptr: at, msg: err.Error()}}
	}
	verr := c.resolved.Validate(inst)
	if verr == nil {
		return nil
	}
	x := &explainer{c: c, res: map[string]*regexp.Regexp{}}
	var out []problem
	x.eval(c.root, inst, "", &out)
	if len(out) == 0 {
		// The library found what explain does not model: say what it said.
		out = append(out, problem{msg: "does not match the schema: " + strings.ReplaceAll(verr.Error(), parametersURL, "parameters")})
	}
	return out
}

// maxExplainDepth bounds the schemas explain follows at once ($ref cycles).
const maxExplainDepth = 256

// explainer lists every problem of an instance, with its location. It
// models the keywords of draft 2020-12 and draft-07 except the ones that
// need annotations (unevaluatedItems, unevaluatedProperties) and
// $dynamicRef; those are left to the library's verdict.
type explainer struct {
	c     *compiled
	res   map[string]*regexp.Regexp
	depth int
}

func (x *explainer) valid(s *jsonschema.Schema, v any, ptr string) bool {
	var scratch []problem
	x.eval(s, v, ptr, &scratch)
	return len(scratch) == 0
}

func (x *explainer) eval(s *jsonschema.Schema, v any, ptr string, out *[]problem) {
	if s == nil || x.depth > maxExplainDepth {
		return
	}
	x.depth++
	defer func() { x.depth-- }()
	add := func(p problem) {
		p.ptr = ptr
		*out = append(*out, p)
	}
	if s.Ref != "" {
		if ref := x.deref(s.Ref); ref != nil {
			x.eval(ref, v, ptr, out)
		}
		if x.c.draft7 {
			return
		}
	}
	if isFalseSchema(s) {
		add(problem{kind: falseProblem, msg: "not allowed"})
		return
	}

	typ := jsonTypeOf(v)
	if s.Type != "" || len(s.Types) > 0 {
		want := s.Types
		if s.Type != "" {
			want = []string{s.Type}
		}
		if !slices.Contains(want, typ) && !(typ == "integer" && slices.Contains(want, "number")) {
			add(problem{kind: typeProblem, msg: fmt.Sprintf("got %s, want %s", typ, strings.Join(want, " or "))})
		}
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonschema.Equal(e, v) }) {
		add(problem{kind: enumProblem, msg: "value must be one of " + showValues(s.Enum)})
	}
	if s.Const != nil && !jsonschema.Equal(*s.Const, v) {
		add(problem{msg: "value must be " + showValues([]any{*s.Const})})
	}

	if n, ok := ratOf(v); ok {
		x.numbers(s, n, add)
	}
	if str, ok := v.(string); ok {
		n := utf8.RuneCountInString(str)
		if s.MinLength != nil && n < *s.MinLength {
			add(problem{kind: minLengthProblem, msg: fmt.Sprintf("length must be >= %d, but got %d", *s.MinLength, n)})
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			add(problem{msg: fmt.Sprintf("length must be <= %d, but got %d", *s.MaxLength, n)})
		}
		if s.Pattern != "" {
			if re := x.regexp(s.Pattern); re != nil && !re.MatchString(str) {
				add(problem{kind: patternProblem, got: str, msg: fmt.Sprintf("%s does not match pattern %s", strconv.QuoteToASCII(str), strconv.QuoteToASCII(s.Pattern))})
			}
		}
	}

	for _, sub := range s.AllOf {
		x.eval(sub, v, ptr, out)
	}
	if len(s.AnyOf) > 0 && !slices.ContainsFunc(s.AnyOf, func(sub *jsonschema.Schema) bool { return x.valid(sub, v, ptr) }) {
		add(problem{msg: "matches none of the schemas of anyOf"})
	}
	if len(s.OneOf) > 0 {
		n := 0
		for _, sub := range s.OneOf {
			if x.valid(sub, v, ptr) {
				n++
			}
		}
		if n != 1 {
			add(problem{msg: fmt.Sprintf("matches %d of the schemas of oneOf, want exactly one", n)})
		}
	}
	if s.Not != nil && x.valid(s.Not, v, ptr) {
		add(problem{msg: "matches the schema of not"})
	}
	if s.If != nil {
		if x.valid(s.If, v, ptr) {
			x.eval(s.Then, v, ptr, out)
		} else {
			x.eval(s.Else, v, ptr, out)
		}
	}

	switch v := v.(type) {
	case []any:
		x.array(s, v, ptr, out, add)
	case map[string]any:
		x.object(s, v, ptr, out, add)
	}
}

func (x *explainer) numbers(s *jsonschema.Schema, n *big.Rat, add func(problem)) {
	bound := func(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }
	show := func(r *big.Rat) string { return r.FloatString(0) }
	if !n.IsInt() {
		show = func(r *big.Rat) string { f, _ := r.Float64(); return strconv.FormatFloat(f, 'g', -1, 64) }
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		if q := new(big.Rat).Quo(n, bound(*s.MultipleOf)); !q.IsInt() {
			add(problem{msg: fmt.Sprintf("%s is not a multiple of %g", show(n), *s.MultipleOf)})
		}
	}
	if s.Minimum != nil && n.Cmp(bound(*s.Minimum)) < 0 {
		add(problem{msg: fmt.Sprintf("must be >= %g but found %s", *s.Minimum, show(n))})
	}
	if s.Maximum != nil && n.Cmp(bound(*s.Maximum)) > 0 {
		add(problem{msg: fmt.Sprintf("must be <= %g but found %s", *s.Maximum, show(n))})
	}
	if s.ExclusiveMinimum != nil && n.Cmp(bound(*s.ExclusiveMinimum)) <= 0 {
		add(problem{msg: fmt.Sprintf("must be > %g but found %s", *s.ExclusiveMinimum, show(n))})
	}
	if s.ExclusiveMaximum != nil && n.Cmp(bound(*s.ExclusiveMaximum)) >= 0 {
		add(problem{msg: fmt.Sprintf("must be < %g but found %s", *s.ExclusiveMaximum, show(n))})
	}
}

func (x *explainer) array(s *jsonschema.Schema, v []any, ptr string, out *[]problem, add func(problem)) {
	item := func(i int) string { return ptr + "/" + strconv.Itoa(i) }
	if x.c.draft7 {
		if s.ItemsArray != nil {
			for i, sub := range s.ItemsArray {
				if i < len(v) {
					x.eval(sub, v[i], item(i), out)
				}
			}
			for i := len(s.ItemsArray); i < len(v) && s.AdditionalItems != nil; i++ {
				x.eval(s.AdditionalItems, v[i], item(i), out)
			}
		} else if s.Items != nil {
			for i, e := range v {
				x.eval(s.Items, e, item(i), out)
			}
		}
	} else {
		for i, sub := range s.PrefixItems {
			if i < len(v) {
				x.eval(sub, v[i], item(i), out)
			}
		}
		for i := len(s.PrefixItems); i < len(v) && s.Items != nil; i++ {
			x.eval(s.Items, v[i], item(i), out)
		}
	}
	if s.Contains != nil {
		n := 0
		for i, e := range v {
			if x.valid(s.Contains, e, item(i)) {
				n++
			}
		}
		lo := 1
		if s.MinContains != nil {
			lo = *s.MinContains
		}
		if n < lo {
			add(problem{msg: fmt.Sprintf("%d items match contains, want at least %d", n, lo)})
		}
		if s.MaxContains != nil && n > *s.MaxContains {
			add(problem{msg: fmt.Sprintf("%d items match contains, want at most %d", n, *s.MaxContains)})
		}
	}
	if s.MinItems != nil && len(v) < *s.MinItems {
		add(problem{msg: fmt.Sprintf("minItems: got %d, want %d", len(v), *s.MinItems)})
	}
	if s.MaxItems != nil && len(v) > *s.MaxItems {
		add(problem{msg: fmt.Sprintf("maxItems: got %d, want %d", len(v), *s.MaxItems)})
	}
	if s.UniqueItems {
		seen := map[string]int{}
		for i, e := range v {
			k := canonical(e)
			if j, dup := seen[k]; dup {
				add(problem{msg: fmt.Sprintf("items at %d and %d are equal", j, i)})
				break
			}
			seen[k] = i
		}
	}
}

func (x *explainer) object(s *jsonschema.Schema, v map[string]any, ptr string, out *[]problem, add func(problem)) {
	field := func(name string) string { return ptr + "/" + escapePointer(name) }
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	slices.Sort(names)
	evaluated := map[string]bool{}
	for _, k := range names {
		if sub, ok := s.Properties[k]; ok {
			x.eval(sub, v[k], field(k), out)
			evaluated[k] = true
		}
		for pat, sub := range s.PatternProperties {
			if re := x.regexp(pat); re != nil && re.MatchString(k) {
				x.eval(sub, v[k], field(k), out)
				evaluated[k] = true
			}
		}
	}
	if s.AdditionalProperties != nil {
		var extra []string
		for _, k := range names {
			if !evaluated[k] {
				extra = append(extra, k)
			}
		}
		if isFalseSchema(s.AdditionalProperties) {
			if len(extra) > 0 {
				add(problem{kind: additionalProblem, props: extra, msg: "fields not allowed"})
			}
		} else {
			for _, k := range extra {
				x.eval(s.AdditionalProperties, v[k], field(k), out)
			}
		}
	}
	if s.PropertyNames != nil {
		for _, k := range names {
			var why []problem
			x.eval(s.PropertyNames, k, ptr, &why)
			if len(why) > 0 {
				msgs := make([]string, len(why))
				for i, p := range why {
					msgs[i] = p.msg
				}
				add(problem{kind: propertyNamesProblem, prop: k, msg: strings.Join(msgs, "; ")})
			}
		}
	}
	if s.MinProperties != nil && len(v) < *s.MinProperties {
		add(problem{msg: fmt.Sprintf("minProperties: got %d, want %d", len(v), *s.MinProperties)})
	}
	if s.MaxProperties != nil && len(v) > *s.MaxProperties {
		add(problem{msg: fmt.Sprintf("maxProperties: got %d, want %d", len(v), *s.MaxProperties)})
	}
	missing := func(req []string) []string {
		var m []string
		for _, r := range req {
			if _, ok := v[r]; !ok && !slices.Contains(m, r) {
				m = append(m, r)
			}
		}
		return m
	}
	if m := missing(s.Required); len(m) > 0 {
		add(problem{kind: requiredProblem, props: m, msg: "missing required fields"})
	}
	depReq, depSchemas := s.DependentRequired, s.DependentSchemas
	if x.c.draft7 {
		depReq, depSchemas = s.DependencyStrings, s.DependencySchemas
	}
	for _, k := range names {
		if m := missing(depReq[k]); len(m) > 0 {
			add(problem{kind: requiredProblem, props: m, msg: "missing required fields"})
		}
		if sub, ok := depSchemas[k]; ok {
			x.eval(sub, v, ptr, out)
		}
	}
}

// deref finds the schema a local $ref names ("#", "#/json/pointer", or
// the root's $id followed by one); nil when it cannot.
func (x *explainer) deref(ref string) *jsonschema.Schema {
	if id := x.c.root.ID; id != "" && strings.HasPrefix(ref, id+"#") {
		ref = ref[len(id):]
	}
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil || frag != "" && !strings.HasPrefix(frag, "/") {
		return nil
	}
	s := x.c.root
	if frag == "" {
		return s
	}
	toks := strings.Split(frag[1:], "/")
	for i := 0; i < len(toks) && s != nil; i++ {
		next := func() (string, bool) {
			if i+1 >= len(toks) {
				return "", false
			}
			i++
			return strings.NewReplacer("~1", "/", "~0", "~").Replace(toks[i]), true
		}
		index := func(list []*jsonschema.Schema) *jsonschema.Schema {
			t, ok := next()
			n, err := strconv.Atoi(t)
			if !ok || err != nil || n < 0 || n >= len(list) {
				return nil
			}
			return list[n]
		}
		key := func(m map[string]*jsonschema.Schema) *jsonschema.Schema {
			t, ok := next()
			if !ok {
				return nil
			}
			return m[t]
		}
		switch toks[i] {
		case "$defs":
			s = key(s.Defs)
		case "definitions":
			s = key(s.Definitions)
		case "properties":
			s = key(s.Properties)
		case "patternProperties":
			s = key(s.PatternProperties)
		case "dependentSchemas":
			s = key(s.DependentSchemas)
		case "allOf":
			s = index(s.AllOf)
		case "anyOf":
			s = index(s.AnyOf)
		case "oneOf":
			s = index(s.OneOf)
		case "prefixItems":
			s = index(s.PrefixItems)
		case "items":
			if s.ItemsArray != nil {
				s = index(s.ItemsArray)
			} else {
				s = s.Items
			}
		case "additionalProperties":
			s = s.AdditionalProperties
		case "additionalItems":
			s = s.AdditionalItems
		case "propertyNames":
			s = s.PropertyNames
		case "contains":
			s = s.Contains
		case "not":
			s = s.Not
		case "if":
			s = s.If
		case "then":
			s = s.Then
		case "else":
			s = s.Else
		default:
			return nil
		}
	}
	return s
}

func (x *explainer) regexp(pattern string) *regexp.Regexp {
	re, ok := x.res[pattern]
	if !ok {
		re, _ = regexp.Compile(pattern) // the library compiled it already
		x.res[pattern] = re
	}
	return re
}

// isEmptySchema reports whether s is {} (true).
func isEmptySchema(s *jsonschema.Schema) bool { return reflect.ValueOf(*s).IsZero() }

// isFalseSchema reports whether s rejects every value: false, which the
// library reads as {"not": {}}.
func isFalseSchema(s *jsonschema.Schema) bool { return s.Not != nil && isEmptySchema(s.Not) }

// jsonTypeOf names the JSON type of an instance value.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func ratOf(v any) (*big.Rat, bool) {
	switch v := v.(type) {
	case int64:
		return new(big.Rat).SetInt64(v), true
	case float64:
		r := new(big.Rat).SetFloat64(v)
		return r, r != nil
	}
	return nil, false
}

// canonical is a key equal for JSON-equal values (numbers by value).
func canonical(v any) string {
	if n, ok := ratOf(v); ok {
		return "n" + n.RatString()
	}
	b, _ := json.Marshal(v)
	return "j" + string(b)
}

func showValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}
