package poly

import (
	"testing"

	"github.com/loom-go/loom/internal/workload"
)

// TestCorpusModels extracts every workload of the corpus: the models must
// be exact (every bound, binding and region is affine) except conv2d's
// padding block, whose loads clamp their indices with min and max, and the
// loops that carry nothing must include the spatial loops of every
// element-wise block.
func TestCorpusModels(t *testing.T) {
	for _, c := range workload.All() {
		p, err := Extract(c.Func)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range p.Blocks {
			if !b.Exact && !(c.Name == "conv2d" && b.Block.Name == "P") {
				t.Errorf("%s: block %s is not modelled exactly", c.Name, b.Block.Name)
			}
		}
		for _, b := range p.Blocks {
			if b.Block.IsReduction() {
				continue
			}
			for _, l := range b.Loops {
				if deps := p.CarriedBy(l); len(deps) > 0 {
					t.Errorf("%s: loop %s of element-wise block %s carries %v", c.Name, l.Var.Name, b.Block.Name, deps[0])
				}
			}
		}
	}
}
