package fusion

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
)

// Infer computes every node's output dtype and shape from its inputs, in
// node order, and checks them: dtypes agree, attributes fit, shapes
// match. The constraints shapes imply between symbols (an element-wise add
// of [S0, 768] and [S1, 768] means S0 == S1) are solved as they are met,
// and the solution is applied to every shape of the graph, so after Infer
// each remaining symbol is free. A contradiction is an error naming the
// node and both shapes.
//
// Every element of a constant must be a value of its type (see
// valueError: 1e300 is no float32), and so must an attribute that becomes
// one (a pad's value, a norm's epsilon). A graph of more than MaxNodes
// nodes is an error: compiling costs about its size, and past that limit
// seconds become minutes.
func Infer(g *Graph) error {
	if err := checkConstants(g); err != nil {
		return err
	}
	return infer(g)
}

// infer is Infer without the check of the constants' data, for a graph
// whose constants were checked (or computed: folded).
func infer(g *Graph) error {
	if len(g.Nodes) > MaxNodes {
		return &GraphError{Where: "nodes", Msg: fmt.Sprintf("the graph has %d nodes, more than the %d loom compiles", len(g.Nodes), MaxNodes)}
	}
	u := newUnifier(g)
	for i, n := range g.Nodes {
		if err := u.node(i, n); err != nil {
			return err
		}
	}
	if err := u.apply(g); err != nil {
		return err
	}
	for _, t := range allTensors(g) {
		for k, d := range t.Shape {
			if v, ok := d.IsConst(); ok && v < 0 {
				return &GraphError{Where: t.Name, Msg: fmt.Sprintf("dimension %d of %s would be %d: the shape constraints have no solution with non-negative sizes", k, t.Name, v)}
			}
		}
	}
	return nil
}

// MaxNodes is the most nodes a graph may have (after decomposition).
const MaxNodes = 1 << 17

// unifier solves equalities between dims by substitution: a symbol that
// occurs linearly with coefficient ±1 in the difference is bound to the
// rest. Symbols declared later are bound first, so the graph keeps the
// names of its first inputs.
type unifier struct {
	subst map[string]Dim
	order map[string]int
}

func newUnifier(g *Graph) *unifier {
	u := &unifier{subst: map[string]Dim{}, order: map[string]int{}}
	for _, t := range g.Inputs {
		for _, d := range t.Shape {
			for _, s := range d.Symbols() {
				if _, ok := u.order[s]; !ok {
					u.order[s] = len(u.order)
				}
			}
		}
	}
	return u
}

// canon applies the substitution to d.
func (u *unifier) canon(d Dim) (Dim, error) {
	for _, s := range d.Symbols() {
		if v, ok := u.subst[s]; ok {
			var err error
			if d, err = d.Subst(s, v); err != nil {
				return Dim{}, err
			}
		}
	}
	return d, nil
}

