package native

import (
	"fmt"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestPrefetchAgrees: prefetching changes no result, also where it
// reaches past the end of its buffer (an annotation far beyond the loop's
// extent, on every iteration), with a vector tail (72 columns in 16-lane
// vectors: the masked tail prefetches nothing), on rows split by a factor
// that leaves a partial tile, and inside a parallel loop.
func TestPrefetchAgrees(t *testing.T) {
	for _, ahead := range []int64{1, 6, 1 << 20} {
		for _, parallel := range []bool{false, true} {
			t.Run(fmt.Sprintf("ahead%d/parallel=%v", ahead, parallel), func(t *testing.T) {
				c := workload.Matmul(37, 72, 24)
				s, err := schedule.New(c.Func)
				if err != nil {
					t.Fatal(err)
				}
				tiles, k, err := hand.RowTile(s, 4, true)
				if err != nil {
					t.Fatal(schedule.Explain(err))
				}
				if err := s.AnnotateLoop(k, llvm.PrefetchKey, ahead); err != nil {
					t.Fatal(schedule.Explain(err))
				}
				if parallel {
					if err := s.Parallel(tiles); err != nil {
						t.Fatal(schedule.Explain(err))
					}
				}
				agree(t, s.Func(), c.Sizes, llvm.Options{VectorBits: 512}, 5)
			})
		}
	}
}
