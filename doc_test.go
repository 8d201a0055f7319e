package ccrun_test

import (
	"errors"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExportedDocumented: every exported name of every package a user can
// import has a doc comment that go doc shows, and a type's, function's or
// method's begins with its name (an article before it is fine). A const
// or var in a group is documented by its own comment or by the group's.
// Main packages (go doc shows a command's package comment alone) and
// packages under internal/ are not checked; the files are those go doc
// reads, by the default build context.
func TestExportedDocumented(t *testing.T) {
	t.Parallel()
	var missing, checked []string
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		base := d.Name()
		if dir != "." && (base == "testdata" || base == "internal" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
			return filepath.SkipDir
		}
		bp, err := build.Default.ImportDir(dir, 0)
		if err != nil {
			if noGo := (*build.NoGoError)(nil); errors.As(err, &noGo) {
				return nil
			}
			return err
		}
		if bp.Name == "main" {
			return nil
		}
		checked = append(checked, filepath.ToSlash(dir))
		missing = append(missing, undocumented(t, dir, bp)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".", "permission", "runtime/wasm"} {
		if !slices.Contains(checked, want) {
			t.Errorf("package %s was not checked (checked: %v)", want, checked)
		}
	}
	for _, m := range missing {
		t.Error(m)
	}
}

// undocumented lists the exported names of the package in dir that go doc
// shows without a doc comment, or with one that does not begin with the
// name, each as file:line: name.
func undocumented(t *testing.T, dir string, bp *build.Package) []string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range slices.Concat(bp.GoFiles, bp.CgoFiles) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, filepath.ToSlash(filepath.Join(module, dir)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	report := func(pos token.Pos, name, why string) {
		out = append(out, fset.Position(pos).String()+": "+name+": "+why)
	}
	named := func(pos token.Pos, name, text, label string) {
		switch {
		case strings.TrimSpace(text) == "":
			report(pos, label, "no doc comment")
		case !begins(text, name):
			report(pos, label, "its doc comment does not begin with "+name)
		}
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			if strings.TrimSpace(v.Doc) != "" {
				continue
			}
			for _, spec := range v.Decl.Specs {
				vs := spec.(*ast.ValueSpec)
				if vs.Doc != nil || vs.Comment != nil {
					continue
				}
				for _, n := range vs.Names {
					if n.IsExported() {
						report(n.Pos(), n.Name, "no doc comment")
					}
				}
			}
		}
	}
	funcs := func(fs []*doc.Func, recv string) {
		for _, f := range fs {
			label := f.Name
			if recv != "" {
				label = recv + "." + f.Name
			}
			named(f.Decl.Pos(), f.Name, f.Doc, label)
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs(p.Funcs, "")
	for _, typ := range p.Types {
		named(typ.Decl.Pos(), typ.Name, typ.Doc, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		funcs(typ.Funcs, "")
		funcs(typ.Methods, typ.Name)
	}
	return out
}

// begins reports whether doc begins with name, perhaps after an article.
func begins(text, name string) bool {
	for _, a := range []string{"", "A ", "An ", "The "} {
		if rest, ok := strings.CutPrefix(text, a+name); ok && (rest == "" || !isIdent(rest[0])) {
			return true
		}
	}
	return false
}

// isIdent says whether c may continue an identifier.
func isIdent(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
