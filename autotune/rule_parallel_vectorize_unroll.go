package autotune

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/intrin"
	"github.com/loom-go/loom/schedule"
)

// ParallelVectorizeUnroll parallelizes a block's outermost spatial loop
// that does some work (loops of one iteration above it, as a batch of one
// leaves, change nothing; or the loop under it, when a bucket's smallest
// sizes leave it too few iterations for the threads: see parallelLoop)
// unless its body runs too few times to be worth threads
// (minParallelWork), vectorizes its innermost loop when that is
// spatial and holds no other loop (a sum computed at it, whose own
// vectorized loop the code generator would run as scalar code inside it;
// a symbolic extent is split by the vector's lanes first, its tail
// predicated), and samples an unroll limit for the
// loops under its outermost loop (0 never unrolls; see unrolls).
// On a GPU only the unroll limit applies: the loops are bound to blocks
// and threads.
//
// With HalfVectors, on a target whose vectors are wider than 256 bits, it
// also samples whether the vectorized loops under the outermost loop use
// the whole vector or half of it (see vectorWidths): on AMD Zen 4 a
// loop streaming through memory moves more bytes a second in 256-bit
// halves, a register tile computes faster in whole vectors.
type ParallelVectorizeUnroll struct {
	MaxUnroll   []int64
	HalfVectors bool
}

func (ParallelVectorizeUnroll) Name() string { return "parallel-vectorize-unroll" }

func (p ParallelVectorizeUnroll) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || len(bi.loops) == 0 {
		return errSkip
	}
	if t.Threads > 1 && !tooSmallToSpread(s, bi, t) {
		if l, ok := parallelLoop(s, bi, t); ok {
			// Refused when illegal: stays serial.
			if err := internal(s.Parallel(l)); err != nil {
				return err
			}
		}
	}
	last := len(bi.loops) - 1
	if bi.roles[last] == roleSpatial && last > 0 && t.GPU == nil && !enclosesLoops(s, bi.loops[last]) {
		l := bi.loops[last]
		if _, ok := s.Extent(l); !ok && t.VectorLanes > 1 {
			// A symbolic extent: whole vectors of it, and a predicated
			// tail (which the code generator partitions off).
			parts, err := s.Split(l, -1, t.VectorLanes)
			if err := internal(err); err != nil {
				return err
			}
			if err == nil {
				l = parts[1]
			}
		}
		if err := internal(s.Vectorize(l)); err != nil {
			return err
		}
	}
	// The limit and the width are annotations, so that a mutated decision
	// takes effect on replay; Finish applies them. Where
	// the loop has one already, it is a consumer's, and covers this block.
	if len(p.MaxUnroll) > 0 && !annotated(s, bi.loops[0], unrollKey) {
		v, err := choose(s, t, p.MaxUnroll, preferredUnroll(s, bi, t, p.MaxUnroll))
		if err != nil {
			return err
		}
		if err := s.AnnotateLoopBy(bi.loops[0], unrollKey, v); err != nil {
			return err
		}
	}
	full := int64(t.VectorLanes) * 32
	if p.HalfVectors && t.GPU == nil && full > 256 && !annotated(s, bi.loops[0], vectorBitsKey) {
		v, err := choose(s, t, []int64{full, full / 2}, 0) // Default: whole vectors
		if err != nil {
			return err
		}
		return s.AnnotateLoopBy(bi.loops[0], vectorBitsKey, v)
	}
	return nil
}

// preferredUnroll returns the index among limits (ascending after a 0)
// that Default takes: a moderate limit (the second), or the smallest one
// that unrolls the block's register tile, the loops under its innermost
// reduce loop but the innermost (vectorized), where that tile makes more
// copies of the block than the moderate limit allows (24 rows of a
// convolution's output channels: rolled, each row's accumulator would be
// loaded and stored at every step of the reduction), with the taps of
// that reduce loop where neighbouring pixels share them (sharesWindows).
// On a GPU, the
// smallest limit that unrolls the innermost reduce loop with the
// register tile under it (gpuUnrollCopies), else the moderate one.
func preferredUnroll(s *schedule.Schedule, bi *blockInfo, t Target, limits []int64) int {
	preferred := min(1, len(limits)-1)
	lastReduce := -1
	for i, r := range bi.roles {
		if r == roleReduce {
			lastReduce = i
		}
	}
	last := len(bi.loops) - 1
	if t.GPU != nil {
		copies, ok := gpuUnrollCopies(s, bi, lastReduce)
		for i := preferred; ok && i < len(limits); i++ {
			if limits[i] >= copies {
				return i
			}
		}
		return preferred
	}
	if lastReduce < 0 || lastReduce == last {
		return preferred
	}
	copies := int64(1)
	for _, l := range bi.loops[lastReduce+1 : last] {
		n, ok := s.Extent(l)
		if !ok {
			return preferred
		}
		copies *= n
	}
	if taps, ok := s.Extent(bi.loops[lastReduce]); ok && taps > 1 && taps <= maxSharedTaps && copies*taps <= limits[len(limits)-1] && sharesWindows(bi, t) {
		copies *= taps
	}
	for i := preferred; i < len(limits); i++ {
		if limits[i] >= copies {
			return i
		}
	}
	return preferred
}

