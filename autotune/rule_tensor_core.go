package autotune

import (
	"errors"
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/intrin"
	"github.com/loom-go/loom/schedule"
)

// TensorCoreTiling runs a contraction of 16-bit float factors (a gemm,
// attention's scores, a batched matmul) on Tensor Cores: the last three
// loops of the block, i, j (spatial) and k (reduce), are split by the
// mma.sync m16n8k16 tile (16, 8, 16) and by warps, and ordered
//
//	io, jo, iw, jw, ko, ii, ji, ki
//
// io bound to blockIdx.x, jo to blockIdx.y, the loops before i (a batch,
// heads, fused) to blockIdx.z, iw to threadIdx.z and jw to threadIdx.y (a
// warp a tile of the block's), the init decomposed before ko and spread
// over each warp's 32 lanes (threadIdx.x), and the 16 x 8 x 16 nest
// tensorized with the first intrinsic of package intrin it matches
// (float16 or bfloat16 factors, B as a tile or transposed, float32 or
// float16 sums). The warps: up to 4 along j and 2 along i, as many as
// divide the block's tiles.
//
// It applies only where the extents divide by the tile (no tails: the
// instruction computes whole tiles) and the whole sequence works: it is
// tried on a copy first, so a block it cannot take is left untouched for
// the other GPU rules. The factors' tiles of each step of ko are fetched
// into shared memory by the whole block (cooperativeFetch; without them
// when their fetch is refused); the accumulators stay where they are
// (global memory), which codegen/cuda keeps in each lane's registers
// across ko. Not yet: cp.async double buffering, ldmatrix.
type TensorCoreTiling struct{}

func (TensorCoreTiling) Name() string { return "tensor-core-tiling" }

// tensorCoreIntrinsics are the intrinsics the rule tries, in order.
var tensorCoreIntrinsics = []string{
	"mma_m16n8k16_f16_f32", "mma_m16n8k16_bf16_f32", "mma_m16n8k16_f16_f16",
	"mma_m16n8k16_f16_f32_nt", "mma_m16n8k16_bf16_f32_nt", "mma_m16n8k16_f16_f16_nt",
}

func (TensorCoreTiling) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	if t.GPU == nil || t.GPU.WarpSize != 32 {
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
	for _, r := range bi.roles[:n-3] {
		if r != roleSpatial {
			return errSkip
		}
	}
	var ext [3]int64
	for d := range 3 {
		e, ok := s.Extent(bi.loops[n-3+d])
		if !ok || e%[]int64{16, 8, 16}[d] != 0 {
			return errSkip
		}
		ext[d] = e
	}
	warpsN := int64(1)
	for _, w := range []int64{4, 2} {
		if (ext[1]/8)%w == 0 {
			warpsN = w
			break
		}
	}
	warpsM := int64(1)
	if (ext[0]/16)%2 == 0 {
		warpsM = 2
	}
	// Only intrinsics whose accumulator is the block's output type and
	// whose factors' type the block reads are worth a try.
	reads := map[ast.DType]bool{}
	for _, r := range bi.blk.Reads {
		reads[r.Buffer.DType] = true
	}
	out := bi.blk.Writes[0].Buffer.DType
	for _, name := range tensorCoreIntrinsics {
		in, _ := intrin.Lookup(name)
		if in == nil {
			continue
		}
		if operand(in, "C").DType != out || !reads[operand(in, "A").DType] {
			continue
		}
		// On a copy first: a sequence refused part-way must leave s as it was.
		try, err := schedule.New(s.Func())
		if err != nil {
			return err
		}
		stage := true
		if tensorCoreSteps(try, t, b.Name(), name, warpsM, warpsN, stage) != nil {
			// Without the shared tiles (their fetch refused, or too big).
			stage = false
			if try, err = schedule.New(s.Func()); err != nil {
				return err
			}
			if tensorCoreSteps(try, t, b.Name(), name, warpsM, warpsN, stage) != nil {
				continue
			}
		}
		if err := tensorCoreSteps(s, t, b.Name(), name, warpsM, warpsN, stage); err != nil {
			return fmt.Errorf("%s: the steps that worked on a copy fail: %w", name, err)
		}
		return errDone
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
// s with intrinsic and the warps along i and j.
func tensorCoreSteps(s *schedule.Schedule, t Target, name, intrinsic string, warpsM, warpsN int64, stage bool) error {
	b, err := s.GetBlock(name)
	if err != nil {
		return err
	}
	ls, err := s.GetLoops(b)
	if err != nil {
		return err
	}
	n := len(ls)
	// Each of i and j: [blocks, warps, tile], or [blocks, tile] with one
	// warp along it (a thread loop of one iteration binds nothing).
	split := func(l schedule.Loop, warps int64, tile int) (outer, warp, inner schedule.Loop, err error) {
		if warps == 1 {
			p, err := s.Split(l, -1, tile)
			if err != nil {
				return outer, warp, inner, err
			}
			return p[0], schedule.Loop{}, p[1], nil
		}
		p, err := s.Split(l, -1, int(warps), tile)
		if err != nil {
			return outer, warp, inner, err
		}
		return p[0], p[1], p[2], nil
	}
	io, iw, ii, err := split(ls[n-3], warpsM, 16)
	if err != nil {
		return err
	}
	jo, jw, ji, err := split(ls[n-2], warpsN, 8)
	if err != nil {
		return err
	}
	ks, err := s.Split(ls[n-1], -1, 16)
	if err != nil {
		return err
	}
	order := []schedule.Loop{io, jo}
	for _, w := range []schedule.Loop{iw, jw} {
		if w != (schedule.Loop{}) {
			order = append(order, w)
		}
	}
	if err := s.Reorder(append(order, ks[0], ii, ji, ks[1])...); err != nil {
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
	if err := s.Bind(io, "blockIdx.x"); err != nil {
		return err
	}
	if err := s.Bind(jo, "blockIdx.y"); err != nil {
		return err
	}
	// The warps: along y, then z (the lanes are x); the shape of the
	// block's threads, outer axis first, for the cooperative fetches.
	var warps []schedule.Loop
	var shape []int64
	for _, w := range []struct {
		l schedule.Loop
		n int64
	}{{iw, warpsM}, {jw, warpsN}} {
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
	if stage {
		// The factors' tiles of each step of ko in shared memory, fetched
		// by the whole block together.
		in, _ := intrin.Lookup(intrinsic)
		m, err := nestMatch(s, ii, in)
		if err != nil {
			return err
		}
		for _, op := range []string{"A", "B"} {
			if _, err := cooperativeFetch(s, t, b, m.Buffers[in.Operands[op]].Name, ks[0], shape); err != nil {
				return err
			}
		}
	}
	return s.Tensorize(ii, intrinsic)
}
