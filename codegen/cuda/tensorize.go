package cuda

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/intrin"
)

// Tensorized nests.
//
// A loop nest that schedule.Tensorize marked (intrin.AnnotationKey) is
// calls of its intrinsic's helpers (mma.go) instead of its loops: the 32
// lanes of a warp compute the tile together. So the warp must be the
// threads that run the nest alike: the block is 32 threads along x, the
// nest is under no loop bound to threadIdx.x, and each of the y and z
// axes the block has is bound by a loop around it (a warp a tile). The
// operands are global or shared buffers (a thread's local copy holds no
// other lane's results), addressed at the tiles' offsets with their rows'
// strides (the last dimension's extent); the factors' fragments come from
// shared memory by ldmatrix.
//
// A warp's accumulators stay in its lanes' registers across a serial loop
// around the nest whose iterations update the same tiles (the k steps of
// a gemm): loaded before the loop, stored after it. The nest may sit in
// loops of constant extent inside that loop (a warp tile of several mma
// tiles: a loop over its rows of tiles, one over its columns): the loops
// that move the accumulator tile pick one of the lanes' register tiles
// and are unrolled.

// tensorized prints the nest at l, marked with intrinsic name, as calls of
// the intrinsic's helpers.
func (k *kernelWriter) tensorized(l *ast.For, name string) {
	in, ok := intrin.Lookup(name)
	mi, emitted := mmaIntrinsics[name]
	if !ok || in.Target != "cuda" || !emitted {
		k.fail(k.errorAt(l, "loop %s is marked for intrinsic %q, which codegen/cuda does not emit (it emits %s)", l.Var.Name, name, strings.Join(mmaNames(), ", ")))
		return
	}
	if k.archNumber() < 80 {
		k.fail(k.errorAt(l, "loop %s is marked for intrinsic %q, whose mma.sync m16n8k16 needs sm_80 or later, not %s", l.Var.Name, name, k.m.Arch))
		return
	}
	m, err := in.Match(l)
	if err != nil {
		k.fail(k.errorAt(l, "loop %s: %v", l.Var.Name, err))
		return
	}
	if k.block[0] != 32 {
		k.fail(k.errorAt(l, "the nest at loop %s runs on a warp's 32 lanes together (%s), so the block must be 32 threads along x, not %d", l.Var.Name, name, k.block[0]))
		return
	}
	bound := map[ast.ForKind]bool{}
	for _, t := range k.threads {
		bound[t.Kind] = true
	}
	if bound[ast.GPUThreadX] {
		k.fail(k.errorAt(l, "the nest at loop %s is under a loop bound to threadIdx.x: the warp's lanes compute it together, each must run it alike", l.Var.Name))
		return
	}
	for axis, kind := range map[int]ast.ForKind{1: ast.GPUThreadY, 2: ast.GPUThreadZ} {
		if k.block[axis] > 1 && !bound[kind] {
			k.fail(k.errorAt(l, "the nest at loop %s is under no loop bound to %s, so the block's %d warps along it would all update the same tile", l.Var.Name, kind, k.block[axis]))
			return
		}
	}
	type tile struct{ ptr, ld string }
	tiles := map[string]tile{}
	shared := map[string]bool{}
	for _, op := range []string{"A", "B", "C"} {
		buf := m.Buffers[in.Operands[op]]
		if buf.Scope != ast.Global && buf.Scope != ast.Shared {
			k.fail(k.errorAt(l, "operand %s of the nest at loop %s is %s buffer %s: the lanes share it, so it must be global or shared memory", op, l.Var.Name, buf.Scope, buf.Name))
			return
		}
		bi := k.buffer(buf)
		// The tile's rows are along the buffer's next-to-last dimension.
		tiles[op] = tile{"&" + k.access(buf, m.Offsets[in.Operands[op]]), "(long long)(" + bi.shape[len(bi.shape)-1] + ")"}
		shared[op] = buf.Scope == ast.Shared
	}
	loadA, loadB := mi.loadA(shared["A"]), mi.loadB(shared["B"])
	for _, h := range []string{loadA, loadB, mi.op()} {
		k.use(h)
	}
	acc := mmaAccs[mi.acc]
	k.line("{ /* %s: loop %s */", name, l.Var.Name)
	k.indent++
	// The fragments: loaded here, or before the warp tile's loops.
	frag := map[string]string{"A": "loom_a", "B": "loom_b"}
	for _, op := range []string{"A", "B"} {
		if f := k.fragments[l][op]; f != nil {
			frag[op] = f.at(k)
			continue
		}
		k.line("unsigned %s[%d];", frag[op], map[string]int{"A": 4, "B": 2}[op])
		k.line("%s(%s, %s, %s);", map[string]string{"A": loadA, "B": loadB}[op], tiles[op].ptr, tiles[op].ld, frag[op])
	}
	if reg, ok := k.accumulators[l]; ok {
		// The lanes' accumulators are in registers across the loop around
		// (hoistAccumulators).
		k.line("%s(%s, %s, %s);", mi.op(), frag["A"], frag["B"], reg.at(k))
	} else {
		k.use(mi.loadC())
		k.use(mi.storeC())
		k.line("%s;", acc.decl("loom_c"))
		k.line("%s(%s, %s, loom_c);", mi.loadC(), tiles["C"].ptr, tiles["C"].ld)
		k.line("%s(%s, %s, loom_c);", mi.op(), frag["A"], frag["B"])
		k.line("%s(%s, %s, loom_c);", mi.storeC(), tiles["C"].ptr, tiles["C"].ld)
	}
	k.indent--
	k.line("}")
}

