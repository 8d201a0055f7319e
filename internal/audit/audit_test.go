package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestConcurrentWritesStayWholeLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".ccrun", "audit.jsonl")
	logs := []*Log{Open(path), Open(path)} // two writers, as two processes would be
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if err := logs[w%2].Write(Record{Kind: "decision", Tool: "run_command", Key: "run_command:git", Decision: "allow"}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	for _, l := range logs {
		l.Close()
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v: %q", n+1, err, sc.Text())
		}
		n++
	}
	if n != 800 {
		t.Errorf("got %d lines, want 800", n)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestNilLogDiscards(t *testing.T) {
	var l *Log
	if err := l.Write(Record{}); err != nil {
		t.Fatal(err)
	}
}
