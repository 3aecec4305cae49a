package autotune

import (
	"errors"
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// MultiLevelTilingGPU tiles a block that reuses data for a GPU, in the
// structure of Structure (MetaSchedule's "SSSRRSRS"): each spatial loop
// split in as many loops as there are S levels, the outermost reduce loop
// in as many as there are R levels, the levels ordered as written, every
// factor sampled with SamplePerfectTile (the innermost at most
// MaxInnermost). Then
//
//   - the first S level's loops are fused and bound to blockIdx.x;
//   - the second S level's are virtual threads: serial loops around the
//     thread loops, so a block computes that many tiles of its threads'
//     shape in turn (TVM interleaves them into each thread's code; here
//     each is a block-wide step, which keeps every thread's registers to
//     one tile);
//   - the third S level's are fused and bound to threadIdx.x;
//   - the output tile of a thread accumulates in a local write cache
//     (registers), written out after the thread loop;
//   - every input gets a shared-memory cache computed at the first R
//     level: at each of its steps the whole block fetches the tile its
//     threads read next, its loops fused and split over the block's
//     threads (a cooperative fetch), each thread copying 1, 2 or 4
//     consecutive elements at once (sampled; a float2 or float4 access),
//     and the threads then read the tile; the fetches may run a step
//     ahead (a software pipeline, sampled: pipeline).
//
// A sample whose threads exceed the target's block or whose tiles exceed
// its shared memory is dropped.
type MultiLevelTilingGPU struct {
	Structure    string
	MaxInnermost int
}

func (MultiLevelTilingGPU) Name() string { return "multi-level-tiling-gpu" }

func (m MultiLevelTilingGPU) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	if t.GPU == nil {
		return errSkip
	}
	// A tiling refused part-way leaves a nest no kernel can be made of:
	// the sample is dropped, not kept as it is (a bug of loom is not a
	// refusal: it goes up as it is).
	if err := m.apply(s, b, t); err != nil && !errors.Is(err, errSkip) && internal(err) == nil {
		return fmt.Errorf("%s", schedule.Explain(err))
	} else {
		return err
	}
}

