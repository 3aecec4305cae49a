package ast

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Builder describes a computation in the style of tensor expressions
// (TVM's te.compute, CINN's Compute) and lowers it to the initial,
// unscheduled ScheduleBlock function: one loop nest and one block per
// computed tensor, in definition order, inside a root block.
//
//	b := ast.NewBuilder("matmul")
//	A := b.Placeholder("A", ast.Float32, ast.I32(64), ast.I32(64))
//	B := b.Placeholder("B", ast.Float32, ast.I32(64), ast.I32(64))
//	k := b.ReduceAxis("k", ast.I32(64))
//	C := b.Sum("C", ast.Shape(64, 64), []*ast.Var{k}, func(i []ast.Expr) ast.Expr {
//		return ast.Mul(A.At(i[0], k), B.At(k, i[1]))
//	})
//	f, err := b.Build(C)
//
// The function's parameters are the placeholders, in the order they were
// declared, then the outputs passed to Build; every other computed tensor
// becomes a global temporary allocated in the root block.
//
// Builder methods do not return errors: the first mistake is remembered
// and returned by Build, which also verifies the function.
type Builder struct {
	name      string
	sizes     []*Var
	inputs    []*Tensor
	stages    []*Tensor
	storage   []*Tensor       // declared by Storage, written by stages Into them
	reduceExt map[string]Expr // reduce axis name -> extent
	names     map[string]bool // sizes, buffers, reduce axes
	err       error
}

// Tensor is a tensor of a Builder: a placeholder (an input), the result of
// a computation, or a storage buffer that computations write parts of.
type Tensor struct {
	Buffer *Buffer
	b      *Builder

	// A computed tensor: Buffer[offset + spatial...] = body, or, for a
	// reduction, the combination of body over the reduce axes. Its block
	// is called name and iterates over shape; Buffer is its own, of that
	// shape, or (Into) a storage tensor's, with offset.
	name      string
	shape     []Expr
	offset    []Expr   // nil: none
	storage   bool     // declared by Storage: no computation of its own
	axisNames []string // loop names of the spatial axes
	body      Expr     // over the spatial iteration variables v<name> and the reduce axes
	reduce    reduceKind
	axes      []*Var // reduce axes
}

type reduceKind uint8

const (
	noReduce reduceKind = iota
	reduceSum
	reduceMax
	reduceMin
)

// NewBuilder returns a builder for a function called name.
func NewBuilder(name string) *Builder {
	return &Builder{name: name, reduceExt: map[string]Expr{}, names: map[string]bool{}}
}

func (b *Builder) setErr(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("ast: build "+b.name+": "+format, args...)
	}
}

func (b *Builder) claim(name, what string) {
	switch {
	case !isIdent(name) || isReserved(name):
		b.setErr("%s name %q is not a usable identifier", what, name)
	case b.names[name]:
		b.setErr("name %s is used twice", name)
	}
	b.names[name] = true
}

// Shape returns a shape from dimensions given as Go integers (int, int32 or
// int64: int32 constants) or expressions (a size such as S1, S1*2).
// Shape panics on a dimension of any other type, a programming error.
func Shape(dims ...any) []Expr {
	out := make([]Expr, len(dims))
	for i, d := range dims {
		switch d := d.(type) {
		case int:
			out[i] = IntConst(Int32, int64(d))
		case int32:
			out[i] = I32(d)
		case int64:
			out[i] = IntConst(Int32, d)
		case Expr:
			out[i] = d
		default:
			panic(fmt.Sprintf("ast.Shape: dimension %d has type %T", i, d))
		}
	}
	return out
}

// Size declares a symbolic int32 size, a run-time parameter of the function
// that shapes may use.
func (b *Builder) Size(name string) *Var {
	b.claim(name, "size")
	v := NewVar(name, Int32)
	b.sizes = append(b.sizes, v)
	return v
}

// Placeholder declares an input tensor.
func (b *Builder) Placeholder(name string, t DType, shape ...Expr) *Tensor {
	b.claim(name, "buffer")
	x := &Tensor{Buffer: NewBuffer(name, t, shape...), b: b}
	b.inputs = append(b.inputs, x)
	return x
}

