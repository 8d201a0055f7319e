package permission

import (
	"testing"

	"github.com/ccrun/ccrun/permission/keys"
)

// go test -run '^$' -bench ParseCommand -benchmem ./permission/

func BenchmarkParseCommandSimple(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if c := ParseCommand("git status"); c.Compound {
			b.Fatal("compound")
		}
	}
}

func BenchmarkParseCommandCompound(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if c := ParseCommand("git status && git push origin main"); !c.Compound {
			b.Fatal("simple")
		}
	}
}

// A compound command not written as the printer writes it: parsed twice,
// and the two trees compared.
func BenchmarkParseCommandCompoundReprinted(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if c := ParseCommand("git status&&git push  origin main"); !c.Compound {
			b.Fatal("simple")
		}
	}
}

func BenchmarkPatternMatch(b *testing.B) {
	p := keys.MustParsePattern("run_command:git:*")
	k := keys.MustParseKey("run_command:git:push")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Match(k) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkPatternMatchGlob(b *testing.B) {
	p := keys.MustParsePattern("write_file:src/**/*_test.go")
	k := keys.MustParseKey("write_file:src/permission/internal/key_test.go")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Match(k) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkParseKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := keys.ParseKey(`run_command:"git status && git push origin main"`); err != nil {
			b.Fatal(err)
		}
	}
}
