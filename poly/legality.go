package poly

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Deps returns the dependences of p (see Dependences), computed once.
func (p *Program) Deps() []*Dependence {
	if p.deps == nil {
		p.deps = []*Dependence{}
		for i := range p.Blocks {
			for j := range p.Blocks {
				p.deps = append(p.deps, p.pairDependences(i, j)...)
			}
		}
	}
	return p.deps
}

// DepsAmong returns the dependences between blocks (instances of p), in
// the order Deps gives them: those a question about these blocks alone
// needs, without computing the others.
func (p *Program) DepsAmong(blocks []*Instances) []*Dependence {
	var idx []int
	for i, in := range p.Blocks {
		if slices.Contains(blocks, in) {
			idx = append(idx, i)
		}
	}
	var out []*Dependence
	for _, i := range idx {
		for _, j := range idx {
			out = append(out, p.pairDependences(i, j)...)
		}
	}
	return out
}

// DepsOn returns the dependences of the given kinds through buf between
// blocks, in the order DepsAmong gives them: whether a temporary can live
// for one iteration of a loop asks only for the flows through it (RAW)
// and the reads before a write (WAR), not for the dependences through
// every buffer its users touch.
func (p *Program) DepsOn(blocks []*Instances, buf *ast.Buffer, kinds ...DepKind) []*Dependence {
	var out []*Dependence
	for i, s := range p.Blocks {
		if !slices.Contains(blocks, s) {
			continue
		}
		for j, t := range p.Blocks {
			if !slices.Contains(blocks, t) {
				continue
			}
			if d, ok := p.pairDeps[[2]int{i, j}]; ok {
				for _, dep := range d {
					if dep.Buffer == buf && slices.Contains(kinds, dep.Kind) {
						out = append(out, dep)
					}
				}
				continue
			}
			out = append(out, p.dependencesOf(s, t, buf, kinds...)...)
		}
	}
	return out
}

// pairDependences returns the dependences from p.Blocks[i] to p.Blocks[j],
// computed once: a question about one loop (CarriedBy) needs only the
// pairs of blocks inside it.
func (p *Program) pairDependences(i, j int) []*Dependence {
	key := [2]int{i, j}
	if d, ok := p.pairDeps[key]; ok {
		return d
	}
	if p.pairDeps == nil {
		p.pairDeps = map[[2]int][]*Dependence{}
	}
	d := p.dependences(p.Blocks[i], p.Blocks[j])
	p.pairDeps[key] = d
	return d
}

// level returns the depth of loop among the loops around in, or -1.
func level(in *Instances, loop *ast.For) int { return slices.Index(in.Loops, loop) }

// CarriedBy returns the dependences that loop carries: pairs of instances
// in the same iteration of every loop outside it and in different
// iterations of it. The loop's iterations may run in any order (in
// parallel, vectorized, bound to GPU threads) exactly when there are none.
//
// A dependence of a block on itself is not carried, whatever the model
// says, when the block accesses the buffer at one index tuple that holds a
// spatial variable each iteration of loop gives values of its own
// (ast.DisjointAcross): the model over-approximates a binding with a
// symbolic coefficient (a split of a split of a symbolic loop), and would
// otherwise find a dependence there.
func (p *Program) CarriedBy(loop *ast.For) []*Dependence {
	deps := p.deps
	if deps == nil {
		// Only pairs of blocks both inside the loop can have it in
		// common (k < d.Common below).
		var inside []int
		for i, in := range p.Blocks {
			if level(in, loop) >= 0 {
				inside = append(inside, i)
			}
		}
		for _, i := range inside {
			for _, j := range inside {
				deps = append(deps, p.pairDependences(i, j)...)
			}
		}
	}
	var out []*Dependence
	for _, d := range deps {
		if k := level(d.Source, loop); k >= 0 && k < d.Common && d.CarriedAt(k) {
			if d.Source == d.Sink && !d.Source.Block.IsReduction() && ast.DisjointAcross(d.Source.Block, d.Source.Loops, loop, d.Buffer) {
				continue
			}
			out = append(out, d)
		}
	}
	return out
}