// ReduceAxis declares a reduce axis over [0, extent), to be used in the body
// of a reduction (Sum, Max, Min, Mean) and listed in its axes. The returned
// variable is the axis; it may serve several reductions.
func (b *Builder) ReduceAxis(name string, extent Expr) *Var {
	b.claim(name, "reduce axis")
	v := NewVar(name, Int32)
	if extent != nil && extent.Type() == Int64 {
		v.DType = Int64
	}
	b.reduceExt[name] = extent
	return v
}

// At returns the element of t at the given indices, for use in the body
// of a later computation (of the buffer it was computed Into, at its
// offset).
func (t *Tensor) At(indices ...Expr) *Load {
	if t.offset == nil || len(indices) != len(t.offset) {
		return t.Buffer.At(indices...)
	}
	return t.Buffer.At(shifted(indices, t.offset)...)
}

// Name is the name of t's block (a placeholder's or a storage tensor's:
// of its buffer).
func (t *Tensor) Name() string {
	if t.name != "" {
		return t.name
	}
	return t.Buffer.Name
}

// shifted returns idx + offset, dimension by dimension (a zero offset
// leaves the index as it is).
func shifted(idx, offset []Expr) []Expr {
	out := make([]Expr, len(idx))
	for d := range idx {
		out[d] = idx[d]
		if o := offset[d]; !IsConstInt(o, 0) {
			if o.Type() != idx[d].Type() {
				o = NewCast(idx[d].Type(), o)
			}
			out[d] = Add(idx[d], o)
		}
	}
	return out
}

// Storage declares a buffer that computations write parts of (see Into):
// the output of a concatenation, each input's computation writing its
// slice, or a copy with room to spare beyond what is computed. It is a
// parameter of the function when passed to Build, else a temporary of the
// root block. No computation writes all of it unless the program makes
// them; reading an element none wrote reads whatever the memory holds.
func (b *Builder) Storage(name string, t DType, shape ...Expr) *Tensor {
	b.claim(name, "buffer")
	x := &Tensor{Buffer: NewBuffer(name, t, shape...), b: b, storage: true}
	b.storage = append(b.storage, x)
	return x
}

// Into makes the computed tensor t store its elements in the storage
// tensor dst at offset (one index per dimension; none: zeros): t's block
// writes dst[offset + i...], and t.At(i...) reads it there. t then has no
// buffer of its own. Call it right after defining t, before anything
// reads t. The element types must match, and where the shapes and offset
// are constants, t must lie inside dst.
func (t *Tensor) Into(dst *Tensor, offset ...Expr) *Tensor {
	b := t.b
	switch {
	case t.body == nil || t.offset != nil:
		b.setErr("Into: %s is not a computed tensor of its own", t.Name())
		return t
	case dst == nil || !dst.storage || dst.b != b:
		b.setErr("Into: %s must go into a Storage tensor of the same builder", t.Name())
		return t
	case dst.Buffer.DType != t.Buffer.DType:
		b.setErr("Into: %s of %s values into %s of %s values", t.Name(), t.Buffer.DType, dst.Buffer.Name, dst.Buffer.DType)
		return t
	case len(offset) != 0 && len(offset) != len(t.shape) || len(t.shape) != dst.Buffer.Rank():
		b.setErr("Into: %s has %s, %s %s and the offset %s", t.Name(), count(len(t.shape), "dimension"), dst.Buffer.Name, count(dst.Buffer.Rank(), "dimension"), count(len(offset), "index"))
		return t
	}
	if len(offset) == 0 {
		for _, d := range t.shape {
			offset = append(offset, Zero(d.Type()))
		}
	}
	for d := range offset {
		o, ok1 := ConstIntValue(offset[d])
		n, ok2 := ConstIntValue(t.shape[d])
		m, ok3 := ConstIntValue(dst.Buffer.Shape[d])
		if ok1 && ok2 && ok3 && (o < 0 || o+n > m) {
			b.setErr("Into: %s (%d along dimension %d) at offset %d does not fit in %s (%d)", t.Name(), n, d, o, dst.Buffer.Name, m)
			return t
		}
	}
	t.Buffer, t.offset = dst.Buffer, offset
	return t
}

// Compute defines the tensor name[i...] = fn(i) of the given shape and of
// fn's element type. fn receives one index variable per dimension.
func (b *Builder) Compute(name string, shape []Expr, fn func(i []Expr) Expr) *Tensor {
	return b.define(name, shape, noReduce, nil, fn)
}

