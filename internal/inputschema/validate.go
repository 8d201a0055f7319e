package inputschema

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ccrun/ccrun/internal/jsonpos"
)

// A Problem is one value of a document that its schema refuses.
type Problem struct {
	// Pointer is the value's JSON pointer (RFC 6901); for a missing
	// member, the member's.
	Pointer string
	// Line and Column place it (1-based, Column in characters); for a
	// missing member, its object.
	Line, Column int
	// Keyword is the keyword that refused it: "type", "required",
	// "additionalProperties" (a member no subschema allows), "false" (a
	// subschema that allows nothing), "propertyNames" (the member's
	// name), "pattern", …
	Keyword string
	// Message is the library's, said of this value alone.
	Message string
	// Got is the string a "pattern" or "minLength" refused.
	Got string
}

// String writes line:col: /pointer: message (jsonpos.Place).
func (p Problem) String() string { return jsonpos.Place("", p.Line, p.Column, p.Pointer, p.Message) }

// Error is a document its schema refuses (Check). Every front end words it
// so: "input:line:col: /pointer: message", one line each.
type Error struct {
	Problems []Problem // at least one, in document order
}

// Error is one line a problem, each placed as input:line:column with its
// JSON pointer.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = jsonpos.Place("input", p.Line, p.Column, p.Pointer, p.Message)
	}
	return strings.Join(lines, "\n")
}

// MaxInput is the largest document Check takes: 16 MiB.
const MaxInput = 16 << 20

// Check parses data and validates it against s: the one check of a tool's
// input. Empty data is {}. The error is an *Error (a *SyntaxError's
// problem is its one problem).
func (s *Schema) Check(data []byte) error {
	if len(strings.TrimSpace(string(data))) == 0 {
		data = []byte("{}")
	}
	if len(data) > MaxInput {
		return &Error{Problems: []Problem{{Message: fmt.Sprintf("input of %d bytes: past the limit of %d bytes (16 MiB)", len(data), MaxInput)}}}
	}
	d, err := Parse(data)
	if err != nil {
		p := Problem{Keyword: "json", Message: err.Error()}
		var je *jsonpos.Error
		if errors.As(err, &je) {
			p.Pointer, p.Line, p.Column, p.Message = je.Pointer, je.Line, je.Column, je.Msg
			if je.Pointer == "" {
				p.Message = "malformed JSON: " + je.Msg
			}
		}
		return &Error{Problems: []Problem{p}}
	}
	if ps := s.Validate(d); ps != nil {
		return &Error{Problems: ps}
	}
	return nil
}

// maxProblems bounds the problems Validate reports, and so its work.
const maxProblems = 20

// Validate checks d's value against s. It returns nil when the library
// finds it valid, else at least one problem, in document order.
func (s *Schema) Validate(d *jsonpos.Document) []Problem {
	v := instance(d.Value)
	err := s.resolved.Validate(v)
	if err == nil {
		return nil
	}
	w := &walker{s: s, d: d}
	w.node("", v, "")
	if len(w.out) == 0 {
		// The library refused what no subschema here explains (it should
		// not happen): say what it said, of the whole document.
		w.report("", keyword(leaf(err)), leaf(err), v)
	}
	slices.SortStableFunc(w.out, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		if a.Column != b.Column {
			return a.Column - b.Column
		}
		return strings.Compare(a.Pointer, b.Pointer)
	})
	return w.out
}

// walker finds where a value is invalid, asking the library of each
// subschema it reaches.
type walker struct {
	s   *Schema
	d   *jsonpos.Document
	out []Problem
}

// valid asks the library whether v is valid against the subschema at
// ptr; err is its reason when not.
func (w *walker) valid(ptr string, v any) (bool, error) {
	rs, err := w.s.probe(ptr)
	if err != nil {
		return false, err
	}
	err = rs.Validate(v)
	return err == nil, err
}

func (w *walker) full() bool { return len(w.out) >= maxProblems }

func (w *walker) report(ptr, kw, msg string, v any) {
	if w.full() {
		return
	}
	p := Problem{Pointer: ptr, Keyword: kw, Message: msg}
	p.Line, p.Column = w.d.Position(ptr)
	if s, ok := v.(string); ok && (kw == "pattern" || kw == "minLength") {
		p.Got = s
	}
	w.out = append(w.out, p)
}

