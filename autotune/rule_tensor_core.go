package autotune

import (
	"errors"
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/intrin"
	"github.com/loom-go/loom/schedule"
)

// TensorCoreTiling runs a contraction of 16-bit float factors (a gemm,
// attention's scores, a batched matmul) on Tensor Cores, tiled at three
// levels as CUTLASS's and MetaSchedule's Tensor Core kernels are: the
// last three loops of the block, i, j (spatial) and k (reduce), are split
//
//	i: io, iw, im, ii (16)    j: jo, jw, jn, ji (8)    k: ko, kk, ki (16)
//
// and ordered io, jo, iw, jw, ko, kk, im, jn, ii, ji, ki. A thread block
// computes a tile of warpsM × warpsN warp tiles (io bound to blockIdx.x,
// jo to blockIdx.y, the loops before i, a batch or heads, fused to
// blockIdx.z); a warp (iw bound to threadIdx.z, jw to threadIdx.y; the
// lanes are x) computes wm × wn mma tiles of 16 × 8, their accumulators
// in its lanes' registers across the k steps (codegen/cuda); each k step
// (ko) covers kk mma steps of 16, whose factors' tiles the whole block
// fetches into shared memory at ko (cooperativeFetch), ldmatrix loading
// the warps' fragments from there; the fetches run stages-1 steps ahead
// of the mma (cp.async, a software pipeline: pipelineKey on ko). The
// init is decomposed before ko and spread over each warp's 32 lanes, and
// the 16 × 8 × 16 nest tensorized with the first intrinsic of package
// intrin it matches (float16 or bfloat16 factors, B as a tile or
// transposed, float32 or float16 sums).
//
// The search may also sum 16-bit products in float32 where the output is
// 16-bit (Accumulate into a float32 copy of the output in global memory,
// rounded once into the output by each warp after its k steps): more
// exact, and the only Tensor Core path for bfloat16 outputs. Default
// keeps the function's own sums.
//
// The shape (warps, warp tile, k step, stages) is one sampled choice
// among those the extents divide and shared memory holds, Default taking
// the first of tensorCoreShapes' order; it applies only where the extents
// divide by the mma tile (no tails: the instruction computes whole
// tiles), and where the whole sequence works: it is tried on a copy
// first, without the shared tiles when their fetch is refused, so a
// block it cannot take is left untouched for the other GPU rules.
type TensorCoreTiling struct{}

func (TensorCoreTiling) Name() string { return "tensor-core-tiling" }

// tensorCoreIntrinsics are the intrinsics the rule tries, in order.
var tensorCoreIntrinsics = []string{
	"mma_m16n8k16_f16_f32", "mma_m16n8k16_bf16_f32", "mma_m16n8k16_f16_f16",
	"mma_m16n8k16_f16_f32_nt", "mma_m16n8k16_bf16_f32_nt", "mma_m16n8k16_f16_f16_nt",
}

// tensorCoreShape is how TensorCoreTiling tiles a contraction: warps
// along i and j, mma tiles a warp computes along each (a warp tile of
// 16 wm × 8 wn), mma steps of 16 along k per fetched k step, and the
// stages of the fetches' pipeline (1: fetched and used in the same step).
type tensorCoreShape struct {
	warpsM, warpsN, wm, wn, kk, stages int64
}

func (c tensorCoreShape) String() string {
	return fmt.Sprintf("warps %dx%d, warp tile %dx%d, k step %d, %d stages", c.warpsM, c.warpsN, 16*c.wm, 8*c.wn, 16*c.kk, c.stages)
}

