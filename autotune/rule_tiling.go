package autotune

import (
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// MultiLevelTiling tiles a block that reuses data (a reduction whose
// inputs are not all indexed by every loop, as matmul and conv2d) in the
// structure given by a string of S (spatial) and R (reduce) levels:
// "SSRSRS" splits each spatial loop in four and each reduce loop in two,
// and orders the levels S0 R... as written. Tile sizes are sampled with
// SamplePerfectTile, the innermost capped at MaxInnermost (spatial
// loops) and MaxInnermostReduce (the reduce loop: how many steps the
// register tile accumulates between loads and stores; 0 means
// MaxInnermost).
//
// WriteCache lists the spatial levels (1-based) under which a write cache
// of the output tile may go: the block then accumulates into a local
// buffer, copied out after the chosen level's loops (the code generator
// compacts it to the tile, in registers); whether and where is sampled,
// with no cache as one of the choices. When the block's output is an
// intermediate read by one element-wise consumer (a bias and activation
// after a matmul), that consumer takes the cache's place (MetaSchedule's
// fused epilogue): it moves after the sampled level's loops and the
// output, compacted to the tile, never goes to memory whole. A plain
// cache is then not offered: at the same level it does the same work
// and leaves the consumer a separate pass over memory, so a search that
// settled on it would be stuck a step away from the better schedule.
type MultiLevelTiling struct {
	Structure          string
	MaxInnermost       int
	MaxInnermostReduce int
	WriteCache         []int64
}

func (MultiLevelTiling) Name() string { return "multi-level-tiling" }

func (m MultiLevelTiling) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || !bi.hasReduce() || !reuses(bi) {
		return errSkip
	}
	nS, nR := 0, 0
	for _, c := range m.Structure {
		if c == 'S' {
			nS++
		} else {
			nR++
		}
	}
	if bi, err = fuseRows(s, b, bi, t, m.MaxInnermost); err != nil {
		return err
	}
	cache, err := m.writeCache(s, b, bi, t)
	if err != nil {
		return err
	}
	// The vectorized loop is split first: how many vectors a row of the
	// register tile takes bounds the innermost factors of the other
	// spatial loops, so that the tile of accumulators fits in registers.
	parts := make([][]schedule.Loop, len(bi.loops))
	tile := int64(1)
	t.groupLanes = groupLanes(s, bi, t.VectorLanes)
	if t.decide && nS > 2 {
		t.panelsOuter = streamsPanels(s, bi, t)
		t.channelwise = t.groupLanes == 0 && channelwise(s, bi, t)
		t.wideWindows = t.channelwise && windowTaps(bi) > maxSharedTaps
		t.rowless = rowless(s, bi)
		t.aliasedPanels = t.rowless && t.panelsOuter && aliasedPanels(s, bi)
	}
	channelsForThreads := t.wideWindows && !t.panelsOuter && t.Threads > 1 && readsOwnCopy(s, bi)
	if channelsForThreads {
		// A wide depthwise window over a padded copy the kernel writes:
		// the threads take the channels, a panel of them at a time, and
		// the pad goes with each panel (parallelPanelLocation), so that
		// no thread reads what another wrote. ConvNeXt-T's 7x7 over 384
		// channels at 14x14, two threads on an AMD Zen 5: 0.060-0.078
		// ms with the rows shared and the pad a pass of its own,
		// 0.027-0.052 with the channels shared and the pad by panel.
		t.panelsOuter = true
	}
	rows := -1 // under t.panelsUnderRows, the loop the threads share
	if t.panelsOuter && !t.aliasedPanels && !channelsForThreads {
		rows = rowsForThreads(s, bi, t)
		t.panelsUnderRows = rows >= 0
	}
	rowLoop := -1 // under t.channelwise, the one loop the register tile's rows take
	if t.channelwise {
		rowLoop = widthLoop(bi)
	}
	heightLoop := -1 // under t.wideWindows, the loop of the rows above them
	if t.wideWindows {
		heightLoop = spatialAbove(bi, rowLoop)
	}
	if v := lastSpatial(bi); v >= 0 && nS > 1 {
		var inner int64
		if parts[v], inner, err = m.splitVector(s, bi.loops[v], nS, t); err != nil {
			return err
		}
		tile = vectorChunks(inner, int64(t.VectorLanes))
	}
	if w := widthLoop(bi); t.decide && !t.channelwise && w >= 0 && windowsAlongWidth(bi) {
		// A convolution with its channels innermost: the register
		// tile's rows go along the width first, where they read
		// neighbouring inputs of the same image rows, then along the
		// height (see windowsAlongWidth).
		var inner int64
		limit := max(t.denseAccumulators(s, bi)/tile, 1)
		if m.MaxInnermost > 0 {
			limit = min(limit, int64(m.MaxInnermost))
		}
		if parts[w], inner, err = m.split(s, t, bi.loops[w], nS, int(limit), tileSpatial); err != nil {
			return err
		}
		tile *= inner
	}
	// levels[k] lists, for level k of the structure, the loops at it.
	levels := make([][]schedule.Loop, len(m.Structure))
	lastR := strings.LastIndexByte(m.Structure, 'R')
	firstReduce := true
	for i, l := range bi.loops {
		n, want := nS, 'S'
		switch bi.roles[i] {
		case roleReduce:
			n, want = nR, 'R'
			// Only the outermost reduce loop is spread over the R
			// levels: interleaving two reduce loops would reorder the
			// accumulation, which the schedule refuses as a change of
			// result. The others stay whole at the last R level.
			if !firstReduce {
				levels[lastR] = append(levels[lastR], l)
				continue
			}
			firstReduce = false
			limit := m.MaxInnermostReduce
			if limit == 0 {
				limit = m.MaxInnermost
			}
			if t.decide {
				// Default: no longer than the L1D holds the operand
				// slice the register tile reads (Target.reduceSteps).
				limit = int(min(int64(max(limit, 0)), t.reduceSteps()))
				if limit == 0 {
					limit = int(t.reduceSteps())
				}
				if t.aliasedPanels {
					limit = aliasedPanelRows
				}
			}
			if parts[i], _, err = m.split(s, t, l, n, limit, tileReduce); err != nil {
				return err
			}
		case roleSpatial:
			if parts[i] == nil && i != lastSpatial(bi) && !reusedAlong(bi, iterOf(bi, l)) {
				// Every input moves with this loop (a batched matmul's
				// batch): its tiles share no data, and in the register
				// tile it would only take accumulators. Whole,
				// outermost.
				levels[0] = append(levels[0], l)
				continue
			}
			if parts[i] == nil {
				var inner int64
				limit := max(t.denseAccumulators(s, bi)/tile, 1)
				switch {
				case t.wideWindows:
					limit = wideWindowTile(i, heightLoop, rowLoop, tile, t)
				case t.channelwise:
					// Rows along the width only, and a third fewer
					// accumulators: the code keeps the inputs that
					// neighbouring windows share in registers beside
					// them (see channelwise).
					limit = 1
					if i == rowLoop {
						limit = max(t.sharedAccumulators()*2/3/tile, 1)
					}
				}
				if m.MaxInnermost > 0 {
					limit = min(limit, int64(m.MaxInnermost))
				}
				if t.decide {
					limit = groupAligned(s, bi, l, limit)
					if aliasedRows(bi, l) {
						limit = min(limit, aliasedTileRows)
					}
					if _, constant := s.Extent(l); !constant && t.Bounds != nil {
						limit = min(limit, symbolicTileRows)
					}
				}
				tt := t
				tt.threadRows = i == rows
				if parts[i], inner, err = m.split(s, tt, l, n, int(limit), tileSpatial); err != nil {
					return err
				}
				tile *= inner
			}
		case roleNone:
			// A loop no iteration variable is bound to (a batch of one,
			// a 1x1 kernel's window: the simplifier bound its variable
			// to 0) does nothing to tile: it stays whole, outermost.
			levels[0] = append(levels[0], l)
			continue
		default:
			return errSkip
		}
		k := 0
		for lv, c := range m.Structure {
			if c == want {
				levels[lv] = append(levels[lv], parts[i][k])
				k++
			}
		}
	}
	var order []schedule.Loop
	for _, lv := range levels {
		order = append(order, lv...)
	}
	if err := s.Reorder(order...); err != nil {
		return err
	}
	// RandomComputeLocation leaves a tiled block where its tiles are: moved
	// under a consumer (its own write-back) it would get plain loops anew.
	// (The annotation makes a new block: bi's is stale from here on.)
	if err := s.AnnotateBlock(b, tiledKey, m.Structure); err != nil {
		return err
	}
	if cache.level == 0 {
		return nil
	}
	// The write-back (or the consumer) after the cache.level-th spatial
	// level's loops, or the next one's where no reduction is split
	// between them (see deeperWriteLevel).
	level := deeperWriteLevel(s, m.Structure, levels, cache.level)
	k := 0
	for lv, c := range m.Structure {
		if c == 'S' {
			k++
		}
		if k == level && len(levels[lv]) > 0 {
			if err := s.ReverseComputeAt(cache.block, levels[lv][len(levels[lv])-1]); err != nil {
				return err
			}
			return internal(vectorizeInnermost(s, cache.block)) // stays serial when refused
		}
	}
	return nil
}

