package validate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// validator holds the models of the two functions and what it learned of
// their blocks.
type validator struct {
	before, after *poly.Program
	// kept are the blocks whose instances are compared: leaf blocks of
	// both functions with the same iteration variables, whose domains are
	// modelled exactly (an access that is not affine over-approximates the
	// dependences, which the order question then keeps all the same).
	kept map[string]bool
	// repeated are the kept blocks that run some instance more than once,
	// in either function.
	repeated map[string]bool
	// keyF and keyG are, for an impure block that runs an instance more
	// than once, the positions of the loops that are the same in both
	// functions (variable, start and extent), among its loops in each:
	// their values tell apart executions that share an iteration vector.
	keyF, keyG map[string][]int
	// unchanged are the kept blocks whose loops, domain and text are the
	// same in both functions: they run the same executions, in the same
	// order among themselves unless the kinds of their loops changed,
	// which kindsChanged records.
	unchanged    map[string]bool
	kindsChanged map[string]bool
	asked        map[string]bool // unchanged blocks whose repeats are known
	// unmatched are impure blocks whose repeated executions the kept
	// loops do not tell apart: their order is left unchecked.
	unmatched map[string]bool
	stats     *Stats
}

func check(pf, pg *poly.Program, stats *Stats) error {
	v := &validator{before: pf, after: pg, kept: map[string]bool{}, repeated: map[string]bool{}, keyF: map[string][]int{}, keyG: map[string][]int{}, unmatched: map[string]bool{}, unchanged: map[string]bool{}, kindsChanged: map[string]bool{}, asked: map[string]bool{}, stats: stats}
	if err := v.instances(); err != nil {
		return err
	}
	if err := v.order(); err != nil {
		return err
	}
	if err := v.movedStores(); err != nil {
		return err
	}
	if err := v.bounds(); err != nil {
		return err
	}
	if err := v.outputs(); err != nil {
		return err
	}
	if err := v.layouts(); err != nil {
		return err
	}
	return v.created()
}

// instances asks the first question: a kept block runs the same iteration
// vectors before and after, and each once unless it is pure.
func (v *validator) instances() error {
	for _, g := range v.after.Blocks {
		f := v.before.Block(g.Block.Name)
		if f == nil || !sameIters(f.Block, g.Block) {
			continue
		}
		if !f.ExactDomain || !g.ExactDomain {
			v.stats.note("instances: inexact model")
			continue
		}
		v.kept[g.Block.Name] = true
		name := g.Block.Name
		if v.unchanged[name] = sameContext(f, g); v.unchanged[name] {
			v.kindsChanged[name] = !sameKinds(f.Loops, g.Loops)
			// The same loops, domain and block: the same executions (how
			// often each runs is asked only if an order question needs it;
			// see lazily).
			continue
		}
		itF, itG := f.Iterations(), g.Iterations()
		switch v.subset(itG, itF) {
		case no:
			return &Error{Question: "instances", Block: name, Reason: "the block runs instances (iteration vectors) it did not run before the step"}
		case unknown:
			v.stats.note("instances: undecided")
		}
		switch v.subset(itF, itG) {
		case no:
			// Instances may go only where nothing reads what they write
			// (compute_at computes just the region its consumers read).
			if why := v.deadOnly(f, itG); why != "" {
				return &Error{Question: "instances", Block: name, Reason: "the block no longer runs some of its instances, " + why}
			}
			v.stats.note("instances: dead instances dropped")
		case unknown:
			v.stats.note("instances: undecided")
		}
		_, beforeRepeats := f.Repeat()
		iters, afterRepeats := g.Repeat()
		if afterRepeats && !beforeRepeats && !pure(g.Block) {
			if iters == nil {
				// The solver gave up before it found a witness.
				v.stats.note("instances: undecided repeat")
				v.unmatched[name] = true
				continue
			}
			return &Error{Question: "instances", Block: name, Reason: fmt.Sprintf("instance %s now runs more than once, and the block is not pure (it reduces, or reads what it writes), so running it again changes the result", poly.IterString(g.Block, iters))}
		}
		v.repeated[name] = beforeRepeats || afterRepeats
		if !beforeRepeats || pure(g.Block) {
			continue
		}
		// An impure block that runs an instance several times (a skewed
		// nest can): its executions are told apart by the loops the step
		// kept, where those suffice.
		selF, selG := sameLoops(f.Loops, g.Loops)
		if _, still := f.RepeatKey(selF); still {
			v.stats.note("order: impure block repeats instances the kept loops do not tell apart")
			v.unmatched[name] = true
			continue
		}
		if iters, again := g.RepeatKey(selG); again {
			if iters == nil {
				v.stats.note("instances: undecided repeat")
				v.unmatched[name] = true
				continue
			}
			return &Error{Question: "instances", Block: name, Reason: fmt.Sprintf("instance %s now runs more often in the same iterations of the loops the step kept, and the block is not pure", poly.IterString(g.Block, iters))}
		}
		v.keyF[name], v.keyG[name] = selF, selG
	}
	return nil
}

