package fusion

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
)

// gen computes a tensor's element at an index: either a load of a
// materialized buffer or an expression inlined into its consumer.
type gen func(idx []ast.Expr) ast.Expr

// lowerer lowers one group of nodes to one function.
type lowerer struct {
	g       *Graph
	grp     *group
	inGroup map[*Node]bool // grp's nodes
	b       *ast.Builder
	sizes   map[string]*ast.Var
	val     map[*Tensor]gen
	bufs    map[*Tensor]*ast.Tensor
	names   map[string]bool // taken in this kernel, besides the graph's tensors
	graph   *graphNames
	depth   map[*Tensor]int // of an inlined value: the nodes in its longest inlined chain

	out       []*Tensor             // the group's outputs
	consumers map[*Tensor][]*Node   // in the graph
	joins     map[*Node]*ast.Tensor // a concat's output, once an input is computed into it
	placed    map[*Tensor]*Node     // the concat whose output a tensor is computed in (see store)
}

// maxInline is the longest chain of nodes inlined into one expression;
// the next node of a longer one gets a buffer. Every pass over an
// expression (printing, simplifying, lowering it) recurses along the
// chain, and some do work at each level that grows with its depth: a
// chain of 40,000 element-wise nodes took minutes as one expression.
const maxInline = 64

// graphNames is what every kernel of a plan needs of the graph's names:
// its tensors' (which a kernel's own names avoid) and its symbols, in
// order.
type graphNames struct {
	tensors map[string]bool
	symbols []string
}

func namesOf(g *Graph) *graphNames {
	n := &graphNames{tensors: map[string]bool{}, symbols: g.Symbols()}
	for _, t := range allTensors(g) {
		n.tensors[t.Name] = true
	}
	return n
}

// lowerGroup builds the function of one group: its inputs (the tensors it
// reads from outside) and outputs (those read outside it or by the
// graph's caller) are the parameters, in that order, after the sizes.
// Producers are inlined into their one consumer when that does not
// repeat their work; the others become blocks of their own, each its
// own loop nest (newPlan aligns them).
func lowerGroup(g *Graph, grp *group, name string, consumers map[*Tensor][]*Node, names *graphNames) (*ast.Func, []*Tensor, []*Tensor, error) {
	l := &lowerer{g: g, grp: grp, inGroup: grp.set(), b: ast.NewBuilder(name), sizes: map[string]*ast.Var{}, val: map[*Tensor]gen{}, bufs: map[*Tensor]*ast.Tensor{}, names: map[string]bool{name: true}, graph: names, depth: map[*Tensor]int{},
		consumers: consumers, joins: map[*Node]*ast.Tensor{}, placed: map[*Tensor]*Node{}}
	in, out := grp.inputs(), grp.outputs(g, consumers)
	l.out = out
	for _, s := range usedSymbols(names.symbols, append(append(slices.Clone(in), out...), grp.tensors()...)) {
		l.sizes[s] = l.b.Size(s)
	}
	// A scalar constant is inlined, except as a gather's indices: an
	// index loaded from a buffer is checked where the kernel runs (a
	// constant one against a symbolic size could be out of range).
	indices := map[*Tensor]bool{}
	for _, n := range grp.nodes {
		if n.Op == "gather" {
			indices[n.Inputs[1]] = true
		}
	}
	var params []*Tensor
	for _, t := range in {
		if v, ok := scalarConst(t); ok && !indices[t] {
			c := ast.ConstOf(t.DType, v)
			l.val[t] = func([]ast.Expr) ast.Expr { return c }
			continue
		}
		p := l.b.Placeholder(t.Name, t.DType, l.shape(t.Shape)...)
		l.val[t] = func(idx []ast.Expr) ast.Expr { return p.At(idx...) }
		params = append(params, t)
	}
	for _, n := range lowerOrder(grp) {
		if err := l.node(n, l.materialize(n, out, consumers)); err != nil {
			return nil, nil, nil, err
		}
	}
	var results []*ast.Tensor
	for _, t := range out {
		results = append(results, l.bufs[t])
	}
	f, err := l.b.Build(results...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("fusion: lowering kernel %s: %w", name, err)
	}
	return ast.SimplifyFunc(f), params, out, nil
}