// deeperWriteLevel returns the spatial level the write-back goes after:
// level, or the next spatial level when that is not the last (the
// register tile's), reduce levels lie between the two and every loop of
// them runs one iteration (the reduction is whole inside the next level's
// tiles, a 1x1 convolution's 64 channels). The write-back then follows
// each register tile rather than a row of them, while its accumulators
// are still in registers: ResNet-50's 1x1 convolutions over 64 channels
// with their bias, residual and ReLU wrote four tiles of 6 x 16 to
// memory and read them back for the epilogue.
func deeperWriteLevel(s *schedule.Schedule, structure string, levels [][]schedule.Loop, level int) int {
	spatial := []int{} // the structure's index of each spatial level
	for lv, c := range structure {
		if c == 'S' {
			spatial = append(spatial, lv)
		}
	}
	// Only across a reduce level: the levels the search offers (a
	// write-back after the first spatial level, one after the second)
	// stay distinct.
	if level < 1 || level+1 >= len(spatial) || spatial[level]-spatial[level-1] < 2 {
		return level
	}
	for lv := spatial[level-1] + 1; lv < spatial[level]; lv++ {
		for _, l := range levels[lv] {
			if n, ok := s.Extent(l); !ok || n != 1 {
				return level
			}
		}
	}
	if len(levels[spatial[level]]) == 0 {
		return level
	}
	return level + 1
}

// tiledKey marks a block that MultiLevelTiling tiled (MetaSchedule's
// tiling_structure annotation), with the structure.
const tiledKey = "autotune.tiling_structure"