// deadOnly explains why instances of f's block missing from itG (the
// iteration vectors the new function runs) are not dead, or returns "":
// the block must write no parameter of the function, and every instance
// some other instance reads from must still run.
func (v *validator) deadOnly(f *poly.Instances, itG poly.Set) string {
	for _, w := range f.Block.Writes {
		if isParam(v.before.Func, w.Buffer) {
			return fmt.Sprintf("and it writes %s, an argument of the function, which keeps what they wrote", w.Buffer.Name)
		}
	}
	for _, d := range v.before.Deps() {
		if d.Kind != poly.RAW || d.Source != f {
			continue
		}
		if v.subset(d.IterationPairs().Domain(), itG) != yes {
			return fmt.Sprintf("whose values block %s reads", d.Sink.Block.Name)
		}
	}
	return ""
}

func isParam(f *ast.Func, b *ast.Buffer) bool {
	for _, p := range f.Params {
		if p == b {
			return true
		}
	}
	return false
}

// order asks the second question: every dependence of the old function
// between kept blocks still runs source before sink.
func (v *validator) order() error {
	if v.sameOrder() {
		return nil
	}
	for _, d := range v.before.Deps() {
		src, snk := d.Source.Block.Name, d.Sink.Block.Name
		if !v.kept[src] || !v.kept[snk] || v.unmatched[src] || v.unmatched[snk] {
			continue
		}
		s, t := v.after.Block(src), v.after.Block(snk)
		concurrent := func(l *ast.For) bool {
			switch {
			case l.Kind == ast.Parallel || l.Kind == ast.Vectorized || l.Kind.IsGPUBlock():
				return true
			case l.Kind.IsGPUThread():
				// A reduce loop bound to threads is a cross-thread
				// reduction: the code generator combines the partial
				// results in a tree.
				return !crossThreadReduction(d, s.Block, l)
			}
			return false
		}
		// The pairs of executions that run in the wrong order, in pieces.
		var wrongs []poly.Map
		if v.unchanged[src] && v.unchanged[snk] && sameParting(v.before, v.after, d.Source, d.Sink, s, t) {
			// Both blocks run the same executions as before, in the same
			// serial order: only a loop around both that now runs its
			// iterations otherwise can break the dependence.
			if !v.kindsChanged[src] && !v.kindsChanged[snk] {
				continue
			}
			common, _ := v.after.Order(s, t)
			if sameKinds(d.Source.Loops[:common], s.Loops[:common]) {
				continue
			}
			wrongs = v.after.Concurrently(s, t, concurrent)
			if len(wrongs) == 0 {
				continue
			}
		}
		v.lazily(s)
		v.lazily(t)
		if d.Kind == poly.WAR && v.repeated[snk] && pure(t.Block) && soleWriter(v.after, t.Block, d.Buffer) {
			// A pure block recomputed writes the value it wrote before:
			// a read before a repeated execution reads that value as
			// well (the read needs an execution before it, checked as a
			// RAW dependence).
			continue
		}
		if d.Kind == poly.RAW && v.repeated[src] && pure(s.Block) {
			iters := d.IterationPairs()
			common, sFirst := v.after.Order(s, t)
			if sFirst {
				need, have := poly.CommonImage(s, t, iters, common)
				answer := v.subset(need, have)
				if answer != yes {
					// Same-iteration reuse is the usual case, not the only
					// one: some execution of the source before the read
					// suffices, asked exactly where poly can (at sample
					// sizes otherwise).
					need, have = v.after.ReadAfterSome(s, t, iters, concurrent)
					answer = v.subset(need, have)
				}
				switch answer {
				case no:
					return &Error{Question: "order", Block: snk, Reason: fmt.Sprintf("some execution of block %s reads %s with no execution of block %s, which writes it, before it", snk, d.Buffer.Name, src)}
				case unknown:
					v.stats.note("order: undecided recomputation")
				}
				continue
			}
		}
		// Executions are told apart by iteration vector, and for an impure
		// block that repeats instances also by its kept loops.
		pairs := poly.ExecutionsOf(s, t, d.KeyPairsOf(v.keyF[src], v.keyF[snk]), v.keyG[src], v.keyG[snk])
		if wrongs == nil && d.Source == d.Sink && d.Source.Reassociable(d.Buffer) && s.Reassociable(d.Buffer) {
			// A reduction's updates of one element may run in another
			// order (a sum reassociated), not at once.
			wrongs = v.after.Concurrently(s, t, concurrent)
			if len(wrongs) == 0 {
				continue
			}
		}
		if wrongs == nil {
			wrongs = v.after.NotAfter(s, t, concurrent)
		}
		for _, wrong := range wrongs {
			bad := poly.IntersectMap(pairs, wrong)
			in, out, found, decided := bad.Witness()
			if !found {
				if !decided {
					// The solver gave up: no witness, no verdict.
					v.stats.note("order: undecided")
				}
				continue
			}
			if d.Cautious {
				// The pair may be one of the superset's: the exact
				// dependence has too many pieces to compose.
				v.stats.note("order: cautious dependence")
				continue
			}
			return &Error{Question: "order", Block: snk, Reason: describe(d, in, out)}
		}
	}
	return nil
}

