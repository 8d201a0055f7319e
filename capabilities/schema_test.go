package capabilities

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
)

func TestSchemaPublished(t *testing.T) {
	t.Parallel()
	s := Schema()
	s[0] = 'x'
	if bytes.Equal(s, Schema()) {
		t.Fatal("Schema returns shared bytes")
	}
	// The published file is a draft 2020-12 schema any validator can use.
	var doc jsonschema.Schema
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	if _, err := doc.Resolve(nil); err != nil {
		t.Fatalf("the published schema does not resolve: %v", err)
	}
	var top struct {
		ID         string `json:"$id"`
		Properties map[string]struct {
			Properties map[string]any `json:"properties"`
			Items      struct {
				Properties map[string]any `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(Schema(), &top); err != nil {
		t.Fatal(err)
	}
	if top.ID != SchemaID {
		t.Errorf("$id = %q; want SchemaID %q", top.ID, SchemaID)
	}
	// The "did you mean" hints know every field the schema does.
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	var topKeys []string
	for k := range top.Properties {
		topKeys = append(topKeys, k)
	}
	slices.Sort(topKeys)
	for ptr, got := range map[string][]string{
		"":        topKeys,
		"/entry":  keys(top.Properties["entry"].Properties),
		"/limits": keys(top.Properties["limits"].Properties),
		"/mounts": keys(top.Properties["mounts"].Items.Properties),
	} {
		if diff := cmp.Diff(got, sorted(knownFields[ptr])); diff != "" {
			t.Errorf("knownFields[%q] out of step with the schema (-schema +knownFields):\n%s", ptr, diff)
		}
	}
}

// TestManifestFiles checks the manifests under testdata/manifests: every
// file in valid/ parses; every file in invalid/ fails with exactly the
// errors its .want file lists, as "line:col pointer".
func TestManifestFiles(t *testing.T) {
	t.Parallel()
	valid, _ := filepath.Glob("testdata/manifests/valid/*.json")
	invalid, _ := filepath.Glob("testdata/manifests/invalid/*.json")
	if len(valid) == 0 || len(invalid) == 0 {
		t.Fatal("no testdata manifests")
	}
	for _, f := range valid {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(f, data); err != nil {
				t.Errorf("Parse: %v", err)
			}
		})
	}
	for _, f := range invalid {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := readWant(t, strings.TrimSuffix(f, ".json")+".want")
			_, err = Parse(f, data)
			if err == nil {
				t.Fatalf("Parse: no error; want %q", want)
			}
			var got []string
			for _, fe := range fieldErrors(t, err) {
				got = append(got, strings.TrimSpace(fmt.Sprintf("%d:%d %s", fe.Line, fe.Column, fe.Pointer)))
				if !strings.HasPrefix(fe.Error(), f+":") {
					t.Errorf("%q does not start with the file's name", fe)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}

func readWant(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}