// Sum defines name[i...] = the sum of fn(i) over the reduce axes.
func (b *Builder) Sum(name string, shape []Expr, axes []*Var, fn func(i []Expr) Expr) *Tensor {
	return b.define(name, shape, reduceSum, axes, fn)
}

// Max defines name[i...] = the maximum of fn(i) over the reduce axes.
func (b *Builder) Max(name string, shape []Expr, axes []*Var, fn func(i []Expr) Expr) *Tensor {
	return b.define(name, shape, reduceMax, axes, fn)
}

// Min defines name[i...] = the minimum of fn(i) over the reduce axes.
func (b *Builder) Min(name string, shape []Expr, axes []*Var, fn func(i []Expr) Expr) *Tensor {
	return b.define(name, shape, reduceMin, axes, fn)
}

// Mean defines name[i...] = the mean of fn(i) over the reduce axes, for a
// floating-point fn: a sum into the temporary name_sum, then a division by
// the number of reduced elements.
func (b *Builder) Mean(name string, shape []Expr, axes []*Var, fn func(i []Expr) Expr) *Tensor {
	sum := b.define(name+"_sum", shape, reduceSum, axes, fn)
	t := sum.Buffer.DType
	if !t.IsFloat() {
		b.setErr("mean %s of %s values: a mean needs floating-point values", name, t)
		return sum
	}
	var count Expr
	for _, k := range axes {
		ext := b.reduceExt[k.Name]
		if ext == nil {
			continue
		}
		if count == nil {
			count = ext
		} else {
			count = Mul(count, ext)
		}
	}
	if count == nil {
		count = One(Int32)
	}
	n := Simplify(NewCast(t, count))
	return b.Compute(name, shape, func(i []Expr) Expr { return Div(sum.At(i...), n) })
}

var spatialNames = []string{"i", "j", "k", "l", "m", "n", "p", "q", "r", "s", "t", "u"}

func (b *Builder) define(name string, shape []Expr, kind reduceKind, axes []*Var, fn func(i []Expr) Expr) *Tensor {
	b.claim(name, "buffer")
	x := &Tensor{b: b, name: name, shape: shape, reduce: kind, axes: axes}
	if kind != noReduce && len(axes) == 0 {
		b.setErr("reduction %s has no reduce axes", name)
	}
	for _, k := range axes {
		if k == nil || b.reduceExt[k.Name] == nil {
			b.setErr("reduction %s: an axis was not declared with ReduceAxis", name)
			return x
		}
	}
	// Default loop names: i, j, k, ... skipping the names of reduce axes
	// and the builder's other names.
	taken := map[string]bool{}
	for _, k := range axes {
		taken[k.Name] = true
	}
	next := 0
	for range shape {
		n := ""
		for n == "" || taken[n] || b.names[n] || b.names["v"+n] {
			if next < len(spatialNames) {
				n = spatialNames[next]
			} else {
				n = fmt.Sprintf("i%d", next)
			}
			next++
		}
		taken[n] = true
		x.axisNames = append(x.axisNames, n)
	}
	idx := make([]Expr, len(shape))
	for d, n := range x.axisNames {
		t := Int32
		if shape[d] != nil && shape[d].Type() == Int64 {
			t = Int64
		}
		idx[d] = NewVar("v"+n, t)
	}
	x.body = fn(idx)
	if x.body == nil || isNilExpr(x.body) {
		b.setErr("compute %s: the body function returned nil", name)
		x.body = Zero(Float32)
	}
	Inspect(x.body, func(n Node) bool {
		if l, ok := n.(*Load); ok && l.Buffer != nil && len(l.Indices) != l.Buffer.Rank() {
			b.setErr("compute %s: %s has %s but is indexed with %s", name, l.Buffer.Name, count(l.Buffer.Rank(), "dimension"), count(len(l.Indices), "index"))
		}
		return true
	})
	x.Buffer = NewBuffer(name, x.body.Type(), shape...)
	b.stages = append(b.stages, x)
	return x
}

// AxisNames renames the loops of the spatial axes of a computed tensor (its
// block's iteration variables become v<name>), and returns t.
func (t *Tensor) AxisNames(names ...string) *Tensor {
	if t.body == nil {
		t.b.setErr("AxisNames on placeholder %s", t.Buffer.Name)
		return t
	}
	if len(names) != len(t.axisNames) {
		t.b.setErr("AxisNames for %s: %d names for %d axes", t.Buffer.Name, len(names), len(t.axisNames))
		return t
	}
	m := map[string]Expr{}
	for d, n := range names {
		m["v"+t.axisNames[d]] = NewVar("v"+n, t.shape[d].Type())
	}
	t.body = Substitute(t.body, m)
	t.axisNames = names
	return t
}