// paddedTiles returns the shared buffers that tensorized nests under s
// read as factors: ldmatrix reads eight of their rows at once.
func paddedTiles(s ast.Stmt) map[*ast.Buffer]bool {
	out := map[*ast.Buffer]bool{}
	ast.Inspect(s, func(n ast.Node) bool {
		var nest *ast.For
		var name string
		switch n := n.(type) {
		case *ast.For:
			name, _ = n.Annotations[intrin.AnnotationKey].(string)
			nest = n
		case *ast.ScheduleBlock:
			if nest = blockNest(n); nest != nil {
				name, _ = n.Annotations[intrin.AnnotationKey].(string)
			}
		}
		in, ok := intrin.Lookup(name)
		if nest == nil || !ok {
			return true
		}
		if m, err := in.Match(nest); err == nil {
			for _, op := range []string{"A", "B"} {
				if buf := m.Buffers[in.Operands[op]]; buf.Scope == ast.Shared {
					out[buf] = true
				}
			}
		}
		return true
	})
	return out
}

// rowExtent is the extent a shared buffer's rows of n elements take in
// memory. The eight rows of 16 bytes that an ldmatrix reads fall in eight
// distinct 16-byte columns of the 128 bytes of shared memory's banks only
// when the rows are an odd number of 16 bytes apart: the rows of a tile
// ldmatrix reads are padded by 16 bytes where they would be an even
// number (a 32-element row of float16, 64 bytes, would put every other
// row on the same banks: a 4-way conflict).
func (k *kernelWriter) rowExtent(buf *ast.Buffer, n int64) int64 {
	per := 16 / int64(buf.DType.Bytes()) // elements in 16 bytes
	if !k.padded[buf] || n%per != 0 || (n/per)%2 == 1 {
		return n
	}
	return n + per
}

// archNumber is the module's compute capability as a number (80 for
// sm_80), 0 when it does not read as one.
func (k *kernelWriter) archNumber() int {
	var n int
	if _, err := fmt.Sscanf(k.m.Arch, "sm_%d", &n); err != nil {
		return 0
	}
	return n
}

// registerTiles are a lane's accumulators of one tensorized nest, kept in
// registers across a loop: an array of register tiles, one per value of
// the loops that move the nest's accumulator tile.
type registerTiles struct {
	buf   *ast.Buffer // the tiles' buffer in memory
	name  string
	loops []*ast.For // the loops that pick the tile, outermost first
	exts  []int64
	mins  []int64
}