func (m MultiLevelTilingGPU) apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || !bi.hasReduce() || !reuses(bi) || len(bi.blk.Writes) != 1 {
		return errSkip
	}
	out := bi.blk.Writes[0].Buffer.Name
	var sLevels, rLevels []int
	for lv, c := range m.Structure {
		if c == 'S' {
			sLevels = append(sLevels, lv)
		} else {
			rLevels = append(rLevels, lv)
		}
	}
	if len(sLevels) < 3 || len(rLevels) < 1 {
		return fmt.Errorf("structure %q needs three S levels (blocks, virtual threads, threads) and an R level", m.Structure)
	}
	// Loops whose bounds depend on others (a triangle: no reorder) are
	// left to the other rules. A loop of symbolic extent is split by
	// constant factors (gpuSymbolicTile), its tail guarded.
	// A loop that binds no variable (a 1x1 window's) must run once: it
	// goes to the innermost level. Any other that is neither spatial nor
	// reduce leaves the block to the other rules, checked before anything
	// is done (a tiling stopped part-way leaves a nest no rule finishes).
	for i, l := range bi.loops {
		if dependsOnOthers(s, l, bi.loops) {
			return errSkip
		}
		if _, ok := s.Extent(l); !ok && t.fixedGPUTiles {
			return errSkip
		}
		if n, ok := s.Extent(l); bi.roles[i] != roleSpatial && bi.roles[i] != roleReduce && (bi.roles[i] != roleNone || !ok || n != 1) {
			return errSkip
		}
	}
	wb, err := s.CacheWrite(b, out, "local")
	var se *schedule.Error
	if errors.As(err, &se) {
		return errSkip // nothing done yet: the other rules take the block
	} else if err != nil {
		return err
	}
	// The tiles Default decides.
	exts := make([]int64, len(bi.loops))
	guarded := make([]bool, len(bi.loops)) // constant extents tiled as symbolic ones are
	for i, l := range bi.loops {
		exts[i], _ = s.Extent(l)
		if bi.roles[i] == roleSpatial && !t.fixedGPUTiles && gpuPoorlyDivisible(exts[i]) {
			exts[i], guarded[i] = 0, true
		}
	}
	decided := gpuTiles(exts, bi.roles, len(sLevels), len(rLevels), t.shrink)
	levels := make([][]schedule.Loop, len(m.Structure))
	threads := int64(1)
	firstReduce := true
	for i, l := range bi.loops {
		var at []int
		switch bi.roles[i] {
		case roleReduce:
			if !firstReduce {
				last := rLevels[len(rLevels)-1]
				levels[last] = append(levels[last], l)
				continue
			}
			firstReduce, at = false, rLevels
		case roleSpatial:
			at = sLevels
		default: // a loop of one iteration that binds nothing
			last := rLevels[len(rLevels)-1]
			levels[last] = append(levels[last], l)
			continue
		}
		var vals []schedule.Value
		_, known := s.Extent(l)
		switch {
		case t.decide && guarded[i]:
			vals, err = guardedTile(s, len(at), decided[i])
		case t.decide:
			vals, err = fixedTile(s, l, len(at), m.MaxInnermost, decided[i])
		case known && !guarded[i]:
			vals, err = s.SamplePerfectTile(l, len(at), m.MaxInnermost)
		default:
			var bound int64 // a guarded constant extent: no tile beyond it
			if guarded[i] {
				bound, _ = s.Extent(l)
			}
			vals, err = sampleGPUSymbolicTile(s, len(at), m.MaxInnermost, bi.roles[i] == roleReduce, bound)
		}
		if err != nil {
			return err
		}
		parts, err := s.SplitBy(l, vals)
		if err != nil {
			return err
		}
		if bi.roles[i] == roleSpatial {
			threads *= vals[2].Int()
		}
		for k, lv := range at {
			levels[lv] = append(levels[lv], parts[k])
		}
	}
	if threads > int64(t.GPU.MaxThreadsPerBlock) {
		return fmt.Errorf("%d threads per block, more than %d", threads, t.GPU.MaxThreadsPerBlock)
	}
	var order []schedule.Loop
	for _, lv := range levels {
		order = append(order, lv...)
	}
	if err := s.Reorder(order...); err != nil {
		return err
	}
	if _, err := bindAxes(s, levels[sLevels[0]], "blockIdx"); err != nil {
		return err
	}
	thread, err := bindAxes(s, levels[sLevels[2]], "threadIdx")
	if err != nil {
		return err
	}
	// The block's shape, outermost axis first, for the fetches.
	var shape []int64
	for _, l := range thread {
		n, _ := s.Extent(l)
		shape = append(shape, n)
	}
	if err := s.ReverseComputeAt(wb, thread[len(thread)-1]); err != nil {
		return err
	}
	// Where the block may write only part of its tile (a reduction over
	// a symbolic extent, which may be 0), the cache starts as a copy of
	// the output: that copy goes to the thread too.
	if fill, err := s.GetBlock(wb.Name() + "_fill"); err == nil {
		if err := s.ComputeAt(fill, thread[len(thread)-1]); err != nil {
			return err
		}
	}
	r0 := levels[rLevels[0]]
	if len(r0) == 0 {
		return nil
	}
	var shared int64
	fetched := map[string]bool{out: true}
	for _, r := range bi.blk.Reads {
		if fetched[r.Buffer.Name] {
			continue
		}
		fetched[r.Buffer.Name] = true
		elems, err := cooperativeFetch(s, t, b, r.Buffer, r0[len(r0)-1], shape)
		if err != nil {
			return err
		}
		shared += elems * int64(r.Buffer.DType.Bytes())
	}
	if shared > int64(t.GPU.MaxSharedBytes) {
		return fmt.Errorf("the shared tiles take %d bytes, more than %d", shared, t.GPU.MaxSharedBytes)
	}
	return pipeline(s, t, r0[len(r0)-1], shared)
}

