package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/internal/inputschema"
	"github.com/ccrun/ccrun/internal/runtimehook"
	"github.com/ccrun/ccrun/internal/sensitive"
)

// The limits of one capability_create call.
const (
	maxCreateFiles = 64
	maxCreateBytes = 16 << 20 // all files together
)

const createDescription = "Write a new capability of this project into .ccrun/capabilities/<name>/: its capability.json " +
	"(validated against ccrun's published schema; errors name the field) and its files (a script, a .wasm module). " +
	"It grants nothing: the first run of the new capability is asked of the person like any other, and so is every " +
	"run after its files change. With replace, an existing capability of that name is replaced (and asked again)."

const createSchema = `{"type":"object","required":["manifest"],"additionalProperties":false,"properties":{
"manifest":{"type":"object","description":"the capability.json, as an object (its $schema: https://github.com/ccrun/ccrun/capabilities/capability.schema.json)"},
"files":{"type":"array","maxItems":64,"items":{"type":"object","required":["path","content"],"additionalProperties":false,"properties":{
"path":{"type":"string","description":"relative to the capability's directory"},
"content":{"type":"string"},
"encoding":{"type":"string","enum":["utf-8","base64"],"description":"of content; default utf-8 (base64 for a .wasm module)"},
"executable":{"type":"boolean"}}}},
"replace":{"type":"boolean","description":"replace an existing capability of that name"}}}`

// createInput is createSchema compiled by ccrun's one validator: its
// arguments are checked as every other tool's input is.
var createInput = sync.OnceValues(func() (*inputschema.Schema, error) { return inputschema.Compile([]byte(createSchema)) })

const createOutputSchema = `{"type":"object","required":["name","dir","key","digest"],"properties":{
"name":{"type":"string"},"dir":{"type":"string"},"key":{"type":"string"},"digest":{"type":"string"},"environment":{"type":"string"}}}`

func createAnnotations() *mcp.ToolAnnotations {
	tr, f := true, false
	// It writes files (readOnly false); with replace it removes a
	// capability's files (destructive); it never reaches the network.
	return &mcp.ToolAnnotations{Title: "Create a capability (grants nothing)", DestructiveHint: &tr, OpenWorldHint: &f, IdempotentHint: true}
}

type createArgs struct {
	Manifest json.RawMessage `json:"manifest"`
	Files    []struct {
		Path       string `json:"path"`
		Content    string `json:"content"`
		Encoding   string `json:"encoding"`
		Executable bool   `json:"executable"`
	} `json:"files"`
	Replace bool `json:"replace"`
}

// created is capability_create's structured result.
type created struct {
	Name        string `json:"name"`
	Dir         string `json:"dir"`
	Key         string `json:"key"`
	Digest      string `json:"digest"`
	Environment string `json:"environment"`
}