// writeCache is the block that writes the output tile out: a cache's
// copy or the fused consumer, placed after the level-th spatial level.
type writeCache struct {
	level int
	block schedule.Block
}

// writeCache samples the write cache's level (0: none) and adds the cache,
// or, where the output has a fusable consumer, samples a negative choice:
// the consumer is the block that goes after level -choice.
func (m MultiLevelTiling) writeCache(s *schedule.Schedule, b schedule.Block, bi *blockInfo, t Target) (writeCache, error) {
	if len(m.WriteCache) == 0 || len(bi.blk.Writes) != 1 {
		return writeCache{}, nil
	}
	consumer, fusable := elementwiseConsumer(s, bi)
	choices := []int64{0}
	for _, lv := range m.WriteCache {
		if fusable {
			lv = -lv
		}
		choices = append(choices, lv)
	}
	// Default: the innermost level offered, the smallest tile.
	v, err := choose(s, t, choices, len(choices)-1)
	if err != nil || v.Int() == 0 {
		return writeCache{}, err
	}
	if v.Int() < 0 {
		return writeCache{level: int(-v.Int()), block: consumer}, nil
	}
	wb, err := s.CacheWrite(b, bi.blk.Writes[0].Buffer.Name, "local")
	if err != nil {
		return writeCache{}, err
	}
	return writeCache{level: int(v.Int()), block: wb}, nil
}

// elementwiseConsumer returns the block that reads what the block writes
// when there is exactly one, the written buffer is an intermediate, and
// that block reads it only at the indices of its own output (so it can
// follow the producer's tiles).
func elementwiseConsumer(s *schedule.Schedule, bi *blockInfo) (schedule.Block, bool) {
	if bi.output || bi.reads != 1 {
		return schedule.Block{}, false
	}
	out := bi.blk.Writes[0].Buffer.Name
	for _, x := range s.Func().Blocks() {
		if x == bi.blk || !readsAny(x, bi.blk) {
			continue
		}
		if len(x.Writes) != 1 || slices.ContainsFunc(x.Iters, func(it *ast.IterVar) bool { return it.Kind != ast.Spatial }) {
			return schedule.Block{}, false
		}
		w := x.Writes[0]
		for _, r := range x.Reads {
			if r.Buffer.Name == out && !r.SameRanges(w) {
				return schedule.Block{}, false
			}
		}
		b, err := s.GetBlock(x.Name)
		return b, err == nil
	}
	return schedule.Block{}, false
}

// inputs returns the regions the block reads of buffers it does not
// write (a reduction reads its own output too).
func inputs(bi *blockInfo) []ast.Region {
	var out []ast.Region
	for _, r := range bi.blk.Reads {
		if !slices.ContainsFunc(bi.blk.Writes, func(w ast.Region) bool { return w.Buffer.Name == r.Buffer.Name }) {
			out = append(out, r)
		}
	}
	return out
}

// regionIndexedBy reports whether an index of region r mentions variable v.
func regionIndexedBy(r ast.Region, v *ast.Var) bool {
	return slices.ContainsFunc(r.Ranges, func(rg ast.Range) bool { return ast.Mentions(rg.Min, v.Name) })
}

// reuses reports whether some buffer the block reads is not indexed by
// every spatial iteration variable: its elements are read for more than
// one output element (a matmul's, a convolution's), which tiling keeps in
// cache. A value read for every step of a reduction (a row's mean, while
// the row's variance is summed) is no such reuse, nor is a missing
// variable of one value.
func reuses(bi *blockInfo) bool {
	for _, r := range inputs(bi) {
		for _, it := range bi.blk.Iters {
			if it.Kind != ast.Spatial {
				continue
			}
			if n, ok := ast.ConstIntValue(ast.Simplify(it.Dom.Extent)); ok && n == 1 {
				continue
			}
			if !regionIndexedBy(r, it.Var) {
				return true
			}
		}
	}
	return false
}

// reusedAlong reports whether some input of the block is read at the
// same elements for different values of iteration variable it (its
// indices do not mention it, or only as floordiv(it, G) for G > 1: a
// grouped convolution's input, read alike by the G filters of a group):
// tiling along it keeps those elements in cache or registers. A loop
// that is not one variable's counts as reused (the tiling decides).
func reusedAlong(bi *blockInfo, it *ast.IterVar) bool {
	if it == nil {
		return true
	}
	for _, r := range inputs(bi) {
		if !regionIndexedBy(r, it.Var) || regionGroup(r, it.Var.Name) > 1 {
			return true
		}
	}
	return false
}

// symbolicTileRows is the most rows Default gives a register tile along
// a loop of symbolic extent when the target has a bucket of sizes
// (Target.Bounds: a module compiled for that bucket): the code generator
// specializes the tile that holds the loop's last rows for each number
// of rows left only up to that many (codegen/partition's versionTail,
// maxVersions); a taller tile ends in rows tested one by one inside the
// reduction, their accumulators in memory. A BERT layer's projections at
// 128 rows in tiles of 13: 1.89 ms, in tiles of 8: 1.61, at a constant
// 128 rows 1.39. Without a bucket the taller tile stays: each of the
// tail's versions is a copy of the tile's code, compiled, for sizes no
// bucket says are the ones that matter.
const symbolicTileRows = 8

