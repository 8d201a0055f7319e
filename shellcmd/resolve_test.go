package shellcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveTree makes a tree with every kind of name resolveFrom meets:
// directories, a file, symbolic links relative and absolute, to a file, to
// .., dangling, in a loop and through one another. It returns its root,
// with the root's own symbolic links resolved.
func resolveTree(t testing.TB) string {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b/c", "d", ".ssh"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a/f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"up": "..", "rel": "a/b", "abs": filepath.Join(root, "a"), "file": "a/f", "dangling": "nowhere/x",
		"loop1": "loop2", "loop2": "loop1", "chain": "rel/c/../..", "root": "/", "a/b/back": "../../.ssh",
		"d/dots": "./../a/./b/", "d/self": ".", "home": ".ssh/../up/" + filepath.Base(root) + "/.ssh",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// FuzzResolveFrom: resolveFrom, which walks a buffer on the stack, gives
// what resolveSlow gives, for every path in and around a tree of links,
// from the root and from within the tree.
func FuzzResolveFrom(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a/b/c", "up/up/x", "rel/c", "abs/b/../f", "file/x",
		"dangling", "loop1/x", "chain/a", "root/etc/passwd", "a/b/back/id_rsa", "d/dots/c", "d/self/self/dots",
		"home", "a//b/./c/", "a/b/../../../..", "a\x00b", "nope/../a", strings.Repeat("a/b/../", 200) + "a"} {
		f.Add(s)
	}
	root := resolveTree(f)
	f.Fuzz(func(t *testing.T, p string) {
		for _, c := range [][2]string{{root, p}, {"/", root + "/" + p}, {"/", p}, {root + "/a", p}} {
			if got, want := resolveFrom(c[0], c[1]), resolveSlow(c[0], c[1]); got != want {
				t.Fatalf("resolveFrom(%q, %q) = %q, resolveSlow gives %q", c[0], c[1], got, want)
			}
		}
	})
}

// TestResolveLongPath: a path longer than resolveFrom's buffer, and one
// longer than the kernel takes, resolve as resolveSlow resolves them.
func TestResolveLongPath(t *testing.T) {
	root := resolveTree(t)
	for _, p := range []string{strings.Repeat("a/b/../", 300) + "rel/c", strings.Repeat("x", 5000), strings.Repeat("d/self/", 200)} {
		if got, want := resolveFrom(root, p), resolveSlow(root, p); got != want {
			t.Errorf("resolveFrom(%q…) = %q, resolveSlow gives %q", p[:20], got, want)
		}
	}
}

// FuzzJoin: cleanAbs is filepath.Clean(p) == p for an absolute p, and
// join is filepath.Join, for any directory and path.
func FuzzJoin(f *testing.F) {
	for _, s := range [][2]string{{"/", "a"}, {"/a/b", "c/d"}, {"/a/", "b"}, {"/a/./b", "c"}, {"/a", "../b"},
		{"/a", "./b"}, {"/a", "b/"}, {"/a", "b//c"}, {"", "b"}, {"rel", "b"}, {"//", "x"}, {"/a/..", "b"}, {"/a", "..."}, {"/a", "."}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, dir, p string) {
		if got, want := cleanAbs(dir), dir != "" && dir[0] == '/' && filepath.Clean(dir) == dir; got != want {
			t.Fatalf("cleanAbs(%q) = %v, want %v", dir, got, want)
		}
		if p == "" {
			return
		}
		if got, want := join(dir, p), filepath.Join(dir, p); got != want {
			t.Fatalf("join(%q, %q) = %q, filepath.Join gives %q", dir, p, got, want)
		}
	})
}

// TestDangerousProjectThroughLink: a project whose own path goes through a
// symbolic link (here into ~/.aws), or holds one, has its relative paths
// resolved through it: the one system call that finds no link on a path
// must not hide one in the project's part of it, nor past it.
func TestDangerousProjectThroughLink(t *testing.T) {
	root := resolveTree(t)
	home := filepath.Join(root, "h")
	if err := os.MkdirAll(filepath.Join(home, ".aws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".aws", "credentials"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"p": filepath.Join(home, ".aws"), "q/aws": "../h/.aws"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ project, path string }{
		{filepath.Join(root, "p"), "credentials"},
		{filepath.Join(root, "p"), "./credentials"},
		{filepath.Join(root, "q"), "aws/credentials"},
		{filepath.Join(root, "q"), "aws"},
		{filepath.Join(root, "a", "b"), "../../p/credentials"},
		{root, "h/../p/credentials"},
	} {
		found := Dangerous(Target{Paths: []string{c.path}}, c.project, "/nonexistent/h")
		if len(found) == 0 {
			t.Errorf("Dangerous(%q) in project %s found nothing", c.path, c.project)
			continue
		}
		if want := filepath.Join(home, ".aws"); !strings.HasPrefix(found[0].Resolved, want) {
			t.Errorf("Dangerous(%q) in project %s resolved to %s, want one in %s", c.path, c.project, found[0].Resolved, want)
		}
	}
}