// tensorCoreShapes are the shapes for a contraction of m × n × k (in mma
// tiles: 16, 8 and 16 elements) with batch independent problems, whose
// accumulators take accRegs registers a tile, best first: those that
// make at least 64 thread blocks before those that make fewer, then the
// larger tiles a block computes (more reuse of each fetched tile), then
// the larger warp tiles, deeper k steps and pipelines. Only shapes whose
// tiles divide the extents, whose accumulators fit a lane's registers and
// whose shared tiles fit in maxShared bytes are listed.
func tensorCoreShapes(m, n, k, batch, accRegs, maxShared int64) []tensorCoreShape {
	var out []tensorCoreShape
	for _, warps := range [][2]int64{{2, 2}, {2, 1}, {1, 2}, {1, 1}} {
		for _, tile := range [][2]int64{{4, 8}, {4, 4}, {2, 4}, {2, 2}, {1, 2}, {1, 1}} {
			for _, kk := range []int64{2, 1} {
				for _, stages := range []int64{2, 3, 1} {
					c := tensorCoreShape{warps[0], warps[1], tile[0], tile[1], kk, stages}
					if m%(c.warpsM*c.wm) != 0 || n%(c.warpsN*c.wn) != 0 || k%c.kk != 0 || c.wm*c.wn*accRegs > 128 {
						continue
					}
					if stages > 1 && k/c.kk < stages {
						continue // a pipeline deeper than the steps
					}
					// Two bytes an element, A's tile and B's, in every stage,
					// their rows padded as codegen/cuda pads them for ldmatrix
					// (by 8 elements where they are an even number of 8).
					padded := func(n int64) int64 {
						if (n/8)%2 == 0 {
							return n + 8
						}
						return n
					}
					if shared := 2 * (16*c.warpsM*c.wm*padded(16*c.kk) + 16*c.kk*padded(8*c.warpsN*c.wn)) * c.stages; shared > maxShared {
						continue
					}
					out = append(out, c)
				}
			}
		}
	}
	blocks := func(c tensorCoreShape) int64 { return batch * (m / (c.warpsM * c.wm)) * (n / (c.warpsN * c.wn)) }
	slices.SortStableFunc(out, func(a, b tensorCoreShape) int {
		if ea, eb := blocks(a) >= 64, blocks(b) >= 64; ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		// Fewer than 64 blocks: more blocks first.
		if blocks(a) < 64 && blocks(a) != blocks(b) {
			return int(blocks(b) - blocks(a))
		}
		ta, tb := a.warpsM*a.wm*a.warpsN*a.wn, b.warpsM*b.wm*b.warpsN*b.wn
		return int(tb - ta)
	})
	return out
}

func (TensorCoreTiling) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	if t.GPU == nil || t.GPU.WarpSize != 32 || t.GPU.Arch < 80 {
		return errSkip
	}
	bi, err := info(s, b)
	if err != nil || !bi.hasReduce() || len(bi.blk.Writes) != 1 || bi.blk.Predicate != nil {
		return errSkip
	}
	n := len(bi.loops)
	if n < 3 || bi.roles[n-3] != roleSpatial || bi.roles[n-2] != roleSpatial || bi.roles[n-1] != roleReduce {
		return errSkip
	}
	batch := int64(1)
	for i, r := range bi.roles[:n-3] {
		if r != roleSpatial {
			return errSkip
		}
		e, ok := s.Extent(bi.loops[i])
		if !ok {
			return errSkip
		}
		batch *= e
	}
	var ext [3]int64
	for d := range 3 {
		e, ok := s.Extent(bi.loops[n-3+d])
		if !ok || e%[]int64{16, 8, 16}[d] != 0 {
			return errSkip
		}
		ext[d] = e
	}
	// Only intrinsics whose accumulator is the block's output type and
	// whose factors' type the block reads are worth a try.
	reads := map[ast.DType]bool{}
	for _, r := range bi.blk.Reads {
		reads[r.Buffer.DType] = true
	}
	outBuf := bi.blk.Writes[0].Buffer
	out := outBuf.DType
	// The sums: in the block's own type where an intrinsic sums in it;
	// in float32 for 16-bit ones (Accumulate into a float32 copy of the
	// output, rounded once), a choice of the search only: Default keeps
	// the function's rounding.
	var accs []ast.DType
	for _, acc := range []ast.DType{out, ast.Float32} {
		if acc != out && (t.decide || !out.IsFloat() || out.Bits() != 16) {
			continue
		}
		for _, name := range tensorCoreIntrinsics {
			if in, _ := intrin.Lookup(name); in != nil && operand(in, "C").DType == acc && reads[operand(in, "A").DType] {
				accs = append(accs, acc)
				break
			}
		}
	}
	if len(accs) == 0 {
		return errSkip
	}
	acc := accs[0]
	if len(accs) > 1 {
		v, err := choose(s, t, []int64{0, 1}, 0)
		if err != nil {
			return err
		}
		acc = accs[v.Int()]
	}
	// prepare accumulates in acc; it returns the block that rounds the sums
	// back to the output ("" when acc is the output's type).
	prepare := func(x *schedule.Schedule) (string, error) {
		if acc == out {
			return "", nil
		}
		xb, err := x.GetBlock(b.Name())
		if err != nil {
			return "", err
		}
		wb, err := x.Accumulate(xb, outBuf.Name, acc, "global")
		if err != nil {
			return "", err
		}
		return wb.Name(), nil
	}
	steps := func(x *schedule.Schedule, name string, c tensorCoreShape) error {
		wb, err := prepare(x)
		if err != nil {
			return err
		}
		return tensorCoreSteps(x, t, b.Name(), name, c, wb)
	}
	for _, name := range tensorCoreIntrinsics {
		in, _ := intrin.Lookup(name)
		if in == nil {
			continue
		}
		if operand(in, "C").DType != acc || !reads[operand(in, "A").DType] {
			continue
		}
		accRegs := int64(4) // float32 sums; float16 ones two to a register
		if acc == ast.Float16 {
			accRegs = 2
		}
		shapes := tensorCoreShapes(ext[0]/16, ext[1]/8, ext[2]/16, batch, accRegs, int64(t.GPU.MaxSharedBytes))
		if len(shapes) == 0 {
			continue
		}
		ids := make([]int64, len(shapes))
		for i := range ids {
			ids[i] = int64(i)
		}
		// Whether the nest matches the intrinsic does not depend on the
		// shape: try the least one on a copy before sampling.
		try, err := schedule.New(s.Func())
		if err != nil {
			return err
		}
		last := shapes[len(shapes)-1]
		last.stages = 0 // no shared tiles
		if steps(try, name, last) != nil {
			continue
		}
		v, err := choose(s, t, ids, 0)
		if err != nil {
			return err
		}
		shape := shapes[v.Int()]
		// On a copy first: a sequence refused part-way must leave s as it
		// was. Without the shared tiles when their fetch is refused.
		for _, c := range []tensorCoreShape{shape, {shape.warpsM, shape.warpsN, shape.wm, shape.wn, shape.kk, 0}} {
			try, err := schedule.New(s.Func())
			if err != nil {
				return err
			}
			if steps(try, name, c) != nil {
				continue
			}
			if err := steps(s, name, c); err != nil {
				return fmt.Errorf("%s, %v: the steps that worked on a copy fail: %w", name, c, err)
			}
			return errDone
		}
	}
	return errSkip
}