// pipeline samples whether the fetches at loop l (shared bytes a step)
// run a step ahead of their use, a software pipeline of two stages
// (pipelineKey): on devices with cp.async (sm_80), when l has two steps or
// more and the shared memory holds two copies of the tiles.
// Default pipelines wherever it can.
func pipeline(s *schedule.Schedule, t Target, l schedule.Loop, shared int64) error {
	steps, ok := s.Extent(l)
	if t.GPU.Arch < 80 || !ok || steps < 2 || 2*shared > int64(t.GPU.MaxSharedBytes) {
		return nil
	}
	stages, err := choose(s, t, []int64{1, 2}, 1)
	if err != nil {
		return err
	}
	if stages.Int() < 2 {
		return nil
	}
	return s.AnnotateLoopBy(l, pipelineKey, stages)
}

// pipelineKey is codegen/cuda's PipelineKey, the loop annotation asking
// for a software pipeline of N stages, spelled here so that the tuner
// links no GPU back end (a test holds the two equal).
const pipelineKey = "software_pipeline"

// fetchVectorLanes are the elements each thread copies at once in a
// cooperative fetch of elements of type dt (a float2 or float4 access for
// 2 or 4 float32; words of 2, 4 or 8 16-bit lanes, up to 16 bytes: see
// codegen/cuda), sampled per fetch as MetaSchedule's vector_load_lens.
func fetchVectorLanes(dt ast.DType) []int64 {
	if dt.Bytes() == 2 {
		return []int64{1, 2, 4, 8}
	}
	return []int64{1, 2, 4}
}

// cooperativeFetch caches buf, read by b, in shared memory computed at
// loop at, and spreads the copy over the block's threads: its innermost
// loop split by a sampled vector length (of fetchVectorLanes, those that
// divide it) and vectorized, its other loops fused and split by the
// block's shape (the thread extents, outermost axis first), the parts
// bound to the same axes. It returns how many elements the tile holds.
func cooperativeFetch(s *schedule.Schedule, t Target, b schedule.Block, buf *ast.Buffer, at schedule.Loop, shape []int64) (int64, error) {
	fetch, err := s.CacheRead(b, buf.Name, "shared")
	if err != nil {
		return 0, err
	}
	if err := s.ComputeAt(fetch, at); err != nil {
		return 0, err
	}
	ls, err := s.GetLoops(fetch)
	if err != nil {
		return 0, err
	}
	k := slices.IndexFunc(ls, func(l schedule.Loop) bool { return l.Name() == at.Name() })
	own := ls[k+1:]
	if len(own) == 0 {
		return 1, nil
	}
	elems := int64(1)
	for _, l := range own {
		n, ok := s.Extent(l)
		if !ok {
			return 0, fmt.Errorf("the shared tile of %s has a loop %s of no constant extent", buf.Name, l.Name())
		}
		elems *= n
	}
	last, _ := s.Extent(own[len(own)-1])
	var lengths []int64
	for _, n := range fetchVectorLanes(buf.DType) {
		if last%n == 0 {
			lengths = append(lengths, n)
		}
	}
	vector, err := choose(s, t, lengths, len(lengths)-1) // Default: the widest access
	if err != nil {
		return 0, err
	}
	split, err := s.SplitBy(own[len(own)-1], []schedule.Value{{}, vector})
	if err != nil {
		return 0, err
	}
	own, lanes := append(slices.Clone(own[:len(own)-1]), split[0]), split[1]
	fused, err := fuseAll(s, own)
	if err != nil {
		return 0, err
	}
	factors := []int{-1}
	for _, n := range shape {
		factors = append(factors, int(n))
	}
	parts, err := s.Split(fused, factors...)
	if err != nil {
		return 0, err
	}
	if _, err = bindAxes(s, parts[1:], "threadIdx"); err != nil {
		return 0, err
	}
	return elems, s.Vectorize(lanes)
}