func (s *Server) handleCreate(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if len(req.Params.InputResponses) > 0 || req.Params.RequestState != "" {
		return refused(ToolCapabilityCreate, errors.New("capability_create asks no question")), nil
	}
	schema, err := createInput()
	if err == nil {
		err = schema.Check(req.Params.Arguments)
	}
	if err != nil {
		return createError(fmt.Errorf("arguments: %w", err)), nil
	}
	var a createArgs
	dec := json.NewDecoder(strings.NewReader(string(req.Params.Arguments)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return createError(fmt.Errorf("arguments: %v", err)), nil
	}
	var replaced bool
	c, err := s.create(a, &replaced)
	if err != nil {
		return createError(err), nil
	}
	rt, done := s.use()
	aerr := runtimehook.CapabilityWritten(rt, c, ToolCapabilityCreate, replaced)
	done()
	_ = s.Sync() // the new tool is listed, and list_changed sent, before this returns
	out := created{Name: c.Manifest.Name, Dir: c.Dir, Key: c.Key().String(), Digest: c.Digest, Environment: string(c.Manifest.Environment)}
	text := fmt.Sprintf("created capability %s (%s) in %s\nkey: %s\ndigest: %s\nIt is offered as the tool %q; its first run is asked of the person.",
		out.Name, out.Environment, out.Dir, out.Key, out.Digest, out.Name)
	if aerr != nil {
		// The capability grants nothing, so it stays; the person is told
		// that the log of what the agent wrote misses this line.
		text += "\nwarning: the audit log did not record this: " + aerr.Error()
		if s.opts.Logger != nil {
			s.opts.Logger.Warn("capability_create: audit", "capability", out.Name, "error", aerr)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: out}, nil
}

func createError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ccrun: capability_create: " + err.Error()}}, IsError: true}
}

// create validates a and writes the capability: into a fresh directory
// beside the others, checked with capabilities.Load, then renamed into
// place, so that a half-written or invalid capability is never found.
// *replaced says whether it took the place of one of that name.
func (s *Server) create(a createArgs, replaced *bool) (*capabilities.Capability, error) {
	if len(a.Manifest) == 0 {
		return nil, errors.New("manifest: required")
	}
	manifest, err := indent(a.Manifest)
	if err != nil {
		return nil, fmt.Errorf("manifest: %v", err)
	}
	m, err := capabilities.Parse(capabilities.ManifestFile, manifest)
	if err != nil {
		return nil, err // names every field at fault
	}
	// The manifest names its environment; the Runtime says whether it
	// runs it. Nothing is written for one it does not.
	rt, done := s.use()
	envs := rt.Environments()
	done()
	if err := envs.Require(m.Environment); err != nil {
		return nil, fmt.Errorf("manifest/environment: %w", err)
	}
	if len(a.Files) > maxCreateFiles {
		return nil, fmt.Errorf("files: %d files; at most %d", len(a.Files), maxCreateFiles)
	}
	type file struct {
		path string
		data []byte
		mode os.FileMode
	}
	var files []file
	total := int64(len(manifest))
	seen := map[string]bool{}
	for i, f := range a.Files {
		p := filepath.FromSlash(f.Path)
		if !filepath.IsLocal(p) || filepath.Clean(p) == "." {
			return nil, fmt.Errorf("files/%d/path %q: want a path inside the capability's directory", i, f.Path)
		}
		p = filepath.Clean(p)
		if p == capabilities.ManifestFile {
			return nil, fmt.Errorf("files/%d/path: %s is written from manifest", i, capabilities.ManifestFile)
		}
		if seen[p] {
			return nil, fmt.Errorf("files/%d/path %q: given twice", i, f.Path)
		}
		seen[p] = true
		if why, bad := hostConfig(filepath.ToSlash(p)); bad {
			return nil, fmt.Errorf("files/%d/path %q: %s, which a capability's files never are (they are data for its environment): refused, nothing written", i, f.Path, why)
		}
		var data []byte
		switch f.Encoding {
		case "", "utf-8":
			data = []byte(f.Content)
		case "base64":
			if data, err = base64.StdEncoding.DecodeString(f.Content); err != nil {
				return nil, fmt.Errorf("files/%d/content: not base64: %v", i, err)
			}
		default:
			return nil, fmt.Errorf("files/%d/encoding %q: want utf-8 or base64", i, f.Encoding)
		}
		if total += int64(len(data)); total > maxCreateBytes {
			return nil, fmt.Errorf("files: more than %s in all", capabilities.FormatSize(maxCreateBytes))
		}
		mode := os.FileMode(0o644)
		if f.Executable {
			mode = 0o755
		}
		files = append(files, file{p, data, mode})
	}
	parent := filepath.Join(s.dir, filepath.FromSlash(capabilities.Dir))
	if err := mkdirNoLinks(s.dir, filepath.FromSlash(capabilities.Dir)); err != nil {
		return nil, err
	}
	final := filepath.Join(parent, m.Name)
	if _, err := os.Lstat(final); err == nil && !a.Replace {
		return nil, fmt.Errorf("manifest/name: capability %s exists already (pass replace to replace it)", m.Name)
	}
	tmp, err := os.MkdirTemp(parent, ".create-"+m.Name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	write := func(p string, data []byte, mode os.FileMode) error {
		if dir := filepath.Dir(p); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return errors.Join(err, f.Close())
	}
	if err := write(capabilities.ManifestFile, manifest, 0o644); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := write(f.path, f.data, f.mode); err != nil {
			return nil, fmt.Errorf("files: %s: %w", f.path, err)
		}
	}
	// Check it where it will live: the name must match the directory, and
	// the mounts are taken against the project root.
	old := ""
	if a.Replace {
		if _, err := os.Lstat(final); err == nil {
			old = tmp + ".old"
			if err := os.Rename(final, old); err != nil {
				return nil, err
			}
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if old != "" {
			_ = os.Rename(old, final)
		}
		return nil, err
	}
	c, err := capabilities.Load(final)
	if err != nil {
		_ = os.RemoveAll(final)
		if old != "" {
			_ = os.Rename(old, final)
		}
		return nil, err
	}
	if old != "" {
		_ = os.RemoveAll(old)
		*replaced = true
	}
	return c, nil
}

// hostConfig reports whether rel, a capability file's slash-separated path
// inside its directory, names what a host tool would read as its
// configuration or code: a row of the implant table at any depth
// (sensitive.Under: .envrc, .vscode/, ccrun.local.json, .gitattributes,
// .gitmodules, .git/config, .git/hooks/), or what git would take for a
// repository's parts by name (sensitive.GitNamed: a .git at any depth,
// HEAD, commondir, gitdir, config.worktree, packed-refs), in any case.
func hostConfig(rel string) (string, bool) {
	if r, ok := sensitive.Under(rel); ok {
		return r.What, true
	}
	if r, ok := sensitive.GitNamed(rel); ok {
		return r.What, true
	}
	return "", false
}

// indent re-encodes a manifest object for the file (and so that the
// positions its errors name are lines of a readable file).
func indent(raw json.RawMessage) ([]byte, error) {
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errors.New("want an object")
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// mkdirNoLinks makes rel under root, refusing to go through a symbolic
// link (a capabilities directory that points elsewhere).
func mkdirNoLinks(root, rel string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.MkdirAll(rel, 0o755); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	dir := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if err != nil {
			return err
		}
		if !fi.Mode().IsDir() {
			return fmt.Errorf("%s: not a directory (a symbolic link?): refused", dir)
		}
	}
	return nil
}