// sharesWindows reports whether a register tile of the block, a
// channel-wise one (every input read lane by lane along the vectorized
// loop: a depthwise convolution's) over windows at unit stride, reads
// the same input vectors at neighbouring taps of neighbouring pixels:
// Default then unrolls the taps along the row (the innermost reduce
// loop, up to maxSharedTaps) with the tile, and LLVM loads each input
// vector once for all of them. The tile of 7 pixels by two vectors on
// AVX-512 otherwise stayed rolled over its taps and loaded 14 input
// vectors a tap. MobileNetV2's depthwise 3x3 convolutions in NHWC,
// Default, one thread, time unrolled / rolled in one run: 384@14 0.51,
// 576@14 0.58, 960@7 0.76, 192@28 0.78, 32@112 0.83; EfficientNet-B0's
// 5x5 over 480 channels at 14x14 0.53. At stride 2 neighbouring pixels
// share one tap in three, and unrolled they ran 0.78-1.05 (96@112
// slower): those stay rolled, as do dense convolutions, whose tile
// broadcasts its inputs (2.4x slower unrolled: code too large).
func sharesWindows(bi *blockInfo, t Target) bool {
	v := lastSpatial(bi)
	if v < 0 || t.VectorLanes <= 0 || !unitStrideWindows(bi) {
		return false
	}
	vec := iterOf(bi, bi.loops[v])
	if vec == nil {
		return false
	}
	for _, r := range inputs(bi) {
		if !laneByLane(r, vec.Var, t.VectorLanes) {
			return false
		}
	}
	return true
}

// gpuUnrollCopies returns the copies of a block that unrolling its
// innermost reduce loop and every loop under it makes, counting the
// reduction's init as a second copy (as unrolls does), and whether the
// block has such a loop of constant extents: a thread's register tile
// (C_local in a gemm) stays in registers only when every index into it is
// a constant, that is when the loops over it are unrolled, and the k
// steps of a shared-memory chunk with them (gemm 4096³ on an H200 at
// the moderate limit: the 4 x 4 tile half rolled, 2.1 TFLOP/s).
func gpuUnrollCopies(s *schedule.Schedule, bi *blockInfo, lastReduce int) (int64, bool) {
	if lastReduce < 0 {
		return 0, false
	}
	copies := int64(1)
	for _, l := range bi.loops[lastReduce:] {
		n, ok := s.Extent(l)
		if !ok {
			return 0, false
		}
		copies *= n
	}
	if bi.blk.Init != nil {
		copies *= 2
	}
	return copies, true
}

// vectorBitsKey annotates a loop with the vector width in bits of the
// vectorized loops under it.
const vectorBitsKey = "autotune.vector_bits"

// vectorWidth is a vectorized loop and the width Finish gives it.
type vectorWidth struct {
	loop string
	bits int64
}

// vectorWidths returns every vectorized loop under a loop annotated with
// vectorBitsKey whose code generator's annotation of the width
// (llvm.VectorBitsKey; a width no narrower than the target's changes
// nothing) is not that width yet, in the order the text form prints them.
func vectorWidths(f *ast.Func) []vectorWidth {
	var out []vectorWidth
	widthUnder(f.Body, 0, &out)
	return out
}

func widthUnder(s ast.Stmt, bits int64, out *[]vectorWidth) {
	lp, isLoop := s.(*ast.For)
	if isLoop {
		if n, ok := lp.Annotations[vectorBitsKey].(int64); ok {
			bits = n
		}
		if bits != 0 && lp.Kind == ast.Vectorized {
			if have, ok := lp.Annotations[llvm.VectorBitsKey].(int64); !ok || have != bits {
				*out = append(*out, vectorWidth{lp.Var.Name, bits})
			}
		}
	}
	ast.MapChildren(s, func(c ast.Stmt) ast.Stmt { widthUnder(c, bits, out); return c }, func(e ast.Expr) ast.Expr { return e })
}

// unrollKey annotates a loop with the unroll limit of the loops under
// it.
const unrollKey = "autotune.unroll_max"

// unrolls returns the loops to unroll under each loop annotated with
// unrollKey = n (that loop included), in the order the text form prints
// them: every serial loop of constant extent whose body has no loop left
// rolled and that makes at most n copies of the blocks in it, innermost
// loops first, as TVM's auto_unroll_max_step does. A vectorized loop
// counts as one copy of its body, an unrolled one as its extent's. So the
// register tile of a multi-level tiling, the loops under its innermost
// reduce level, is unrolled whole, and a small reduce loop above it with
// it when the limit allows. Unrolling is always legal: it keeps the order
// of iterations.
func unrolls(f *ast.Func) []string {
	var out []string
	unrollUnder(f.Body, 0, &out)
	return out
}