// lowerOrder is the order of the group's blocks: graph order, except
// that in an anchor's kernel what does not depend on the anchor (its
// epilogue's parameters: a batch norm's scale) comes before it, so that
// the epilogue, right after the anchor, can move into its tiles.
func lowerOrder(grp *group) []*Node {
	if grp.kind != Anchor {
		return grp.nodes
	}
	after := map[*Tensor]bool{}
	var before, rest []*Node
	for _, n := range grp.nodes {
		if ops[n.Op].kind == Anchor || slices.ContainsFunc(n.Inputs, func(t *Tensor) bool { return after[t] }) {
			after[n.Output] = true
			rest = append(rest, n)
		} else {
			before = append(before, n)
		}
	}
	return append(before, rest...)
}

// cheapOps are the element-wise operators whose recomputation costs less
// than a round trip through memory.
var cheapOps = map[string]bool{"add": true, "sub": true, "mul": true, "neg": true, "max": true, "min": true, "relu": true, "abs": true, "identity": true}

// cheap reports whether n is one cheap operation on values already in
// buffers (the group's inputs or materialized tensors): recomputing it
// repeats no other work.
func (l *lowerer) cheap(n *Node) bool {
	return cheapOps[n.Op] && l.readsBuffers(n)
}

// views are the operators whose element is one element of their input at
// an index computed from the output's alone (no select, no clamp, no load
// of an index).
var views = map[string]bool{"reshape": true, "broadcast_to": true, "transpose": true, "slice": true}

// readsBuffers reports whether every input of n is in a buffer (the
// group's inputs, materialized tensors) or a constant: no inlined
// expression of the group.
func (l *lowerer) readsBuffers(n *Node) bool {
	for _, in := range n.Inputs {
		if _, isConst := scalarConst(in); isConst || l.bufs[in] != nil {
			continue
		}
		if in.Producer != nil && l.inGroup[in.Producer] {
			return false
		}
	}
	return true
}

// inlineDepth returns the length of the longest chain of inlined nodes
// that ends at n, were n inlined.
func (l *lowerer) inlineDepth(n *Node) int {
	d := 0
	for _, in := range n.Inputs {
		d = max(d, l.depth[in])
	}
	return d + 1
}

// anyBroadcasts reports whether a reader of t computes more elements than
// t has (a broadcast), so that recomputing t there multiplies its work.
func (l *lowerer) anyBroadcasts(t *Tensor, reads []*Node) bool {
	for _, c := range reads {
		need, err := c.Output.Shape.Elems()
		if err != nil || !provablyLE(need, t.Shape) {
			return true
		}
	}
	return false
}

// materialize decides whether n's output gets a buffer: outputs of the
// group, reductions and anchors do, and so does a value read by several
// nodes of the group (unless it is cheap to compute again: see cheap) or
// by one that would evaluate it more often than it has elements (a
// broadcast).
func (l *lowerer) materialize(n *Node, out []*Tensor, consumers map[*Tensor][]*Node) bool {
	t := n.Output
	if slices.Contains(out, t) || ops[n.Op].kind == Reduce || ops[n.Op].kind == Anchor {
		return true
	}
	if n.Op == "concat" && slices.ContainsFunc(n.Inputs, func(in *Tensor) bool {
		_, ok := in.Shape[concatAxis(n)].IsConst()
		return !ok
	}) {
		// Inlined, a concat selects among its inputs with every input's
		// load evaluated, which a part empty at run time cannot give;
		// with a buffer, each part is a block of its own (concatParts).
		return true
	}
	// Count reads, not readers: add(e, e) would compute e twice.
	var reads []*Node
	for _, c := range consumers[t] {
		if l.inGroup[c] {
			for _, in := range c.Inputs {
				if in == t {
					reads = append(reads, c)
				}
			}
		}
	}
	if l.inlineDepth(n) > maxInline {
		return true
	}
	if slices.ContainsFunc(reads, func(c *Node) bool { return ops[c.Op].kind == Anchor }) {
		return true // inlined, it would be computed again at every reduction step
	}
	if views[n.Op] && l.readsBuffers(n) {
		// A view of values in buffers (a reshape of a parameter): where
		// it is read it is one load at another index, never worth a copy.
		return false
	}
	if len(reads) > 1 && l.cheap(n) && !l.anyBroadcasts(t, reads) {
		// One arithmetic operation on values in buffers (x - mean, read
		// by the variance and by the result of a layernorm): computing
		// it again where it is read costs less than writing and reading
		// a buffer as large as the input.
		return false
	}
	if len(reads) != 1 {
		return true
	}
	c := reads[0]
	if c.Op == "concat" && l.materialize(c, out, consumers) {
		return false // computed in its slice of the concat's output (concatParts)
	}
	space := c.Output.Shape
	if k := ops[c.Op].kind; k == Reduce {
		return false // a reduction reads each input element once
	} else if k == Anchor {
		return true
	}
	need, err := space.Elems()
	return err != nil || !provablyLE(need, t.Shape)
}

