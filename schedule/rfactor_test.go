package schedule

import (
	"errors"
	"testing"

	"github.com/loom-go/loom/internal/workload"
)

// TestRFactorEveryLoop: rfactor of any loop of any block of the corpus
// (unsplit, split, after a reorder) either succeeds or is refused with a
// user's error, never an internal one, with the validator on.
func TestRFactorEveryLoop(t *testing.T) {
	for _, c := range workload.All() {
		base, err := New(c.Func, WithValidation(true))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range base.Blocks() {
			loops, _ := base.GetLoops(b)
			for i := range loops {
				for _, split := range []bool{false, true} {
					s, _ := New(c.Func, WithValidation(true))
					blk, _ := s.GetBlock(b.Name())
					ls, _ := s.GetLoops(blk)
					l := ls[i]
					if split {
						parts, err := s.Split(l, -1, 2)
						if err != nil {
							continue
						}
						l = parts[1]
					}
					if _, err := s.RFactor(l); errors.Is(err, ErrInternal) {
						t.Errorf("%s: rfactor of loop %d of block %s (split %v): %v", c.Name, i, b.Name(), split, err)
					}
				}
			}
		}
	}
}