// at is the C of the register tile for the current iteration of the
// loops.
func (r *registerTiles) at(k *kernelWriter) string {
	if len(r.loops) == 0 {
		return r.name + "[0]"
	}
	idx := ""
	for i, l := range r.loops {
		v := k.names[l.Var.Name]
		if r.mins[i] != 0 {
			v = fmt.Sprintf("(%s - %d)", v, r.mins[i])
		}
		if i == 0 {
			idx = v
			continue
		}
		idx = fmt.Sprintf("(%s) * %d + %s", idx, r.exts[i], v)
	}
	return r.name + "[" + idx + "]"
}

// eachTile prints body in unrolled loops over r's loops, their variables
// declared for it.
func (k *kernelWriter) eachTile(r *registerTiles, body func()) {
	saved := k.savedNames()
	defer k.restoreNames(saved)
	for i, p := range r.loops {
		v := k.declare(p.Var)
		k.line("#pragma unroll")
		k.line("for (%s %s = %d; %s < %d; ++%s) {", k.ctypeOf(p.Var.DType), v, r.mins[i], v, r.mins[i]+r.exts[i], v)
		k.indent++
	}
	body()
	for range r.loops {
		k.indent--
		k.line("}")
	}
}

// maxRegisterTiles bounds the accumulator registers a lane keeps across a
// loop (tiles × registers a tile): past it, the accumulators go through
// memory at every step instead of spilling.
const maxRegisterTiles = 128

// hoistAccumulators prints serial loop l, which holds one tensorized nest
// whose accumulator tile does not move with l (the k steps of a gemm),
// perhaps inside loops of constant extent, and nothing else that touches
// the accumulators' buffer, with the lanes' accumulators loaded into
// registers before it and stored after it, the nest only loading its
// factors; it reports whether l is such a loop (else it prints nothing).
func (k *kernelWriter) hoistAccumulators(l *ast.For, blockLevel bool) bool {
	if l.Kind != ast.Serial || k.hoisted[l] {
		return false
	}
	nest, block, path := tensorizedNest(l)
	if nest == nil {
		return false
	}
	if _, outer := k.accumulators[nest]; outer {
		return false // a loop around l keeps them in registers already
	}
	name := tensorizedAs(nest, block)
	mi, ok := mmaIntrinsics[name]
	if !ok {
		return false
	}
	in, _ := intrin.Lookup(name)
	m, err := in.Match(nest)
	if err != nil {
		return false // tensorized says why
	}
	// The tiles' offsets over the loops (through the bindings of the
	// block around a blockized nest).
	offsets := map[string][]ast.Expr{}
	for x, offs := range m.Offsets {
		for _, off := range offs {
			if block != nil {
				bindings := map[string]ast.Expr{}
				for _, it := range block.Iters {
					bindings[it.Var.Name] = it.Binding
				}
				off = ast.Simplify(ast.Substitute(off, bindings))
			}
			offsets[x] = append(offsets[x], off)
		}
	}
	c := in.Operands["C"]
	buf := m.Buffers[c]
	if buf.Scope != ast.Global && buf.Scope != ast.Shared {
		return false // tensorized says why
	}
	mentioned := func(v *ast.Var) bool {
		return slices.ContainsFunc(offsets[c], func(off ast.Expr) bool { return ast.Mentions(off, v.Name) })
	}
	if mentioned(l.Var) {
		return false
	}
	acc := mmaAccs[mi.acc]
	k.tmp++
	reg := &registerTiles{buf: buf, name: fmt.Sprintf("loom_acc%d", k.tmp)}
	tiles := int64(1)
	for _, p := range path {
		if !mentioned(p.Var) {
			continue
		}
		min, okMin := ast.ConstIntValue(ast.Simplify(p.Min))
		ext, okExt := ast.ConstIntValue(ast.Simplify(p.Extent))
		if !okMin || !okExt || ext < 1 {
			return false
		}
		reg.loops, reg.mins, reg.exts = append(reg.loops, p), append(reg.mins, min), append(reg.exts, ext)
		tiles *= ext
	}
	if tiles*int64(acc.n) > maxRegisterTiles {
		return false
	}
	var whole ast.Stmt = nest
	if block != nil {
		whole = block
	}
	if touchesOutside(l.Body, buf, whole) {
		return false // the tile in memory must be current for it
	}
	// The offsets of the accumulator tile mention, of the loops inside l,
	// only those that pick a register tile (a variable bound between l and
	// the nest would be unknown before l).
	for _, off := range offsets[c] {
		unknown := false
		ast.Inspect(off, func(n ast.Node) bool {
			if v, ok := n.(*ast.Var); ok && declaredInside(l, v.Name) && !slices.ContainsFunc(reg.loops, func(p *ast.For) bool { return p.Var.Name == v.Name }) {
				unknown = true
			}
			return !unknown
		})
		if unknown {
			return false
		}
	}
	bi := k.buffer(buf)
	ldc := "(long long)(" + bi.shape[len(bi.shape)-1] + ")"
	k.use(mi.loadC())
	k.use(mi.storeC())
	k.line("{")
	k.indent++
	k.line("%s[%d][%d];", acc.reg+" "+reg.name, tiles, acc.n)
	// move prints the load or store of every register tile.
	move := func(helper string) {
		k.eachTile(reg, func() { k.line("%s(&%s, %s, %s);", helper, k.access(buf, offsets[c]), ldc, reg.at(k)) })
	}
	move(mi.loadC())
	k.hoisted[l], k.accumulators[nest] = true, reg
	for _, p := range reg.loops {
		k.unroll[p] = true
	}
	at := k.planFragments(nest, path, reg, mi, in, m, offsets)
	k.loop(l, blockLevel)
	delete(k.hoisted, l)
	delete(k.accumulators, nest)
	delete(k.fragments, nest)
	if at != nil {
		delete(k.preload, at)
	}
	for _, p := range reg.loops {
		delete(k.unroll, p)
	}
	move(mi.storeC())
	k.indent--
	k.line("}")
	return true
}