func (l *lowerer) shape(s Shape) []ast.Expr {
	out := make([]ast.Expr, len(s))
	for i, d := range s {
		out[i] = d.Expr(l.sizes)
	}
	return out
}

func (l *lowerer) dim(d Dim) ast.Expr { return d.Expr(l.sizes) }

// fresh returns name, or name with a suffix, unused so far.
func (l *lowerer) fresh(name string) string {
	for k := 1; l.names[name] || l.graph.tensors[name]; k++ {
		name = fmt.Sprintf("%s%d", name, k)
	}
	l.names[name] = true
	return name
}

var axisLetters = []string{"i", "j", "k", "l", "m", "n", "p", "q", "r", "s", "t", "u"}

func axisLetter(d int) string {
	if d < len(axisLetters) {
		return axisLetters[d]
	}
	return fmt.Sprintf("i%d", d)
}

// node lowers one node, as a block when mat and inline otherwise.
func (l *lowerer) node(n *Node, mat bool) error {
	t := n.Output
	switch ops[n.Op].kind {
	case Reduce:
		return l.reduce(n)
	case Anchor:
		switch n.Op {
		case "matmul":
			return l.matmul(n)
		case "max_pool2d", "avg_pool2d":
			return l.pool(n)
		}
		return l.conv(n)
	}
	if n.Op == "concat" && (mat || l.joins[n] != nil) {
		l.concatParts(n)
		return nil
	}
	g, err := l.trivial(n)
	if err != nil {
		return err
	}
	if !mat {
		l.val[t] = g
		l.depth[t] = l.inlineDepth(n)
		return nil
	}
	l.store(t, l.b.Compute(t.Name, l.shape(t.Shape), g))
	return nil
}

// store records a block's result tensor and names its loops after it. A
// tensor read in the group only by a concat that gets a buffer is
// computed right into its slice of the concat's output.
func (l *lowerer) store(t *Tensor, x *ast.Tensor) {
	if c, k := l.joinedBy(t); c != nil {
		x.Into(l.join(c), l.concatOffset(c, k)...)
		l.placed[t] = c
	}
	var names []string
	for d := range t.Shape {
		names = append(names, l.fresh(axisLetter(d)+"_"+t.Name))
	}
	x.AxisNames(names...)
	l.bufs[t] = x
	l.val[t] = func(idx []ast.Expr) ast.Expr { return x.At(idx...) }
}

// broadcastIdx maps an index of the output shape out to the input shape
// in by numpy's broadcasting rules.
func broadcastIdx(in, out Shape, idx []ast.Expr) []ast.Expr {
	off := len(out) - len(in)
	r := make([]ast.Expr, len(in))
	for k := range in {
		if isOne(in[k]) && !isOne(out[off+k]) {
			r[k] = ast.I32(0)
		} else {
			r[k] = idx[off+k]
		}
	}
	return r
}

