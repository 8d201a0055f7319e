package permission

import "testing"

// FileMode is the mode the file layers give, as NewPolicy picks it, and
// LoosensPast lists a flag mode looser than it, only.
func TestFileModeAndLoosensPast(t *testing.T) {
	layer := func(o Origin, m Mode) *Settings { return &Settings{Origin: o, Name: string(o) + ".json", Mode: m} }
	for _, tc := range []struct {
		files []*Settings
		flag  Mode
		want  Mode
		loose bool
	}{
		{nil, ModeDefault, ModeDefault, false},
		{nil, ModePlan, ModeDefault, false},
		{nil, ModeAcceptEdits, ModeDefault, true},
		{[]*Settings{layer(OriginUser, ModePlan)}, ModeDefault, ModePlan, true},
		{[]*Settings{layer(OriginUser, ModePlan)}, ModePlan, ModePlan, false},
		{[]*Settings{layer(OriginUser, ModeTrust), layer(OriginLocal, ModePlan)}, ModeDefault, ModePlan, true},
		{[]*Settings{layer(OriginUser, ModeAcceptEdits)}, ModeAcceptEdits, ModeAcceptEdits, false},
		{[]*Settings{layer(OriginManaged, ModePlan), layer(OriginUser, ModeTrust)}, ModeDefault, ModePlan, true},
		{[]*Settings{layer(OriginManaged, ModeDefault), layer(OriginLocal, ModeTrust)}, ModeDefault, ModeDefault, false},
		{[]*Settings{layer(OriginFlags, ModeTrust)}, ModeAcceptEdits, ModeDefault, true},
	} {
		pol, err := NewPolicy(PolicyConfig{Layers: tc.files})
		if err != nil {
			t.Fatal(err)
		}
		got := FileMode(tc.files)
		if got != tc.want || tc.files != nil && tc.files[0].Origin != OriginFlags && got != pol.Mode() {
			t.Errorf("FileMode(%v) = %s, want %s (NewPolicy: %s)", tc.files, got, tc.want, pol.Mode())
		}
		flag := &Settings{Origin: OriginFlags, Name: "flags", Mode: tc.flag}
		lines, err := flag.LoosensPast(tc.files)
		if err != nil || (len(lines) > 0) != tc.loose {
			t.Errorf("--mode %s over %s: %q, %v; want loosening %v", tc.flag, got, lines, err, tc.loose)
		}
	}
}
