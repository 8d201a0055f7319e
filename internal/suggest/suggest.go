// Package suggest finds the words a mistyped one was probably meant to
// be: for "did you mean" lines after an unknown flag, capability, mode or
// directive.
package suggest

import (
	"slices"
	"strings"
)

// Closest returns the candidates close to word, closest first (ties in
// the candidates' order): those within an edit distance of a third of
// word's length (at least 1), and those word is a prefix of. Case is
// ignored. None for an empty word.
func Closest(word string, candidates []string) []string {
	if word == "" {
		return nil
	}
	w := strings.ToLower(word)
	limit := max(1, len([]rune(w))/3)
	type hit struct {
		s string
		d int
	}
	var hits []hit
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == w {
			continue
		}
		d := distance(w, lc)
		if d <= limit || strings.HasPrefix(lc, w) {
			hits = append(hits, hit{c, d})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return a.d - b.d })
	var out []string
	for _, h := range hits {
		if !slices.Contains(out, h.s) {
			out = append(out, h.s)
		}
	}
	return out
}

// Line is the "did you mean" text for the suggestions (one per line,
// indented, after a blank line), or "" for none.
func Line(suggestions []string) string {
	if len(suggestions) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(suggestions, "\n\t")
}

// distance is the Levenshtein distance of a and b, by runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
