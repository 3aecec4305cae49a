// Package schedgen applies random schedule primitives with random
// arguments, for the property tests of the schedule primitives and of the
// code generators: whatever sequence a schedule accepts must keep the
// function's results.
package schedgen

import (
	"fmt"
	"math/rand/v2"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// Corpus is the property tests' set of functions, at sizes the interpreter
// runs quickly.
func Corpus() []workload.Case {
	return []workload.Case{
		workload.Matmul(12, 10, 8),
		workload.MatmulBiasReLU(8, 12, 10),
		workload.Conv2D(1, 2, 5, 5, 3),
		workload.Softmax(4, 24),
		workload.RMSNorm(3, 32),
		workload.LayerNorm(3, 32),
		workload.Chain(1, 2, 1024),
	}
}

// Step applies one random primitive with random arguments to s and
// returns a description of it. It calls snap just before the primitive
// under test (after the getters and samplers it uses, which are steps of
// their own).
func Step(r *rand.Rand, s *schedule.Schedule, snap func()) (string, error) {
	f := s.Func()
	blocks := f.Blocks()
	var loops []*ast.For
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.For); ok {
			loops = append(loops, l)
		}
		return true
	})
	if len(loops) == 0 {
		return "none", nil
	}
	loop := func() schedule.Loop {
		l, _ := s.GetLoop(loops[r.IntN(len(loops))].Var.Name)
		return l
	}
	block := func() schedule.Block {
		b, _ := s.GetBlock(blocks[r.IntN(len(blocks))].Name)
		return b
	}
	buffer := func(b schedule.Block) string {
		blk := s.Func().Block(b.Name())
		if blk == nil || len(blk.Reads)+len(blk.Writes) == 0 {
			return "X"
		}
		rs := append(append([]ast.Region(nil), blk.Reads...), blk.Writes...)
		return rs[r.IntN(len(rs))].Buffer.Name
	}
	factors := []int{-1, 1, 2, 3, 4, 5, 8, 16}
	scopes := []string{"global", "shared", "local"}
	axes := []string{"blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y"}
	switch r.IntN(18) {
	case 0, 1:
		l := loop()
		fs := []int{factors[r.IntN(len(factors))], factors[r.IntN(len(factors))]}
		if r.IntN(3) == 0 {
			fs = append(fs, factors[r.IntN(len(factors))])
		}
		snap()
		_, err := s.Split(l, fs...)
		return fmt.Sprintf("split(%s, %v)", l.Name(), fs), err
	case 2:
		a, b := loop(), loop()
		snap()
		_, err := s.Fuse(a, b)
		return fmt.Sprintf("fuse(%s, %s)", a.Name(), b.Name()), err
	case 3:
		a, b := loop(), loop()
		snap()
		return fmt.Sprintf("reorder(%s, %s)", a.Name(), b.Name()), s.Reorder(a, b)
	case 4:
		l := loop()
		snap()
		return fmt.Sprintf("parallel(%s)", l.Name()), s.Parallel(l)
	case 5:
		l := loop()
		snap()
		return fmt.Sprintf("vectorize(%s)", l.Name()), s.Vectorize(l)
	case 6:
		l := loop()
		snap()
		return fmt.Sprintf("unroll(%s)", l.Name()), s.Unroll(l)
	case 7:
		l, ax := loop(), axes[r.IntN(len(axes))]
		snap()
		return fmt.Sprintf("bind(%s, %s)", l.Name(), ax), s.Bind(l, ax)
	case 8:
		b, l := block(), loop()
		snap()
		return fmt.Sprintf("compute_at(%s, %s)", b.Name(), l.Name()), s.ComputeAt(b, l)
	case 9:
		b, l := block(), loop()
		snap()
		return fmt.Sprintf("reverse_compute_at(%s, %s)", b.Name(), l.Name()), s.ReverseComputeAt(b, l)
	case 10:
		b := block()
		snap()
		return fmt.Sprintf("compute_inline(%s)", b.Name()), s.ComputeInline(b)
	case 11:
		b := block()
		snap()
		return fmt.Sprintf("reverse_compute_inline(%s)", b.Name()), s.ReverseComputeInline(b)
	case 12:
		l := loop()
		snap()
		_, err := s.RFactor(l)
		return fmt.Sprintf("rfactor(%s)", l.Name()), err
	case 13:
		b, l := block(), loop()
		snap()
		_, err := s.DecomposeReduction(b, l)
		return fmt.Sprintf("decompose_reduction(%s, %s)", b.Name(), l.Name()), err
	case 14:
		b := block()
		buf, sc := buffer(b), scopes[r.IntN(len(scopes))]
		var err error
		if r.IntN(2) == 0 {
			snap()
			_, err = s.CacheRead(b, buf, sc)
			return fmt.Sprintf("cache_read(%s, %s, %s)", b.Name(), buf, sc), err
		}
		snap()
		_, err = s.CacheWrite(b, buf, sc)
		return fmt.Sprintf("cache_write(%s, %s, %s)", b.Name(), buf, sc), err
	case 15:
		a, b := loop(), loop()
		snap()
		_, err := s.Align(a, b)
		return fmt.Sprintf("align(%s, %s)", a.Name(), b.Name()), err
	case 16:
		l := loop()
		snap()
		vs, err := s.SamplePerfectTile(l, 2, 8)
		if err != nil {
			return fmt.Sprintf("sample_perfect_tile(%s)", l.Name()), err
		}
		snap()
		_, err = s.SplitBy(l, vs)
		return fmt.Sprintf("split_by(%s, %v)", l.Name(), []int64{vs[0].Int(), vs[1].Int()}), err
	default:
		b := block()
		snap()
		l, err := s.SampleComputeLocation(b)
		if err != nil {
			return fmt.Sprintf("sample_compute_location(%s)", b.Name()), err
		}
		snap()
		return fmt.Sprintf("compute_at(%s, sampled %s)", b.Name(), l.Name()), s.ComputeAt(b, l)
	}
}