func (u *unifier) canonShape(s Shape) (Shape, error) {
	out := make(Shape, len(s))
	for i, d := range s {
		var err error
		if out[i], err = u.canon(d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unify makes a == b, or says why it cannot be.
func (u *unifier) unify(a, b Dim) error {
	a, err := u.canon(a)
	if err != nil {
		return err
	}
	if b, err = u.canon(b); err != nil {
		return err
	}
	d, err := a.Sub(b)
	if err != nil {
		return err
	}
	if _, ok := d.IsConst(); ok {
		if len(d.terms) == 0 {
			return nil
		}
		return fmt.Errorf("%s != %s", a, b)
	}
	// The latest-declared symbol that occurs alone and linearly.
	best, bestOrder := -1, -1
	for i, t := range d.terms {
		if len(t.syms) != 1 || (t.coef != 1 && t.coef != -1) {
			continue
		}
		s := t.syms[0]
		other := 0
		for _, t2 := range d.terms {
			other += count(t2.syms, s)
		}
		if other != 1 {
			continue
		}
		o, ok := u.order[s]
		if !ok {
			o = len(u.order) + 1 // a symbol only attributes name: bind it first
		}
		if o > bestOrder {
			best, bestOrder = i, o
		}
	}
	if best < 0 {
		return fmt.Errorf("cannot prove %s == %s", a, b)
	}
	t := d.terms[best]
	// d = coef*s + rest = 0, so s = -rest/coef.
	rest := Dim{terms: slices.Delete(slices.Clone(d.terms), best, best+1)}
	v, err := rest.Scale(-t.coef)
	if err != nil {
		return err
	}
	s := t.syms[0]
	for k, w := range u.subst {
		if u.subst[k], err = w.Subst(s, v); err != nil {
			return err
		}
	}
	u.subst[s] = v
	return nil
}

func count(xs []string, s string) int {
	n := 0
	for _, x := range xs {
		if x == s {
			n++
		}
	}
	return n
}

// apply substitutes the solution into every shape of g.
func (u *unifier) apply(g *Graph) error {
	seen := map[*Tensor]bool{}
	fix := func(t *Tensor) error {
		if seen[t] {
			return nil
		}
		seen[t] = true
		s, err := u.canonShape(t.Shape)
		if err != nil {
			return &GraphError{Where: t.Name, Msg: err.Error()}
		}
		t.Shape = s
		return nil
	}
	for _, t := range g.Inputs {
		if err := fix(t); err != nil {
			return err
		}
	}
	for _, n := range g.Nodes {
		if err := fix(n.Output); err != nil {
			return err
		}
		for j, d := range n.Attrs.Shape {
			if d.Sym == "" {
				continue
			}
			c, err := u.canon(d.Dim)
			if err != nil {
				return err
			}
			n.Attrs.Shape[j] = JSONDim{Dim: c, Sym: c.String()}
		}
	}
	return nil
}

// node infers n's output.
func (u *unifier) node(i int, n *Node) error {
	info, ok := ops[n.Op]
	if !ok {
		return nodeErr(i, n, "op", "unknown operator %q", n.Op)
	}
	if len(n.Inputs) < info.min || len(n.Inputs) > info.max {
		want := fmt.Sprint(info.min)
		if info.max != info.min {
			want = fmt.Sprintf("%d to %d", info.min, info.max)
		}
		return nodeErr(i, n, "inputs", "%s takes %s inputs, got %d", n.Op, want, len(n.Inputs))
	}
	ins := make([]Shape, len(n.Inputs))
	for j, in := range n.Inputs {
		s, err := u.canonShape(in.Shape)
		if err != nil {
			return nodeErr(i, n, fmt.Sprintf("inputs[%d]", j), "%v", err)
		}
		ins[j] = s
		if info.float && !in.DType.IsFloat() {
			return nodeErr(i, n, fmt.Sprintf("inputs[%d]", j), "%s needs floating-point inputs, %s is %s", n.Op, in.Name, in.DType)
		}
		if in.DType == ast.Bool && n.Op != "cast" && n.Op != "identity" && info.kind != Injective && !(n.Op == "where" && j == 0) {
			return nodeErr(i, n, fmt.Sprintf("inputs[%d]", j), "%s does not take bool input %s", n.Op, in.Name)
		}
		if err := mixedDTypes(i, n, j); err != nil {
			return err
		}
	}
	c := &inferCtx{u: u, i: i, n: n, ins: ins}
	shape, dt, err := c.infer()
	if err != nil {
		return err
	}
	for j, d := range shape {
		if v, ok := d.IsConst(); ok && v < 0 {
			return nodeErr(i, n, "", "output dimension %d is negative (%d)", j, v)
		}
	}
	n.Output.Shape, n.Output.DType = shape, dt
	return nil
}

// mixedDTypes checks input j's dtype against the others of n: the same
// for most operators; gather's indices are integers, where's condition is
// a bool and its branches agree, and the norms take their own weights.
func mixedDTypes(i int, n *Node, j int) error {
	in := n.Inputs[j]
	switch n.Op {
	case "layernorm", "rms_norm":
		return nil
	case "gather":
		if j == 1 && !in.DType.IsInt() {
			return nodeErr(i, n, "inputs[1]", "gather needs integer indices, %s is %s", in.Name, in.DType)
		}
		return nil
	case "where":
		if j == 2 && in.DType != n.Inputs[1].DType {
			return nodeErr(i, n, "inputs", "where mixes dtypes: %s is %s but %s is %s", n.Inputs[1].Name, n.Inputs[1].DType, in.Name, in.DType)
		}
		return nil
	}
	if j > 0 && in.DType != n.Inputs[0].DType {
		return nodeErr(i, n, "inputs", "%s mixes dtypes: %s is %s but %s is %s", n.Op, n.Inputs[0].Name, n.Inputs[0].DType, in.Name, in.DType)
	}
	return nil
}

type inferCtx struct {
	u   *unifier
	i   int
	n   *Node
	ins []Shape
}

func (c *inferCtx) errf(field, format string, args ...any) error {
	return nodeErr(c.i, c.n, field, format, args...)
}

// unifyDims equates two dims, reporting both shapes on a mismatch.
func (c *inferCtx) unifyDims(a, b Dim, sa, sb Shape, field string) error {
	if err := c.u.unify(a, b); err != nil {
		return c.errf(field, "shape mismatch: %s and %s (%v)", c.label(sa), c.label(sb), err)
	}
	return nil
}

// label names a shape by the input that has it, with the shape as
// declared and, when earlier constraints changed it, as solved.
func (c *inferCtx) label(s Shape) string {
	for j, in := range c.ins {
		if in.Equal(s) {
			t := c.n.Inputs[j]
			if t.Shape.Equal(s) {
				return fmt.Sprintf("%s %s", t.Name, s)
			}
			return fmt.Sprintf("%s %s (%s by earlier constraints)", t.Name, t.Shape, s)
		}
	}
	return s.String()
}

// broadcast returns the numpy broadcast of shapes a and b.
func (c *inferCtx) broadcast(a, b Shape) (Shape, error) {
	r := max(len(a), len(b))
	out := make(Shape, r)
	for k := 0; k < r; k++ {
		ia, ib := k-(r-len(a)), k-(r-len(b))
		switch {
		case ia < 0:
			out[k] = b[ib]
		case ib < 0:
			out[k] = a[ia]
		case isOne(a[ia]):
			out[k] = b[ib]
		case isOne(b[ib]):
			out[k] = a[ia]
		default:
			if err := c.unifyDims(a[ia], b[ib], a, b, "inputs"); err != nil {
				return nil, err
			}
			out[k] = a[ia]
		}
	}
	return c.u.canonShape(out)
}

func isOne(d Dim) bool {
	v, ok := d.IsConst()
	return ok && v == 1
}

// axes normalizes axis numbers of a rank-r tensor (negative count from the
// end); nil means all axes.
func (c *inferCtx) axes(xs []int, r int, field string) ([]int, error) {
	if xs == nil {
		out := make([]int, r)
		for k := range out {
			out[k] = k
		}
		return out, nil
	}
	var out []int
	for _, a := range xs {
		if a < -r || a >= r {
			return nil, c.errf(field, "axis %d is out of range for rank %d", a, r)
		}
		if a < 0 {
			a += r
		}
		if slices.Contains(out, a) {
			return nil, c.errf(field, "axis %d is repeated", a)
		}
		out = append(out, a)
	}
	slices.Sort(out)
	return out, nil
}

func (c *inferCtx) axis(a *int, def, r int) (int, error) {
	if a == nil {
		if def < 0 {
			def += r
		}
		return def, nil
	}
	ax, err := c.axes([]int{*a}, r, "attrs.axis")
	if err != nil {
		return 0, err
	}
	return ax[0], nil
}

func (c *inferCtx) infer() (Shape, ast.DType, error) {
	n, ins, a := c.n, c.ins, c.n.Attrs
	dt := ast.Invalid
	if len(n.Inputs) > 0 {
		dt = n.Inputs[0].DType
	}
	// Attributes that become constants of the input's type.
	for _, at := range []struct {
		name string
		v    *float64
	}{{"value", a.Value}, {"epsilon", a.Epsilon}} {
		if at.v != nil {
			if msg := valueError(dt, *at.v); msg != "" {
				return nil, 0, c.errf("attrs."+at.name, "%s", msg)
			}
		}
	}
	switch n.Op {
	case "cast":
		t, ok := ast.ParseDType(a.DType)
		if !ok {
			return nil, 0, c.errf("attrs.dtype", "unknown dtype %q", a.DType)
		}
		return ins[0], t, nil
	case "iota":
		t := ast.Int64
		if a.DType != "" {
			var ok bool
			if t, ok = ast.ParseDType(a.DType); !ok || t == ast.Bool {
				return nil, 0, c.errf("attrs.dtype", "iota's dtype %q is not a number type", a.DType)
			}
		}
		if _, err := c.axis(a.Axis, 0, len(ins[0])); err != nil {
			return nil, 0, err
		}
		if len(ins[0]) == 0 {
			return nil, 0, c.errf("inputs[0]", "iota needs a tensor of rank 1 or more")
		}
		return ins[0], t, nil
	case "add", "sub", "mul", "div", "max", "min", "pow":
		s, err := c.broadcast(ins[0], ins[1])
		return s, dt, err
	case "silu", "softplus":
		return ins[0], dt, nil
	case "broadcast_to":
		target, err := c.attrShape()
		if err != nil {
			return nil, 0, err
		}
		if len(target) < len(ins[0]) {
			return nil, 0, c.errf("attrs.shape", "cannot broadcast %s to the lower rank %s", ins[0], target)
		}
		off := len(target) - len(ins[0])
		for k, d := range ins[0] {
			if !isOne(d) {
				if err := c.unifyDims(d, target[off+k], ins[0], target, "attrs.shape"); err != nil {
					return nil, 0, err
				}
			}
		}
		s, err := c.u.canonShape(target)
		return s, dt, err
	case "reshape":
		s, err := c.reshape()
		return s, dt, err
	case "transpose":
		r := len(ins[0])
		perm := a.Perm
		if perm == nil {
			for k := r - 1; k >= 0; k-- {
				perm = append(perm, k)
			}
		}
		if len(perm) != r {
			return nil, 0, c.errf("attrs.perm", "perm has %d entries for rank %d", len(perm), r)
		}
		out := make(Shape, r)
		seen := make([]bool, r)
		for k, p := range perm {
			if p < 0 || p >= r || seen[p] {
				return nil, 0, c.errf("attrs.perm", "%v is not a permutation of 0..%d", perm, r-1)
			}
			seen[p] = true
			out[k] = ins[0][p]
		}
		return out, dt, nil
	case "slice":
		s, err := c.slice()
		return s, dt, err
	case "concat":
		s, err := c.concat()
		return s, dt, err
	case "reduce_sum", "reduce_mean", "reduce_max", "reduce_min":
		if len(ins[0]) == 0 {
			return nil, 0, c.errf("inputs[0]", "%s of a scalar has no axis to reduce", n.Op)
		}
		if a.Axes != nil && len(a.Axes) == 0 {
			return nil, 0, c.errf("attrs.axes", "axes is empty; leave it out to reduce every axis")
		}
		axes, err := c.axes(a.Axes, len(ins[0]), "attrs.axes")
		if err != nil {
			return nil, 0, err
		}
		var out Shape
		for k, d := range ins[0] {
			switch {
			case !slices.Contains(axes, k):
				out = append(out, d)
			case a.KeepDims:
				out = append(out, Const(1))
			}
		}
		return out, dt, nil
	case "matmul":
		s, err := c.matmul()
		return s, dt, err
	case "conv1d", "conv2d", "conv3d":
		s, err := c.conv()
		return s, dt, err
	case "max_pool2d", "avg_pool2d":
		s, err := c.pool()
		return s, dt, err
	case "pad":
		s, err := c.pad()
		return s, dt, err
	case "gather":
		s, err := c.gather()
		return s, dt, err
	case "equal", "not_equal", "less", "less_equal", "greater", "greater_equal":
		s, err := c.broadcast(ins[0], ins[1])
		return s, ast.Bool, err
	case "where":
		if n.Inputs[0].DType != ast.Bool {
			return nil, 0, c.errf("inputs[0]", "where needs a bool condition, %s is %s", n.Inputs[0].Name, n.Inputs[0].DType)
		}
		s, err := c.broadcast(ins[0], ins[1])
		if err == nil {
			s, err = c.broadcast(s, ins[2])
		}
		return s, n.Inputs[1].DType, err
	case "batch_norm":
		s, err := c.batchNorm()
		return s, dt, err
	case "softmax":
		if len(ins[0]) == 0 {
			return nil, 0, c.errf("inputs[0]", "softmax needs a tensor of rank 1 or more")
		}
		if _, err := c.axis(a.Axis, -1, len(ins[0])); err != nil {
			return nil, 0, err
		}
		return ins[0], dt, nil
	case "layernorm", "rms_norm":
		r := len(ins[0])
		if r == 0 {
			return nil, 0, c.errf("inputs[0]", "%s needs a tensor of rank 1 or more", n.Op)
		}
		ax, err := c.axis(a.Axis, -1, r)
		if err != nil {
			return nil, 0, err
		}
		if n.Op == "rms_norm" {
			ax = r - 1
		}
		for j := 1; j < len(ins); j++ {
			if n.Inputs[j].DType != dt {
				return nil, 0, c.errf(fmt.Sprintf("inputs[%d]", j), "%s is %s but %s is %s", n.Inputs[j].Name, n.Inputs[j].DType, n.Inputs[0].Name, dt)
			}
			// Weights cover the normalized axes.
			norm := ins[0][ax:]
			if len(ins[j]) != len(norm) {
				return nil, 0, c.errf(fmt.Sprintf("inputs[%d]", j), "the weight's shape %s does not match the normalized axes %s of %s", ins[j], norm, ins[0])
			}
			for k := range norm {
				if err := c.unifyDims(ins[j][k], norm[k], ins[j], norm, fmt.Sprintf("inputs[%d]", j)); err != nil {
					return nil, 0, err
				}
			}
		}
		s, err := c.u.canonShape(ins[0])
		return s, dt, err
	case "gelu":
		if a.Approximate != "" && a.Approximate != "none" && a.Approximate != "tanh" {
			return nil, 0, c.errf("attrs.approximate", "gelu's approximate is \"none\" or \"tanh\", got %q", a.Approximate)
		}
	}
	// Element-wise unary.
	return ins[0], dt, nil
}

func (c *inferCtx) attrShape() (Shape, error) {
	var out Shape
	for k, d := range c.n.Attrs.Shape {
		if d.Infer {
			return nil, c.errf(fmt.Sprintf("attrs.shape[%d]", k), "-1 is only allowed in a reshape")
		}
		v, err := c.u.canon(d.Dim)
		if err != nil {
			return nil, c.errf("attrs.shape", "%v", err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (c *inferCtx) reshape() (Shape, error) {
	in := c.ins[0]
	var out Shape
	inferAt := -1
	known := Const(1)
	for k, d := range c.n.Attrs.Shape {
		if d.Infer {
			if inferAt >= 0 {
				return nil, c.errf(fmt.Sprintf("attrs.shape[%d]", k), "more than one -1")
			}
			inferAt = k
			out = append(out, Dim{})
			continue
		}
		v, err := c.u.canon(d.Dim)
		if err != nil {
			return nil, c.errf("attrs.shape", "%v", err)
		}
		out = append(out, v)
		if known, err = known.Mul(v); err != nil {
			return nil, c.errf("attrs.shape", "%v", err)
		}
	}
	total, err := in.Elems()
	if err != nil {
		return nil, c.errf("inputs[0]", "%v", err)
	}
	if inferAt >= 0 {
		q, ok := total.DivExact(known)
		if !ok {
			return nil, c.errf("attrs.shape", "cannot infer the -1 of %v: %s elements are not a multiple of %s", c.n.Attrs.Shape, total, known)
		}
		out[inferAt] = q
		return out, nil
	}
	if err := c.u.unify(total, known); err != nil {
		return nil, c.errf("attrs.shape", "reshape of %s to %s changes the number of elements (%v)", in, out, err)
	}
	return c.u.canonShape(out)
}

func (c *inferCtx) slice() (Shape, error) {
	in, a := c.ins[0], c.n.Attrs
	axes := a.Axes
	if axes == nil {
		for k := range a.Starts {
			axes = append(axes, k)
		}
	}
	if len(a.Starts) != len(axes) || len(a.Ends) != len(axes) || (a.Steps != nil && len(a.Steps) != len(axes)) {
		return nil, c.errf("attrs", "slice needs starts, ends (and steps) with one entry per axis (%d axes)", len(axes))
	}
	// Validated (range, repeats) here; the loop below takes them in order.
	if _, err := c.axes(axes, len(in), "attrs.axes"); err != nil {
		return nil, err
	}
	out := slices.Clone(in)
	for j, ax := range axes {
		if ax < 0 {
			ax += len(in)
		}
		start, end, step := a.Starts[j], a.Ends[j], int64(1)
		if a.Steps != nil {
			step = a.Steps[j]
		}
		_, n, err := sliceRange(in[ax], start, end, step)
		if err != nil {
			return nil, c.errf(fmt.Sprintf("attrs.starts[%d]", j), "axis %d of %s: %v", ax, in, err)
		}
		out[ax] = n
	}
	return out, nil
}

// sliceEnd is the end meaning "to the end of the axis".
const sliceEnd = 1 << 40

// sliceRange resolves a slice of an axis of extent d: the first index and
// the number of elements. Constant axes clamp as Python does; a symbolic
// axis takes a non-negative start, a step of 1, and an end that is
// negative (from the end) or at least 2^40 (to the end).
func sliceRange(d Dim, start, end, step int64) (Dim, Dim, error) {
	if step < 1 {
		return Dim{}, Dim{}, fmt.Errorf("step %d: only positive steps are supported", step)
	}
	if start >= sliceEnd || start < -sliceEnd || end < -sliceEnd {
		return Dim{}, Dim{}, fmt.Errorf("start %d or end %d is out of range", start, end)
	}
	end = min(end, sliceEnd)
	if v, ok := d.IsConst(); ok {
		clamp := func(x int64) int64 {
			if x < 0 {
				x += v
			}
			return max(0, min(x, v))
		}
		s, e := clamp(start), clamp(end)
		n := int64(0)
		if e > s {
			n = (e-s-1)/step + 1
		}
		return Const(s), Const(n), nil
	}
	if start < 0 || step != 1 {
		return Dim{}, Dim{}, fmt.Errorf("a symbolic axis %s takes only a non-negative start and a step of 1", d)
	}
	e := d
	if end < 0 {
		var err error
		if e, err = d.Add(Const(end)); err != nil {
			return Dim{}, Dim{}, err
		}
	} else if end < sliceEnd {
		return Dim{}, Dim{}, fmt.Errorf("a symbolic axis %s takes an end that is negative or at least 2^40 (to the end)", d)
	}
	n, err := e.Sub(Const(start))
	return Const(start), n, err
}

func (c *inferCtx) concat() (Shape, error) {
	r := len(c.ins[0])
	ax, err := c.axis(c.n.Attrs.Axis, 0, r)
	if err != nil {
		return nil, err
	}
	if r == 0 {
		return nil, c.errf("inputs[0]", "cannot concatenate scalars")
	}
	out := slices.Clone(c.ins[0])
	for j := 1; j < len(c.ins); j++ {
		s := c.ins[j]
		if len(s) != r {
			return nil, c.errf(fmt.Sprintf("inputs[%d]", j), "rank mismatch: %s and %s", c.ins[0], s)
		}
		for k := range s {
			if k == ax {
				if out[k], err = out[k].Add(s[k]); err != nil {
					return nil, c.errf("inputs", "%v", err)
				}
				continue
			}
			if err := c.unifyDims(out[k], s[k], c.ins[0], s, fmt.Sprintf("inputs[%d]", j)); err != nil {
				return nil, err
			}
		}
	}
	return c.u.canonShape(out)
}

func (c *inferCtx) matmul() (Shape, error) {
	a, b := c.ins[0], c.ins[1]
	if p := c.n.Attrs.Panel; p != 0 {
		// B in panels, [..., N/p, K, p]: the product sees [..., K, N].
		if p < 0 || p > 1<<16 {
			return nil, c.errf("attrs.panel", "panel %d: want a width from 1 to 65536", p)
		}
		if len(b) < 3 || !b[len(b)-1].Equal(Const(p)) {
			return nil, c.errf("inputs[1]", "matmul with panel %d needs its second operand as [..., N/%d, K, %d], got %s", p, p, p, b)
		}
		n, err := b[len(b)-3].Mul(Const(p))
		if err != nil {
			return nil, c.errf("inputs[1]", "%v", err)
		}
		if cols := c.n.Attrs.Columns; cols != 0 {
			// The last panel padded: N columns of ceil(N/p) panels.
			panels, ok := b[len(b)-3].IsConst()
			if !ok || cols <= (panels-1)*p || cols > panels*p {
				return nil, c.errf("attrs.columns", "columns %d: want more than %d panels of %d hold less and at most all of them (%s)", cols, panels-1, p, b)
			}
			n = Const(cols)
		}
		b = append(slices.Clone(b[:len(b)-3]), b[len(b)-2], n)
	} else if c.n.Attrs.Columns != 0 {
		return nil, c.errf("attrs.columns", "columns %d without a panel", c.n.Attrs.Columns)
	}
	if len(a) < 2 || len(b) < 2 {
		return nil, c.errf("inputs", "matmul needs operands of rank 2 or more, got %s and %s", a, b)
	}
	if err := c.unifyDims(a[len(a)-1], b[len(b)-2], a, b, "inputs"); err != nil {
		return nil, err
	}
	batch, err := c.broadcast(a[:len(a)-2], b[:len(b)-2])
	if err != nil {
		return nil, err
	}
	out := append(batch, a[len(a)-2], b[len(b)-1])
	return c.u.canonShape(out)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
