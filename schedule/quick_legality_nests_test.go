package schedule_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// TestQuickProofsOnOddNests asks every question the quick proofs answer
// (may this loop be parallel or vectorized? may this nest be reordered?)
// twice, with the quick proofs on and off, on random perfect nests of one
// update block whose loops start and end where outer loops or symbolic
// sizes say: rectangular, triangular, skewed and symbolic-bound nests. The
// answers must be the same: the quick proofs may only spare the exact
// analysis work, never change its verdict.
func TestQuickProofsOnOddNests(t *testing.T) {
	nests := 150 // the first of the stream of nests; 1000 with -long
	if *long {
		nests = 1000
	}
	r := rand.New(rand.NewPCG(18, 5))
	asked, proved := 0, schedule.QuickProved()
	kinds := map[string]int{}
	for n := 0; n < nests; n++ {
		src, kind := randomNest(r)
		f, err := ast.Parse(src)
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		kinds[kind]++
		var loops []string
		ast.Inspect(f.Body, func(x ast.Node) bool {
			if l, ok := x.(*ast.For); ok {
				loops = append(loops, l.Var.Name)
			}
			return true
		})
		questions := []func(s *schedule.Schedule) error{}
		for _, name := range loops {
			questions = append(questions,
				func(s *schedule.Schedule) error { l, _ := s.GetLoop(name); return s.Parallel(l) },
				func(s *schedule.Schedule) error { l, _ := s.GetLoop(name); return s.Vectorize(l) })
		}
		for k := 0; k < 3; k++ {
			perm := r.Perm(len(loops))
			questions = append(questions, func(s *schedule.Schedule) error {
				var ls []schedule.Loop
				for _, i := range perm {
					l, _ := s.GetLoop(loops[i])
					ls = append(ls, l)
				}
				return s.Reorder(ls...)
			})
		}
		for q, ask := range questions {
			var errs [2]error
			var got [2]*ast.Func
			for i, quick := range []bool{true, false} {
				was := schedule.SetQuickProofs(quick)
				s, err := schedule.New(f, schedule.WithValidation(false))
				if err != nil {
					t.Fatal(err)
				}
				errs[i] = ask(s)
				got[i] = s.Func()
				schedule.SetQuickProofs(was)
			}
			asked++
			if (errs[0] == nil) != (errs[1] == nil) {
				t.Fatalf("question %d on this %s nest: with the quick proofs %v, without %v\n%s", q, kind, errs[0], errs[1], src)
			}
			if errs[0] == nil && ast.Hash(got[0]) != ast.Hash(got[1]) {
				t.Fatalf("question %d on this %s nest gives two functions\n%s", q, kind, src)
			}
		}
	}
	t.Logf("%d questions on %d nests %v, %d settled by quick proofs", asked, nests, kinds, schedule.QuickProved()-proved)
	if schedule.QuickProved() == proved {
		t.Error("no question reached the quick proofs: the test checks nothing")
	}
}

// randomNest returns the text of a function with one perfect nest of two
// to four loops around an update block, and the nest's kind.
func randomNest(r *rand.Rand) (src, kind string) {
	depth := 2 + r.IntN(3)
	names := []string{"i", "j", "k", "l"}[:depth]
	kind = "rectangular"
	var b strings.Builder
	b.WriteString("func nest[N: int32](A: float64[N, 64], B: float64[64]) { ScheduleBlock(root) {\n")
	for d, name := range names {
		min, ext := "0", fmt.Sprint(1+r.IntN(4))
		switch x := r.IntN(10); {
		case d > 0 && x < 3:
			// Skewed: starts where an outer loop says.
			outer := names[r.IntN(d)]
			min = []string{outer, fmt.Sprintf("3 - %s", outer), fmt.Sprintf("%s * 2", outer)}[r.IntN(3)]
			kind = "skewed"
		case d > 0 && x < 5:
			// Triangular: ends where an outer loop says.
			outer := names[r.IntN(d)]
			ext = fmt.Sprintf("%s + 1", outer)
			if kind == "rectangular" {
				kind = "triangular"
			}
		case x < 7:
			ext = "N"
			if kind == "rectangular" {
				kind = "symbolic"
			}
		case x < 8:
			min = fmt.Sprint(1 + r.IntN(3))
		}
		fmt.Fprintf(&b, "serial for (%s, %s, %s) {\n", name, min, ext)
	}
	// vi: a spatial binding; vr: a reduce binding, each over some loops.
	spatial, reduce := []string{}, []string{}
	for _, name := range names {
		switch r.IntN(3) {
		case 0:
			reduce = append(reduce, name)
		default:
			spatial = append(spatial, name)
		}
	}
	term := func(vars []string) string {
		if len(vars) == 0 {
			return "0"
		}
		parts := []string{}
		scale := 1
		for i := len(vars) - 1; i >= 0; i-- {
			parts = append(parts, fmt.Sprintf("%s * %d", vars[i], scale))
			// Mostly a mixed radix, sometimes overlapping.
			scale *= []int{4, 4, 8, 2, 1}[r.IntN(5)]
		}
		return strings.Join(parts, " + ")
	}
	fmt.Fprintf(&b, `ScheduleBlock(S) { vi, vr = axis.bind(%s + 20, %s + 20)
  axis.domain(vi = spatial(0, 64), vr = reduce(0, 64)) reads(A[0, vi], B[vr]) writes(A[0, vi])
  A[0, vi] = A[0, vi] * 2.0 + B[vr] }`, term(spatial), term(reduce))
	b.WriteString(strings.Repeat("}", depth) + "}}\n")
	return b.String(), kind
}