// Permutable returns the dependences that forbid reordering the band of
// loops (consecutive loops, outermost first; each the only statement of the
// one above, as tiling makes them): a band may be permuted, and tiled,
// exactly when every pair of instances in the same iteration of the loops
// outside the band has a non-negative distance along every loop of the
// band. A dependence between blocks that part ways inside the band also
// forbids it, unless an outer loop carries all its pairs.
func (p *Program) Permutable(band []*ast.For) []*Dependence {
	if len(band) == 0 {
		return nil
	}
	var out []*Dependence
	for _, d := range p.Deps() {
		k0 := level(d.Source, band[0])
		if k0 < 0 || k0 >= d.Common {
			continue
		}
		inner := IntersectMap(d.Rel, beforeAt(d.Source, d.Sink, k0, k0)) // outer loops equal
		if inner.IsEmpty() {
			continue
		}
		if d.Common < k0+len(band) {
			out = append(out, d)
			continue
		}
		for j := k0; j < k0+len(band); j++ {
			if !IntersectMap(inner, backwardAt(d.Source, d.Sink, j)).IsEmpty() {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// backwardAt returns the pairs whose loop j goes backward: t_j < s_j.
func backwardAt(a, b *Instances, j int) Map {
	in, out := tupleNames("$s", len(a.Domain.Dims)), tupleNames("$t", len(b.Domain.Dims))
	c := conj{ineqs: []lin{varLin(in[j]).plus(varLin(out[j]), IntOf(-1)).plus(constLin(IntOf(1)), IntOf(-1))}}
	bs, _ := assemble(a.Domain.Params, in, out, 0, c)
	return Map{Params: a.Domain.Params, InName: a.Block.Name, In: a.Domain.Dims, OutName: b.Block.Name, Out: b.Domain.Dims, parts: []*basic{bs}}
}

// Region returns the box of buffer buf that the instances of block access
// (its writes if write, else its reads) during one iteration of loop: the
// bounds of each dimension as functions of the function's sizes and of the
// variables of loop and of the loops outside it, which appear as
// parameters. This is the region compute-at must produce.
func (p *Program) Region(block string, buf *ast.Buffer, loop *ast.For, write bool) ([]Range, error) {
	s, err := p.Accessed(block, buf, loop, write)
	if err != nil {
		return nil, err
	}
	return s.Hull(), nil
}

// Accessed returns the set of indices of buffer buf that the instances of
// block access (its writes if write, else its reads) during one iteration
// of loop. Its parameters are the function's sizes and the variables of
// loop and of the loops outside it.
func (p *Program) Accessed(block string, buf *ast.Buffer, loop *ast.For, write bool) (Set, error) {
	in, m, err := p.accessMap(block, buf, write)
	if err != nil {
		return Set{}, err
	}
	k := level(in, loop)
	if k < 0 {
		return Set{}, fmt.Errorf("poly: region: loop %s is not around block %s", loop.Var.Name, block)
	}
	return Apply(in.Domain.dimsToParams(k+1), m.inToParams(k+1)), nil
}

// AccessedAcross is Accessed over every iteration of the loops in relax
// (loop itself or loops around it) at once: their variables are not
// parameters of the result. A shared buffer that the threads of a GPU
// block fill together holds what all the iterations of its thread loops
// need.
func (p *Program) AccessedAcross(block string, buf *ast.Buffer, loop *ast.For, write bool, relax []*ast.For) (Set, error) {
	s, err := p.Accessed(block, buf, loop, write)
	if err != nil || len(relax) == 0 {
		return s, err
	}
	var names []string
	for _, l := range relax {
		names = append(names, l.Var.Name)
	}
	t := s.paramsToDims(names)
	return t.ProjectOut(0, len(t.Dims)-len(s.Dims)), nil
}

// Footprint returns the set of indices of buffer buf that all the instances
// of block access (its writes if write, else its reads), over the
// function's sizes.
func (p *Program) Footprint(block string, buf *ast.Buffer, write bool) (Set, error) {
	in, m, err := p.accessMap(block, buf, write)
	if err != nil {
		return Set{}, err
	}
	return Apply(in.Domain, m), nil
}

// accessMap returns a block's instances and the union of its read (or
// write) relations of buf.
func (p *Program) accessMap(block string, buf *ast.Buffer, write bool) (*Instances, Map, error) {
	in := p.Block(block)
	if in == nil {
		return nil, Map{}, fmt.Errorf("poly: region: no leaf block %s", block)
	}
	accesses := in.Reads
	if write {
		accesses = in.Writes
	}
	var m *Map
	for _, a := range accesses {
		if a.Buffer != buf {
			continue
		}
		if m == nil {
			m = &a.Map
		} else {
			u := UnionMap(*m, a.Map)
			m = &u
		}
	}
	if m == nil {
		return nil, Map{}, fmt.Errorf("poly: region: block %s does not access %s", block, buf.Name)
	}
	return in, *m, nil
}

// SpanFrom returns how many consecutive values of dimension d, starting
// at a(params), hold every point of s: one more than the greatest value of
// x_d - a over s, over all parameter values. ok is false when a is not a
// lower bound of the dimension (some point lies below it), has a
// division, or the span is not bounded by a constant. A lower bound that
// is valid but not attained (as DimBounds may give for a set with floor
// divisions) still serves as the origin of an array that holds the
// dimension, with this many elements.
func (s Set) SpanFrom(d int, a Aff) (span Int, ok bool) {
	if !a.Div.IsOne() {
		return Int{}, false
	}
	found := false
	for _, b := range s.parts {
		// y = x_d - a(params), a new output after the others.
		c := b.insertVars(b.outVar(b.nOut), 1)
		c.nOut++
		y := c.outVar(c.nOut - 1)
		r := newRow(c.nVars())
		r[y+1] = IntOf(1)
		r[c.outVar(d)+1] = IntOf(-1)
		for i, name := range a.Params {
			j := slices.Index(s.Params, name)
			if j < 0 {
				return Int{}, false
			}
			r[j+1] = r[j+1].Add(a.Coefs[i])
		}
		r[0] = a.Const
		c.addEq(r)
		// Over every variable at once: parameters and locals become
		// dimensions of a parameter-free set, whose bounds are exact.
		lo, hi := c.allDims().DimBounds(y)
		if hi.Empty {
			continue
		}
		l, ok1 := lo.Constant()
		h, ok2 := hi.Constant()
		if !ok1 || !ok2 || l.Sign() < 0 {
			return Int{}, false
		}
		if !found || h.Cmp(span) > 0 {
			span, found = h, true
		}
	}
	if !found {
		return Int{}, false
	}
	return span.Add(IntOf(1)), true
}

// Pieces returns the affine functions a bound is made of.
func (b Bound) Pieces() []Aff {
	var out []Aff
	for _, part := range b.Parts {
		out = append(out, part...)
	}
	return out
}

// Width returns the largest number of values dimension d of s takes at
// once, over all values of the parameters named in over: the maximum of
// hi - lo + 1 for the per-parameter bounds lo and hi of the dimension. The
// result is a function of the other parameters. For the indices a block
// reads in one iteration of a loop, with the loop variables in over, it is
// the extent a loop must have to cover the region of every iteration.
func (s Set) Width(d int, over []string) Bound {
	// Two points of s that agree on the parameters in over (which become
	// dimensions, the same for both): the width is one more than the
	// greatest difference of their coordinate d.
	t := s.paramsToDims(over)
	k := len(t.Dims) - len(s.Dims) // moved parameters, now dimensions 0..k-1
	pair := Map{Params: t.Params, InName: t.Name, In: t.Dims, OutName: t.Name, Out: t.Dims}
	in, out := tupleNames("$a", len(t.Dims)), tupleNames("$b", len(t.Dims))
	var c conj
	for i := 0; i < k; i++ {
		c.eqs = append(c.eqs, varLin(out[i]).plus(varLin(in[i]), IntOf(-1)))
	}
	bs, _ := assemble(t.Params, in, out, 0, c)
	pair.parts = []*basic{bs}
	pair = IntersectRange(IntersectDomain(pair, t), t)
	r := differenceBounds(pair, k+d, k+d)
	hi := r.Hi
	if hi.Empty || hi.Unbounded {
		return hi
	}
	for _, part := range hi.Parts {
		for i := range part {
			part[i].Const = part[i].Const.Add(part[i].Div)
		}
	}
	return hi
}

// paramsToDims makes the named parameters dimensions of s, in front of its
// dimensions and in the order given. Names that are not parameters of s are
// ignored.
func (s Set) paramsToDims(names []string) Set {
	var move []int
	var moved []string
	for _, n := range names {
		if i := slices.Index(s.Params, n); i >= 0 {
			move = append(move, i)
			moved = append(moved, n)
		}
	}
	var keep []string
	var keepIdx []int
	for i, n := range s.Params {
		if !slices.Contains(move, i) {
			keep = append(keep, n)
			keepIdx = append(keepIdx, i)
		}
	}
	out := Set{Params: keep, Name: s.Name, Dims: slices.Concat(moved, s.Dims)}
	for _, b := range s.parts {
		perm := slices.Concat(keepIdx, move)
		for v := b.nParam; v < b.nVars(); v++ {
			perm = append(perm, v)
		}
		c := b.permute(perm)
		c.nParam = len(keep)
		c.nOut = b.nOut + len(move)
		out.parts = append(out.parts, c)
	}
	return out
}

// dimsToParams makes the first n dimensions of s parameters (appended to
// the parameters, under their dimension names).
func (s Set) dimsToParams(n int) Set {
	out := Set{Params: slices.Concat(s.Params, s.Dims[:n]), Name: s.Name, Dims: s.Dims[n:]}
	for _, b := range s.parts {
		c := b.clone()
		c.nParam += n
		c.nOut -= n
		out.parts = append(out.parts, c)
	}
	return out
}

// inToParams makes the first n input dimensions of m parameters.
func (m Map) inToParams(n int) Map {
	out := m
	out.Params = slices.Concat(m.Params, m.In[:n])
	out.In = m.In[n:]
	out.parts = nil
	for _, b := range m.parts {
		c := b.clone()
		c.nParam += n
		c.nIn -= n
		out.parts = append(out.parts, c)
	}
	return out
}

// Violation is a dependence of the original function whose order a new
// schedule breaks, with one pair of instances as witness.
type Violation struct {
	Dep *Dependence
	// Source and Sink are iteration vectors (values of the blocks'
	// iteration variables) of a pair that now runs in the wrong order; nil
	// when the pair could not be computed within the solver's budget.
	Source, Sink []Int
	// Untold is set when the dependence is of a block that is not pure on
	// itself and the block runs an iteration vector more than once in
	// iterations of loops the rescheduling changed: which execution is
	// which cannot be told, so neither can their order.
	Untold bool
}

// String describes the broken dependence and the witness pair.
func (v *Violation) String() string {
	return fmt.Sprintf("%s: %s%s would no longer run before %s%s", v.Dep, v.Dep.Source.Block.Name, formatVector(v.Source), v.Dep.Sink.Block.Name, formatVector(v.Sink))
}

func formatVector(x []Int) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = v.String()
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// Violations checks g, the model of a rescheduled version of p's function,
// against the dependences of p, and returns those it breaks. Instances are
// matched by block name and iteration vector (the values of a block's
// iteration variables do not change when loops are split, fused,
// reordered or moved); a dependence is broken when some pair of its
// instances no longer runs source first. The check is exact over the
// integers when both functions' models are exact. A block of p missing
// from g is an error.
func (p *Program) Violations(g *Program) ([]*Violation, error) {
	return p.ViolationsKeeping(g, nil)
}

// ViolationsKeeping is Violations where keep names, for some blocks, loops
// that the rescheduling left as they were (the same variable and bounds
// around the block in both functions, wherever in the nest they now
// stand): instances are then matched by the values of those loops as well
// as by iteration vector. This tells apart the executions of a block that
// runs the same iteration vector several times (a producer recomputed per
// tile, as compute_at makes it, or a skewed in-place nest whose bindings
// repeat an element), which matching by iteration vector alone must treat
// as one. A block that is not pure (it reduces, or reads what it writes)
// and repeats an iteration vector the kept loops do not tell apart is
// reported as a violation without a witness pair: the order of its
// executions cannot be checked.
func (p *Program) ViolationsKeeping(g *Program, keep map[string][]string) ([]*Violation, error) {
	return p.violationsOf(p.Deps(), g, keep)
}

// ViolationsOfBlock is ViolationsKeeping over the dependences of p whose
// source or sink is block in only: when a rescheduling moves that block
// alone, the others keep their order, and their dependences are neither
// computed nor checked.
func (p *Program) ViolationsOfBlock(in *Instances, g *Program, keep map[string][]string) ([]*Violation, error) {
	b := slices.Index(p.Blocks, in)
	if b < 0 {
		return nil, fmt.Errorf("poly: violations: block %s is not one of the model's", in.Block.Name)
	}
	var deps []*Dependence
	for i := range p.Blocks {
		for j := range p.Blocks {
			if i == b || j == b {
				deps = append(deps, p.pairDependences(i, j)...)
			}
		}
	}
	return p.violationsOf(deps, g, keep)
}

func (p *Program) violationsOf(deps []*Dependence, g *Program, keep map[string][]string) ([]*Violation, error) {
	var out []*Violation
	for _, d := range deps {
		s, t := g.Block(d.Source.Block.Name), g.Block(d.Sink.Block.Name)
		if s == nil || t == nil {
			return nil, fmt.Errorf("poly: violations: the new function has no leaf block %s or %s", d.Source.Block.Name, d.Sink.Block.Name)
		}
		fs, gs := keptLoops(d.Source, s, keep)
		ft, gt := keptLoops(d.Sink, t, keep)
		if d.Source == d.Sink && len(fs) < len(d.Source.Loops) && !d.Source.Block.IsPure() {
			// Executions with the same key count as one below: for an
			// impure block they must be one.
			if _, again := d.Source.RepeatKey(fs); again {
				out = append(out, &Violation{Dep: d, Untold: true})
				continue
			}
		}
		// Pairs of new executions whose keys the dependence relates (for a
		// block's dependence on itself, distinct keys: two executions of
		// a pure block's instance compute the same value).
		iters := d.KeyPairsOf(fs, ft)
		if iters.IsEmpty() {
			continue
		}
		rel := ExecutionsOf(s, t, iters, gs, gt)
		common, sFirst := order(s, t)
		for k := 0; k <= common; k++ {
			var wrong Map
			if k < common {
				wrong = beforeAt(t, s, k, common).Reverse() // t's loop k is earlier
			} else if !sFirst {
				wrong = beforeAt(s, t, common, common) // same common iterations, t not after s
			} else {
				continue
			}
			bad := IntersectMap(rel, wrong)
			if bad.IsEmpty() {
				continue
			}
			v := &Violation{Dep: d}
			if _, in, outv, ok := bad.Sample(); ok {
				ns, nt := len(s.Block.Iters), len(t.Block.Iters)
				v.Source, v.Sink = in[len(in)-ns:], outv[len(outv)-nt:]
			}
			out = append(out, v)
			break
		}
	}
	return out, nil
}

// distinct returns the pairs of tuples of m's space that differ in some
// dimension.
func distinct(m Map) Map {
	in, out := tupleNames("$s", len(m.In)), tupleNames("$t", len(m.Out))
	u := Map{Params: m.Params, InName: m.InName, In: m.In, OutName: m.OutName, Out: m.Out}
	for k := range m.In {
		for _, sign := range []int64{1, -1} {
			// sign*(t_k - s_k) - 1 >= 0
			c := conj{ineqs: []lin{varLin(out[k]).plus(varLin(in[k]), IntOf(-1)).scaled(IntOf(sign)).plus(constLin(IntOf(1)), IntOf(-1))}}
			bs, _ := assemble(m.Params, in, out, 0, c)
			u.parts = append(u.parts, bs)
		}
	}
	return u
}

// keptLoops returns the positions, among the loops of the old instances
// old and among those of the new ones, of the loops keep names for the
// block that have the same variable and bounds in both, in old's order.
func keptLoops(old, new *Instances, keep map[string][]string) (inOld, inNew []int) {
	names := keep[old.Block.Name]
	for i, a := range old.Loops {
		if !slices.Contains(names, a.Var.Name) {
			continue
		}
		for j, b := range new.Loops {
			if a.Var.Name == b.Var.Name && ast.Equal(a.Min, b.Min) && ast.Equal(a.Extent, b.Extent) {
				inOld, inNew = append(inOld, i), append(inNew, j)
				break
			}
		}
	}
	return inOld, inNew
}

// unwrap splits the tuple of s into a map with the first nIn dimensions as
// inputs.
func (s Set) unwrap(nIn int, inName, outName string) Map {
	m := Map{Params: s.Params, InName: inName, In: s.Dims[:nIn], OutName: outName, Out: s.Dims[nIn:]}
	for _, b := range s.parts {
		c := b.clone()
		c.nIn, c.nOut = nIn, b.nOut-nIn
		m.parts = append(m.parts, c)
	}
	return m
}