// Build lowers the definitions to a function whose outputs are the given
// tensors, verifies it, and returns it.
func (b *Builder) Build(outputs ...*Tensor) (*Func, error) {
	if b.err != nil {
		return nil, b.err
	}
	f := &Func{Name: b.name, Sizes: b.sizes}
	isOutput := map[*Tensor]bool{}
	for _, o := range outputs {
		if o == nil || o.body == nil && !o.storage || o.offset != nil {
			return nil, errors.New("ast: build " + b.name + ": an output is nil, a placeholder or computed into another")
		}
		isOutput[o] = true
	}
	for _, in := range b.inputs {
		f.Params = append(f.Params, in.Buffer)
	}
	for _, o := range outputs {
		f.Params = append(f.Params, o.Buffer)
	}
	var stmts []Stmt
	for _, s := range b.storage {
		if !isOutput[s] {
			stmts = append(stmts, NewAlloc(s.Buffer))
		}
	}
	for _, s := range b.stages {
		if !isOutput[s] && s.offset == nil {
			stmts = append(stmts, NewAlloc(s.Buffer))
		}
	}
	for _, s := range b.stages {
		stmts = append(stmts, b.lower(s))
	}
	f.Body = &ScheduleBlock{Name: RootBlock, Body: seqOf(stmts)}
	if err := Verify(f); err != nil {
		return nil, fmt.Errorf("ast: build %s: %w\n%s", b.name, err, Explain(f, err))
	}
	return f, nil
}

// lower builds the loop nest and block of one computed tensor.
func (b *Builder) lower(x *Tensor) Stmt {
	buf := x.Buffer
	blk := &ScheduleBlock{Name: x.name}
	var loops []*Var
	var out []Expr // the output element, over iteration variables
	for d, n := range x.axisNames {
		t := x.shape[d].Type()
		loop, iter := NewVar(n, t), NewVar("v"+n, t)
		loops = append(loops, loop)
		out = append(out, iter)
		blk.Iters = append(blk.Iters, &IterVar{Var: iter, Kind: Spatial, Dom: Range{Zero(t), x.shape[d]}, Binding: loop})
	}
	if x.offset != nil {
		out = shifted(out, x.offset)
	}
	body := x.body
	rename := map[string]Expr{}
	for _, k := range x.axes {
		ext := b.reduceExt[k.Name]
		loop, iter := NewVar(k.Name, k.DType), NewVar("v"+k.Name, k.DType)
		loops = append(loops, loop)
		rename[k.Name] = iter
		blk.Iters = append(blk.Iters, &IterVar{Var: iter, Kind: Reduce, Dom: Range{Zero(k.DType), ext}, Binding: loop})
	}
	body = Substitute(body, rename)

	self := NewLoad(buf, out...)
	switch x.reduce {
	case noReduce:
		blk.Body = NewStore(buf, body, out...)
	case reduceSum:
		blk.Init = NewStore(buf, Zero(buf.DType), out...)
		blk.Body = NewStore(buf, Add(self, body), out...)
	case reduceMax:
		blk.Init = NewStore(buf, lowest(buf.DType), out...)
		blk.Body = NewStore(buf, Max(self, body), out...)
	case reduceMin:
		blk.Init = NewStore(buf, highest(buf.DType), out...)
		blk.Body = NewStore(buf, Min(self, body), out...)
	}
	var loads []*Load
	if x.reduce != noReduce {
		loads = append(loads, self)
	}
	Inspect(body, func(n Node) bool {
		if l, ok := n.(*Load); ok {
			loads = append(loads, l)
		}
		return true
	})
	blk.Reads = RegionsOf(loads)
	blk.Writes = []Region{pointRegion(buf, out)}

	var s Stmt = blk
	for i := len(loops) - 1; i >= 0; i-- {
		s = NewFor(loops[i], Zero(loops[i].DType), blk.Iters[i].Dom.Extent, s)
	}
	return s
}