// trivial returns the generator of an element-wise or injective node.
func (l *lowerer) trivial(n *Node) (gen, error) {
	out := n.Output.Shape
	in := func(j int) gen {
		src := n.Inputs[j]
		g := l.val[src]
		return func(idx []ast.Expr) ast.Expr { return g(broadcastIdx(src.Shape, out, idx)) }
	}
	t := n.Output.DType
	switch n.Op {
	case "identity":
		return in(0), nil
	case "neg":
		x := in(0)
		return func(i []ast.Expr) ast.Expr { return ast.Mul(x(i), ast.ConstOf(t, -1)) }, nil
	case "relu":
		x := in(0)
		return func(i []ast.Expr) ast.Expr { return ast.Max(x(i), ast.Zero(t)) }, nil
	case "cast":
		x := in(0)
		return func(i []ast.Expr) ast.Expr { return ast.NewCast(t, x(i)) }, nil
	case "iota":
		ax := 0
		if n.Attrs.Axis != nil {
			ax = *n.Attrs.Axis
		}
		if ax < 0 {
			ax += len(out)
		}
		return func(i []ast.Expr) ast.Expr { return ast.NewCast(t, i[ax]) }, nil
	case "add", "sub", "mul", "div", "max", "min", "pow":
		a, b := in(0), in(1)
		op := map[string]func(x, y ast.Expr) ast.Expr{
			"add": func(x, y ast.Expr) ast.Expr { return ast.Add(x, y) },
			"sub": func(x, y ast.Expr) ast.Expr { return ast.Sub(x, y) },
			"mul": func(x, y ast.Expr) ast.Expr { return ast.Mul(x, y) },
			"div": func(x, y ast.Expr) ast.Expr { return ast.Div(x, y) },
			"max": func(x, y ast.Expr) ast.Expr { return ast.Max(x, y) },
			"min": func(x, y ast.Expr) ast.Expr { return ast.Min(x, y) },
			"pow": func(x, y ast.Expr) ast.Expr { return ast.Pow(x, y) },
		}[n.Op]
		return func(i []ast.Expr) ast.Expr { return op(a(i), b(i)) }, nil
	case "broadcast_to":
		return in(0), nil
	case "transpose":
		x := l.val[n.Inputs[0]]
		perm := n.Attrs.Perm
		if perm == nil {
			for k := len(out) - 1; k >= 0; k-- {
				perm = append(perm, k)
			}
		}
		return func(i []ast.Expr) ast.Expr {
			src := make([]ast.Expr, len(i))
			for k, p := range perm {
				src[p] = i[k]
			}
			return x(src)
		}, nil
	case "reshape":
		return l.reshape(n), nil
	case "pad":
		return l.pad(n), nil
	case "gather":
		return l.gather(n), nil
	case "silu":
		x := in(0)
		return func(i []ast.Expr) ast.Expr { v := x(i); return ast.Mul(v, ast.NewCall(ast.IntrinsicSigmoid, v)) }, nil
	case "softplus":
		// log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), which neither
		// overflows nor loses the small values.
		x := in(0)
		return func(i []ast.Expr) ast.Expr {
			v := x(i)
			e := ast.NewCall(ast.IntrinsicExp, ast.Mul(ast.NewCall(ast.IntrinsicAbs, v), ast.ConstOf(t, -1)))
			return ast.Add(ast.Max(v, ast.Zero(t)), ast.NewCall(ast.IntrinsicLog, ast.Add(ast.One(t), e)))
		}, nil
	case "round":
		x := in(0)
		return func(i []ast.Expr) ast.Expr { return roundHalfEven(t, x(i)) }, nil
	case "equal", "not_equal", "less", "less_equal", "greater", "greater_equal":
		a, b := in(0), in(1)
		cmp := map[string]func(x, y ast.Expr) ast.Expr{
			"equal":         func(x, y ast.Expr) ast.Expr { return ast.EQ(x, y) },
			"not_equal":     func(x, y ast.Expr) ast.Expr { return ast.NE(x, y) },
			"less":          func(x, y ast.Expr) ast.Expr { return ast.LT(x, y) },
			"less_equal":    func(x, y ast.Expr) ast.Expr { return ast.LE(x, y) },
			"greater":       func(x, y ast.Expr) ast.Expr { return ast.GT(x, y) },
			"greater_equal": func(x, y ast.Expr) ast.Expr { return ast.GE(x, y) },
		}[n.Op]
		return func(i []ast.Expr) ast.Expr { return cmp(a(i), b(i)) }, nil
	case "where":
		c, a, b := in(0), in(1), in(2)
		return func(i []ast.Expr) ast.Expr { return ast.NewSelect(c(i), a(i), b(i)) }, nil
	case "slice":
		return l.slice(n)
	case "concat":
		return l.concat(n), nil
	}
	if f, ok := unaryIntrinsic[n.Op]; ok {
		x := in(0)
		return func(i []ast.Expr) ast.Expr { return ast.NewCall(f, x(i)) }, nil
	}
	return nil, fmt.Errorf("fusion: no lowering for operator %s (node %s)", n.Op, n.Output.Name)
}