// groupAligned returns the register tile's factor Default takes along
// spatial loop l, at most limit, when an input reads l's variable in
// groups (a grouped convolution's filters of one group share their
// input, read at floordiv(oc, G)*G + c): a divisor of the extent that is
// a multiple of G, or where limit is under G a divisor of G, so that no
// tile straddles two groups and the tile's filters share each input
// load. ResNeXt-50's 3x3 over 256 channels in 32 groups of 8, stride 2
// at 56x56, NCHW, one thread on an Ice Lake Xeon: 1.82x faster with
// tiles of 8 filters than with rows of one filter. Otherwise limit.
func groupAligned(s *schedule.Schedule, bi *blockInfo, l schedule.Loop, limit int64) int64 {
	it := iterOf(bi, l)
	ext, ok := s.Extent(l)
	if it == nil || !ok || ext < 1 || limit < 1 {
		return limit
	}
	g := int64(0)
	for _, r := range inputs(bi) {
		if rg := regionGroup(r, it.Var.Name); rg > 1 {
			g = rg
			break
		}
	}
	if g == 0 || ext%g != 0 {
		return limit
	}
	if limit < g {
		return largestDivisor(g, limit)
	}
	return g * largestDivisor(ext/g, limit/g)
}

// split splits l into n loops by a sampled perfect tile whose innermost
// factor is at most maxInnermost (0: any), and returns that factor.
func (m MultiLevelTiling) split(s *schedule.Schedule, t Target, l schedule.Loop, n, maxInnermost int, r tileRole) ([]schedule.Loop, int64, error) {
	vals, err := perfectTile(s, t, l, n, maxInnermost, r)
	if err != nil {
		return nil, 0, err
	}
	loops, err := s.SplitBy(l, vals)
	return loops, vals[len(vals)-1].Int(), err
}

// splitVector splits the innermost spatial loop, the one vectorized, into
// n loops: its innermost factor sampled among vectorFactors (divisors of
// its extent that are whole vectors, or where it has none, that fill at
// least half a vector, and whole vectors with a tail: a perfect tile's
// innermost factor is rarely one), then the rest by a perfect tile. It
// returns the innermost factor too.
func (m MultiLevelTiling) splitVector(s *schedule.Schedule, l schedule.Loop, n int, t Target) ([]schedule.Loop, int64, error) {
	ext, ok := s.Extent(l)
	var inner []int64
	switch {
	case ok && t.groupLanes > 0 && ext%t.groupLanes == 0:
		// A grouped convolution's narrow groups: one vector of a
		// group's lanes (see groupLanes).
		inner = []int64{t.groupLanes}
	case ok:
		// Rows of whole vectors where the extent has them: a row of half
		// a vector leaves half of every accumulator's lanes idle (the
		// batched matmul's best tile of 64 trials was 16 rows of 8 lanes
		// in 16).
		inner = vectorFactors(ext, int64(t.VectorLanes), m.MaxInnermost)
		if t.rowless {
			// Whole vectors with a tail too: 1000 columns (8 lanes)
			// divide into no two vectors, and one would be one chain
			// of FMAs.
			inner = withTails(inner, ext, int64(t.VectorLanes), m.MaxInnermost)
		}
	}
	if !ok && !t.decide && t.VectorLanes > 0 {
		// A symbolic extent, sampled: one to four whole vectors (the
		// split guards the tail), no more than the loop can hold.
		bound := extentBound(s, l, t.Bounds.max())
		for k := int64(1); k <= 4 && (m.MaxInnermost <= 0 || k*int64(t.VectorLanes) <= int64(m.MaxInnermost)); k++ {
			if k > 1 && bound > 0 && k*int64(t.VectorLanes) > bound {
				break
			}
			inner = append(inner, k*int64(t.VectorLanes))
		}
	}
	if len(inner) == 0 {
		return m.split(s, t, l, n, m.MaxInnermost, tileSpatial)
	}
	vectors := 2
	switch lanes := int64(t.VectorLanes); {
	case t.rowless:
		vectors = 4
	case t.wideWindows:
		vectors = 1 // see wideWindowTile
	case ok && lanes > 0 && ext%(2*lanes) != 0 && ext%(3*lanes) == 0:
		// Three vectors where two do not divide the loop (24 columns of
		// 8 lanes, MobileNetV2's projections): otherwise one, and a
		// register tile of a dozen rows of one vector loads about as
		// often as it multiplies (the projection from 144 channels at
		// 56x56 with its residual: 0.275 -> 0.224 ms, one thread).
		vectors = 3
	}
	v, err := choose(s, t, inner, preferredVector(inner, ext, t.VectorLanes, vectors))
	if err != nil {
		return nil, 0, err
	}
	halves, err := s.SplitBy(l, []schedule.Value{{}, v})
	if err != nil {
		return nil, 0, err
	}
	if n == 2 {
		return halves, v.Int(), nil
	}
	outer, _, err := m.split(s, t, halves[0], n-1, m.MaxInnermost, tileSpatialAbove)
	if err != nil {
		return nil, 0, err
	}
	return append(outer, halves[1]), v.Int(), nil
}

