package schedule_test

import (
	"math/rand/v2"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestQuickProofsAgreeWithPoly tiles the reduction blocks of the corpus at
// random (random splits of their loops, then random orders of them, and
// parallel and vectorized loops), as multi-level tiling does, and checks
// that every reorder, parallel and vectorize the quick proofs accept, the
// exact analysis accepts too: the two schedules, one with the quick proofs
// and one without, stay the same function step by step. Each function is
// tiled at two of the seeds 1 to 6 (all of 1 to 12 with -long).
func TestQuickProofsAgreeWithPoly(t *testing.T) {
	cases := append(schedgen.Corpus(), workload.Conv2D(1, 4, 6, 6, 4))
	accepted, proved := 0, schedule.QuickProved()
	for i, c := range cases {
		for _, seed := range corpusSeeds(i, 2, 6, 12) {
			accepted += tileTwice(t, c, seed)
		}
	}
	if accepted == 0 || schedule.QuickProved() == proved {
		t.Errorf("%d reorders accepted, %d quick proofs: the test checks nothing", accepted, schedule.QuickProved()-proved)
	}
}

// tileTwice runs one random tiling on two schedules, with and without the
// quick proofs, and returns how many reorders were accepted.
func tileTwice(t *testing.T, c workload.Case, seed uint64) int {
	var scheds [2]*schedule.Schedule
	var rands [2]*rand.Rand
	for i := range scheds {
		s, err := schedule.New(c.Func, schedule.WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		scheds[i], rands[i] = s, rand.New(rand.NewPCG(seed, 7))
	}
	accepted := 0
	for step := 0; step < 16; step++ {
		var errs [2]error
		var desc string
		for i, s := range scheds {
			prev := schedule.SetQuickProofs(i == 0)
			desc, errs[i] = tileStep(rands[i], s)
			schedule.SetQuickProofs(prev)
		}
		if (errs[0] == nil) != (errs[1] == nil) || errs[0] != nil && errs[0].Error() != errs[1].Error() {
			t.Fatalf("%s seed %d step %d %s: with the quick proofs %v, without %v\n%s", c.Name, seed, step, desc, errs[0], errs[1], ast.Print(scheds[1].Func()))
		}
		if ast.Hash(scheds[0].Func()) != ast.Hash(scheds[1].Func()) {
			t.Fatalf("%s seed %d step %d %s: the schedules differ", c.Name, seed, step, desc)
		}
		if errs[0] == nil && desc == "reorder" {
			accepted++
		}
	}
	return accepted
}

// tileStep splits a random loop of a random block, reorders its loops at
// random, or makes one of them parallel or vectorized.
func tileStep(r *rand.Rand, s *schedule.Schedule) (string, error) {
	var nests [][]schedule.Loop
	for _, blk := range s.Func().Blocks() {
		b, err := s.GetBlock(blk.Name)
		if err != nil {
			return "get_block", err
		}
		if loops, err := s.GetLoops(b); err == nil && len(loops) > 0 {
			nests = append(nests, loops)
		}
	}
	if len(nests) == 0 {
		return "none", nil
	}
	loops := nests[r.IntN(len(nests))]
	switch k := r.IntN(10); {
	case k < 3:
		l := loops[r.IntN(len(loops))]
		n, ok := s.Extent(l)
		if !ok || n < 2 {
			return "split", nil
		}
		f := int(n)
		for f == int(n) || int(n)%f != 0 {
			f = 1 + r.IntN(int(n))
		}
		_, err := s.Split(l, -1, f)
		return "split", err
	case k < 8:
		from := r.IntN(len(loops))
		perm := r.Perm(len(loops) - from)
		order := make([]schedule.Loop, len(perm))
		for i, p := range perm {
			order[i] = loops[from+p]
		}
		if len(order) < 2 {
			return "reorder", nil
		}
		return "reorder", s.Reorder(order...)
	case k < 9:
		return "parallel", s.Parallel(loops[r.IntN(len(loops))])
	default:
		return "vectorize", s.Vectorize(loops[len(loops)-1])
	}
}