// operand returns the description's parameter that plays role (A, B, C).
func operand(in *intrin.Intrinsic, role string) *ast.Buffer {
	for _, p := range in.Desc.Params {
		if p.Name == in.Operands[role] {
			return p
		}
	}
	return &ast.Buffer{}
}

// nestMatch matches the nest at loop l of s with intrinsic in.
func nestMatch(s *schedule.Schedule, l schedule.Loop, in *intrin.Intrinsic) (*intrin.Match, error) {
	var nest *ast.For
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		if f, ok := n.(*ast.For); ok && f.Var.Name == l.Name() {
			nest = f
		}
		return nest == nil
	})
	if nest == nil {
		return nil, fmt.Errorf("no loop %s", l.Name())
	}
	return in.Match(nest)
}

// tensorCoreSteps applies TensorCoreTiling's primitives to block name of
// s with intrinsic and shape c; c.stages 0 leaves the factors where they
// are (no shared tiles). writeback, when not "", is the block that copies
// the sums into the output (Accumulate's): it goes after the k steps of
// each warp, spread over the warp's lanes.
func tensorCoreSteps(s *schedule.Schedule, t Target, name, intrinsic string, c tensorCoreShape, writeback string) error {
	b, err := s.GetBlock(name)
	if err != nil {
		return err
	}
	ls, err := s.GetLoops(b)
	if err != nil {
		return err
	}
	n := len(ls)
	// split splits l by factors, leaving out the factors of 1 but the
	// last (a loop of one iteration binds or tiles nothing); it returns
	// the parts, a zero Loop for each factor left out.
	split := func(l schedule.Loop, factors ...int64) ([]schedule.Loop, error) {
		kept := []int{-1}
		for i, f := range factors {
			if f > 1 || i == len(factors)-1 {
				kept = append(kept, int(f))
			}
		}
		parts, err := s.Split(l, kept...)
		if err != nil {
			return nil, err
		}
		out := []schedule.Loop{parts[0]}
		next := 1
		for i, f := range factors {
			if f > 1 || i == len(factors)-1 {
				out = append(out, parts[next])
				next++
			} else {
				out = append(out, schedule.Loop{})
			}
		}
		return out, nil
	}
	is, err := split(ls[n-3], c.warpsM, c.wm, 16)
	if err != nil {
		return err
	}
	js, err := split(ls[n-2], c.warpsN, c.wn, 8)
	if err != nil {
		return err
	}
	ks, err := split(ls[n-1], c.kk, 16)
	if err != nil {
		return err
	}
	var order []schedule.Loop
	for _, l := range []schedule.Loop{is[0], js[0], is[1], js[1], ks[0], ks[1], is[2], js[2], is[3], js[3], ks[2]} {
		if l != (schedule.Loop{}) {
			order = append(order, l)
		}
	}
	if err := s.Reorder(order...); err != nil {
		return err
	}
	if n > 3 {
		outer := ls[0]
		for _, l := range ls[1 : n-3] {
			if outer, err = s.Fuse(outer, l); err != nil {
				return err
			}
		}
		if err := s.Bind(outer, "blockIdx.z"); err != nil {
			return err
		}
	}
	if err := s.Bind(is[0], "blockIdx.x"); err != nil {
		return err
	}
	if err := s.Bind(js[0], "blockIdx.y"); err != nil {
		return err
	}
	// The warps: along y, then z (the lanes are x); the shape of the
	// block's threads, outer axis first, for the cooperative fetches.
	var warps []schedule.Loop
	var shape []int64
	for _, w := range []struct {
		l schedule.Loop
		n int64
	}{{is[1], c.warpsM}, {js[1], c.warpsN}} {
		if w.l != (schedule.Loop{}) {
			warps = append(warps, w.l)
			shape = append(shape, w.n)
		}
	}
	shape = append(shape, 32)
	for i, w := range warps {
		if err := s.Bind(w, [...]string{"threadIdx.y", "threadIdx.z"}[len(warps)-1-i]); err != nil {
			return err
		}
	}

	// The write-back first: its place is simpler to prove before the
	// init's loops are fused.
	if writeback != "" {
		wb, err := s.GetBlock(writeback)
		if err != nil {
			return err
		}
		at := js[0]
		if len(warps) > 0 {
			at = warps[len(warps)-1]
		}
		if err := s.ReverseComputeAt(wb, at); err != nil {
			return err
		}
		wls, err := s.GetLoops(wb)
		if err != nil {
			return err
		}
		own := wls[slices.IndexFunc(wls, func(l schedule.Loop) bool { return l.Name() == at.Name() })+1:]
		if len(own) < 2 {
			return errors.New("the write-back has fewer than two loops")
		}
		fused, err := s.Fuse(own[len(own)-2], own[len(own)-1])
		if err != nil {
			return err
		}
		parts, err := s.Split(fused, -1, 32)
		if err != nil {
			return err
		}
		if err := s.Bind(parts[1], "threadIdx.x"); err != nil {
			return err
		}
	}
	init, err := s.DecomposeReduction(b, ks[0])
	if err != nil {
		return err
	}
	inits, err := s.GetLoops(init)
	if err != nil {
		return err
	}
	if len(inits) < 2 {
		return errors.New("the init has fewer than two loops")
	}
	fused, err := s.Fuse(inits[len(inits)-2], inits[len(inits)-1])
	if err != nil {
		return err
	}
	lanes, err := s.Split(fused, -1, 32)
	if err != nil {
		return err
	}
	if err := s.Bind(lanes[1], "threadIdx.x"); err != nil {
		return err
	}
	if c.stages > 0 {
		// The factors' tiles of each step of ko in shared memory, fetched
		// by the whole block together, stages-1 steps ahead.
		in, _ := intrin.Lookup(intrinsic)
		m, err := nestMatch(s, is[3], in)
		if err != nil {
			return err
		}
		for _, op := range []string{"A", "B"} {
			if _, err := cooperativeFetch(s, t, b, m.Buffers[in.Operands[op]], ks[0], shape); err != nil {
				return err
			}
		}
		if c.stages > 1 {
			if err := s.AnnotateLoop(ks[0], pipelineKey, c.stages); err != nil {
				return err
			}
		}
	}
	return s.Tensorize(is[3], intrinsic)
}