// streamsPanels reports whether Default should step through the
// vectorized loop's panels outermost (see Target.panelsOuter): some input
// the block reads is indexed by no spatial loop but the vectorized one
// (a weight matrix, a convolution's filters) and is more than half the
// L2 large, and the vectorized loop has a panel of whole vectors for
// every thread.
func streamsPanels(s *schedule.Schedule, bi *blockInfo, t Target) bool {
	v := lastSpatial(bi)
	if v < 0 || t.VectorLanes <= 0 {
		return false
	}
	ext, ok := s.Extent(bi.loops[v])
	vec := iterOf(bi, bi.loops[v])
	if !ok || vec == nil || ext/int64(2*t.VectorLanes) < int64(max(t.Threads, 1)) {
		return false
	}
	for _, r := range inputs(bi) {
		other := slices.ContainsFunc(bi.blk.Iters, func(it *ast.IterVar) bool { // a spatial loop but the vectorized one indexes r
			n, one := ast.ConstIntValue(ast.Simplify(it.Dom.Extent))
			return it.Kind == ast.Spatial && it != vec && !(one && n == 1) && regionIndexedBy(r, it.Var)
		})
		if !other && regionIndexedBy(r, vec.Var) && bufferBytes(r.Buffer) > t.Caches.orDefault().L2/2 {
			return true
		}
	}
	return false
}

// rowsForThreads returns the index of the loop whose shares Default
// gives the threads under panelsOuter instead of the vectorized loop's
// panels, or -1: on more than one thread, the block's outermost spatial
// loop of constant extent (the image's rows), not the vectorized one,
// when its iterations split evenly among the threads and an input of
// the block that it indexes is written by the function itself (a pad
// stage's copy, written in parallel by rows). With the panels outermost
// every thread read the whole padded copy, half of it from the other
// core's cache, where the other thread had just written it; with the
// rows shared, each thread reads the rows its own share of the pad
// wrote, and streams the filters through its cache once. ResNet-50's 3x3
// convolution over 128 channels, stride 2 at 56x56, NHWC, two threads on
// an AMD Zen 5: 0.75-0.85 ms with the panels shared, 0.68-0.73 with the
// rows (0.62-0.73 for the same convolution on an input padded outside
// the kernel); one thread: the same either way.
func rowsForThreads(s *schedule.Schedule, bi *blockInfo, t Target) int {
	threads := int64(max(t.Threads, 1))
	if threads < 2 {
		return -1
	}
	v := lastSpatial(bi)
	for i, l := range bi.loops {
		if bi.roles[i] != roleSpatial {
			continue
		}
		ext, ok := s.Extent(l)
		if ok && ext == 1 {
			continue
		}
		if i == v || !ok || ext < threads || unevenShares(threadShares(ext, threads), threads) {
			return -1
		}
		it := iterOf(bi, l)
		if it == nil {
			return -1
		}
		for _, r := range inputs(bi) {
			if s.Func().Param(r.Buffer.Name) == nil && regionIndexedBy(r, it.Var) {
				return i
			}
		}
		return -1
	}
	return -1
}

// readsOwnCopy reports whether the block reads a buffer that its own
// function writes (a pad stage's copy), not a parameter.
func readsOwnCopy(s *schedule.Schedule, bi *blockInfo) bool {
	return slices.ContainsFunc(inputs(bi), func(r ast.Region) bool { return s.Func().Param(r.Buffer.Name) == nil })
}

// channelwise reports whether every input the block reads is indexed by
// its vectorized loop lane by lane (laneByLane: a depthwise
// convolution's, a pooling's: each channel on its own) and either one of them is larger than twice the L2
// and the vectorized loop has eight vectors or more, or the windows of
// neighbouring pixels along the width overlap at unit stride
// (unitStrideWindows). A register tile of several pixels then shares no
// input between its rows, except where windows overlap along the
// innermost of them: Default gives its rows to the width alone, two
// vectors of channels wide, eight accumulators where other tiles take
// twelve (on AVX2) because the compiled code keeps the inputs that
// overlapping windows share in registers too (with twelve it spilled
// them). Measured on MobileNetV2's depthwise 3x3 convolutions in NHWC
// (Default, one thread, alternating in one run, ms): 144@56 s1 0.28 ->
// 0.20 (four rows of three vectors before), 96@112 s2 0.23-0.29 (four
// vectors) -> 0.19, 192@28 s1 0.072 -> 0.053 (six rows over height and
// width before), 32@112 s1 0.16 -> 0.14, 960@7 s1 0.019 -> 0.014; at
// stride 2 over small inputs the rows over height and width stay
// better (192@28 s2: 0.0185 against 0.022 by width).
func channelwise(s *schedule.Schedule, bi *blockInfo, t Target) bool {
	v := lastSpatial(bi)
	if v < 0 || t.VectorLanes <= 0 {
		return false
	}
	vec := iterOf(bi, bi.loops[v])
	ext, ok := s.Extent(bi.loops[v])
	if vec == nil || !ok {
		return false
	}
	large := false
	for _, r := range inputs(bi) {
		if !laneByLane(r, vec.Var, t.VectorLanes) {
			return false
		}
		large = large || bufferBytes(r.Buffer) > 2*t.Caches.orDefault().L2
	}
	return large && ext >= int64(8*t.VectorLanes) || unitStrideWindows(bi)
}

// maxSharedTaps is the widest window along the width whose taps Default's
// register tile of a channel-wise block unrolls, so that neighbouring
// windows share their inputs in registers (see channelwise): wider ones
// take wideWindowTile.
const maxSharedTaps = 5