// node reports the problems of v (at instance pointer at) against the
// subschema at sp, and whether it found any.
func (w *walker) node(sp string, v any, at string) bool {
	if w.full() {
		return true
	}
	sch := w.s.at(sp)
	if b, ok := sch.(bool); ok {
		if b {
			return false
		}
		w.report(at, "false", "not allowed", v)
		return true
	}
	m, _ := sch.(map[string]any)
	ok, err := w.valid(sp, v)
	if ok {
		return false
	}
	found := false
	// Subschemas applied to v itself.
	if ref, ok := m["$ref"].(string); ok {
		if target, ok := w.s.refTarget(ref); ok {
			found = w.node(target, v, at) || found
		}
		if w.s.draft7 {
			return w.own(found, sp, m, v, at, err)
		}
	}
	if list, ok := m["allOf"].([]any); ok {
		for i := range list {
			found = w.node(sp+"/allOf/"+strconv.Itoa(i), v, at) || found
		}
	}
	if _, ok := m["if"]; ok {
		if yes, _ := w.valid(sp+"/if", v); yes {
			if _, ok := m["then"]; ok {
				found = w.node(sp+"/then", v, at) || found
			}
		} else if _, ok := m["else"]; ok {
			found = w.node(sp+"/else", v, at) || found
		}
	}
	obj, isObj := v.(map[string]any)
	if isObj {
		for _, kw := range []string{"dependentSchemas", "dependencies"} {
			deps, _ := m[kw].(map[string]any)
			for _, name := range sortedKeys(deps) {
				if _, ok := deps[name].(map[string]any); !ok {
					if _, ok := deps[name].(bool); !ok {
						continue // draft-07's list of names
					}
				}
				if _, has := obj[name]; has {
					found = w.node(sp+"/"+kw+"/"+jsonpos.EscapePointer(name), v, at) || found
				}
			}
		}
	}
	// Subschemas applied to v's members or items.
	switch v := v.(type) {
	case map[string]any:
		found = w.members(sp, m, v, at) || found
	case []any:
		found = w.items(sp, m, v, at) || found
	}
	return w.own(found, sp, m, v, at, err)
}

// own reports v's own problem (the library's reason at sp) when none of
// its parts or subschemas explained it.
func (w *walker) own(found bool, sp string, m map[string]any, v any, at string, err error) bool {
	if found {
		return true
	}
	msg := leaf(err)
	kw := keyword(msg)
	obj, _ := v.(map[string]any)
	missing := func(list any, say func(name string) string) {
		names, _ := list.([]any)
		for _, n := range names {
			name, _ := n.(string)
			if _, has := obj[name]; !has {
				w.report(at+"/"+jsonpos.EscapePointer(name), kw, say(name), nil)
				found = true
			}
		}
	}
	// One problem per missing member, at the member's pointer.
	switch kw {
	case "required":
		missing(m["required"], func(name string) string { return fmt.Sprintf("required: missing properties: [%q]", name) })
	case "dependentRequired":
		deps, _ := m["dependentRequired"].(map[string]any)
		if deps == nil {
			deps, _ = m["dependencies"].(map[string]any)
		}
		for _, dep := range sortedKeys(deps) {
			if _, has := obj[dep]; has {
				missing(deps[dep], func(name string) string {
					return fmt.Sprintf("dependentRequired[%q]: missing properties [%q]", dep, name)
				})
			}
		}
	case "not":
		if _, ok := m["not"]; !ok {
			// a false unevaluatedProperties or unevaluatedItems
			msg = "unevaluatedProperties, unevaluatedItems: a member or item that no other keyword evaluates is not allowed"
		}
	}
	if !found {
		w.report(at, kw, msg, v)
	}
	return true
}

// members reports the problems of obj's members, in document order.
func (w *walker) members(sp string, m map[string]any, obj map[string]any, at string) bool {
	props, _ := m["properties"].(map[string]any)
	pats, _ := m["patternProperties"].(map[string]any)
	_, additional := m["additionalProperties"]
	_, names := m["propertyNames"]
	found := false
	for _, name := range w.order(obj, at) {
		child := at + "/" + jsonpos.EscapePointer(name)
		matched := false
		if _, ok := props[name]; ok {
			matched = true
			found = w.node(sp+"/properties/"+jsonpos.EscapePointer(name), obj[name], child) || found
		}
		for _, pat := range sortedKeys(pats) {
			if re := w.s.patterns[pat]; re != nil && re.MatchString(name) {
				matched = true
				found = w.node(sp+"/patternProperties/"+jsonpos.EscapePointer(pat), obj[name], child) || found
			}
		}
		if !matched && additional {
			if b, ok := m["additionalProperties"].(bool); ok && !b {
				w.report(child, "additionalProperties", fmt.Sprintf("unexpected additional properties [%q]", name), nil)
				found = true
			} else {
				found = w.node(sp+"/additionalProperties", obj[name], child) || found
			}
		}
		if names {
			if ok, err := w.valid(sp+"/propertyNames", name); !ok {
				w.report(child, "propertyNames", fmt.Sprintf("property name %s: %s", strconv.QuoteToASCII(name), leaf(err)), nil)
				found = true
			}
		}
	}
	return found
}

