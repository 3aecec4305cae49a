package schedgen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Mode says how a Gen chooses its ops.
type Mode int

const (
	// Adversarial aims at interactions between primitives: most ops
	// are planned in short sequences (reshape a consumer's loops, then
	// move a producer under them, then change the kind of the loops just
	// made), and arguments favour the loops and blocks the last steps made
	// or moved.
	Adversarial Mode = iota
	// Uniform picks every primitive and argument uniformly at random.
	Uniform
)

// String returns "adversarial" or "uniform".
func (m Mode) String() string {
	if m == Uniform {
		return "uniform"
	}
	return "adversarial"
}

// Gen proposes schedule ops for a function, one at a time, learning from
// what the previous ops did (Observe). A Gen is deterministic given its
// seed and the functions it is shown.
type Gen struct {
	r    *rand.Rand
	mode Mode
	// lr draws the layout steps (transform_layout), apart from r so that
	// a sequence without one is what it was before the primitive existed
	// (nil: none, as for Step).
	lr *rand.Rand
	// fresh are the loops recent steps made or touched, and moved the
	// blocks they made or moved, newest last.
	fresh, moved []string
	// plan is the rest of the planned sequence being generated.
	plan []planned
}

// planned makes the next op of a plan, looking at the current function; it
// returns false when it has nothing to propose.
type planned func(n *nest) (Op, bool)

// NewGen returns a generator of ops, seeded.
func NewGen(seed uint64, mode Mode) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, 0xad5e)), lr: rand.New(rand.NewPCG(seed, 0x1a40)), mode: mode}
}

// Next returns the next op to try on f. It returns an op with an empty
// Prim only when f has no loops.
func (g *Gen) Next(f *ast.Func) Op {
	n := analyze(f)
	if len(n.loops) == 0 {
		return Op{}
	}
	for len(g.plan) > 0 {
		p := g.plan[0]
		g.plan = g.plan[1:]
		if op, ok := p(n); ok {
			return op
		}
	}
	if g.lr != nil && len(n.blocks) > 0 && g.lr.IntN(layoutEvery) == 0 {
		return g.transformLayout(n, pick(g.lr, n.blocks))
	}
	if g.mode == Adversarial && g.r.IntN(100) < 55 {
		g.plan = g.macro(n)
		for len(g.plan) > 0 {
			p := g.plan[0]
			g.plan = g.plan[1:]
			if op, ok := p(n); ok {
				return op
			}
		}
	}
	return g.single(n)
}

// Observe tells the generator what the op it proposed did: accepted
// turned before into after. A refused op usually ends the plan it was
// part of.
func (g *Gen) Observe(op Op, before, after *ast.Func, accepted bool) {
	if !accepted {
		if g.r.IntN(2) == 0 {
			g.plan = nil
		}
		return
	}
	nb, na := analyze(before), analyze(after)
	var fresh []string
	for _, l := range na.loops {
		if nb.loop[l.name] == nil {
			fresh = append(fresh, l.name)
		}
	}
	for _, l := range op.Loops {
		if na.loop[l] != nil && !slices.Contains(fresh, l) {
			fresh = append([]string{l}, fresh...)
		}
	}
	// The op's block first, then the blocks it moved, then the blocks it
	// made, so that the newest is a made block where there is one.
	var moved, made []string
	if na.block[op.Block] != nil {
		moved = append(moved, op.Block)
	}
	for _, b := range na.blocks {
		switch old := nb.block[b.name]; {
		case old == nil:
			made = append(made, b.name)
		case b.name != op.Block && !slices.Equal(names(old.loops), names(b.loops)):
			moved = append(moved, b.name)
		}
	}
	moved = append(moved, made...)
	g.fresh = lastN(append(g.fresh, fresh...), 12)
	g.moved = lastN(append(g.moved, moved...), 6)
}

func lastN(xs []string, n int) []string {
	if len(xs) > n {
		xs = xs[len(xs)-n:]
	}
	return slices.Clone(xs)
}

// pick returns a random element of xs (xs must not be empty).
func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// weighted returns an index chosen with the given weights.
func weighted(r *rand.Rand, ws []int) int {
	total := 0
	for _, w := range ws {
		total += w
	}
	x := r.IntN(total)
	for i, w := range ws {
		if x < w {
			return i
		}
		x -= w
	}
	return len(ws) - 1
}