// wideWindowTile returns the most rows loop i may give the register tile
// of a channel-wise block with windows wider than maxSharedTaps, tile
// being the register tile's size so far: two along the height, as many
// along the width as make the accumulators up to t.sharedAccumulators()*7/6
// (14 vectors on AVX2), one along any other loop. Its window taps do not
// fit the unroll limit with the tile, so that the inputs are not shared
// in registers: each is an operand of its FMA, a register is left for
// the weight, and the tile is as large as that allows: two rows of seven
// pixels, one vector of channels. Measured on ConvNeXt-T's 7x7 depthwise
// convolutions in NHWC (one thread, Zen 3, alternating in one run, ms):
// 384 channels at 14x14 0.199-0.203 (three pixels of two vectors) ->
// 0.134-0.141, 14 pixels along the width 0.146, 12 0.18; 96 channels at
// 56x56 0.52 -> 0.43.
func wideWindowTile(i, heightLoop, widthLoop int, tile int64, t Target) int64 {
	switch i {
	case heightLoop:
		return 2
	case widthLoop:
		return max(t.sharedAccumulators()*7/6/tile, 1)
	}
	return 1
}

// denseAccumulators is how many accumulators Default's register tile of
// a dense block takes: t.accumulators(), or three quarters of the
// register file where the block's outermost reduction loop is shorter
// than a vector (a stem convolution over three colour channels). There
// the inputs the tile broadcasts step by a few floats a tap, which x86
// addressing cannot scale: LLVM keeps a pointer a row of the tile, and
// 14 rows spill them (ResNet-50's 7x7 stem on AVX-512, one thread: 14
// rows of two vectors 2.2-3.3 ms, nine rows 1.9-2.2).
func (t Target) denseAccumulators(s *schedule.Schedule, bi *blockInfo) int64 {
	for i, l := range bi.loops {
		if bi.roles[i] != roleReduce {
			continue
		}
		if n, ok := s.Extent(l); ok && n < int64(t.VectorLanes) {
			return min(t.accumulators(), t.sharedAccumulators())
		}
		break
	}
	return t.accumulators()
}

// spatialAbove returns the index of the spatial loop just outside loop
// i (a convolution's height, above its width), or -1.
func spatialAbove(bi *blockInfo, i int) int {
	for j := i - 1; j >= 0; j-- {
		if bi.roles[j] == roleSpatial {
			return j
		}
	}
	return -1
}

// laneByLane reports whether region r, indexed by v, reads an element of
// its own for each lane of the register tile's row along v (two vectors
// of lanes), as a depthwise convolution reads its channel; not where
// every index mentions v only as v / G for G a multiple of the row: a
// grouped convolution's input, read at (v / 16) * 16 + c for 16
// channels a group, is one value for a whole row of 16 lanes, a
// broadcast, as in a dense convolution (ResNeXt's 3x3 over 512 channels
// in 32 groups at 14x14, one thread: 0.59-0.68 ms on the channel-wise
// tile, 0.38-0.50 on the dense one). Four or eight channels a group
// differ within the row and stay channel-wise (128 channels at 56x56:
// 3.3 ms, 6.2 on the dense tile).
func laneByLane(r ast.Region, v *ast.Var, lanes int) bool {
	if !regionIndexedBy(r, v) {
		return false
	}
	for _, rg := range r.Ranges {
		if g := groupOf(rg.Min, v.Name); ast.Mentions(rg.Min, v.Name) && (g == 0 || g%int64(2*max(lanes, 1)) != 0) {
			return true
		}
	}
	return false
}

// groupLanes returns the lanes of the vectors a grouped convolution's
// register tile takes where its groups are narrower than a vector, and 0
// where no input is read so: an input indexed by the vectorized loop's
// variable v only as floordiv(v, G) * G + c (G channels a group) with G
// not a multiple of the vector reads one value for every G lanes, and a
// vector's lanes read from several groups, each its own element (a
// gather). A row of one vector of the largest power of two that divides
// G (four lanes at least) lies in one group, and its input is one
// broadcast. One thread, AVX-512, Default's schedules alternating in one
// run: RegNetY-400MF's 3x3 convolution over 208 channels in groups of 8,
// stride 2 at 28x28, 2.7 ms with vectors of 16 lanes, 0.11 ms with 8;
// ResNeXt-50's over 128 channels in groups of 4 at 56x56 7.9 -> 1.9 ms
// (9.8 -> 1.9 with 256-bit vectors), over 256 in groups of 8 at 28x28
// 8.3 -> 1.2. Groups as wide as a vector keep the tile laneByLane gives
// them (512 channels in groups of 16 at 14x14 on AVX-512: 0.23 ms, 0.40
// with one vector a row).
func groupLanes(s *schedule.Schedule, bi *blockInfo, lanes int) int64 {
	v := lastSpatial(bi)
	if v < 0 || lanes <= 0 {
		return 0
	}
	vec := iterOf(bi, bi.loops[v])
	ext, ok := s.Extent(bi.loops[v])
	if vec == nil || !ok {
		return 0
	}
	narrow := int64(0)
	for _, r := range inputs(bi) {
		g := regionGroup(r, vec.Var.Name)
		if g > 0 && g%int64(lanes) != 0 {
			vl := g & -g // the largest power of two dividing g, less than a vector
			if vl < 4 || ext%vl != 0 {
				return 0
			}
			if narrow == 0 || vl < narrow {
				narrow = vl
			}
		}
	}
	return narrow
}