// roundHalfEven rounds v to the nearest integer value, halves to the even
// one (ONNX's Round, numpy's round): with r = floor(v) and the exact
// fraction d = v - r, the result is r + 1 when d > 1/2 or when d = 1/2
// and r is odd, else r. Values too large to have a fraction have d = 0;
// infinities give d = NaN and stay; a zero result keeps v's sign (-0.3
// rounds to -0) through v * 0.
func roundHalfEven(t ast.DType, v ast.Expr) ast.Expr {
	r := ast.Floor(v)
	d := ast.Sub(v, r)
	half := ast.ConstOf(t, 0.5)
	odd := ast.NE(ast.Sub(r, ast.Mul(ast.ConstOf(t, 2), ast.Floor(ast.Mul(r, half)))), ast.Zero(t))
	up := ast.Or(ast.GT(d, half), ast.And(ast.EQ(d, half), odd))
	rounded := ast.NewSelect(up, ast.Add(r, ast.One(t)), r)
	return ast.NewSelect(ast.EQ(rounded, ast.Zero(t)), ast.Mul(v, ast.Zero(t)), rounded)
}

// reshape maps the output index to the input's through the row-major
// linear index; the dimensions the two shapes share at either end map
// directly.
// reshapeEnds returns how many leading and trailing dimensions a reshape
// from in to out keeps; the dimensions between are linearized and split.
func reshapeEnds(in, out Shape) (pre, suf int) {
	for pre < len(in) && pre < len(out) && in[pre].Equal(out[pre]) {
		pre++
	}
	for suf < len(in)-pre && suf < len(out)-pre && in[len(in)-1-suf].Equal(out[len(out)-1-suf]) {
		suf++
	}
	return pre, suf
}

func (l *lowerer) reshape(n *Node) gen {
	src := n.Inputs[0]
	x := l.val[src]
	in, out := src.Shape, n.Output.Shape
	pre, suf := reshapeEnds(in, out)
	return func(i []ast.Expr) ast.Expr {
		idx := make([]ast.Expr, len(in))
		copy(idx, i[:pre])
		for k := 0; k < suf; k++ {
			idx[len(in)-1-k] = i[len(out)-1-k]
		}
		// The middle: linearize over out[pre:len(out)-suf], split over in's.
		var lin ast.Expr = ast.I32(0)
		for k := pre; k < len(out)-suf; k++ {
			if k == pre {
				lin = i[k]
				continue
			}
			lin = ast.Add(ast.Mul(lin, l.dim(out[k])), i[k])
		}
		for k := len(in) - suf - 1; k >= pre; k-- {
			d := l.dim(in[k])
			if k == pre {
				idx[k] = lin
			} else {
				idx[k] = ast.FloorMod(lin, d)
				lin = ast.FloorDiv(lin, d)
			}
		}
		return x(idx)
	}
}

func (l *lowerer) slice(n *Node) (gen, error) {
	src := n.Inputs[0]
	x := l.val[src]
	a := n.Attrs
	axes := a.Axes
	if axes == nil {
		for k := range a.Starts {
			axes = append(axes, k)
		}
	}
	starts := make([]Dim, len(src.Shape))
	steps := make([]int64, len(src.Shape))
	for k := range steps {
		steps[k] = 1
	}
	for j, ax := range axes {
		if ax < 0 {
			ax += len(src.Shape)
		}
		step := int64(1)
		if a.Steps != nil {
			step = a.Steps[j]
		}
		lo, _, err := sliceRange(src.Shape[ax], a.Starts[j], a.Ends[j], step)
		if err != nil {
			return nil, err
		}
		starts[ax], steps[ax] = lo, step
	}
	return func(i []ast.Expr) ast.Expr {
		idx := make([]ast.Expr, len(i))
		for k := range i {
			idx[k] = i[k]
			if steps[k] != 1 {
				idx[k] = ast.Mul(idx[k], ast.I32(int32(steps[k])))
			}
			if c, _ := starts[k].IsConst(); c != 0 {
				idx[k] = ast.Add(idx[k], ast.I32(int32(c)))
			}
		}
		return x(idx)
	}, nil
}