// freshLoops returns the fresh loops that still exist, newest first.
func (g *Gen) freshLoops(n *nest) []*loopInfo {
	var out []*loopInfo
	for i := len(g.fresh) - 1; i >= 0; i-- {
		if l := n.loop[g.fresh[i]]; l != nil && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// movedBlocks returns the moved blocks that still exist, newest first.
func (g *Gen) movedBlocks(n *nest) []*blockInfo {
	var out []*blockInfo
	for i := len(g.moved) - 1; i >= 0; i-- {
		if b := n.block[g.moved[i]]; b != nil && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// newest picks from xs, newest first, favouring the first ones.
func newest[T any](r *rand.Rand, xs []T) T {
	for _, x := range xs {
		if r.IntN(2) == 0 {
			return x
		}
	}
	return xs[r.IntN(len(xs))]
}

// anyLoop returns a loop of n: in the adversarial mode often one that a
// recent step made, or one around a block a recent step moved.
func (g *Gen) anyLoop(n *nest) *loopInfo {
	if g.mode == Adversarial {
		switch x := g.r.IntN(10); {
		case x < 4:
			if fl := g.freshLoops(n); len(fl) > 0 {
				return newest(g.r, fl)
			}
		case x < 6:
			if mb := g.movedBlocks(n); len(mb) > 0 {
				if b := newest(g.r, mb); len(b.loops) > 0 {
					return pick(g.r, b.loops)
				}
			}
		}
	}
	return pick(g.r, n.loops)
}

// anyBlock returns a block of n (nil when there is none): in the
// adversarial mode often one that a recent step made or moved.
func (g *Gen) anyBlock(n *nest) *blockInfo {
	if len(n.blocks) == 0 {
		return nil
	}
	if g.mode == Adversarial && g.r.IntN(10) < 3 {
		if mb := g.movedBlocks(n); len(mb) > 0 {
			return newest(g.r, mb)
		}
	}
	return pick(g.r, n.blocks)
}

// loopOf returns a loop around b, favouring fresh ones; nil when b has
// no loops.
func (g *Gen) loopOf(n *nest, b *blockInfo) *loopInfo {
	if len(b.loops) == 0 {
		return nil
	}
	if g.r.IntN(10) < 6 {
		for _, l := range g.freshLoops(n) {
			if slices.Contains(b.loops, l) && g.r.IntN(3) > 0 {
				return l
			}
		}
	}
	return pick(g.r, b.loops)
}

// factors returns split factors for a loop of extent ext (-1 when not
// constant): two or three, usually one of them inferred (-1), some that
// divide the extent and some that do not.
func (g *Gen) factors(ext int64) []int {
	k := 2
	if g.r.IntN(4) == 0 {
		k = 3
	}
	cands := []int{1, 2, 3, 4, 5, 8}
	if ext > 0 {
		for d := int64(2); d <= ext; d++ {
			if ext%d == 0 {
				cands = append(cands, int(d), int(d)) // divisors twice as likely
			}
		}
		cands = append(cands, int(ext), int(ext)+1, int(ext)+3)
	}
	fs := make([]int, k)
	for i := range fs {
		fs[i] = pick(g.r, cands)
	}
	if g.r.IntN(5) > 0 {
		fs[g.r.IntN(k)] = -1
	}
	return fs
}

var (
	scopes = []string{"global", "shared", "local"}
	axes   = []string{"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"}
	kinds  = []string{"parallel", "vectorize", "unroll", "bind"}
)

// single returns one op, not part of a plan.
func (g *Gen) single(n *nest) Op {
	weights := []int{10, 8, 8, 4, 4, 6, 6, 4, 3, 10, 8, 5, 5, 6, 5, 5, 5, 2, 3, 3}
	if g.mode == Uniform {
		weights = nil
		for range Prims[:drawn] {
			weights = append(weights, 1)
		}
	}
	prim := Prims[weighted(g.r, weights)]
	if g.mode == Uniform {
		return g.uniformOp(n, prim)
	}
	switch prim {
	case "split":
		return g.split(g.anyLoop(n))
	case "fuse":
		return g.fuse(g.anyLoop(n))
	case "reorder":
		return g.reorder(g.anyLoop(n))
	case "tile":
		return g.tile(g.anyLoop(n))
	case "align":
		return g.align(n)
	case "parallel", "vectorize", "unroll", "bind":
		return g.kind(prim, g.anyLoop(n))
	case "sample_perfect_tile":
		return g.samplePerfectTile(g.anyLoop(n))
	}
	b := g.anyBlock(n)
	if b == nil {
		return g.split(g.anyLoop(n))
	}
	switch prim {
	case "compute_at":
		return g.computeAt(n, b, nil)
	case "reverse_compute_at":
		return g.reverseComputeAt(n, b, nil)
	case "compute_inline", "reverse_compute_inline":
		return Op{Prim: prim, Block: b.name}
	case "rfactor":
		return g.rfactor(n, b)
	case "decompose_reduction":
		return g.decompose(n, b)
	case "cache_read", "cache_write", "set_scope":
		return g.cache(n, prim, b)
	case "sample_compute_location":
		return Op{Prim: prim, Block: b.name}
	}
	panic("schedgen: no generator for " + prim)
}

// uniformOp returns an op of the given primitive with arguments chosen
// uniformly at random.
func (g *Gen) uniformOp(n *nest, prim string) Op {
	loop := func() string { return pick(g.r, n.loops).name }
	block := func() *blockInfo {
		if len(n.blocks) == 0 {
			return nil
		}
		return pick(g.r, n.blocks)
	}
	switch prim {
	case "split":
		return Op{Prim: prim, Loops: []string{loop()}, Ints: g.factors(-1)}
	case "fuse", "reorder", "align":
		return Op{Prim: prim, Loops: []string{loop(), loop()}}
	case "tile":
		return Op{Prim: prim, Loops: []string{loop(), loop()}, Ints: []int{pick(g.r, []int{1, 2, 3, 4, 8}), pick(g.r, []int{1, 2, 3, 4, 8})}}
	case "parallel", "vectorize", "unroll":
		return Op{Prim: prim, Loops: []string{loop()}}
	case "bind":
		return Op{Prim: prim, Loops: []string{loop()}, Str: pick(g.r, axes)}
	}
	b := block()
	if b == nil {
		return Op{Prim: "split", Loops: []string{loop()}, Ints: g.factors(-1)}
	}
	switch prim {
	case "compute_at", "reverse_compute_at", "decompose_reduction":
		return Op{Prim: prim, Block: b.name, Loops: []string{loop()}}
	case "compute_inline", "reverse_compute_inline", "sample_compute_location":
		return Op{Prim: prim, Block: b.name}
	case "rfactor":
		return Op{Prim: prim, Loops: []string{loop()}}
	case "sample_perfect_tile":
		return g.samplePerfectTile(pick(g.r, n.loops))
	}
	bufs := append(slices.Clone(b.reads), b.writes...)
	if len(bufs) == 0 {
		bufs = []string{"X"}
	}
	return Op{Prim: prim, Block: b.name, Str: pick(g.r, bufs), Scope: pick(g.r, scopes)}
}

func (g *Gen) samplePerfectTile(l *loopInfo) Op {
	return Op{Prim: "sample_perfect_tile", Loops: []string{l.name}, Ints: []int{2 + g.r.IntN(2), pick(g.r, []int{4, 8, 16})}}
}

func (g *Gen) split(l *loopInfo) Op {
	return Op{Prim: "split", Loops: []string{l.name}, Ints: g.factors(l.ext)}
}

// fuse fuses a perfect nest around or below l (two or three loops), or,
// rarely, two loops that are not a perfect nest.
func (g *Gen) fuse(l *loopInfo) Op {
	chain := l.chain()
	if l.parent != nil && l.parent.inner == l && g.r.IntN(3) == 0 {
		chain = append([]*loopInfo{l.parent}, chain...)
	}
	if len(chain) < 2 || g.r.IntN(20) == 0 {
		other := l.parent
		if other == nil || g.r.IntN(2) == 0 {
			return Op{Prim: "fuse", Loops: []string{l.name}}
		}
		return Op{Prim: "fuse", Loops: []string{other.name, l.name}}
	}
	k := 2
	if len(chain) > 2 && g.r.IntN(3) == 0 {
		k = 3
	}
	start := g.r.IntN(len(chain) - k + 1)
	return Op{Prim: "fuse", Loops: names(chain[start : start+k])}
}

// reorder permutes two or three loops of the perfect nest below l's
// outermost perfect ancestor, or, rarely, loops of another nest.
func (g *Gen) reorder(l *loopInfo) Op {
	top := l
	for top.parent != nil && top.parent.inner == top {
		top = top.parent
	}
	chain := top.chain()
	// Loops around a block beyond the perfect nest are also candidates
	// (refused, but adversarially so).
	if g.r.IntN(8) == 0 && len(l.blocks) > 0 {
		chain = pick(g.r, l.blocks).loops
	}
	if len(chain) < 2 {
		return Op{Prim: "reorder", Loops: []string{l.name, l.name}}
	}
	k := 2
	if len(chain) > 2 && g.r.IntN(3) == 0 {
		k = 3
	}
	idx := g.r.Perm(len(chain))[:k]
	slices.Sort(idx)
	sel := make([]string, k)
	for i, j := range idx {
		sel[i] = chain[j].name
	}
	// A permutation other than the identity.
	perm := g.r.Perm(k)
	for slices.IsSorted(perm) {
		perm = g.r.Perm(k)
	}
	out := make([]string, k)
	for i, p := range perm {
		out[i] = sel[p]
	}
	return Op{Prim: "reorder", Loops: out}
}

// tile tiles two or three loops of the perfect nest below l.
func (g *Gen) tile(l *loopInfo) Op {
	chain := l.chain()
	k := min(len(chain), 2+g.r.IntN(2))
	ls := chain[:k]
	tiles := make([]int, k)
	for i, x := range ls {
		fs := g.factors(x.ext)
		tiles[i] = max(fs[len(fs)-1], 1)
	}
	return Op{Prim: "tile", Loops: names(ls), Ints: tiles}
}

// align aligns a run of adjacent loops.
func (g *Gen) align(n *nest) Op {
	if len(n.runs) == 0 {
		l := g.anyLoop(n)
		return Op{Prim: "align", Loops: []string{l.name, pick(g.r, n.loops).name}}
	}
	run := pick(g.r, n.runs)
	k := 2 + g.r.IntN(len(run)-1)
	start := g.r.IntN(len(run) - k + 1)
	return Op{Prim: "align", Loops: names(run[start : start+k])}
}

func (g *Gen) kind(prim string, l *loopInfo) Op {
	op := Op{Prim: prim, Loops: []string{l.name}}
	if prim == "bind" {
		op.Str = pick(g.r, axes)
	}
	return op
}

// kindOn changes the kind of a loop around b: the innermost often for
// vectorize, the outermost for parallel and bind.
func (g *Gen) kindOn(n *nest, b *blockInfo) (Op, bool) {
	if b == nil || len(b.loops) == 0 {
		return Op{}, false
	}
	prim := pick(g.r, kinds)
	l := g.loopOf(n, b)
	switch {
	case prim == "vectorize" && g.r.IntN(2) == 0:
		l = b.loops[len(b.loops)-1]
	case (prim == "parallel" || prim == "bind") && g.r.IntN(2) == 0:
		l = b.loops[0]
	}
	return g.kind(prim, l), true
}

// computeAt moves b under a loop: often one around one of its consumers
// (a fresh one when there is one), or at (when not nil).
func (g *Gen) computeAt(n *nest, b *blockInfo, at *blockInfo) Op {
	var l *loopInfo
	if at == nil {
		if cs := n.consumers(b); len(cs) > 0 && g.r.IntN(5) > 0 {
			at = pick(g.r, cs)
		}
	}
	if at != nil {
		l = g.loopOf(n, at)
	}
	if l == nil {
		l = g.anyLoop(n)
	}
	return Op{Prim: "compute_at", Block: b.name, Loops: []string{l.name}}
}

// reverseComputeAt moves b under a loop: often one around one of its
// producers, or around at (when not nil).
func (g *Gen) reverseComputeAt(n *nest, b *blockInfo, at *blockInfo) Op {
	var l *loopInfo
	if at == nil {
		if ps := n.producers(b); len(ps) > 0 && g.r.IntN(5) > 0 {
			at = pick(g.r, ps)
		}
	}
	if at != nil {
		l = g.loopOf(n, at)
	}
	if l == nil {
		l = g.anyLoop(n)
	}
	return Op{Prim: "reverse_compute_at", Block: b.name, Loops: []string{l.name}}
}

// rfactor factors a reduction at one of its reduce loops (a fresh one
// when there is one), or at any loop around b.
func (g *Gen) rfactor(n *nest, b *blockInfo) Op {
	rl := b.reduceLoops()
	if len(rl) == 0 {
		for _, x := range n.blocks {
			if r := x.reduceLoops(); len(r) > 0 && g.r.IntN(2) == 0 {
				b, rl = x, r
			}
		}
	}
	if len(rl) == 0 || g.r.IntN(10) == 0 {
		return Op{Prim: "rfactor", Loops: []string{g.anyLoop(n).name}}
	}
	for _, l := range g.freshLoops(n) {
		if slices.Contains(rl, l) && g.r.IntN(3) > 0 {
			return Op{Prim: "rfactor", Loops: []string{l.name}}
		}
	}
	return Op{Prim: "rfactor", Loops: []string{pick(g.r, rl).name}}
}

// decompose separates the init of b (or of another reduction) at a loop
// around it.
func (g *Gen) decompose(n *nest, b *blockInfo) Op {
	if b.b.Init == nil {
		for _, x := range n.blocks {
			if x.b.Init != nil && g.r.IntN(2) == 0 {
				b = x
			}
		}
	}
	l := g.loopOf(n, b)
	if l == nil {
		l = g.anyLoop(n)
	}
	return Op{Prim: "decompose_reduction", Block: b.name, Loops: []string{l.name}}
}

// cache returns a cache_read of a buffer b reads, a cache_write of one it
// writes, or a set_scope of an allocated buffer it writes.
func (g *Gen) cache(n *nest, prim string, b *blockInfo) Op {
	var bufs []string
	switch prim {
	case "cache_read":
		bufs = b.reads
	case "cache_write":
		bufs = b.writes
	case "set_scope":
		for _, w := range b.writes {
			if n.allocated[w] {
				bufs = append(bufs, w)
			}
		}
	}
	if len(bufs) == 0 || g.r.IntN(20) == 0 {
		bufs = append(slices.Clone(b.reads), b.writes...)
	}
	buf := "X"
	if len(bufs) > 0 {
		buf = pick(g.r, bufs)
	}
	scope := pick(g.r, scopes)
	if g.r.IntN(2) == 0 {
		scope = "local"
	}
	return Op{Prim: prim, Block: b.name, Str: buf, Scope: scope}
}

// layoutEvery is how rarely (one Next in so many) the generator proposes
// a transform_layout: its floor divisions make every later step's
// questions to the validator harder.
const layoutEvery = 30

// transformLayout returns a transform_layout of a buffer b accesses, an
// allocated one mostly: its dimensions in a random order, some split by
// 2, 3 or 4 (quotient and remainder anywhere), now and then a map that is
// not one-to-one.
func (g *Gen) transformLayout(n *nest, b *blockInfo) Op {
	var bufs []*ast.Buffer
	for _, r := range append(slices.Clone(b.b.Reads), b.b.Writes...) {
		if n.allocated[r.Buffer.Name] || g.lr.IntN(20) == 0 {
			bufs = append(bufs, r.Buffer)
		}
	}
	if len(bufs) == 0 {
		for _, r := range append(slices.Clone(b.b.Reads), b.b.Writes...) {
			bufs = append(bufs, r.Buffer)
		}
	}
	if len(bufs) == 0 {
		return Op{Prim: "transform_layout", Block: b.name, Str: "X", Layout: "i -> i"}
	}
	buf := pick(g.lr, bufs)
	var from, to []string
	for d := range buf.Rank() {
		x := "d" + strconv.Itoa(d)
		from = append(from, x)
		if c := pick(g.lr, []int{0, 0, 2, 3, 4}); c > 0 {
			to = append(to, fmt.Sprintf("floordiv(%s, %d)", x, c), fmt.Sprintf("floormod(%s, %d)", x, c))
		} else {
			to = append(to, x)
		}
	}
	g.lr.Shuffle(len(to), func(i, j int) { to[i], to[j] = to[j], to[i] })
	if len(to) > 0 && g.lr.IntN(15) == 0 {
		to = to[1:] // not one-to-one: refused
	}
	return Op{Prim: "transform_layout", Block: b.name, Str: buf.Name, Layout: strings.Join(from, ", ") + " -> " + strings.Join(to, ", ")}
}

// reshape changes the loops around b: a split, a fuse, a reorder or a
// tile, aimed at them.
func (g *Gen) reshape(n *nest, b *blockInfo) (Op, bool) {
	if b == nil || len(b.loops) == 0 {
		return Op{}, false
	}
	l := g.loopOf(n, b)
	switch g.r.IntN(9) {
	case 0, 1, 2:
		return g.split(l), true
	case 8:
		return g.samplePerfectTile(l), true
	case 3, 4:
		// Fuse the loops around b from l down, as far as they nest
		// perfectly.
		return g.fuse(l), true
	case 5, 6:
		return g.reorder(l), true
	default:
		return g.tile(b.loops[g.r.IntN(len(b.loops))]), true
	}
}

// macro plans a short sequence of ops that interact: loops reshaped and
// then a block moved, inlined, cached or factored at them, then the kinds
// of the new loops changed.
func (g *Gen) macro(n *nest) []planned {
	if len(n.blocks) == 0 {
		return nil
	}
	// Producer/consumer pairs.
	type pair struct{ p, c *blockInfo }
	var pairs []pair
	for _, c := range n.blocks {
		for _, p := range n.producers(c) {
			pairs = append(pairs, pair{p, c})
		}
	}
	var reductions []*blockInfo
	for _, b := range n.blocks {
		if b.b.IsReduction() {
			reductions = append(reductions, b)
		}
	}
	// Names are looked up again at each step: the plan runs on the
	// functions the earlier steps make.
	blk := func(name string) func(n *nest) *blockInfo {
		return func(n *nest) *blockInfo { return n.block[name] }
	}
	reshape := func(name func(n *nest) *blockInfo) planned {
		return func(n *nest) (Op, bool) { return g.reshape(n, name(n)) }
	}
	kindOn := func(name func(n *nest) *blockInfo) planned {
		return func(n *nest) (Op, bool) { return g.kindOn(n, name(n)) }
	}
	maybe := func(p planned) planned {
		return func(n *nest) (Op, bool) {
			if g.r.IntN(2) == 0 {
				return Op{}, false
			}
			return p(n)
		}
	}
	// newBlock is the block the previous step made or moved last.
	newBlock := func(n *nest) *blockInfo {
		if mb := g.movedBlocks(n); len(mb) > 0 {
			return mb[0]
		}
		return nil
	}
	var plan []planned
	kind := g.r.IntN(9)
	if len(pairs) == 0 && kind < 5 {
		kind = 5 + g.r.IntN(4)
	}
	if len(reductions) == 0 && (kind == 5 || kind == 6) {
		kind = 7 + g.r.IntN(2)
	}
	switch kind {
	case 0, 1:
		// Reshape the consumer's loops, compute the producer at one of
		// them, then change the kind of a loop of the moved producer.
		pc := pick(g.r, pairs)
		P, C := blk(pc.p.name), blk(pc.c.name)
		plan = append(plan, reshape(C))
		if g.r.IntN(3) == 0 {
			plan = append(plan, reshape(C))
		}
		plan = append(plan,
			func(n *nest) (Op, bool) {
				p, c := P(n), C(n)
				if p == nil || c == nil {
					return Op{}, false
				}
				return g.computeAt(n, p, c), true
			},
			maybe(kindOn(P)), maybe(reshape(P)), maybe(kindOn(C)))
	case 2:
		// Reshape the producer's loops, compute the consumer after it.
		pc := pick(g.r, pairs)
		P, C := blk(pc.p.name), blk(pc.c.name)
		plan = append(plan, reshape(P),
			func(n *nest) (Op, bool) {
				p, c := P(n), C(n)
				if p == nil || c == nil {
					return Op{}, false
				}
				return g.reverseComputeAt(n, c, p), true
			},
			maybe(kindOn(C)), maybe(reshape(C)), maybe(kindOn(P)))
	case 3:
		// Reshape, then inline the producer or the consumer, then work
		// on the loops of the one left.
		pc := pick(g.r, pairs)
		P, C := blk(pc.p.name), blk(pc.c.name)
		if g.r.IntN(2) == 0 {
			plan = append(plan, reshape(P), reshape(C), func(n *nest) (Op, bool) {
				return Op{Prim: "compute_inline", Block: pc.p.name}, true
			}, reshape(C), maybe(kindOn(C)))
		} else {
			plan = append(plan, reshape(C), reshape(P), func(n *nest) (Op, bool) {
				return Op{Prim: "reverse_compute_inline", Block: pc.c.name}, true
			}, reshape(P), maybe(kindOn(P)))
		}
	case 4:
		// A cache, moved next to its use.
		pc := pick(g.r, pairs)
		P, C := blk(pc.p.name), blk(pc.c.name)
		if g.r.IntN(2) == 0 {
			plan = append(plan, maybe(reshape(C)),
				func(n *nest) (Op, bool) {
					c := C(n)
					if c == nil {
						return Op{}, false
					}
					return g.cache(n, "cache_read", c), true
				},
				func(n *nest) (Op, bool) {
					cb, c := newBlock(n), C(n)
					if cb == nil || c == nil {
						return Op{}, false
					}
					return g.computeAt(n, cb, c), true
				},
				maybe(kindOn(newBlock)))
		} else {
			plan = append(plan, maybe(reshape(P)),
				func(n *nest) (Op, bool) {
					p := P(n)
					if p == nil {
						return Op{}, false
					}
					return g.cache(n, "cache_write", p), true
				},
				func(n *nest) (Op, bool) {
					cb, p := newBlock(n), P(n)
					if cb == nil || p == nil {
						return Op{}, false
					}
					return g.reverseComputeAt(n, cb, p), true
				},
				maybe(kindOn(newBlock)))
		}
	case 5, 6:
		// A reduction: split or reorder its loops, factor it or
		// separate its init, then work on the new blocks' loops.
		R := blk(pick(g.r, reductions).name)
		plan = append(plan,
			func(n *nest) (Op, bool) {
				r := R(n)
				if r == nil {
					return Op{}, false
				}
				if rl := r.reduceLoops(); len(rl) > 0 && g.r.IntN(3) > 0 {
					return g.split(pick(g.r, rl)), true
				}
				return g.reshape(n, r)
			},
			func(n *nest) (Op, bool) {
				r := R(n)
				if r == nil {
					return Op{}, false
				}
				if g.r.IntN(3) > 0 {
					return g.rfactor(n, r), true
				}
				return g.decompose(n, r), true
			},
			maybe(kindOn(newBlock)), maybe(reshape(newBlock)),
			func(n *nest) (Op, bool) {
				r := R(n)
				if r == nil {
					return Op{}, false
				}
				switch g.r.IntN(3) {
				case 0:
					if ps := n.producers(r); len(ps) > 0 {
						return g.computeAt(n, pick(g.r, ps), r), true
					}
				case 1:
					if cs := n.consumers(r); len(cs) > 0 {
						return g.reverseComputeAt(n, pick(g.r, cs), r), true
					}
				}
				return g.kindOn(n, r)
			})
	case 7:
		// Align adjacent nests, then reshape and move in the shared
		// loop.
		plan = append(plan,
			func(n *nest) (Op, bool) { return g.align(n), true },
			func(n *nest) (Op, bool) {
				if fl := g.freshLoops(n); len(fl) > 0 {
					l := newest(g.r, fl)
					if g.r.IntN(2) == 0 {
						return g.split(l), true
					}
					return g.fuse(l), true
				}
				return Op{}, false
			},
			maybe(kindOn(newBlock)))
	default:
		// Move a block, then reshape the loops that now hold two blocks,
		// then change a kind there.
		b := pick(g.r, n.blocks)
		plan = append(plan,
			func(n *nest) (Op, bool) {
				x := n.block[b.name]
				if x == nil {
					return Op{}, false
				}
				switch g.r.IntN(5) {
				case 0, 1:
					return g.computeAt(n, x, nil), true
				case 2, 3:
					return g.reverseComputeAt(n, x, nil), true
				}
				return Op{Prim: "sample_compute_location", Block: x.name}, true
			},
			func(n *nest) (Op, bool) { return g.reshape(n, n.block[b.name]) },
			maybe(kindOn(blk(b.name))),
			maybe(func(n *nest) (Op, bool) {
				x := n.block[b.name]
				if x == nil {
					return Op{}, false
				}
				return g.computeAt(n, x, nil), true
			}))
	}
	return plan
}