// regionGroup returns G where region r mentions v, and only as
// floordiv(v, G) for one constant G in every index (a grouped
// convolution's input), else 0 (a weight's panel, indexed by v modulo
// 16 too, is read lane by lane).
func regionGroup(r ast.Region, v string) int64 {
	group := int64(0)
	for _, rg := range r.Ranges {
		if !ast.Mentions(rg.Min, v) {
			continue
		}
		g := groupOf(rg.Min, v)
		if g == 0 || group != 0 && g != group {
			return 0
		}
		group = g
	}
	return group
}

// groupOf returns G where every mention of v in e is as floordiv(v, G)
// for one constant G, else 0.
func groupOf(e ast.Expr, v string) int64 {
	g, ok := int64(0), true
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Var:
			ok = ok && n.Name != v
		case *ast.Binary:
			x, isVar := n.A.(*ast.Var)
			if n.Op != ast.OpFloorDiv || !isVar || x.Name != v {
				return true
			}
			d, c := ast.ConstIntValue(n.B)
			ok = ok && c && d > 0 && (g == 0 || g == d)
			g = d
			return false // v as floordiv(v, G): not a mention of v alone
		}
		return true
	})
	if !ok {
		return 0
	}
	return g
}

// widthLoop returns the index of the spatial loop just outside the
// vectorized one (a convolution's width in NHWC), or -1.
func widthLoop(bi *blockInfo) int {
	return spatialAbove(bi, lastSpatial(bi))
}

// windowsAlongWidth reports whether some input of the block is read
// along the width (widthLoop) through a window, at w*s + r for a
// reduction variable r and any stride s, and not lane by lane (the
// vectorized loop does not index it, so the tile broadcasts it): a
// dense convolution whose channels are innermost (NHWC). Its register
// tile then takes its rows along the width first: the rows of a tile
// along the height read as many image rows as it has pixels, each its
// own stream through the caches (and, at stride 2, its own pages), where
// rows along the width share them.
// ResNet-50's 3x3 stride-2 convolution over 256 channels at 28x28 on an
// Ice Lake Xeon, one thread (fourteen pixels by two vectors either way,
// alternating in one run): 3.15 ms down a column, 2.38 along a row.
func windowsAlongWidth(bi *blockInfo) bool {
	w := widthLoop(bi)
	if w < 0 {
		return false
	}
	width, vector := iterOf(bi, bi.loops[w]), iterOf(bi, bi.loops[lastSpatial(bi)])
	if width == nil || vector == nil {
		return false
	}
	for _, r := range inputs(bi) {
		if slices.ContainsFunc(r.Ranges, func(rg ast.Range) bool { return ast.Mentions(rg.Min, vector.Var.Name) }) {
			continue // read lane by lane (a depthwise convolution's input), not broadcast
		}
		for _, rg := range r.Ranges {
			coefs, ok := ast.AffineCoefs(unclamped(rg.Min))
			if !ok || coefs[width.Var.Name] == 0 {
				continue
			}
			for _, it := range bi.blk.Iters {
				if it.Kind == ast.Reduce && coefs[it.Var.Name] != 0 {
					return true
				}
			}
		}
	}
	return false
}

// unitStrideWindows reports whether some input of the block is read
// along the width (widthLoop) at w + r for a reduction variable r of
// more than one step: a window at stride 1, so that neighbouring pixels
// read mostly the same inputs. A clamp of the index (min and max with a
// constant, as padding leaves it) is looked through.
func unitStrideWindows(bi *blockInfo) bool {
	return windowTaps(bi) != 0
}

// windowTaps returns how many taps the widest such window (see
// unitStrideWindows) spans along the width, -1 where its extent is
// symbolic, or 0 where the block reads no window at unit stride.
func windowTaps(bi *blockInfo) int64 {
	w := widthLoop(bi)
	if w < 0 {
		return 0
	}
	width := iterOf(bi, bi.loops[w])
	if width == nil {
		return 0
	}
	taps := int64(0)
	for _, r := range inputs(bi) {
		for _, rg := range r.Ranges {
			coefs, ok := ast.AffineCoefs(unclamped(rg.Min))
			if !ok || coefs[width.Var.Name] != 1 {
				continue
			}
			for _, it := range bi.blk.Iters {
				n, known := ast.ConstIntValue(ast.Simplify(it.Dom.Extent))
				switch {
				case it.Kind != ast.Reduce || coefs[it.Var.Name] != 1:
				case !known:
					return -1
				case n > 1:
					taps = max(taps, n)
				}
			}
		}
	}
	return taps
}

// unclamped strips min and max with a constant from the outside of e.
func unclamped(e ast.Expr) ast.Expr {
	for {
		b, ok := e.(*ast.Binary)
		if !ok || b.Op != ast.OpMin && b.Op != ast.OpMax {
			return e
		}
		if _, c := ast.ConstIntValue(b.A); c {
			e = b.B
		} else if _, c := ast.ConstIntValue(b.B); c {
			e = b.A
		} else {
			return e
		}
	}
}

// l1SetSpan is how far apart two addresses of the same set of the first-
// level data cache lie: 64 sets of 64-byte lines on the x86-64 cores
// loom's CPU targets are (32 KiB 8-way, 48 KiB 12-way).
const l1SetSpan = 4096

// aliasedPanelRows is how many rows of its matrix a matrix-vector
// product under aliasedPanels reads at a time, across all its panels.
const aliasedPanelRows = 8