// items reports the problems of arr's items.
func (w *walker) items(sp string, m map[string]any, arr []any, at string) bool {
	found := false
	prefix, _ := m["prefixItems"].([]any)
	rest := "items"
	if w.s.draft7 {
		if list, ok := m["items"].([]any); ok {
			prefix, rest = list, "additionalItems"
		}
	}
	prefixKw := "prefixItems"
	if w.s.draft7 {
		prefixKw = "items"
	}
	_, hasRest := m[rest]
	for i, e := range arr {
		child := at + "/" + strconv.Itoa(i)
		switch {
		case i < len(prefix):
			found = w.node(sp+"/"+prefixKw+"/"+strconv.Itoa(i), e, child) || found
		case hasRest:
			found = w.node(sp+"/"+rest, e, child) || found
		}
	}
	return found
}

// order is obj's member names in document order.
func (w *walker) order(obj map[string]any, at string) []string {
	names := sortedKeys(obj)
	slices.SortStableFunc(names, func(a, b string) int {
		return w.d.Offset(at+"/"+jsonpos.EscapePointer(a)) - w.d.Offset(at+"/"+jsonpos.EscapePointer(b))
	})
	return names
}

// refTarget is the pointer of the subschema ref names (Compile resolved
// every one).
func (s *Schema) refTarget(ref string) (string, bool) {
	p, ok := s.refs[ref]
	return p, ok
}

// leaf is the library's own reason, without the chain of schemas it went
// through ("validating …: ").
func leaf(err error) string {
	if err == nil {
		return ""
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	msg := err.Error()
	// anyOf and oneOf say each branch's reason on a line of its own,
	// after a list of schemas that names none: keep the reasons.
	if first, rest, ok := strings.Cut(msg, "\n"); ok {
		kw, _, _ := strings.Cut(first, ":")
		var reasons []string
		for _, line := range strings.Split(rest, "\n") {
			if line = strings.TrimSpace(chainRE.ReplaceAllString(line, "")); line != "" {
				reasons = append(reasons, line)
			}
		}
		msg = kw + ": did not validate against any of its schemas: " + strings.Join(reasons, "; ")
	} else {
		switch kw, _, _ := strings.Cut(msg, ":"); kw {
		case "oneOf":
			if strings.HasPrefix(msg, "oneOf: validated against both") {
				msg = "oneOf: validated against more than one of its schemas"
			} else {
				msg = "oneOf: did not validate against any of its schemas"
			}
		case "not":
			msg = "not: validated against the schema of not"
		case "contains":
			msg = "contains: no item matches the schema of contains"
		case "multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			msg = numbers(msg)
		}
	}
	return clean(msg)
}

var (
	ratRE   = regexp.MustCompile(`-?\d+/\d+`)
	fixedRE = regexp.MustCompile(`(-?\d+)\.(\d*[1-9])?0+\b`)
)

// numbers writes the library's numbers as a person would: its fractions
// (-1/1, 5/4) as decimals, its %f bounds (0.500000) without trailing
// zeros.
func numbers(msg string) string {
	msg = ratRE.ReplaceAllStringFunc(msg, func(s string) string {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return s
		}
		if r.IsInt() {
			return r.Num().String()
		}
		f, _ := r.Float64()
		return strconv.FormatFloat(f, 'g', -1, 64)
	})
	return fixedRE.ReplaceAllStringFunc(msg, func(s string) string {
		m := fixedRE.FindStringSubmatch(s)
		if m[2] == "" {
			return m[1]
		}
		return m[1] + "." + m[2]
	})
}

var chainRE = regexp.MustCompile(`^(validating (<anonymous schema>|anchor \S+|\S+): )+`)

// keyword is the keyword a library message starts with.
func keyword(msg string) string {
	if strings.HasPrefix(msg, "unexpected additional properties") {
		return "additionalProperties"
	}
	kw, _, _ := strings.Cut(msg, ":")
	if i := strings.IndexAny(kw, " [\""); i >= 0 {
		kw = kw[:i]
	}
	return kw
}