// bindAxes binds nested loops to the axes of a thread index ("blockIdx"
// or "threadIdx"): the innermost to .x, the next to .y, and the rest,
// fused, to .z. (Fusing them all into .x would do as well at run time, but
// the region one fused iteration uses is a floor division of its variable,
// which compute_at cannot bound exactly.) Thread loops of one iteration
// stay serial: no axis is spent on them. It returns the bound loops.
func bindAxes(s *schedule.Schedule, loops []schedule.Loop, index string) ([]schedule.Loop, error) {
	if index == "threadIdx" {
		loops = slices.DeleteFunc(slices.Clone(loops), func(l schedule.Loop) bool {
			n, ok := s.Extent(l)
			return ok && n == 1
		})
		if len(loops) == 0 {
			return nil, fmt.Errorf("one thread per block")
		}
	}
	if len(loops) > 3 {
		z, err := fuseAll(s, loops[:len(loops)-2])
		if err != nil {
			return nil, err
		}
		loops = append([]schedule.Loop{z}, loops[len(loops)-2:]...)
	}
	for i, l := range loops {
		axis := [...]string{".x", ".y", ".z"}[len(loops)-1-i]
		if err := s.Bind(l, index+axis); err != nil {
			return nil, err
		}
	}
	return loops, nil
}

// fuseAll fuses loops (one loop is itself).
func fuseAll(s *schedule.Schedule, loops []schedule.Loop) (schedule.Loop, error) {
	if len(loops) == 1 {
		return loops[0], nil
	}
	if len(loops) == 0 {
		return schedule.Loop{}, fmt.Errorf("no loops to fuse")
	}
	return s.Fuse(loops...)
}

// loopKind returns the kind of the loop l names in the schedule's function.
func loopKind(s *schedule.Schedule, l schedule.Loop) ast.ForKind {
	if lp := loopNode(s, l); lp != nil {
		return lp.Kind
	}
	return ast.Serial
}

// loopNode returns the loop l names in the schedule's function (nil if
// there is none).
func loopNode(s *schedule.Schedule, l schedule.Loop) *ast.For {
	var found *ast.For
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		if lp, ok := n.(*ast.For); ok && lp.Var.Name == l.Name() {
			found = lp
		}
		return found == nil
	})
	return found
}

// dependsOnOthers reports whether the bounds of loop l use another of
// loops.
func dependsOnOthers(s *schedule.Schedule, l schedule.Loop, loops []schedule.Loop) bool {
	lp := loopNode(s, l)
	if lp == nil {
		return false
	}
	for _, o := range loops {
		if o.Name() != l.Name() && (ast.Mentions(lp.Min, o.Name()) || ast.Mentions(lp.Extent, o.Name())) {
			return true
		}
	}
	return false
}

// perfectNest returns how many of loops (a block's, outermost first) form a
// perfect nest from the root: the first, and each one after it that is
// the whole body of the one before. The loops below run only this
// block's statements; the ones from the first loop whose body holds more
// (a row loop the fusion shares among the blocks of a row, softmax's) on
// run others' too. Only the perfect nest can be a kernel's block loops.
func perfectNest(s *schedule.Schedule, loops []schedule.Loop) int {
	n := min(len(loops), 1)
	for n < len(loops) {
		parent := loopNode(s, loops[n-1])
		if parent == nil {
			break
		}
		if child, ok := soleStmt(parent).(*ast.For); !ok || child.Var.Name != loops[n].Name() {
			break
		}
		n++
	}
	return n
}

// soleStmt returns the one statement of l's body (unwrapping a sequence
// of one), or nil when it holds more.
func soleStmt(l *ast.For) ast.Stmt {
	if seq, ok := l.Body.(*ast.Seq); ok {
		if len(seq.Stmts) != 1 {
			return nil
		}
		return seq.Stmts[0]
	}
	return l.Body
}

// gpuPoorlyDivisible reports whether a spatial loop's constant extent is
// larger than a block's tile of it (4 registers by 16 threads) while the
// tile gpuTiles makes of its divisors has fewer than 16 outputs (197
// rows, a prime: one thread of one register where 196 gets 4 by 7; 68: 4
// registers by one thread): such a loop is tiled as a symbolic one is,
// its tail guarded.
func gpuPoorlyDivisible(ext int64) bool {
	reg := largestDivisor(ext, 4)
	return ext > 64 && reg*largestDivisor(ext/reg, 16) < 16
}
