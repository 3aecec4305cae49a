package poly

import "testing"

// FuzzParseSet feeds arbitrary text to the set and map parsers. They must
// never panic, and a set they accept must print to text that parses back
// to a set with the same points (checked on a small box).
//
//	go test ./poly -run '^$' -fuzz FuzzParseSet -fuzztime 1m
func FuzzParseSet(f *testing.F) {
	for _, s := range []string{
		"[N] -> { S[i, j] : 0 <= i < N and 0 <= j <= i }",
		"{ [i] : exists (e : i = 2e) and 0 <= i <= 10 }",
		"{ [i, floor(i / 3)] : 0 <= i < 9 }",
		"{ S[i] -> A[i + 1] : 0 <= i < 4 }",
		"{ [i] : i < 0 or i > 5; [i] : i = 3 }",
		"{ [i] : (i + 1) mod 4 = 0 and 0 <= i < 20 }",
		"{ [x, y] : 3 <= 11x + 13y <= 21 and -8 <= 7x - 9y <= 6 }",
		"{ [i] : 9223372036854775807i >= 9223372036854775807 }",
		"{ }", "{", "[N -> { [i] }", "{ [i] : ((((i > 0)))) }",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 2000 {
			return // keep each input cheap: the work grows with the constraints
		}
		if m, err := ParseMap(src); err == nil {
			if _, err := ParseMap(m.String()); err != nil {
				t.Fatalf("map %q printed as %q does not parse: %v", src, m, err)
			}
		}
		s, err := ParseSet(src)
		if err != nil {
			return
		}
		if len(s.Dims) > 3 || len(s.Params) > 2 || s.NumParts() > 4 {
			return
		}
		again, err := ParseSet(s.String())
		if err != nil {
			t.Fatalf("%q printed as %q does not parse: %v", src, s, err)
		}
		params := make([]int64, len(s.Params))
		for _, v := range []int64{-1, 2} {
			for i := range params {
				params[i] = v
			}
			a, b := points(s, params, 2), points(again, params, 2)
			if len(a) != len(b) {
				t.Fatalf("%q printed as %q has other points", src, s)
			}
			for k := range a {
				if !b[k] {
					t.Fatalf("%q printed as %q loses %s", src, s, k)
				}
			}
		}
		_ = s.IsEmpty()
	})
}
