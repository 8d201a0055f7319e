package gittest

import "testing"

// TestPlantsWork: each plant, made on the host without a sandbox, makes
// git status run the Script; and the fresh tree runs nothing. The
// sandboxes' tests prove something only while this holds.
func TestPlantsWork(t *testing.T) {
	t.Parallel()
	fresh := New(t)
	for _, p := range fresh.Plants() {
		if ran, out := fresh.Ran(p); ran {
			t.Fatalf("the fresh tree runs the script (%s):\n%s", p.Name, out)
		}
	}
	for i, p := range fresh.Plants() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			if p.NoProof != "" {
				t.Skip(p.NoProof)
			}
			tr := New(t)
			p := tr.Plants()[i] // on tr's script
			before := tr.State(t)
			tr.Apply(t, p)
			if ran, out := tr.Ran(p); !ran {
				t.Errorf("planted unguarded, git status ran nothing:\n%s", out)
			}
			if d := Diff(before, tr.State(t)); d == "" {
				t.Error("planted unguarded, State did not change")
			}
		})
	}
}
