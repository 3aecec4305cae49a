// Package suggest finds the names a mistyped one was probably meant to
// be, for "did you mean" in error messages.
package suggest

import (
	"sort"
	"strings"
)

// Closest returns the names of have within a small edit distance of name
// (a third of its length, at least one edit; case ignored), or having it
// as a prefix, nearest first; none when nothing is close.
func Closest(name string, have []string) []string {
	type scored struct {
		name string
		d    int
	}
	var out []scored
	low := strings.ToLower(name)
	limit := max(1, len([]rune(name))/3)
	for _, h := range have {
		hl := strings.ToLower(h)
		d := distance(low, hl)
		if d <= limit || len(low) >= 2 && strings.HasPrefix(hl, low) {
			out = append(out, scored{h, d})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].d < out[j].d })
	var names []string
	for _, s := range out {
		names = append(names, s.name)
	}
	return names
}

// DidYouMean is ` (did you mean "x"?)` for the closest name of have, or
// "" when none is close.
func DidYouMean(name string, have []string) string {
	c := Closest(name, have)
	switch len(c) {
	case 0:
		return ""
	case 1:
		return ` (did you mean "` + c[0] + `"?)`
	}
	return ` (did you mean "` + c[0] + `" or "` + c[1] + `"?)`
}

// distance is the edit distance of a and b, in runes, with a swap of two
// neighbours one edit (optimal string alignment: "bulid" is one from
// "build").
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	rows := [3][]int{make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		back, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], back[j-2]+1)
			}
		}
		rows[0], rows[1], rows[2] = prev, cur, back
	}
	return rows[1][len(rb)]
}
