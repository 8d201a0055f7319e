package ccrun_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/ccrun/ccrun"

// backends are the packages that run a call somewhere. runtime/job is what
// they share, not one of them.
var backends = []string{module + "/runtime/shell", module + "/runtime/wasm", module + "/runtime/docker", module + "/runtime/kube"}

// isBackend says whether pkg is a backend or a package inside one.
func isBackend(pkg string) string {
	for _, b := range backends {
		if pkg == b || strings.HasPrefix(pkg, b+"/") {
			return b
		}
	}
	return ""
}

// goList runs go list -f format over patterns: one line per package.
func goList(t *testing.T, format string, patterns ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", append([]string{"list", "-f", format}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// engineOnly are the packages of the @wasm and @docker engines: only
// package engines (and its tests) may bring them into a program.
var engineOnly = []string{module + "/runtime/wasm", module + "/runtime/docker", module + "/runtime/kube",
	module + "/internal/backend/wasmenv", module + "/internal/backend/dockerenv"}

// frontEndOnly are what the CLI and the MCP server need of a Runtime and a
// library user does not: internal/runtimehook has them (Runtime.Lint
// and its report, Runtime.ReloadAllowlist), never the root again.
var frontEndOnly = []string{"Lint", "Allowlist", "AllowlistEntry", "RuleProblem", "ReloadAllowlist", "CapabilityWritten", "Problems"}

// rootNames returns the exported names of the root package's non-test
// files: its types, functions, variables and constants, and the methods
// of its types.
func rootNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, line := range goList(t, `{{.Dir}} {{join .GoFiles " "}}`, ".") {
		f := strings.Fields(line)
		for _, name := range f[1:] {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(f[0], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					names = append(names, d.Name.Name)
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							names = append(names, s.Name.Name)
						case *ast.ValueSpec:
							for _, n := range s.Names {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	return slices.DeleteFunc(names, func(n string) bool { return !token.IsExported(n) })
}

// TestLayers keeps the layers apart, as go list -deps sees them: a backend
// depends neither on the root package nor on another backend (runtime/job
// is shared); the root and capabilities link no engine (package engines
// adds them), and no build tag changes a library package; the CLI imports
// no backend: it goes through the root and package engines; the root has
// none of what only ccrun's front ends need (frontEndOnly).
func TestLayers(t *testing.T) {
	t.Parallel()
	for _, line := range goList(t, `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./runtime/...") {
		pkg, deps, _ := strings.Cut(line, " ")
		own := isBackend(pkg)
		if own == "" {
			continue
		}
		for _, d := range strings.Fields(deps) {
			if d == module {
				t.Errorf("%s depends on the root package %s", pkg, module)
			}
			if b := isBackend(d); b != "" && b != own {
				t.Errorf("%s depends on another backend, %s", pkg, d)
			}
		}
	}
	// The root and capabilities link no engine: a program that runs
	// @shell alone pays for none at start.
	for _, line := range goList(t, `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, ".", "./capabilities") {
		pkg, deps, _ := strings.Cut(line, " ")
		for _, d := range strings.Fields(deps) {
			if slices.Contains(engineOnly, d) {
				t.Errorf("%s links %s: an engine is added through package engines (ccrun.WithBackend), never linked by the root", pkg, d)
			}
		}
	}
	// Only package engines imports the engines' adapters behind the seam.
	for _, line := range goList(t, `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, "./...") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if (imp == module+"/internal/backend/wasmenv" || imp == module+"/internal/backend/dockerenv") && pkg != module+"/engines" {
				t.Errorf("%s imports %s: only package engines does", pkg, imp)
			}
		}
	}
	// No build tag forks a package: a file's constraint names only an
	// operating system or an architecture (the front is a main of its
	// own, cmd/ccrun/front, over the same packages).
	platforms := map[string]bool{"unix": true}
	dist, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		t.Fatalf("go tool dist list: %v", err)
	}
	for _, p := range strings.Fields(string(dist)) {
		goos, goarch, _ := strings.Cut(p, "/")
		platforms[goos], platforms[goarch] = true, true
	}
	for _, line := range goList(t, `{{.Dir}} {{join .GoFiles " "}} {{join .IgnoredGoFiles " "}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}`, "./...") {
		f := strings.Fields(line)
		for _, name := range f[1:] {
			for _, tag := range buildTags(t, filepath.Join(f[0], name)) {
				if !platforms[tag] {
					t.Errorf("%s: build tag %q: a file may be constrained to an OS or an architecture only", filepath.Join(f[0], name), tag)
				}
			}
		}
	}
	// The CLI, its tests included, goes through the root and engines.
	for _, line := range goList(t, `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, "./cmd/...") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if b := isBackend(imp); b != "" {
				t.Errorf("%s (or its tests) imports the backend %s: reach it through the root package and package engines, or internal/housekeep and internal/outlive for what only the CLI does", pkg, imp)
			}
		}
	}
	// The adapters behind the root's Backend seam: each reaches its own
	// environment's backends only, and none the root; the seam's
	// vocabulary (internal/backend) carries runtime/shell's two
	// enforcement types and nothing else of a backend.
	own := map[string][]string{
		module + "/internal/backend":           {module + "/runtime/shell"},
		module + "/internal/backend/shellenv":  {module + "/runtime/shell"},
		module + "/internal/backend/wasmenv":   {module + "/runtime/wasm"},
		module + "/internal/backend/dockerenv": {module + "/runtime/docker", module + "/runtime/kube"},
		module + "/internal/backend/toy":       nil, // for tests: a new environment, as a newcomer writes one
	}
	for _, line := range goList(t, `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./internal/backend/...") {
		pkg, imports, _ := strings.Cut(line, " ")
		allowed, ok := own[pkg]
		if !ok {
			t.Errorf("%s: a package behind the seam that this test does not know: say which backends it may import", pkg)
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp == module {
				t.Errorf("%s imports the root package", pkg)
			}
			if b := isBackend(imp); b != "" && !slices.Contains(allowed, b) {
				t.Errorf("%s imports the backend %s: want only %v", pkg, imp, allowed)
			}
		}
	}
	// The root's surface is a library user's: what only ccrun's own
	// front ends need of a Runtime is in internal/runtimehook.
	names := rootNames(t)
	for _, name := range names {
		if slices.Contains(frontEndOnly, name) {
			t.Errorf("the root package has %s again: only ccrun's front ends use it, so it is internal/runtimehook's", name)
		}
	}
	if !slices.Contains(names, "Exec") || !slices.Contains(names, "Runtime") {
		t.Errorf("the root's names miss Exec or Runtime (%v): does rootNames read the package?", names)
	}
	// The rule has teeth: the root itself does reach the backends.
	root := goList(t, `{{join .Imports " "}}`, ".")
	if len(root) != 1 || !slices.ContainsFunc(strings.Fields(root[0]), func(s string) bool { return isBackend(s) != "" }) {
		t.Errorf("the root package imports no backend (%q): is the list of backends right?", root)
	}
}

// TestFrontLinks: the front of the CLI (cmd/ccrun/front, a main of its
// own over package cli, given no engines) links the gate and @shell, and none of the libraries
// whose package init a process that only runs @shell would pay: no other
// backend, no package engines, no MCP server, no Docker, Kubernetes,
// wazero or MCP library. It links the JSON Schema library of ccrun's one
// validator (internal/inputschema), whose init is a tenth of a
// millisecond, and net/http: the egress proxy of a @shell call with a
// network list (internal/egress) runs in the process that runs the call
// (its package inits measured at 0.14-0.21 ms with GODEBUG=inittrace=1).
func TestFrontLinks(t *testing.T) {
	t.Parallel()
	heavy := []string{module + "/runtime/wasm", module + "/runtime/docker", module + "/runtime/kube",
		module + "/internal/backend/wasmenv", module + "/internal/backend/dockerenv", module + "/mcpserver",
		module + "/engines", module + "/internal/housekeep", module + "/cmd/ccrun/internal/full", "github.com/docker/", "github.com/distribution/", "k8s.io/", "github.com/tetratelabs/wazero",
		"github.com/modelcontextprotocol/", "go.opentelemetry.io/"}
	deps := goList(t, `{{.ImportPath}}`, "-deps", "./cmd/ccrun/front")
	if !slices.Contains(deps, module+"/runtime/shell") || !slices.Contains(deps, module+"/permission") {
		t.Fatalf("the front does not link the gate and @shell: %v", deps)
	}
	for _, d := range deps {
		for _, h := range heavy {
			if d == h || strings.HasPrefix(d, strings.TrimSuffix(h, "/")+"/") {
				t.Errorf("the front links %s", d)
			}
		}
	}
	// The rule has teeth: the whole CLI links them.
	if whole := goList(t, `{{.ImportPath}}`, "-deps", "./cmd/ccrun"); !slices.Contains(whole, module+"/runtime/wasm") {
		t.Errorf("the whole CLI does not link runtime/wasm: is the list right?")
	}
}

// buildTags returns the tags of the file's //go:build line.
func buildTags(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "package ") {
			break
		}
		if !constraint.IsGoBuild(l) {
			continue
		}
		x, err := constraint.Parse(l)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		tags = append(tags, exprTags(x)...)
	}
	return tags
}

// exprTags returns every tag x names (Eval would stop at the first that
// decides).
func exprTags(x constraint.Expr) []string {
	switch x := x.(type) {
	case *constraint.TagExpr:
		return []string{x.Tag}
	case *constraint.NotExpr:
		return exprTags(x.X)
	case *constraint.AndExpr:
		return append(exprTags(x.X), exprTags(x.Y)...)
	case *constraint.OrExpr:
		return append(exprTags(x.X), exprTags(x.Y)...)
	}
	return nil
}