// maxFragmentRegisters bounds the registers of a factor's fragments
// loaded for a whole warp tile.
const maxFragmentRegisters = 32

// planFragments arranges for nest's factors' fragments to be loaded once
// for the whole warp tile: before the loops of path (the loops from the
// hoisted loop down to the nest) that pick the register tile and are the
// innermost ones, into register arrays indexed by those of them the
// factor's tile moves with (A with the rows of tiles, B with the
// columns), instead of once per mma tile. It returns the loop the loads
// go before, or nil when there is none.
func (k *kernelWriter) planFragments(nest *ast.For, path []*ast.For, reg *registerTiles, mi mmaIntrinsic, in *intrin.Intrinsic, m *intrin.Match, offsets map[string][]ast.Expr) *ast.For {
	h := len(path)
	for h > 0 && slices.Contains(reg.loops, path[h-1]) {
		h--
	}
	if h == len(path) {
		return nil
	}
	inner := path[h:]
	plan := map[string]*registerTiles{}
	loaders := map[string]string{}
	for _, op := range []string{"A", "B"} {
		x := in.Operands[op]
		buf := m.Buffers[x]
		if buf.Scope != ast.Global && buf.Scope != ast.Shared {
			return nil // tensorized says why
		}
		k.tmp++
		ft := &registerTiles{name: fmt.Sprintf("loom_frag%s%d", strings.ToLower(op), k.tmp)}
		n := int64(map[string]int{"A": 4, "B": 2}[op])
		for _, p := range inner {
			if slices.ContainsFunc(offsets[x], func(off ast.Expr) bool { return ast.Mentions(off, p.Var.Name) }) {
				j := slices.Index(reg.loops, p)
				ft.loops, ft.mins, ft.exts = append(ft.loops, p), append(ft.mins, reg.mins[j]), append(ft.exts, reg.exts[j])
				n *= reg.exts[j]
			}
		}
		if n > maxFragmentRegisters {
			continue
		}
		plan[op] = ft
		if op == "A" {
			loaders[op] = mi.loadA(buf.Scope == ast.Shared)
		} else {
			loaders[op] = mi.loadB(buf.Scope == ast.Shared)
		}
	}
	if len(plan) == 0 {
		return nil
	}
	k.fragments[nest] = plan
	at := inner[0]
	k.preload[at] = func() {
		for _, op := range []string{"A", "B"} {
			ft := plan[op]
			if ft == nil {
				continue
			}
			x := in.Operands[op]
			buf := m.Buffers[x]
			bi := k.buffer(buf)
			tiles := int64(1)
			for _, e := range ft.exts {
				tiles *= e
			}
			k.line("unsigned %s[%d][%d];", ft.name, tiles, map[string]int{"A": 4, "B": 2}[op])
			k.eachTile(ft, func() {
				k.line("%s(&%s, (long long)(%s), %s);", loaders[op], k.access(buf, offsets[x]), bi.shape[len(bi.shape)-1], ft.at(k))
			})
		}
	}
	return at
}

