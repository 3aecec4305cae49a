package poly

import (
	"slices"
	"testing"

	"github.com/loom-go/loom/ast"
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

// TestDependencesByPairs: CarriedBy on a fresh model (which computes the
// pairs of blocks inside the loop only) and DepsAmong give what filtering
// every dependence (Deps) gives, in the same order, on every workload.
func TestDependencesByPairs(t *testing.T) {
	for _, c := range workload.All() {
		whole, err := Extract(c.Func)
		if err != nil {
			t.Fatal(err)
		}
		all := whole.Deps()
		key := func(ds []*Dependence) []string {
			var out []string
			for _, d := range ds {
				out = append(out, d.Kind.String()+" "+d.Buffer.Name+" "+d.Source.Block.Name+"->"+d.Sink.Block.Name+" "+d.Rel.String())
			}
			return out
		}
		seen := map[*ast.For]bool{}
		for _, b := range whole.Blocks {
			for _, l := range b.Loops {
				if seen[l] {
					continue
				}
				seen[l] = true
				fresh, _ := Extract(c.Func)
				got, want := key(fresh.CarriedBy(l)), key(whole.CarriedBy(l))
				if !slices.Equal(got, want) {
					t.Errorf("%s: loop %s carries %v fresh, %v from all dependences", c.Name, l.Var.Name, got, want)
				}
			}
		}
		for i := range whole.Blocks {
			fresh, _ := Extract(c.Func)
			some := []*Instances{fresh.Blocks[i], fresh.Blocks[len(fresh.Blocks)-1]}
			var want []*Dependence
			for _, d := range all {
				if (d.Source.Block.Name == some[0].Block.Name || d.Source.Block.Name == some[1].Block.Name) &&
					(d.Sink.Block.Name == some[0].Block.Name || d.Sink.Block.Name == some[1].Block.Name) {
					want = append(want, d)
				}
			}
			if got := key(fresh.DepsAmong(some)); !slices.Equal(got, key(want)) {
				t.Errorf("%s: DepsAmong(%s, %s) = %v, want %v", c.Name, some[0].Block.Name, some[1].Block.Name, got, key(want))
			}
			// DepsOn, fresh and after DepsAmong computed the pairs.
			for _, d := range want {
				var on []*Dependence
				for _, e := range want {
					if e.Buffer == d.Buffer && e.Kind != WAW {
						on = append(on, e)
					}
				}
				again, _ := Extract(c.Func)
				againSome := []*Instances{again.Blocks[i], again.Blocks[len(again.Blocks)-1]}
				if got := key(again.DepsOn(againSome, d.Buffer, RAW, WAR)); !slices.Equal(got, key(on)) {
					t.Errorf("%s: DepsOn(%s, %s; %s) = %v, want %v", c.Name, some[0].Block.Name, some[1].Block.Name, d.Buffer.Name, got, key(on))
				}
				if got := key(fresh.DepsOn(some, d.Buffer, RAW, WAR)); !slices.Equal(got, key(on)) {
					t.Errorf("%s: DepsOn(%s, %s; %s) after DepsAmong = %v, want %v", c.Name, some[0].Block.Name, some[1].Block.Name, d.Buffer.Name, got, key(on))
				}
			}
		}
	}
}