// unrollUnder adds the loops of s to unroll within limit to out, and
// returns the number of block copies s runs once they are unrolled: -1
// when a loop in it stays rolled.
func unrollUnder(s ast.Stmt, limit int64, out *[]string) int64 {
	lp, isLoop := s.(*ast.For)
	if isLoop {
		if _, ok := lp.Annotations[intrin.AnnotationKey]; ok {
			return 1 // one instruction: its loops stay as the intrinsic matched them
		}
		if n, ok := lp.Annotations[unrollKey].(int64); ok {
			limit = n
		}
	}
	var body int64
	ast.MapChildren(s, func(c ast.Stmt) ast.Stmt {
		n := unrollUnder(c, limit, out)
		if n < 0 || body < 0 {
			body = -1
		} else {
			body += n
		}
		return c
	}, func(e ast.Expr) ast.Expr { return e })
	if !isLoop {
		if body == 0 {
			body = 1 // a block or a statement
		}
		return body
	}
	ext, isConst := ast.ConstIntValue(ast.Simplify(lp.Extent))
	switch {
	case body < 0:
		return -1
	case lp.Kind == ast.Vectorized:
		return body
	case lp.Kind == ast.Unrolled && isConst:
		return ext * body
	case lp.Kind != ast.Serial || !isConst || ext*body > limit:
		return -1
	}
	*out = append(*out, lp.Var.Name)
	return ext * body
}

// minParallelWork is the least number of times a block's body runs
// that is worth spreading over threads: starting and joining them costs
// about a microsecond, the time of some thousands of iterations (a
// 768-float embedding row ran 9x slower on two threads than on one).
const minParallelWork = 16384

// tooSmallToSpread reports whether the block's loops run its body fewer
// than minParallelWork times: loops of constant extent, and loops of
// symbolic extent at the largest value the target's bounds give them (a
// bucket's upper end: the chain's bucket of 2 to 3 rows of 1024 ran 3x
// slower on two threads than on one). A symbolic loop without a bound
// may be large.
func tooSmallToSpread(s *schedule.Schedule, bi *blockInfo, t Target) bool {
	bounds := t.Bounds.max()
	work := int64(1)
	for _, l := range bi.loops {
		n, ok := s.Extent(l)
		if !ok {
			if n = extentBound(s, l, bounds); n == 0 {
				return false
			}
		}
		if work *= n; work >= minParallelWork {
			return false
		}
	}
	return true
}

// parallelLoop returns the loop of the block to run in parallel: the
// first loop with more than one iteration, if it is spatial (every loop
// above it has one iteration); or the spatial loop right under it, when
// the first has a symbolic extent that gives fewer than two iterations a
// thread at the smallest sizes of the target's bounds while the one under
// it gives at least that many at every size (matmul's bucket of 16 to 63
// rows, in tiles of 16, has one tile at 16 rows and three at 48: on two
// threads its parallel row tiles ran on one thread, 0.72 of the kernel
// tuned for 48 rows, which spreads the columns). Each iteration of the
// first loop then spreads the second over the threads.
func parallelLoop(s *schedule.Schedule, bi *blockInfo, t Target) (schedule.Loop, bool) {
	for i, l := range bi.loops {
		n, ok := s.Extent(l)
		if ok && n == 1 {
			continue // binds nothing that varies, whatever its role
		}
		if bi.roles[i] != roleSpatial {
			return l, false
		}
		enough := int64(2 * t.Threads)
		if !ok && i+1 < len(bi.loops) && bi.roles[i+1] == roleSpatial {
			first, known := leastIterations(s, l, t)
			next, nextKnown := leastIterations(s, bi.loops[i+1], t)
			if known && first < enough && nextKnown && next >= enough {
				return bi.loops[i+1], true
			}
		}
		return l, true
	}
	return schedule.Loop{}, false
}

// leastIterations returns the fewest iterations loop l runs: its extent
// when constant, else its extent at the smallest sizes of the target's
// bounds; false when neither is known.
func leastIterations(s *schedule.Schedule, l schedule.Loop, t Target) (int64, bool) {
	if n, ok := s.Extent(l); ok {
		return n, true
	}
	n := extentBound(s, l, t.Bounds.min())
	return n, n > 0
}

// annotated reports whether loop l carries annotation key.
func annotated(s *schedule.Schedule, l schedule.Loop, key string) bool {
	found := false
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		if lp, ok := n.(*ast.For); ok && lp.Var.Name == l.String() {
			_, found = lp.Annotations[key]
		}
		return !found
	})
	return found
}

// enclosesLoops says whether loop l of s's function has loops in its
// body, as where a producer is computed at it: the code generator
// vectorizes only the innermost loop of a nest.
func enclosesLoops(s *schedule.Schedule, l schedule.Loop) bool {
	found := false
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		f, ok := n.(*ast.For)
		if found || !ok || f.Var.Name != l.Name() {
			return !found
		}
		ast.Inspect(f.Body, func(m ast.Node) bool {
			_, inner := m.(*ast.For)
			found = found || inner
			return !found
		})
		return false
	})
	return found
}
