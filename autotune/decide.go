package autotune

import (
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// Default returns a schedule of f for target t decided without
// measurement: the rules of the search space (DefaultRules, or GPURules
// for a GPU target) applied as the search applies them, with every
// choice a sample would draw taken by a heuristic instead (t.decided):
// register tiles that fill the target's accumulators, reduction blocks
// that stay in cache, outer tiles that leave every thread work (see
// decideTile), the fused epilogue at the innermost offered level, a
// moderate unroll limit, whole vectors.
//
// On a GPU target (GPURules) the GPU rules' choices are decided too:
// contractions tiled for 256 threads a block with up to 16 outputs a
// thread and chunks of 16 of the reduction staged in shared memory through
// the widest vector accesses (gpuTiles; smaller when they do not fit),
// 256 threads for element-wise nests, 8 or more elements a thread for
// cross-thread reductions, and producers moved under their consumer's
// block loop only when no block would redo another's work.
//
// The decisions are recorded in the trace as sampling instructions, like
// a sample's: the trace replays, and a tuning run can start from it and
// mutate it.
func Default(f *ast.Func, t Target) (*schedule.Schedule, error) {
	sp := Space{Rules: DefaultRules(), Target: t}
	if t.GPU != nil {
		sp.Rules = GPURules()
	}
	return sp.Decide(f)
}

// Decide applies the space's rules to f as Sample does, with every choice
// taken by the rules' heuristics instead of drawn (see Default). Tune
// measures it in its first round.
func (sp *Space) Decide(f *ast.Func) (*schedule.Schedule, error) {
	d := *sp
	d.Target.decide = true
	s, err := d.Sample(f, 0)
	// A GPU tiling whose threads or shared tiles exceed the block's
	// drops the sample: the same decisions with smaller tiles.
	for d.Target.GPU != nil && err != nil && d.Target.shrink < 3 {
		d.Target.shrink++
		s, err = d.Sample(f, 0)
	}
	// A tiling of a symbolic extent that no shrink saves (a question the
	// dependence analysis cannot decide over a fused loop of symbolic
	// extent): those blocks get the other rules' schedule, as before
	// MultiLevelTilingGPU took symbolic extents.
	if d.Target.GPU != nil && err != nil {
		d.Target.shrink, d.Target.fixedGPUTiles = 0, true
		for s, err = d.Sample(f, 0); err != nil && d.Target.shrink < 3; {
			d.Target.shrink++
			s, err = d.Sample(f, 0)
		}
	}
	return s, err
}

// choose picks one of choices: drawn, all equally likely, or under
// Default the one at index preferred (clamped to the choices).
func choose(s *schedule.Schedule, t Target, choices []int64, preferred int) (schedule.Value, error) {
	if !t.decide || len(choices) == 0 {
		return sampleAmong(s, choices)
	}
	probs := make([]float64, len(choices))
	for i := range probs {
		probs[i] = 1
	}
	return s.SampleCategoricalWith(choices, probs, int64(min(max(preferred, 0), len(choices)-1)))
}

// perfectTile splits l into n factors whose product is its extent, the
// innermost at most maxInnermost (0: any): sampled, or under Default
// decided by decideTile for a loop of role r.
//
// A loop whose extent is symbolic has no perfect tile: it is split by
// constant factors, the outermost inferred, and the split guards the
// tails (the code generator partitions them off). Under Default the
// factors are those decideTile gives the most the extent can be when
// the target has bounds for the sizes (a bucket), else symbolicTile's, each a sampling instruction of one choice,
// so that the trace still names every decision; sampled, each factor is
// drawn from a set that suits any extent (sampleSymbolicTile), which the
// search then mutates like any categorical decision.
func perfectTile(s *schedule.Schedule, t Target, l schedule.Loop, n, maxInnermost int, r tileRole) ([]schedule.Value, error) {
	ext, ok := s.Extent(l)
	if ok && n >= 2 && poorlyDivisible(ext, maxInnermost, r, t) {
		// A constant extent whose divisors make no register tile (197
		// rows, a prime: 1 x 32 where 196 gets 7 x 32) is tiled as a
		// symbolic one is: factors that need not divide it, the
		// outermost inferred and the tail guarded.
		if t.decide {
			return guardedTile(s, n, decideTile(paddedExtent(ext, maxInnermost, r, t), n, maxInnermost, r, t))
		}
		return sampleSymbolicTile(s, n, maxInnermost, r, ext)
	}
	switch {
	case !ok && n >= 1 && t.decide:
		if bound := extentBound(s, l, t.Bounds.max()); bound > 0 && n >= 2 {
			// A bucket of sizes (Target.Bounds): tiled as the
			// bucket's largest extent would be, the tails guarded.
			if poorlyDivisible(bound, maxInnermost, r, t) {
				bound = paddedExtent(bound, maxInnermost, r, t)
			}
			return guardedTile(s, n, decideTile(bound, n, maxInnermost, r, t))
		}
		return fixedTile(s, l, n, maxInnermost, symbolicTile(n, maxInnermost, r, t))
	case !ok && n >= 1:
		return sampleSymbolicTile(s, n, maxInnermost, r, extentBound(s, l, t.Bounds.max()))
	case !t.decide || n < 1:
		return s.SamplePerfectTile(l, n, maxInnermost)
	case ext < 1:
		return s.SamplePerfectTile(l, n, maxInnermost)
	}
	return s.SamplePerfectTileWith(l, n, maxInnermost, decideTile(ext, n, maxInnermost, r, t))
}

// fixedTile splits l into the n given factors, recorded as decisions:
// for a loop of constant extent a perfect tile (the factors' product is
// the extent), for a loop of symbolic extent factors[1:] as one-choice
// sample_categorical instructions and the outermost inferred (the split
// guards the tails).
func fixedTile(s *schedule.Schedule, l schedule.Loop, n, maxInnermost int, factors []int64) ([]schedule.Value, error) {
	if _, ok := s.Extent(l); ok {
		return s.SamplePerfectTileWith(l, n, maxInnermost, factors)
	}
	return guardedTile(s, n, factors)
}

// guardedTile returns factors[1:] as one-choice sample_categorical
// instructions and the outermost inferred (a zero Value): split by them,
// a loop of any extent runs its tail guarded.
func guardedTile(s *schedule.Schedule, n int, factors []int64) ([]schedule.Value, error) {
	out := make([]schedule.Value, n)
	for i := 1; i < n; i++ {
		v, err := s.SampleCategoricalWith([]int64{factors[i]}, []float64{1}, 0)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// sampleSymbolicTile draws the factors of a loop of symbolic extent split
// in n, the outermost inferred (a zero Value): the innermost among the
// powers of two and their multiples by 3 up to maxInnermost (0: 64; a
// reduction's up to 256), the levels between among 1, 2, 4 and 8; the
// innermost drawn first, and no level's tile (its factor times those
// under it) above bound, the most the extent can be (0: unknown): matmul's
// bucket of 16 to 63 rows drew tiles of 288 rows, three quarters of which
// no size of the bucket reaches.
func sampleSymbolicTile(s *schedule.Schedule, n, maxInnermost int, r tileRole, bound int64) ([]schedule.Value, error) {
	out := make([]schedule.Value, n)
	tile := int64(1) // the product of the factors drawn
	for i := n - 1; i >= 1; i-- {
		limit := int64(8)
		if i == n-1 && r != tileSpatialAbove {
			limit = 64
			if r == tileReduce {
				limit = 256
			}
			if maxInnermost > 0 {
				limit = min(limit, int64(maxInnermost))
			}
		}
		if bound > 0 {
			limit = max(min(limit, bound/tile), 1)
		}
		v, err := sampleAmong(s, tileChoices(limit))
		if err != nil {
			return nil, err
		}
		out[i] = v
		tile *= v.Int()
	}
	return out, nil
}

// sampleGPUSymbolicTile draws the factors of a loop of symbolic extent
// split in n for MultiLevelTilingGPU, the outermost inferred (blocks, or a
// reduction's steps): a spatial loop's virtual threads among 1 and 2, its
// threads among the powers of two up to 32, its levels below (registers)
// among 1, 2 and 4; a reduction's chunk (the innermost level) among the
// powers of two up to 32 (and maxInnermost), the levels between among 1,
// 2 and 4; none making a tile (its factor times those drawn before it)
// beyond bound, where bound is not 0: the extent of a constant loop tiled
// this way.
func sampleGPUSymbolicTile(s *schedule.Schedule, n, maxInnermost int, reduce bool, bound int64) ([]schedule.Value, error) {
	out := make([]schedule.Value, n)
	tile := int64(1) // the product of the factors drawn
	for i := 1; i < n; i++ {
		limit := int64(4)
		switch {
		case reduce && i == n-1, !reduce && i == 2:
			limit = 32
		case !reduce && i == 1:
			limit = 2
		}
		if i == n-1 && maxInnermost > 0 {
			limit = min(limit, int64(maxInnermost))
		}
		if bound > 0 {
			limit = max(min(limit, bound/tile), 1)
		}
		var choices []int64
		for c := int64(1); c <= limit; c *= 2 {
			choices = append(choices, c)
		}
		v, err := sampleAmong(s, choices)
		if err != nil {
			return nil, err
		}
		out[i] = v
		tile *= v.Int()
	}
	return out, nil
}

// extentBound returns the most loop l's extent can be when every
// symbolic size is at most its bound, or 0 when that is unknown (no
// bounds, a size without one, or an extent that does not grow with the
// sizes alone).
func extentBound(s *schedule.Schedule, l schedule.Loop, bounds map[string]int64) int64 {
	if len(bounds) == 0 {
		return 0
	}
	var ext ast.Expr
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		if lp, ok := n.(*ast.For); ok && lp.Var.Name == l.String() {
			ext = lp.Extent
		}
		return ext == nil
	})
	if ext == nil {
		return 0
	}
	m := map[string]ast.Expr{}
	for name, b := range bounds {
		m[name] = ast.IntConst(ast.Int32, b)
	}
	v, ok := ast.ConstIntValue(ast.Simplify(ast.Substitute(ext, m)))
	if !ok || v < 1 {
		return 0
	}
	return v
}

// tileChoices returns the factors a symbolic loop's level may take up
// to limit: 1, then the powers of two and three times them, ascending.
func tileChoices(limit int64) []int64 {
	out := []int64{1}
	for p := int64(2); p <= limit; p *= 2 {
		out = append(out, p)
		if q := p / 2 * 3; q <= limit && q > p {
			out = append(out, q)
		}
	}
	return out
}

// symbolicTile returns the factors of a loop of unknown extent split in
// n, the first (inferred) left 0: the innermost a power of two within
// the limit, for a spatial loop at most two vectors (a row of the
// register tile), for a reduction at most 64; for a spatial loop of three
// or more levels the one above the register tile 4 (as decideTile's
// deepest cache level), the other levels between 1.
func symbolicTile(n, maxInnermost int, r tileRole, t Target) []int64 {
	out := make([]int64, n)
	for i := 1; i < n; i++ {
		out[i] = 1
	}
	if r == tileSpatialAbove || n < 2 {
		return out
	}
	limit := int64(2 * max(t.VectorLanes, 1))
	if r == tileReduce {
		limit = 64
	}
	if maxInnermost > 0 {
		limit = min(limit, int64(maxInnermost))
	}
	inner := int64(1)
	for inner*2 <= limit {
		inner *= 2
	}
	out[n-1] = inner
	if r == tileSpatial && n > 2 {
		// The deepest level above the register tile: four register
		// tiles share each block of the reduction's other operand
		// while it is in cache (a symbolic row loop of a matmul reuses
		// each block of the weights four times before it leaves L2).
		out[n-2] = 4
	}
	return out
}

// tileRole says what the levels of a tiled loop are for.
type tileRole uint8

const (
	// tileSpatial: a spatial loop of MultiLevelTiling: the innermost
	// factor is the register tile's, the outermost runs in parallel,
	// the ones between make the cache tiles.
	tileSpatial tileRole = iota
	// tileReduce: a reduction loop: the innermost factor is how long the
	// register tile accumulates between loads and stores of its
	// accumulators, the outer factors step through the reduction.
	tileReduce
	// tileBlock: a two-level square tile (a transpose's), the inner
	// factor a block that stays in the first-level cache.
	tileBlock
	// tileSpatialAbove: the levels of a spatial loop above its register
	// tile, split off already (the vectorized loop's): a tileSpatial
	// tiling without its innermost level.
	tileSpatialAbove
)

// decideTile returns n factors of ext whose product is ext, the innermost
// at most maxInnermost (0: any):
//   - the innermost is the largest divisor allowed (the register tile
//     fills its accumulators; a reduction accumulates as long as it may;
//     a block is at most two vectors square);
//   - of what is left, for a spatial loop, the outermost level takes
//     the fewest iterations that give every thread one, that the
//     threads share evenly where some do, and that leave at
//     most t.cacheTileTiles() register tiles (16 with a 1 MiB L2 and
//     AVX-512), which the levels between make the cache tile of, the
//     deepest of them up to 4 (a tile that reuses a reduction's block);
//   - for a reduction, the outer levels are the rest, outermost first.
//
// Under t.panelsOuter the vectorized loop's levels above its vector
// (tileSpatialAbove) take all their iterations at the outermost level,
// and every other spatial loop none there: all of it at the level above
// its register tile.
func decideTile(ext int64, n, maxInnermost int, r tileRole, t Target) []int64 {
	if r == tileSpatialAbove && t.panelsOuter {
		out := make([]int64, n)
		for i := range out {
			out[i] = 1
		}
		out[0] = ext
		if t.panelsUnderRows && n > 1 {
			// Under the threads' shares of the rows.
			out[0], out[1] = 1, ext
		}
		if t.aliasedPanels && n > 1 {
			// The threads' shares outermost, the panels of a share
			// inside the reduction (see aliasedPanels).
			out[0] = threadShares(ext, int64(max(t.Threads, 1)))
			out[n-1] = ext / out[0]
		}
		return out
	}
	if r == tileSpatialAbove {
		return decideTile(ext, n+1, 1, tileSpatial, t)[:n]
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	inner := largestDivisor(ext, innermostLimit(ext, maxInnermost, r, t))
	out[n-1] = inner
	rest := ext / inner
	if n == 1 {
		out[0] = ext
		return out
	}
	if r == tileSpatial && t.panelsOuter {
		out[n-2] = rest
		if t.threadRows && n > 2 {
			out[0] = threadShares(rest, int64(max(t.Threads, 1)))
			out[n-2] = rest / out[0]
		}
		return out
	}
	if r == tileSpatial && n > 2 {
		// The outermost level: at least one iteration per thread where
		// the loop has that many, and at most a cache tile's register
		// tiles left for the cache tile.
		out[0] = rest
		tiles, threads := t.cacheTileTiles(), int64(max(t.Threads, 1))
		allowed := slices.DeleteFunc(divisorsOf(rest), func(d int64) bool { return d < min(rest, threads) || rest/d > tiles })
		// The threads take the outermost level's iterations whole, so 7
		// of them on two threads take the time of 4: the fewest that
		// the threads share evenly, where some do (MobileNetV2's
		// depthwise convolution on 144 channels at 56x56, two threads:
		// 0.15-0.22 ms in 7 row tiles, 0.12 in 8).
		if i := slices.IndexFunc(allowed, func(d int64) bool { return !unevenShares(d, threads) }); i >= 0 {
			out[0] = allowed[i]
		} else if len(allowed) > 0 {
			out[0] = allowed[0]
		}
		mid := rest / out[0]
		deep := largestDivisor(mid, 4)
		out[n-2] = deep
		mid /= deep
		out[n-3] *= mid // n-3 >= 0: the level above the deepest, or the outermost
		return out
	}
	out[0] = rest
	return out
}

// threadShares returns the fewest iterations, a divisor of ext, that
// the threads take whole with the busiest at most 5% above a fair share
// (ext itself where none does).
func threadShares(ext, threads int64) int64 {
	for _, d := range divisorsOf(ext) {
		if d >= min(ext, threads) && !unevenShares(d, threads) {
			return d
		}
	}
	return ext
}

// divisorsOf returns the divisors of n, ascending.
func divisorsOf(n int64) []int64 {
	var out []int64
	for d := int64(1); d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

// unevenShares reports whether n iterations, which threads take whole,
// leave the busiest thread more than 5% above a fair share.
func unevenShares(n, threads int64) bool {
	busiest := (n + threads - 1) / threads
	return busiest*threads*100 > n*105
}

// innermostLimit is the largest innermost factor decideTile allows a
// loop of extent ext and role r.
func innermostLimit(ext int64, maxInnermost int, r tileRole, t Target) int64 {
	limit := ext
	if maxInnermost > 0 {
		limit = min(limit, int64(maxInnermost))
	}
	if r == tileBlock {
		limit = min(limit, int64(2*max(t.VectorLanes, 1)))
	}
	return limit
}

// poorlyDivisible reports whether a constant extent's divisors make a
// register tile short of what the role allows, while the extent is larger
// than that: a factor that does not divide it does better, its tail
// guarded. Short is at most half the limit (a prime number of rows, 197
// tokens: one row a tile), or under three quarters of what the limit's
// tile does once the rows it pads are counted (196 rows with 6 allowed:
// 4 divides, where 6 over 198 rows wastes one percent; measured at 1
// thread on a Zen 3, 196 x 2304 x 768 took 87 us a row on the 4-row tile,
// 197 took 58 on its guarded 6-row tile). Spatial and block tiles only: a
// reduction's chunk is as long as it may be either way.
func poorlyDivisible(ext int64, maxInnermost int, r tileRole, t Target) bool {
	if r != tileSpatial && r != tileBlock {
		return false
	}
	limit := innermostLimit(ext, maxInnermost, r, t)
	if ext <= limit {
		return false
	}
	d := largestDivisor(ext, limit)
	if 2*d <= limit {
		return true
	}
	padded := (ext + limit - 1) / limit * limit
	return 4*d*padded < 3*limit*ext
}

// paddedExtent returns the smallest extent above ext, by at most an
// eighth, that is not poorlyDivisible (197 rows: 198, six rows a
// register tile with up to 8 allowed), or ext when there is none: the
// guarded tiling decideTile makes for it wastes the least.
func paddedExtent(ext int64, maxInnermost int, r tileRole, t Target) int64 {
	for p := ext + 1; p <= ext+max(ext/8, 1); p++ {
		if !poorlyDivisible(p, maxInnermost, r, t) {
			return p
		}
	}
	return ext
}

// largestDivisor returns the largest divisor of n that is at most limit
// (at least 1).
func largestDivisor(n, limit int64) int64 {
	for d := min(n, limit); d > 1; d-- {
		if n%d == 0 {
			return d
		}
	}
	return 1
}

// preferredVector returns the index among inner (the candidate
// innermost factors of a vectorized loop of extent n, 0 where symbolic;
// ascending) that Default takes: of those up to the given number of
// vectors (two: independent FMA chains per row of the register tile;
// three where two do not divide the loop; four for a channel-wise block,
// whose rows reuse no input, and a rowless one, which has no other
// chains), the one whose lanes do the most work (fillOf), the larger on
// a tie; the smallest where none is that short.
func preferredVector(inner []int64, n int64, lanes, vectors int) int {
	best, bestFill := 0, -1.0
	for i, d := range inner {
		if d > int64(vectors*max(lanes, 1)) {
			break
		}
		fill := 1.0
		if n > 0 {
			fill = fillOf(n, d, int64(lanes))
		}
		if fill >= bestFill {
			best, bestFill = i, fill
		}
	}
	return best
}

// gpuTiles decides the tiles of MultiLevelTilingGPU for a block whose
// tiled loops have the given (constant) extents and roles, each split
// in as many levels as the structure gives its role (sLevels spatial:
// blocks, virtual threads, threads, ..., the thread's own tile; rLevels
// for the first reduce loop: steps, ..., the chunk a step fetches):
//
//   - each thread computes a register tile of up to 16 outputs, at most 4
//     along a loop, the innermost loops first;
//   - a block has up to 256 threads, at most 16 along a loop, the
//     innermost loops first (neighbouring threads, neighbouring outputs);
//   - a step of the reduction fetches a chunk of 16 (the A and B tiles of
//     a 64x64 block, 8 KiB of shared memory);
//   - the rest runs over the blocks; no virtual threads.
//
// shrink halves the threads and the chunk that many times (a first
// choice whose shared tiles do not fit).
//
// A symbolic extent (0 in exts) is tiled as a large one would be: 4
// registers and 16 threads of a spatial loop, a chunk of 16 of the
// reduction, the outermost level inferred (the split guards the tail).
func gpuTiles(exts []int64, roles []role, sLevels, rLevels, shrink int) [][]int64 {
	out := make([][]int64, len(exts))
	regs, threads := int64(16), int64(max(256>>shrink, 32))
	chunk := int64(max(16>>shrink, 1))
	firstReduce := slices.Index(roles, roleReduce)
	for i := len(exts) - 1; i >= 0; i-- {
		e := exts[i]
		if e == 0 {
			e = 1 << 20 // divisible by every factor below
		}
		switch roles[i] {
		case roleSpatial:
			f := make([]int64, sLevels)
			for k := range f {
				f[k] = 1
			}
			reg := largestDivisor(e, min(regs, 4))
			regs /= reg
			rest := e / reg
			th := largestDivisor(rest, min(threads, 16))
			threads /= th
			f[sLevels-1], f[2], f[0] = reg, th, rest/th
			out[i] = f
		case roleReduce:
			if i != firstReduce {
				continue // the others run whole at the last R level
			}
			f := make([]int64, rLevels)
			for k := range f {
				f[k] = 1
			}
			c := largestDivisor(e, chunk)
			f[rLevels-1], f[0] = c, e/c
			out[i] = f
		}
	}
	return out
}