// bounds asks the third question: every load and store of the new
// function stays inside its buffer. A buffer the old function already
// accesses out of its bounds (at some values of the sizes) is left out.
func (v *validator) bounds() error {
	var oldOut map[string]bool
	for _, g := range v.after.Blocks {
		if v.unchanged[g.Block.Name] {
			continue // the same accesses over the same executions
		}
		for _, a := range v.after.Touches(g) {
			ps, x, out := a.OutOfBounds(g.Domain)
			if !out {
				continue
			}
			if oldOut == nil {
				oldOut = outOfBounds(v.before)
			}
			if oldOut[a.Buffer.Name] {
				v.stats.note("bounds: out of bounds before the step")
				continue
			}
			if x == nil {
				v.stats.note("bounds: undecided")
				continue
			}
			if !g.ExactDomain || !a.Exact {
				// The point may be one of the over-approximation's
				// (a condition or binding that is not affine).
				v.stats.note("bounds: inexact domain")
				continue
			}
			witness := ""
			if x != nil {
				witness = fmt.Sprintf(" (index %s%s)", formatInts(x), paramString(v.after.Params, ps))
			}
			return &Error{Question: "bounds", Block: g.Block.Name, Reason: fmt.Sprintf("an access to %s falls outside its shape %s%s", a.Buffer.Name, shapeString(a.Buffer), witness)}
		}
	}
	return nil
}

// sameOrder reports whether every kept block is unchanged and every pair
// of them parts where it did: then no dependence can change order, and
// none needs computing.
func (v *validator) sameOrder() bool {
	for _, a := range v.before.Blocks {
		if !v.kept[a.Block.Name] || !v.unchanged[a.Block.Name] || v.kindsChanged[a.Block.Name] {
			if v.kept[a.Block.Name] {
				return false
			}
			continue
		}
		for _, b := range v.before.Blocks {
			if !v.kept[b.Block.Name] {
				continue
			}
			if !sameParting(v.before, v.after, a, b, v.after.Block(a.Block.Name), v.after.Block(b.Block.Name)) {
				return false
			}
		}
	}
	return true
}

// lazily learns, for an unchanged block, whether it runs an instance more
// than once, and if it is impure and does, tells its executions apart by
// all its loops (they are the same loops in both functions).
func (v *validator) lazily(in *poly.Instances) {
	name := in.Block.Name
	if !v.unchanged[name] || v.asked[name] {
		return
	}
	v.asked[name] = true
	_, v.repeated[name] = in.Repeat()
	if v.repeated[name] && !pure(in.Block) {
		all := make([]int, len(in.Loops))
		for i := range all {
			all[i] = i
		}
		v.keyF[name], v.keyG[name] = all, all
	}
}

// sameParting reports whether blocks a and b of f part where their
// counterparts ga and gb of g do: as many loops around both, and the same
// one first inside them.
func sameParting(f, g *poly.Program, a, b, ga, gb *poly.Instances) bool {
	cf, ff := f.Order(a, b)
	cg, fg := g.Order(ga, gb)
	return cf == cg && ff == fg
}

// sameKinds reports whether loops a and b (of the same length) run their
// iterations alike: the same kinds, an unrolled loop counting as serial.
func sameKinds(a, b []*ast.For) bool {
	for i := range a {
		if serial(a[i].Kind) != serial(b[i].Kind) {
			return false
		}
	}
	return true
}