// aliasedPanels reports whether an input the block reads along its
// vectorized loop (a matrix-vector product's matrix, [K, N]) steps by a
// multiple of l1SetSpan bytes along the block's first reduction: N a
// multiple of 1024 float32s, as GPT-2's 3072 and the 4096, 11008 or
// 14336 of larger language models are. Read a panel at a time, as
// Default otherwise does (panelsOuter), every row of a panel falls in
// the same few sets of the L1D, and the lines the hardware prefetches
// for the next rows evict one another. Default then runs the reduction
// outside the panels, aliasedPanelRows rows at a time across all the
// panels of a thread, so that each row of the matrix is read straight
// through. One thread, Zen 5, GPT-2's decoding step [1, 768] x [768,
// 3072] with bias and GELU: 0.144 ms a panel at a time, against 0.11
// for oneDNN with its weights packed (0.086 ms at 2304 columns, whose
// rows do not alias).
func aliasedPanels(s *schedule.Schedule, bi *blockInfo) bool {
	v := lastSpatial(bi)
	if v < 0 {
		return false
	}
	vec := iterOf(bi, bi.loops[v])
	for i, l := range bi.loops {
		if bi.roles[i] != roleReduce {
			continue
		}
		it := iterOf(bi, l)
		if it == nil || vec == nil {
			return false
		}
		for _, r := range inputs(bi) {
			if !regionIndexedBy(r, vec.Var) {
				continue
			}
			if b, ok := byteStride(r, it.Var.Name); ok && b != 0 && b%l1SetSpan == 0 {
				return true
			}
		}
		return false // the first reduction only
	}
	return false
}

// aliasedTileRows is the most rows Default gives a register tile along a
// loop under aliasedRows: as many lines of one set as an 8-way L1D holds.
const aliasedTileRows = 8

// aliasedRows reports whether an input the block reads along loop l but
// not along its vectorized loop (the operand the register tile
// broadcasts: a matrix product's left-hand rows, a 1x1 convolution's
// pixels in NHWC) steps by a multiple of l1SetSpan bytes along l: rows
// of 1024 or 2048 float32s. A tile's rows then all fall in one set of the
// L1D, and more of them than its ways evict one another on every step of
// the reduction. Measured (one thread, Zen 5, ResNet-50's 1x1
// convolution over 1024 channels to 256 at 14x14 in NHWC, 196 pixels of
// 1024): 14 rows a tile 0.527 ms, 7 rows 0.505 (oneDNN 0.483); on two
// threads 0.32 and 0.255 (oneDNN 0.266).
func aliasedRows(bi *blockInfo, l schedule.Loop) bool {
	v := lastSpatial(bi)
	it := iterOf(bi, l)
	if v < 0 || it == nil {
		return false
	}
	vec := iterOf(bi, bi.loops[v])
	if vec == nil || vec == it {
		return false
	}
	for _, r := range inputs(bi) {
		if regionIndexedBy(r, vec.Var) || !regionIndexedBy(r, it.Var) {
			continue
		}
		if b, ok := byteStride(r, it.Var.Name); ok && b != 0 && b%l1SetSpan == 0 {
			return true
		}
	}
	return false
}

// byteStride returns how many bytes region r's first element moves when
// variable v grows by one, where every index is affine and every
// dimension after the first a constant.
func byteStride(r ast.Region, v string) (int64, bool) {
	stride, size := int64(0), int64(1)
	for d := len(r.Ranges) - 1; d >= 0; d-- {
		c, ok := ast.AffineCoefs(r.Ranges[d].Min)
		if !ok {
			return 0, false
		}
		stride += c[v] * size
		if d > 0 {
			n, ok := ast.ConstIntValue(ast.Simplify(r.Buffer.Shape[d]))
			if !ok {
				return 0, false
			}
			size *= n
		}
	}
	return stride * int64(r.Buffer.DType.Bytes()), true
}

// rowless reports whether the block's vectorized loop is its only
// spatial loop of more than one iteration, its extent a constant: a
// matrix-vector product, whose register tile has a single row, so that
// its vectors are its only independent chains of FMAs. Measured (one
// thread, weights in the L3): MobileNetV2's classifier, [1, 1280] x
// [1280, 1000], 0.196 ms with one vector, 0.09 with four and a tail of
// one; GPT-2's decoding step [1, 768] x [768, 3072] with GELU, 0.45 ms
// with two, 0.31 with four (eight: 0.28, but 0.19 against 0.15 at 2304
// columns and 0.16 against 0.09 at 1000).
func rowless(s *schedule.Schedule, bi *blockInfo) bool {
	v := lastSpatial(bi)
	if v < 0 {
		return false
	}
	for i, l := range bi.loops {
		if i == v || bi.roles[i] != roleSpatial {
			continue
		}
		if n, ok := s.Extent(l); !ok || n != 1 {
			return false
		}
	}
	_, ok := s.Extent(bi.loops[v])
	return ok
}

// bufferBytes is b's size in bytes, 0 where a dimension is symbolic.
func bufferBytes(b *ast.Buffer) int64 {
	bytes := int64(b.DType.Bytes())
	for _, d := range b.Shape {
		n, ok := ast.ConstIntValue(ast.Simplify(d))
		if !ok {
			return 0
		}
		bytes *= n
	}
	return bytes
}

// lastSpatial returns the index of the block's innermost spatial loop, or
// -1.
func lastSpatial(bi *blockInfo) int {
	for i := len(bi.loops) - 1; i >= 0; i-- {
		if bi.roles[i] == roleSpatial {
			return i
		}
	}
	return -1
}