// lowest returns the initial value of a max reduction of type t.
func lowest(t DType) Expr {
	if t.IsFloat() {
		return FloatConst(t, math.Inf(-1))
	}
	lo, _ := intRange(t)
	return IntConst(t, lo)
}

// highest returns the initial value of a min reduction of type t.
func highest(t DType) Expr {
	if t.IsFloat() {
		return FloatConst(t, math.Inf(1))
	}
	_, hi := intRange(t)
	return IntConst(t, hi)
}

func pointRegion(b *Buffer, idx []Expr) Region {
	r := Region{Buffer: b}
	for _, i := range idx {
		r.Ranges = append(r.Ranges, Range{i, One(i.Type())})
	}
	return r
}

// RegionsOf returns regions covering the given loads, one per buffer in
// order of first use: a point where all loads of the buffer agree on a
// dimension, and the hull min:+extent where they differ by constants
// (A[vi - 1], A[vi + 1] give A[vi - 1:+3]). Loads that differ otherwise get
// a region each. Loads with the wrong number of indices are skipped.
func RegionsOf(loads []*Load) []Region {
	var order []*Buffer
	byBuf := map[*Buffer][]*Load{}
	for _, l := range loads {
		if l == nil || l.Buffer == nil || len(l.Indices) != l.Buffer.Rank() {
			continue
		}
		if _, ok := byBuf[l.Buffer]; !ok {
			order = append(order, l.Buffer)
		}
		byBuf[l.Buffer] = append(byBuf[l.Buffer], l)
	}
	var rs []Region
	for _, buf := range order {
		var distinct []*Load
	loads:
		for _, l := range byBuf[buf] {
			for _, d := range distinct {
				if Equal(&Load{Buffer: buf, Indices: d.Indices}, l) {
					continue loads
				}
			}
			distinct = append(distinct, l)
		}
		if !slices.ContainsFunc(distinct, dataDependent) {
			if r, ok := hullRegion(buf, distinct); ok {
				rs = append(rs, r)
				continue
			}
		}
		for _, l := range distinct {
			rs = append(rs, loadRegion(buf, l.Indices))
		}
	}
	return rs
}

// dataDependent reports whether an index of l loads from a buffer (a
// gather): which element it reads is known only when it runs.
func dataDependent(l *Load) bool {
	for _, e := range l.Indices {
		if ContainsLoad(e) {
			return true
		}
	}
	return false
}

// ContainsLoad reports whether e loads from a buffer: as an index, a
// value only the data knows (a gather's).
func ContainsLoad(e Expr) bool {
	found := false
	Inspect(e, func(n Node) bool {
		_, isLoad := n.(*Load)
		found = found || isLoad
		return !found
	})
	return found
}

// loadRegion is the region of one load: its point, except along the
// dimensions whose index loads from a buffer, where it is the whole
// extent.
func loadRegion(buf *Buffer, indices []Expr) Region {
	r := pointRegion(buf, indices)
	for d, e := range indices {
		if ContainsLoad(e) {
			r.Ranges[d] = Range{Min: Zero(buf.Shape[d].Type()), Extent: buf.Shape[d]}
		}
	}
	return r
}

// hullRegion merges loads whose indices differ, dimension by dimension, only
// by constant offsets.
func hullRegion(buf *Buffer, loads []*Load) (Region, bool) {
	r := Region{Buffer: buf}
	for d := range buf.Shape {
		t := loads[0].Indices[d].Type()
		base, _ := splitConst(loads[0].Indices[d])
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, l := range loads {
			rest, c := splitConst(l.Indices[d])
			if !Equal(rest, base) {
				return Region{}, false
			}
			lo, hi = min(lo, c), max(hi, c)
		}
		var minExpr Expr = IntConst(t, lo)
		if !IsConstInt(base, 0) {
			minExpr = Simplify(Add(base, IntConst(t, lo)))
		}
		r.Ranges = append(r.Ranges, Range{minExpr, IntConst(t, hi-lo+1)})
	}
	return r, true
}

// splitConst splits a simplified integer expression into a non-constant
// part and a constant offset.
func splitConst(e Expr) (Expr, int64) {
	e = Simplify(e)
	l, ok := toLinear(e)
	if !ok {
		return e, 0
	}
	c := l.c
	l.c = 0
	rest, ok := l.expr(e.Type())
	if !ok {
		return e, 0
	}
	return rest, c
}