// sameContext reports whether a block's instances are the same in both
// functions, structurally: the same loops around it (variables and
// bounds; their kinds may differ), the same domain (which holds every condition around it), and
// the same block, body and buffers included.
func sameContext(f, g *poly.Instances) bool {
	if len(f.Loops) != len(g.Loops) {
		return false
	}
	for i, a := range f.Loops {
		b := g.Loops[i]
		if a.Var.Name != b.Var.Name || !ast.Equal(a.Min, b.Min) || !ast.Equal(a.Extent, b.Extent) {
			return false
		}
	}
	if f.Domain.String() != g.Domain.String() || ast.Print(f.Block) != ast.Print(g.Block) {
		return false
	}
	for _, rs := range [][2][]ast.Region{{f.Block.Reads, g.Block.Reads}, {f.Block.Writes, g.Block.Writes}} {
		for i := range rs[0] {
			a, b := rs[0][i].Buffer, rs[1][i].Buffer
			if a.Name != b.Name || a.Scope != b.Scope || len(a.Shape) != len(b.Shape) {
				return false
			}
			for d := range a.Shape {
				if !ast.Equal(a.Shape[d], b.Shape[d]) {
					return false
				}
			}
		}
	}
	return true
}

// serial reads an unrolled loop as the serial loop it runs as.
func serial(k ast.ForKind) ast.ForKind {
	if k == ast.Unrolled {
		return ast.Serial
	}
	return k
}

// sameLoops returns the positions, among a and among b, of the loops that
// are the same loop in both: the same variable, start and extent.
func sameLoops(a, b []*ast.For) (inA, inB []int) {
	for i, x := range a {
		for j, y := range b {
			if x.Var.Name == y.Var.Name && ast.Equal(x.Min, y.Min) && ast.Equal(x.Extent, y.Extent) {
				inA, inB = append(inA, i), append(inB, j)
			}
		}
	}
	return inA, inB
}

// outOfBounds returns the buffers that some access of p reaches outside.
func outOfBounds(p *poly.Program) map[string]bool {
	out := map[string]bool{}
	for _, in := range p.Blocks {
		for _, a := range p.Touches(in) {
			if _, _, bad := a.OutOfBounds(in.Domain); bad {
				out[a.Buffer.Name] = true
			}
		}
	}
	return out
}

// answer is a decision that may be left open.
type answer int

const (
	yes answer = iota
	no
	unknown
)

// subset decides a ⊆ b for all values of the sizes when poly can; where
// b's existential variables take too many values for that, at a few
// values of the sizes, where they take few.
func (v *validator) subset(a, b poly.Set) answer {
	key := a.String() + " <= " + b.String()
	if x, ok := memo.get(key); ok {
		v.stats.note("subset remembered")
		return x
	}
	x := v.decideSubset(a, b)
	memo.put(key, x)
	return x
}

// memo remembers the answers of subset by the two sets' text (which
// names the sizes too): a schedule asks the same question again after
// every step that leaves the blocks in question alone (binding a loop
// elsewhere, unrolling), and with the floor divisions of fused loops one
// answer can take poly a second.
var memo = subsetMemo{m: map[string]answer{}}

type subsetMemo struct {
	sync.Mutex
	m map[string]answer
}

// memoSize bounds how many answers memo keeps; it forgets them all when
// full.
const memoSize = 4096

func (m *subsetMemo) get(key string) (answer, bool) {
	m.Lock()
	defer m.Unlock()
	x, ok := m.m[key]
	return x, ok
}

func (m *subsetMemo) put(key string, x answer) {
	m.Lock()
	defer m.Unlock()
	if len(m.m) >= memoSize {
		clear(m.m)
	}
	m.m[key] = x
}

// questionWork bounds the solver's work on one subset question (about two
// seconds here), sampleQuestionWork on the same question at one sample of
// the sizes. An undecided question only costs the validator its opinion
// (the primitive's own proof stands); without a bound, a step whose sets
// have many existential values (a fused loop split three ways over
// symbolic sizes) took minutes to check.
const (
	questionWork       = 1 << 23
	sampleQuestionWork = 1 << 21
)

// decideSubset is subset without the memo.
func (v *validator) decideSubset(a, b poly.Set) answer {
	ok, err := poly.SubsetWithin(a, b, questionWork)
	if err == nil {
		if ok {
			return yes
		}
		return no
	}
	if !errors.Is(err, poly.ErrUnsupported) || len(v.after.Params) == 0 {
		return unknown // without sizes, fixing them asks the same again
	}
	v.stats.note("subset at sample sizes")
	result := yes
	for _, vals := range sampleSizes(v.after.Params) {
		ok, err := poly.SubsetWithin(a.FixParams(vals), b.FixParams(vals), sampleQuestionWork)
		switch {
		case err != nil:
			result = unknown
		case !ok:
			return no
		}
	}
	return result
}