// concatAxis is the axis a concat joins its inputs along.
func concatAxis(n *Node) int {
	ax := 0
	if n.Attrs.Axis != nil {
		ax = *n.Attrs.Axis
		if ax < 0 {
			ax += len(n.Output.Shape)
		}
	}
	return ax
}

// concatParts lowers a concat that gets a buffer: one block per input,
// each writing its slice of the output (ast's Storage and Into), so that
// every block copies contiguous rows with no test of which input an
// element comes from, and an input computed in the same kernel can be
// computed right there.
func (l *lowerer) concatParts(n *Node) {
	t := n.Output
	z := l.join(n)
	for k, src := range n.Inputs {
		if v, ok := src.Shape[concatAxis(n)].IsConst(); ok && v == 0 || l.placed[src] == n {
			continue
		}
		name := l.fresh(fmt.Sprintf("%s_part%d", t.Name, k))
		g := l.val[src]
		part := l.b.Compute(name, l.shape(src.Shape), func(i []ast.Expr) ast.Expr { return g(i) })
		part.Into(z, l.concatOffset(n, k)...)
		var names []string
		for d := range src.Shape {
			names = append(names, l.fresh(axisLetter(d)+"_"+name))
		}
		part.AxisNames(names...)
	}
	l.bufs[t] = z
	l.val[t] = func(idx []ast.Expr) ast.Expr { return z.At(idx...) }
}

// join returns the buffer of concat c's output, declared on first use.
func (l *lowerer) join(c *Node) *ast.Tensor {
	if z := l.joins[c]; z != nil {
		return z
	}
	t := c.Output
	z := l.b.Storage(t.Name, t.DType, l.shape(t.Shape)...)
	l.joins[c] = z
	return z
}

// joinedBy returns the concat whose slice t is computed in, and which of
// its inputs t is: a node of the group that reads t once, a concat that
// gets a buffer, t itself no output of the group (the group's other
// readers of t read it in the concat's output). Nil if none.
func (l *lowerer) joinedBy(t *Tensor) (*Node, int) {
	if slices.Contains(l.out, t) {
		return nil, 0
	}
	for _, c := range l.consumers[t] {
		if !l.inGroup[c] || c.Op != "concat" {
			continue
		}
		k := slices.Index(c.Inputs, t)
		if !slices.Contains(c.Inputs[k+1:], t) && l.materialize(c, l.out, l.consumers) { // read once
			return c, k
		}
	}
	return nil, 0
}

// concatOffset is where input k of concat c starts in c's output: the
// sum of the inputs' extents along its axis before it, at that axis.
func (l *lowerer) concatOffset(c *Node, k int) []ast.Expr {
	ax := concatAxis(c)
	at := Dim{}
	for _, src := range c.Inputs[:k] {
		at, _ = at.Add(src.Shape[ax])
	}
	offset := make([]ast.Expr, len(c.Output.Shape))
	for d := range offset {
		offset[d] = ast.I32(0)
	}
	offset[ax] = l.dim(at)
	return offset
}