// tensorizedNest returns the one tensorized nest inside loop l (with the
// block around it when the nest was blockized and the block tensorized)
// and the loops between them (outermost first), or nil when there is
// none, more than one, or one under something other than loops of l's
// body, serial or unrolled, not bound to threads.
func tensorizedNest(l *ast.For) (*ast.For, *ast.ScheduleBlock, []*ast.For) {
	var nest *ast.For
	var block *ast.ScheduleBlock
	var path []*ast.For
	count := 0
	// marked counts the tensorized nests under s, which l cannot keep.
	marked := func(s ast.Stmt) {
		ast.Inspect(s, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.For:
				if _, ok := n.Annotations[intrin.AnnotationKey].(string); ok {
					count += 2
				}
			case *ast.ScheduleBlock:
				if _, ok := n.Annotations[intrin.AnnotationKey].(string); ok {
					count += 2
				}
			}
			return true
		})
	}
	var walk func(s ast.Stmt, around []*ast.For)
	walk = func(s ast.Stmt, around []*ast.For) {
		for _, st := range flatten(s) {
			switch st := st.(type) {
			case *ast.For:
				if _, ok := st.Annotations[intrin.AnnotationKey].(string); ok {
					count++
					nest, block, path = st, nil, slices.Clone(around)
					continue
				}
				if st.Kind != ast.Serial && st.Kind != ast.Unrolled {
					marked(st)
					continue
				}
				walk(st.Body, append(around, st))
			case *ast.ScheduleBlock:
				if inner := blockNest(st); inner != nil {
					count++
					nest, block, path = inner, st, slices.Clone(around)
					continue
				}
				marked(st)
			default:
				marked(st)
			}
		}
	}
	walk(l.Body, nil)
	if count != 1 {
		return nil, nil, nil
	}
	return nest, block, path
}

// blockNest returns the loop nest of block b when b is a tensorized block
// (schedule.Blockize, then Tensorize of the block): no init, no
// predicate, its body one loop.
func blockNest(b *ast.ScheduleBlock) *ast.For {
	if _, ok := b.Annotations[intrin.AnnotationKey].(string); !ok || b.Init != nil || b.Predicate != nil {
		return nil
	}
	body := flatten(b.Body)
	if len(body) != 1 {
		return nil
	}
	f, _ := body[0].(*ast.For)
	return f
}

// tensorizedAs returns the intrinsic of a tensorized nest: its loop's
// annotation, or its block's.
func tensorizedAs(nest *ast.For, block *ast.ScheduleBlock) string {
	if block != nil {
		name, _ := block.Annotations[intrin.AnnotationKey].(string)
		return name
	}
	name, _ := nest.Annotations[intrin.AnnotationKey].(string)
	return name
}

// declaredInside reports whether name is a loop variable or block
// iteration variable declared inside loop l.
func declaredInside(l *ast.For, name string) bool {
	found := false
	ast.Inspect(l.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.For:
			found = found || n.Var.Name == name
		case *ast.ScheduleBlock:
			for _, it := range n.Iters {
				found = found || it.Var.Name == name
			}
		}
		return !found
	})
	return found
}

func mmaNames() []string {
	var out []string
	for _, n := range intrin.Names() {
		if _, ok := mmaIntrinsics[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// touchesOutside reports whether s loads or stores buf outside statement
// except.
func touchesOutside(s ast.Stmt, buf *ast.Buffer, except ast.Stmt) bool {
	found := false
	ast.Inspect(s, func(n ast.Node) bool {
		if st, ok := n.(ast.Stmt); ok && st == except {
			return false
		}
		switch n := n.(type) {
		case *ast.Load:
			found = found || n.Buffer.Name == buf.Name
		case *ast.Store:
			found = found || n.Buffer.Name == buf.Name
		}
		return !found
	})
	return found
}