// sampleSizes returns a few assignments of small values to the sizes.
func sampleSizes(params []string) []map[string]int64 {
	var out []map[string]int64
	for _, x := range []int64{1, 2, 3, 5, 8} {
		m := map[string]int64{}
		for _, p := range params {
			m[p] = x
		}
		out = append(out, m)
	}
	if len(params) > 1 {
		m := map[string]int64{}
		for i, p := range params {
			m[p] = int64(2 + 3*i)
		}
		out = append(out, m)
	}
	return out
}

// sameIters reports whether two blocks have the same iteration variables:
// names, kinds and domains.
func sameIters(a, b *ast.ScheduleBlock) bool {
	if len(a.Iters) != len(b.Iters) {
		return false
	}
	for i, x := range a.Iters {
		y := b.Iters[i]
		if x.Var.Name != y.Var.Name || x.Kind != y.Kind || !ast.Equal(x.Dom.Min, y.Dom.Min) || !ast.Equal(x.Dom.Extent, y.Dom.Extent) {
			return false
		}
	}
	return true
}

// pure reports whether running an instance of b again writes what it
// wrote the first time (see ast.ScheduleBlock.IsPure).
func pure(b *ast.ScheduleBlock) bool { return b.IsPure() }

// soleWriter reports whether b is the only leaf block of p that writes
// the cells of buf it writes (a block around a nest, as blockize makes,
// declares what the blocks inside it write: it writes nothing of its own).
// Another writer counts unless the model shows its cells apart from b's
// (the padding of a new layout, say).
func soleWriter(p *poly.Program, b *ast.ScheduleBlock, buf *ast.Buffer) bool {
	var mine *poly.Set
	for _, in := range p.Blocks {
		o := in.Block
		if o.Name == b.Name || !slices.ContainsFunc(o.Writes, func(w ast.Region) bool { return w.Buffer == buf }) {
			continue
		}
		if mine == nil {
			cells, exact := writtenCells([]*poly.Instances{p.Block(b.Name)}, buf.Name)
			if cells == nil || !exact {
				return false
			}
			mine = cells
		}
		theirs, exact := writtenCells([]*poly.Instances{in}, buf.Name)
		if theirs == nil || !exact {
			return false
		}
		if !poly.Intersect(*mine, *theirs).IsEmpty() {
			return false
		}
	}
	return true
}

// crossThreadReduction reports whether d is the self-dependence of a
// reduction block through its output (as the old function has it: a
// write cache may have renamed the output since), and the block, as the
// new function has it (b), uses loop l in reduce bindings only.
func crossThreadReduction(d *poly.Dependence, b *ast.ScheduleBlock, l *ast.For) bool {
	if d.Source != d.Sink || !b.IsReduction() {
		return false
	}
	for _, it := range b.Iters {
		if it.Kind != ast.Reduce && ast.Mentions(it.Binding, l.Var.Name) {
			return false
		}
	}
	for _, w := range d.Source.Block.Writes {
		if w.Buffer == d.Buffer {
			return true
		}
	}
	return false
}

// describe says which dependence runs out of order, with a witness pair
// of executions (full tuples: loops, then iteration variables).
func describe(d *poly.Dependence, in, out []poly.Int) string {
	src, snk := d.Source.Block, d.Sink.Block
	what := map[poly.DepKind]string{poly.RAW: "reads what", poly.WAR: "overwrites what", poly.WAW: "overwrites what"}[d.Kind]
	tail := map[poly.DepKind]string{poly.RAW: "writes", poly.WAR: "reads", poly.WAW: "writes"}[d.Kind]
	ws := poly.IterString(src, in[len(in)-len(src.Iters):])
	wt := poly.IterString(snk, out[len(out)-len(snk.Iters):])
	return fmt.Sprintf("block %s%s %s block %s%s %s in buffer %s, but no longer runs after it (%s)", snk.Name, wt, what, src.Name, ws, tail, d.Buffer.Name, d.Kind)
}

func formatInts(x []poly.Int) string {
	parts := make([]string, len(x))
	for i, v := range x {
		parts[i] = v.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func paramString(names []string, vals []poly.Int) string {
	if len(vals) == 0 {
		return ""
	}
	parts := make([]string, 0, len(vals))
	for i, v := range vals {
		if i < len(names) {
			parts = append(parts, names[i]+"="+v.String())
		}
	}
	return " at " + strings.Join(parts, ", ")
}

func shapeString(b *ast.Buffer) string {
	parts := make([]string, len(b.Shape))
	for i, s := range b.Shape {
		parts[i] = ast.Print(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