// concat selects among the inputs by the index along the axis; each
// input's index is clamped into its range, since select evaluates both
// sides (so every part has a constant, nonzero extent there: see
// materialize).
func (l *lowerer) concat(n *Node) gen {
	ax := concatAxis(n)
	return func(i []ast.Expr) ast.Expr {
		var e ast.Expr
		off := Dim{}
		type part struct {
			lo, hi ast.Expr
			v      ast.Expr
		}
		var parts []part
		for _, src := range n.Inputs {
			d := src.Shape[ax]
			if v, ok := d.IsConst(); ok && v == 0 {
				continue
			}
			idx := slices.Clone(i)
			local := ast.Sub(i[ax], l.dim(off))
			idx[ax] = ast.Min(ast.Max(local, ast.I32(0)), ast.Sub(l.dim(d), ast.I32(1)))
			end, _ := off.Add(d)
			parts = append(parts, part{lo: l.dim(off), hi: l.dim(end), v: l.val[src](idx)})
			off = end
		}
		if len(parts) == 0 {
			return ast.Zero(n.Output.DType) // the output is empty too
		}
		for k := len(parts) - 1; k >= 0; k-- {
			if e == nil {
				e = parts[k].v
				continue
			}
			e = ast.NewSelect(ast.LT(i[ax], parts[k].hi), parts[k].v, e)
		}
		return e
	}
}

// reduce lowers a reduction to a block over the kept axes and reduce axes
// over the reduced ones.
func (l *lowerer) reduce(n *Node) error {
	src, t := n.Inputs[0], n.Output
	g := l.val[src]
	r := len(src.Shape)
	axes := n.Attrs.Axes
	if axes == nil {
		for k := 0; k < r; k++ {
			axes = append(axes, k)
		}
	}
	isReduced := make([]bool, r)
	for _, a := range axes {
		if a < 0 {
			a += r
		}
		isReduced[a] = true
	}
	var rvars []*ast.Var
	rv := make([]*ast.Var, r)
	for k := 0; k < r; k++ {
		if isReduced[k] {
			rv[k] = l.b.ReduceAxis(l.fresh("r"+axisLetter(k)+"_"+t.Name), l.dim(src.Shape[k]))
			rvars = append(rvars, rv[k])
		}
	}
	fn := func(i []ast.Expr) ast.Expr {
		idx := make([]ast.Expr, r)
		o := 0
		for k := 0; k < r; k++ {
			switch {
			case isReduced[k]:
				idx[k] = rv[k]
				if n.Attrs.KeepDims {
					o++
				}
			default:
				idx[k] = i[o]
				o++
			}
		}
		return g(idx)
	}
	shape := l.shape(t.Shape)
	var x *ast.Tensor
	switch n.Op {
	case "reduce_sum":
		x = l.b.Sum(t.Name, shape, rvars, fn)
	case "reduce_mean":
		x = l.b.Mean(t.Name, shape, rvars, fn)
	case "reduce_max":
		x = l.b.Max(t.Name, shape, rvars, fn)
	default:
		x = l.b.Min(t.Name, shape, rvars, fn)
	}
	l.store(t, x)
	return nil
}

// matmul lowers C[b..., i, j] = sum over k of A[b..., i, k] * B[b..., k, j]
// with the batch dimensions broadcast.
func (l *lowerer) matmul(n *Node) error {
	a, b, t := n.Inputs[0], n.Inputs[1], n.Output
	ga, gb := l.val[a], l.val[b]
	K := a.Shape[len(a.Shape)-1]
	k := l.b.ReduceAxis(l.fresh("rk_"+t.Name), l.dim(K))
	batch := t.Shape[:len(t.Shape)-2]
	p := n.Attrs.Panel
	x := l.b.Sum(t.Name, l.shape(t.Shape), []*ast.Var{k}, func(i []ast.Expr) ast.Expr {
		nb := len(batch)
		ia := append(broadcastIdx(a.Shape[:len(a.Shape)-2], batch, i[:nb]), i[nb], k)
		var ib []ast.Expr
		if p == 0 {
			ib = append(broadcastIdx(b.Shape[:len(b.Shape)-2], batch, i[:nb]), k, i[nb+1])
		} else {
			// Column j of B is column j mod p of panel j / p.
			j, w := i[nb+1], ast.IntConst(i[nb+1].Type(), p)
			ib = append(broadcastIdx(b.Shape[:len(b.Shape)-3], batch, i[:nb]), ast.FloorDiv(j, w), k, ast.FloorMod(j, w))
		}
		return ast.Mul(ga(ia), gb(ib))
	})
	l.store(t, x)
	return nil
}
