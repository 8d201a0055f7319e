package sensitive

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		path  string
		write bool
		kind  Kind // "": none
	}{
		{"/home/u/.ssh/id_ed25519", false, Leak},
		{"/home/u/copy/.ssh/config", false, Leak},
		{"/home/u/.claude/.credentials.json", false, Leak},
		{"/home/u/.claude/settings.json", false, ""},
		{"/home/u/.claude/settings.json", true, Implant},
		{"/home/u/.codex/auth.json", false, Leak},
		{"/srv/app/deploy.pem", false, Leak},
		{"/srv/app/id_rsa.pub", false, Leak},
		{"/srv/app/.env.production", false, Leak},
		{"/etc/shadow", false, Leak},
		{"/backup/etc/shadow", false, ""}, // absolute rows match from the root only
		{"/proc/1234/environ", false, Leak},
		{"/proc/1234/task/5/environ", false, Leak},
		{"/proc/1234/status", false, ""},
		{"/home/u/.bash_history", false, Leak},
		{"/p/.git/config", false, ""},
		{"/p/.git/config", true, Implant},
		{"/p/.git/hooks/pre-commit", true, Implant},
		{"/p/sub/.git/hooks/x", true, Implant},
		{"/p/ccrun.local.json", true, Implant},
		{"/p/src/main.go", true, ""},
		{"/p/src/pemfile", false, ""},
	} {
		r, ok := Match(tc.path, tc.write)
		got := Kind("")
		if ok {
			got = r.Kind
		}
		if got != tc.kind {
			t.Errorf("Match(%q, write=%v) = %q (%s), want %q", tc.path, tc.write, got, r.Pattern(), tc.kind)
		}
	}
}

func TestUnder(t *testing.T) {
	for rel, want := range map[string]bool{
		".git/config": true, ".git/hooks/post-checkout": true, "sub/.envrc": true, ".vscode/tasks.json": true,
		".ccrun/capabilities/x/capability.json": true, "ccrun.local.json": true, "src/x.go": false, "": false,
		".": false, "../.bashrc": true, "notes/.env": true, "README.md": false,
	} {
		if _, got := Under(rel); got != want {
			t.Errorf("Under(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestContains(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want bool
	}{{"/", true}, {"/home", true}, {"/home/u", true}, {"/home/u/project", false}, {"/etc", true}, {"/srv", false}} {
		if got := Contains(tc.dir, "/home/u"); got != tc.want {
			t.Errorf("Contains(%q) = %v, want %v", tc.dir, got, tc.want)
		}
	}
}

func TestAnchored(t *testing.T) {
	a := Anchored("/home/u")
	for _, want := range []string{"/home/u/.ssh", "/etc/shadow", "/home/u/.aws", "/home/u/.bashrc"} {
		if !slices.Contains(a, want) {
			t.Errorf("Anchored lacks %s", want)
		}
	}
	for _, p := range a {
		if slices.Contains([]string{"/home/u/*.pem", "/proc/*/environ"}, p) {
			t.Errorf("Anchored holds the glob %s", p)
		}
	}
}

func BenchmarkFirst(b *testing.B) {
	for i := 0; i < b.N; i++ {
		First("/work/main/project/src/make", true)
	}
}

// TestDocumented keeps docs/policy.md's table in step with Table.
func TestDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Table() {
		if !strings.Contains(string(b), "`"+r.Pattern()+"`") {
			t.Errorf("docs/policy.md does not list %s (%s)", r.Pattern(), r.What)
		}
	}
	for _, r := range GitShapes() {
		if !strings.Contains(string(b), r.What) {
			t.Errorf("docs/policy.md does not list git's shape %q", r.What)
		}
	}
}

// TestAnyCase: on a file system that folds case (macOS's, Windows', a
// casefold or vfat mount) .GIT/hooks is .git/hooks and .SSH is .ssh, so
// every name of the table matches in any case, and git's marks too.
func TestAnyCase(t *testing.T) {
	for _, tc := range []struct {
		path  string
		write bool
		kind  Kind
	}{
		{"/home/u/.SSH/id_rsa", false, Leak},
		{"/home/u/.Ssh/config", false, Leak},
		{"/srv/app/DEPLOY.PEM", false, Leak},
		{"/srv/app/ID_RSA.pub", false, Leak},
		{"/srv/app/.ENV.production", false, Leak},
		{"/home/u/.nuget/nuget/nuget.config", false, Leak},
		{"/p/.GIT/hooks/pre-commit", true, Implant},
		{"/p/.Git/config", true, Implant},
		{"/p/sub/.git/HOOKS/x", true, Implant},
		{"/p/.ENVRC", true, Implant},
		{"/p/CCRUN.LOCAL.JSON", true, Implant},
		{"/p/src/Main.go", true, ""},
	} {
		r, ok := Match(tc.path, tc.write)
		got := Kind("")
		if ok {
			got = r.Kind
		}
		if got != tc.kind {
			t.Errorf("Match(%q, write=%v) = %q (%s), want %q", tc.path, tc.write, got, r.Pattern(), tc.kind)
		}
	}
	for rel, want := range map[string]bool{".GIT/config": true, ".VSCode/tasks.json": true, "Sub/.EnvRC": true, "SRC/x.go": false} {
		if _, got := Under(rel); got != want {
			t.Errorf("Under(%q) = %v, want %v", rel, got, want)
		}
	}
	for _, n := range []string{"HEAD", "head", "Objects", "REFS", "CommonDir"} {
		if !GitMark(n) {
			t.Errorf("GitMark(%q) = false", n)
		}
	}
	for _, n := range []string{".git", ".GIT", ".Git"} {
		if !IsGit(n) {
			t.Errorf("IsGit(%q) = false", n)
		}
	}
	if got := GitMade([]string{".GIT", "head", "Objects", "refs"}, func(string) bool { return false }); len(got) != 4 {
		t.Errorf("GitMade of a .GIT and a repository in other cases = %q, want all four", got)
	}
}

// FuzzFirst: First, which cuts the path into components on the stack, is
// FirstComps of the path cut by strings.Split, for any path, either way.
func FuzzFirst(f *testing.F) {
	for _, p := range []string{"/", "", "/home/u/.ssh/id_rsa", "//a//b/", "/a/.GIT/HOOKS/x", "/proc/1/environ",
		"/" + strings.Repeat("a/", 40) + ".env", "x/.aws/credentials", "/etc/shadow"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		for _, write := range []bool{false, true} {
			if got, want := First(p, write), FirstComps(strings.Split(strings.Trim(p, "/"), "/"), write); got != want {
				t.Fatalf("First(%q, %v) = %d, FirstComps of its split %d", p, write, got, want)
			}
		}
	})
}
