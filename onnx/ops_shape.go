package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// The shape operators. Each one on a known value computes a known value,
// so that the exporter's shape arithmetic (Shape -> Gather -> Unsqueeze
// -> Concat -> Reshape) is done here and the graph gets constant or
// symbolic attributes.

func convShape(c *ctx) error {
	dims, err := c.dims(0)
	if err != nil {
		return err
	}
	r := int64(len(dims))
	start, err := c.attrInt("start", 0)
	if err != nil {
		return err
	}
	end, err := c.attrInt("end", r)
	if err != nil {
		return err
	}
	clamp := func(x int64) int64 {
		if x < 0 {
			x += r
		}
		return max(0, min(x, r))
	}
	start, end = clamp(start), clamp(end)
	if end < start {
		end = start
	}
	sel := dims[start:end]
	c.setKnown(0, newDims(ast.Int64, []int64{int64(len(sel))}, slices.Clone(sel)))
	return nil
}

func convSize(c *ctx) error {
	dims, err := c.dims(0)
	if err != nil {
		return err
	}
	n := fusion.Const(1)
	for _, d := range dims {
		if n, err = n.Mul(d); err != nil {
			return err
		}
	}
	c.setKnown(0, newDims(ast.Int64, []int64{}, []fusion.Dim{n}))
	return nil
}

func convConstant(c *ctx) error {
	if len(c.n.GetAttribute()) != 1 {
		return fmt.Errorf("a Constant takes exactly one attribute, got %d", len(c.n.GetAttribute()))
	}
	a := c.n.GetAttribute()[0]
	switch a.GetName() {
	case "value":
		if a.GetT() == nil {
			return fmt.Errorf("attribute value holds no tensor")
		}
		k, err := tensorData(a.GetT(), c.im.opts.Dir)
		if err != nil {
			return err
		}
		c.setKnown(0, k)
	case "value_float":
		c.setKnown(0, newFloats(ast.Float32, []int64{}, []float64{float64(a.GetF())}))
	case "value_floats":
		f := make([]float64, len(a.GetFloats()))
		for j, v := range a.GetFloats() {
			f[j] = float64(v)
		}
		c.setKnown(0, newFloats(ast.Float32, []int64{int64(len(f))}, f))
	case "value_int":
		c.setKnown(0, newInts(ast.Int64, []int64{}, []int64{a.GetI()}))
	case "value_ints":
		c.setKnown(0, newInts(ast.Int64, []int64{int64(len(a.GetInts()))}, slices.Clone(a.GetInts())))
	default:
		return fmt.Errorf("a Constant's %s is not supported", a.GetName())
	}
	return nil
}

// reshapeTo reshapes input 0 to the given shape (a known value or a
// tensor of the graph).
func reshapeTo(c *ctx, shape []fusion.Dim) error {
	if k := c.known(0); k != nil {
		s, ok := constShape(shape)
		if !ok {
			return fmt.Errorf("cannot give the known tensor %q the symbolic shape %s", c.n.GetInput()[0], fmtDims(shape))
		}
		if elems(s) != int64(k.len()) {
			return fmt.Errorf("cannot reshape %v (%d elements) to %v", k.shape, k.len(), s)
		}
		c.setKnown(0, k.reshaped(s))
		return nil
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	if fusion.Shape(shape).Equal(c.shapeOf(x)) {
		c.set(0, x)
		return nil
	}
	attr := jsonDims(shape)
	return c.result("reshape", fusion.Attrs{Shape: attr}, x)
}

func constShape(shape []fusion.Dim) ([]int64, bool) {
	out := make([]int64, len(shape))
	for a, d := range shape {
		v, ok := d.IsConst()
		if !ok {
			return nil, false
		}
		out[a] = v
	}
	return out, true
}

func convReshape(c *ctx) error {
	in, err := c.dims(0)
	if err != nil {
		return err
	}
	var target *known
	if c.opset() < 5 {
		return fmt.Errorf("Reshape before opset 5 is not supported")
	}
	if target, err = c.mustKnow(1, "shape"); err != nil {
		return err
	}
	allowZero, err := c.attrInt("allowzero", 0)
	if err != nil {
		return err
	}
	shape := make([]fusion.Dim, target.len())
	inferAt := -1
	for a := range shape {
		d := target.dim(a)
		v, isConst := d.IsConst()
		switch {
		case isConst && v == 0 && allowZero == 0:
			if a >= len(in) {
				return fmt.Errorf("shape %s copies dimension %d of an input of rank %d", fmtDims(target.dimsAll()), a, len(in))
			}
			shape[a] = in[a]
		case isConst && v == -1:
			if inferAt >= 0 {
				return fmt.Errorf("shape %s has more than one -1", fmtDims(target.dimsAll()))
			}
			inferAt = a
		case isConst && v < 0:
			return fmt.Errorf("shape %s has a negative dimension", fmtDims(target.dimsAll()))
		default:
			shape[a] = d
		}
	}
	if inferAt >= 0 {
		total, rest := fusion.Const(1), fusion.Const(1)
		for _, d := range in {
			if total, err = total.Mul(d); err != nil {
				return err
			}
		}
		for a, d := range shape {
			if a != inferAt {
				if rest, err = rest.Mul(d); err != nil {
					return err
				}
			}
		}
		q, ok := total.DivExact(rest)
		if !ok {
			return fmt.Errorf("cannot reshape %s to %s: %s elements are not a multiple of %s", fmtDims(in), fmtDims(target.dimsAll()), total, rest)
		}
		shape[inferAt] = q
	}
	return reshapeTo(c, shape)
}

// dimsAll returns every element as a size.
func (k *known) dimsAll() []fusion.Dim {
	out := make([]fusion.Dim, k.len())
	for j := range out {
		out[j] = k.dim(j)
	}
	return out
}

func convFlatten(c *ctx) error {
	in, err := c.dims(0)
	if err != nil {
		return err
	}
	axis, err := c.attrInt("axis", 1)
	if err != nil {
		return err
	}
	if axis < 0 {
		axis += int64(len(in))
	}
	if axis < 0 || axis > int64(len(in)) {
		return fmt.Errorf("axis %d is out of range for rank %d", axis, len(in))
	}
	outer, inner := fusion.Const(1), fusion.Const(1)
	for a, d := range in {
		if int64(a) < axis {
			outer, err = outer.Mul(d)
		} else {
			inner, err = inner.Mul(d)
		}
		if err != nil {
			return err
		}
	}
	return reshapeTo(c, []fusion.Dim{outer, inner})
}

// axesInput returns the axes of Squeeze, Unsqueeze or a reduction: an
// attribute before opset since, input 1 from it on; nil when not given.
func axesInput(c *ctx, since int64) ([]int64, error) {
	if c.opset() < since {
		axes, _, err := c.attrInts("axes")
		return axes, err
	}
	if !c.has(1) {
		return nil, nil
	}
	return c.ints(1, "axes")
}

func convSqueeze(c *ctx) error {
	in, err := c.dims(0)
	if err != nil {
		return err
	}
	axes, err := axesInput(c, 13)
	if err != nil {
		return err
	}
	drop := map[int]bool{}
	if axes == nil {
		for a, d := range in {
			if v, ok := d.IsConst(); ok && v == 1 {
				drop[a] = true
			}
		}
	}
	for _, a := range axes {
		ax, err := axisOf(a, len(in), "axis")
		if err != nil {
			return err
		}
		if v, ok := in[ax].IsConst(); !ok || v != 1 {
			return fmt.Errorf("cannot squeeze axis %d of shape %s: its size is not 1", a, fmtDims(in))
		}
		drop[ax] = true
	}
	var shape []fusion.Dim
	for a, d := range in {
		if !drop[a] {
			shape = append(shape, d)
		}
	}
	return reshapeTo(c, shape)
}

func convUnsqueeze(c *ctx) error {
	in, err := c.dims(0)
	if err != nil {
		return err
	}
	axes, err := axesInput(c, 13)
	if err != nil {
		return err
	}
	if axes == nil {
		return fmt.Errorf("Unsqueeze needs axes")
	}
	r := len(in) + len(axes)
	add := map[int]bool{}
	for _, a := range axes {
		ax, err := axisOf(a, r, "axis")
		if err != nil {
			return err
		}
		if add[ax] {
			return fmt.Errorf("axis %d is given twice", a)
		}
		add[ax] = true
	}
	shape := make([]fusion.Dim, 0, r)
	next := 0
	for a := 0; a < r; a++ {
		if add[a] {
			shape = append(shape, fusion.Const(1))
		} else {
			shape = append(shape, in[next])
			next++
		}
	}
	return reshapeTo(c, shape)
}

func convTranspose(c *ctx) error {
	r, err := c.rank(0)
	if err != nil {
		return err
	}
	perm64, given, err := c.attrInts("perm")
	if err != nil {
		return err
	}
	perm := make([]int, r)
	for a := range perm {
		perm[a] = r - 1 - a
	}
	if given {
		if len(perm64) != r {
			return fmt.Errorf("perm %v does not fit rank %d", perm64, r)
		}
		seen := map[int64]bool{}
		for a, p := range perm64 {
			if p < 0 || p >= int64(r) || seen[p] {
				return fmt.Errorf("perm %v is not a permutation of 0..%d", perm64, r-1)
			}
			seen[p] = true
			perm[a] = int(p)
		}
	}
	if k := c.known(0); k != nil {
		c.setKnown(0, k.transposed(perm))
		return nil
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	return c.result("transpose", fusion.Attrs{Perm: perm}, x)
}

func convConcat(c *ctx) error {
	axis, err := c.attrInt("axis", math.MinInt64)
	if err != nil {
		return err
	}
	if axis == math.MinInt64 {
		return fmt.Errorf("Concat needs an axis")
	}
	r, err := c.rank(0)
	if err != nil {
		return err
	}
	ax, err := axisOf(axis, r, "axis")
	if err != nil {
		return err
	}
	allKnown := true
	for j := 0; j < c.nin(); j++ {
		if c.known(j) == nil {
			allKnown = false
		}
	}
	if allKnown {
		total := 0
		for j := 0; j < c.nin(); j++ {
			total += c.known(j).len()
		}
		if total <= knownMathLimit {
			return concatKnown(c, ax)
		}
	}
	var ins []*fusion.Tensor
	for j := 0; j < c.nin(); j++ {
		// An empty input adds nothing (exporters write them).
		if k := c.known(j); k != nil && k.len() == 0 {
			continue
		}
		t, err := c.tensor(j)
		if err != nil {
			return err
		}
		ins = append(ins, t)
	}
	if len(ins) == 1 {
		c.set(0, ins[0])
		return nil
	}
	return c.result("concat", fusion.Attrs{Axis: &ax}, ins...)
}

// concatKnown joins known inputs.
func concatKnown(c *ctx, ax int) error {
	first := c.known(0)
	shape := slices.Clone(first.shape)
	shape[ax] = 0
	sym := false
	for j := 0; j < c.nin(); j++ {
		k := c.known(j)
		if len(k.shape) != len(shape) || k.dtype != first.dtype {
			return fmt.Errorf("input %d (%s %v) does not fit input 0 (%s %v)", j, k.dtype, k.shape, first.dtype, first.shape)
		}
		for a := range shape {
			if a != ax && k.shape[a] != first.shape[a] {
				return fmt.Errorf("input %d of shape %v does not fit input 0 of shape %v", j, k.shape, first.shape)
			}
		}
		shape[ax] += k.shape[ax]
		sym = sym || k.symbolic()
	}
	outer := elems(shape[:ax])
	var f []float64
	var i []int64
	var d []fusion.Dim
	for o := int64(0); o < outer; o++ {
		for j := 0; j < c.nin(); j++ {
			k := c.known(j)
			block := int(elems(k.shape[ax:]))
			for e := int(o) * block; e < int(o+1)*block; e++ {
				switch {
				case sym:
					d = append(d, k.dim(e))
				case k.dtype.IsInt():
					i = append(i, k.i[e])
				default:
					f = append(f, k.f[e])
				}
			}
		}
	}
	switch {
	case sym:
		c.setKnown(0, newDims(first.dtype, shape, d))
	case first.dtype.IsInt():
		c.setKnown(0, newInts(first.dtype, shape, i))
	default:
		c.setKnown(0, newFloats(first.dtype, shape, f))
	}
	return nil
}

// sliceSpec is one axis of a Slice or Split.
type sliceSpec struct {
	axis             int
	start, end, step int64
}

func convSlice(c *ctx) error {
	in, err := c.dims(0)
	if err != nil {
		return err
	}
	var starts, ends, axes, steps []int64
	if c.opset() < 10 {
		if starts, _, err = c.attrInts("starts"); err == nil {
			if ends, _, err = c.attrInts("ends"); err == nil {
				axes, _, err = c.attrInts("axes")
			}
		}
	} else {
		symbolic := func(j int) bool { k := c.known(j); return k != nil && k.symbolic() }
		if symbolic(1) || symbolic(2) {
			return sliceSymbolic(c, in)
		}
		if starts, err = c.ints(1, "starts"); err == nil {
			if ends, err = c.ints(2, "ends"); err == nil && c.has(3) {
				if axes, err = c.ints(3, "axes"); err == nil && c.has(4) {
					steps, err = c.ints(4, "steps")
				}
			}
		}
	}
	if err != nil {
		return err
	}
	if axes == nil {
		for a := range starts {
			axes = append(axes, int64(a))
		}
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || (steps != nil && len(steps) != len(starts)) {
		return fmt.Errorf("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
	}
	var specs []sliceSpec
	seen := map[int]bool{}
	for j := range starts {
		ax, err := axisOf(axes[j], len(in), "axis")
		if err != nil {
			return err
		}
		if seen[ax] {
			return fmt.Errorf("axis %d is sliced twice", ax)
		}
		seen[ax] = true
		step := int64(1)
		if steps != nil {
			step = steps[j]
		}
		if step == 0 {
			return fmt.Errorf("step 0 on axis %d", ax)
		}
		specs = append(specs, sliceSpec{ax, starts[j], ends[j], step})
	}
	return sliceTo(c, 0, in, specs)
}

// sliceSymbolic slices axes whose bounds are sizes known at run time (a
// mask buffer cut to the sequence's length): each such axis, of constant
// size, with a step of 1, is a gather of iota + start; an index past the
// axis is the kernel's error at run time. Axes with constant bounds are
// sliced first.
func sliceSymbolic(c *ctx, in []fusion.Dim) error {
	starts, err := c.mustKnow(1, "starts")
	if err != nil {
		return err
	}
	ends, err := c.mustKnow(2, "ends")
	if err != nil {
		return err
	}
	n := starts.len()
	if ends.len() != n {
		return fmt.Errorf("starts and ends differ in length")
	}
	axes := make([]int64, n)
	for a := range axes {
		axes[a] = int64(a)
	}
	if c.has(3) {
		if axes, err = c.ints(3, "axes"); err != nil {
			return err
		}
	}
	if c.has(4) {
		steps, err := c.ints(4, "steps")
		if err != nil {
			return err
		}
		for _, st := range steps {
			if st != 1 {
				return fmt.Errorf("a slice to a size known at run time needs steps of 1, not %v", steps)
			}
		}
	}
	if len(axes) != n {
		return fmt.Errorf("axes %v do not fit %d starts", axes, n)
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	var plain fusion.Attrs
	type cut struct {
		axis       int
		start, len fusion.Dim
	}
	var cuts []cut
	for j := range n {
		ax, err := axisOf(axes[j], len(in), "axis")
		if err != nil {
			return err
		}
		lo, hi := starts.dim(j), ends.dim(j)
		lv, lok := lo.IsConst()
		hv, hok := hi.IsConst()
		if lok && hok {
			plain.Axes = append(plain.Axes, ax)
			plain.Starts = append(plain.Starts, lv)
			plain.Ends = append(plain.Ends, hv)
			plain.Steps = append(plain.Steps, 1)
			continue
		}
		if _, ok := in[ax].IsConst(); !ok || !lok || lv < 0 {
			return fmt.Errorf("a slice of axis %d (size %s) from %s to %s: loom slices to a run-time size only an axis of constant size, from a constant start", ax, in[ax], lo, hi)
		}
		length, err := hi.Sub(lo)
		if err != nil {
			return err
		}
		cuts = append(cuts, cut{ax, lo, length})
	}
	t := x
	if plain.Axes != nil {
		if t, err = c.op(c.tmp("slice"), "slice", plain, t); err != nil {
			return err
		}
	}
	for k, ct := range cuts {
		idx, err := iotaOf(c, []fusion.Dim{ct.len}, 0, ast.Int64, c.tmp("index"))
		if err != nil {
			return err
		}
		if v, _ := ct.start.IsConst(); v != 0 {
			off, err := c.scalar(ast.Int64, float64(v))
			if err != nil {
				return err
			}
			if idx, err = c.op(c.tmp("from"), "add", fusion.Attrs{}, idx, off); err != nil {
				return err
			}
		}
		attrs := fusion.Attrs{}
		if ct.axis != 0 {
			axis := ct.axis
			attrs.Axis = &axis
		}
		name := c.tmp("cut")
		if k == len(cuts)-1 {
			name = c.outName(0)
		}
		if t, err = c.op(name, "gather", attrs, t, idx); err != nil {
			return err
		}
	}
	c.set(0, t)
	return nil
}

// clampSlice resolves ONNX slice bounds on an axis of constant size n:
// the first index, the step and the count.
func clampSlice(n, start, end, step int64) (int64, int64) {
	if step > 0 {
		clamp := func(x int64) int64 {
			if x < 0 {
				x += n
			}
			return max(0, min(x, n))
		}
		s, e := clamp(start), clamp(end)
		if e <= s {
			return s, 0
		}
		return s, (e-s-1)/step + 1
	}
	clamp := func(x int64, lo int64) int64 {
		if x < 0 {
			x += n
		}
		return max(lo, min(x, n-1))
	}
	s, e := clamp(start, 0), clamp(end, -1)
	if s <= e {
		return s, 0
	}
	return s, (s-e-1)/(-step) + 1
}

// sliceTo slices input 0 (of shape in) into output j.
func sliceTo(c *ctx, j int, in []fusion.Dim, specs []sliceSpec) error {
	if k := c.known(0); k != nil {
		shape := slices.Clone(k.shape)
		first := make([]int64, len(shape))
		step := make([]int64, len(shape))
		for a := range step {
			step[a] = 1
		}
		for _, s := range specs {
			first[s.axis], shape[s.axis] = clampSlice(k.shape[s.axis], s.start, s.end, s.step)
			step[s.axis] = s.step
		}
		in, out := strides(k.shape), strides(shape)
		c.setKnown(j, k.gatherElems(shape, int(elems(shape)), func(e int) int {
			src, rest := int64(0), int64(e)
			for a := range shape {
				idx := rest / out[a]
				rest %= out[a]
				src += (first[a] + idx*step[a]) * in[a]
			}
			return int(src)
		}))
		return nil
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	var attrs fusion.Attrs
	for _, s := range specs {
		n, isConst := in[s.axis].IsConst()
		start, end, step := s.start, s.end, s.step
		switch {
		case isConst:
			first, count := clampSlice(n, start, end, step)
			if step < 0 {
				return fmt.Errorf("slices with negative steps are not supported (axis %d, step %d)", s.axis, step)
			}
			if first == 0 && count == n && step == 1 {
				continue // the whole axis
			}
			start, end = first, first+count*step
			if count == 0 {
				end = first
			}
		case step != 1:
			return fmt.Errorf("a slice of axis %d of size %s needs a step of 1, not %d", s.axis, in[s.axis], step)
		case start < 0:
			return fmt.Errorf("a slice of axis %d of size %s needs a non-negative start, not %d", s.axis, in[s.axis], start)
		case end >= 1<<40 || end >= math.MaxInt32:
			if start == 0 {
				continue
			}
			end = 1 << 40
		case end >= 0:
			return fmt.Errorf("a slice of axis %d of size %s to index %d needs the size at import time", s.axis, in[s.axis], end)
		}
		attrs.Axes = append(attrs.Axes, s.axis)
		attrs.Starts = append(attrs.Starts, start)
		attrs.Ends = append(attrs.Ends, end)
		attrs.Steps = append(attrs.Steps, step)
	}
	if attrs.Axes == nil {
		c.set(j, x)
		return nil
	}
	y, err := c.op(c.outName(j), "slice", attrs, x)
	if err != nil {
		return err
	}
	c.set(j, y)
	return nil
}

func convSplit(c *ctx) error {
	in, err := c.dims(0)
	if err != nil {
		return err
	}
	axis, err := c.attrInt("axis", 0)
	if err != nil {
		return err
	}
	ax, err := axisOf(axis, len(in), "axis")
	if err != nil {
		return err
	}
	var split []int64
	if c.opset() < 13 {
		split, _, err = c.attrInts("split")
	} else if c.has(1) {
		split, err = c.ints(1, "split")
	}
	if err != nil {
		return err
	}
	nout := len(c.n.GetOutput())
	n, isConst := in[ax].IsConst()
	if split == nil {
		if !isConst {
			return fmt.Errorf("splitting axis %d of size %s into equal parts needs its size at import time", ax, in[ax])
		}
		if num, err := c.attrInt("num_outputs", int64(nout)); err != nil || num != int64(nout) {
			return fmt.Errorf("num_outputs does not match the %d outputs", nout)
		}
		part := (n + int64(nout) - 1) / int64(nout)
		for j := 0; j < nout; j++ {
			split = append(split, max(0, min(part, n-int64(j)*part)))
		}
	}
	if len(split) != nout {
		return fmt.Errorf("split %v has %d parts for %d outputs", split, len(split), nout)
	}
	start := int64(0)
	for j, s := range split {
		if s < 0 {
			return fmt.Errorf("split %v has a negative part", split)
		}
		end := start + s
		if j == nout-1 && !isConst {
			end = 1 << 40 // the rest of a symbolic axis
		}
		if err := sliceTo(c, j, in, []sliceSpec{{ax, start, end, 1}}); err != nil {
			return err
		}
		start += s
	}
	if isConst && start != n {
		return fmt.Errorf("split %v does not add up to the axis size %d", split, n)
	}
	return nil
}

func convGather(c *ctx) error {
	r, err := c.rank(0)
	if err != nil {
		return err
	}
	axis, err := c.attrInt("axis", 0)
	if err != nil {
		return err
	}
	ax, err := axisOf(axis, r, "axis")
	if err != nil {
		return err
	}
	data, idx := c.known(0), c.known(1)
	if data != nil && idx != nil && int64(data.len())/max(data.shape[ax], 1)*int64(idx.len()) <= knownMathLimit {
		return gatherKnown(c, data, idx, ax)
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	if n, ok := c.shapeOf(x)[ax].IsConst(); ok && idx != nil && idx.dtype.IsInt() && !idx.symbolic() && len(idx.shape) == 0 {
		// One index into an axis of constant size: a slice of the axis,
		// then its removal.
		i := idx.i[0]
		if i < -n || i >= n {
			return fmt.Errorf("index %d is out of range for axis %d of size %d", i, ax, n)
		}
		if i < 0 {
			i += n
		}
		attrs := fusion.Attrs{Axes: []int{ax}, Starts: []int64{i}, Ends: []int64{i + 1}, Steps: []int64{1}}
		s, err := c.op(c.tmp("slice"), "slice", attrs, x)
		if err != nil {
			return err
		}
		shape := slices.Delete(slices.Clone(c.shapeOf(x)), ax, ax+1)
		return c.result("reshape", fusion.Attrs{Shape: jsonDims(shape)}, s)
	}
	ix, err := c.tensor(1)
	if err != nil {
		return err
	}
	attrs := fusion.Attrs{}
	if ax != 0 {
		attrs.Axis = &ax
	}
	return c.result("gather", attrs, x, ix)
}

// gatherKnown computes a Gather of known data at known indices.
func gatherKnown(c *ctx, data, idx *known, ax int) error {
	if !idx.dtype.IsInt() || idx.symbolic() {
		return fmt.Errorf("the indices %q must be integers known at import time", c.n.GetInput()[1])
	}
	n := data.shape[ax]
	shape := append(append(slices.Clone(data.shape[:ax]), idx.shape...), data.shape[ax+1:]...)
	inner := elems(data.shape[ax+1:])
	for _, i := range idx.i {
		if i < -n || i >= n {
			return fmt.Errorf("index %d is out of range for axis %d of size %d", i, ax, n)
		}
	}
	ni := int64(len(idx.i))
	c.setKnown(0, data.gatherElems(shape, int(elems(shape)), func(e int) int {
		o := int64(e) / (ni * inner)
		rest := int64(e) % (ni * inner)
		i := idx.i[rest/inner]
		if i < 0 {
			i += n
		}
		return int(o*n*inner + i*inner + rest%inner)
	}))
	return nil
}

func convConstantOfShape(c *ctx) error {
	target, err := c.mustKnow(0, "shape")
	if err != nil {
		return err
	}
	val := newFloats(ast.Float32, []int64{}, []float64{0})
	if a := c.attr("value"); a != nil {
		if a.GetT() == nil {
			return fmt.Errorf("attribute value holds no tensor")
		}
		if val, err = tensorData(a.GetT(), c.im.opts.Dir); err != nil {
			return err
		}
		if val.len() != 1 {
			return fmt.Errorf("value has %d elements, not 1", val.len())
		}
	}
	return fill(c, val, target.dimsAll())
}

// fill makes output 0 a tensor of the given shape with every element the
// single element of val: known when small, else a broadcast.
func fill(c *ctx, val *known, shape []fusion.Dim) error {
	if s, ok := constShape(shape); ok && elems(s) >= 0 && elems(s) <= 1<<16 {
		n := int(elems(s))
		c.setKnown(0, val.gatherElems(s, n, func(int) int { return 0 }))
		return nil
	}
	one := val.reshaped([]int64{})
	t, err := c.im.tensorOf(&value{k: one}, c.tmp("value"))
	if err != nil {
		return err
	}
	attr := jsonDims(shape)
	return c.result("broadcast_to", fusion.Attrs{Shape: attr}, t)
}

func convExpand(c *ctx) error {
	in, err := c.dims(0)
	if err != nil {
		return err
	}
	target, err := c.mustKnow(1, "shape")
	if err != nil {
		return err
	}
	want := target.dimsAll()
	// Numpy's broadcast of the two shapes (a 1 in the target keeps the
	// input's size).
	r := max(len(in), len(want))
	shape := make([]fusion.Dim, r)
	for a := 0; a < r; a++ {
		x, y := fusion.Const(1), fusion.Const(1)
		if k := a - (r - len(in)); k >= 0 {
			x = in[k]
		}
		if k := a - (r - len(want)); k >= 0 {
			y = want[k]
		}
		switch {
		case isOne(y):
			shape[a] = x
		case isOne(x) || x.Equal(y):
			shape[a] = y
		default:
			return fmt.Errorf("cannot expand shape %s to %s", fmtDims(in), fmtDims(want))
		}
	}
	if k := c.known(0); k != nil && k.len() == 1 {
		return fill(c, k, shape)
	}
	if k := c.known(0); k != nil && !k.symbolic() {
		// A known tensor expanded (Swin's window masks, built from
		// ranges): computed here where the result is small.
		out := make([]int64, len(shape))
		small := true
		for a, d := range shape {
			v, ok := d.IsConst()
			out[a], small = v, small && ok
		}
		if n := elems(out); small && n >= 0 && n <= foldLimit {
			at := broadcastIndex(out, k.shape)
			if k.dtype.IsInt() {
				i := make([]int64, n)
				for e := range i {
					i[e] = k.i[at(e)]
				}
				c.setKnown(0, newInts(k.dtype, out, i))
			} else {
				f := make([]float64, n)
				for e := range f {
					f[e] = k.f[at(e)]
				}
				c.setKnown(0, newFloats(k.dtype, out, f))
			}
			return nil
		}
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	if fusion.Shape(shape).Equal(c.shapeOf(x)) {
		c.set(0, x)
		return nil
	}
	attr := jsonDims(shape)
	return c.result("broadcast_to", fusion.Attrs{Shape: attr}, x)
}

func isOne(d fusion.Dim) bool {
	v, ok := d.IsConst()
	return ok && v == 1
}

func convRange(c *ctx) error {
	var ks [3]*known
	for j := range ks {
		k, err := c.mustKnow(j, [3]string{"start", "limit", "delta"}[j])
		if err != nil {
			return err
		}
		if k.len() != 1 {
			return fmt.Errorf("Range needs scalar start, limit and delta")
		}
		ks[j] = k
	}
	if ks[1].symbolic() && !ks[0].symbolic() && !ks[2].symbolic() {
		return rangeTo(c, ks[0], ks[1].dim(0), ks[2])
	}
	if ks[0].symbolic() || ks[1].symbolic() || ks[2].symbolic() {
		return fmt.Errorf("Range from %s to %s by %s: only the limit may be a size known at run time", ks[0].dim(0), ks[1].dim(0), ks[2].dim(0))
	}
	start, limit, delta := ks[0].value(0), ks[1].value(0), ks[2].value(0)
	if delta == 0 {
		return fmt.Errorf("Range with delta 0")
	}
	n := math.Max(math.Ceil((limit-start)/delta), 0)
	if n > 1<<24 {
		return fmt.Errorf("Range of %v elements is too long", n)
	}
	if ks[0].dtype.IsInt() {
		out := make([]int64, int(n))
		for j := range out {
			out[j] = ks[0].i[0] + int64(j)*ks[2].i[0]
		}
		c.setKnown(0, newInts(ks[0].dtype, []int64{int64(n)}, out))
		return nil
	}
	out := make([]float64, int(n))
	for j := range out {
		out[j] = start + float64(j)*delta
	}
	k, err := newFloats(ast.Float64, []int64{int64(n)}, out).toDType(ks[0].dtype)
	if err != nil {
		return err
	}
	c.setKnown(0, k)
	return nil
}

// rangeTo is a Range to a limit known at run time (a sequence's length):
// start + iota over limit - start elements, with a delta of 1.
func rangeTo(c *ctx, start *known, limit fusion.Dim, delta *known) error {
	if !start.dtype.IsInt() || delta.value(0) != 1 {
		return fmt.Errorf("Range to %s needs integer bounds and a delta of 1", limit)
	}
	n, err := limit.Sub(fusion.Const(start.i[0]))
	if err != nil {
		return err
	}
	if start.i[0] == 0 {
		idx, err := iotaOf(c, []fusion.Dim{n}, 0, start.dtype, c.outName(0))
		if err != nil {
			return err
		}
		c.set(0, idx)
		return nil
	}
	idx, err := iotaOf(c, []fusion.Dim{n}, 0, start.dtype, c.tmp("iota"))
	if err != nil {
		return err
	}
	s, err := c.scalar(start.dtype, float64(start.i[0]))
	if err != nil {
		return err
	}
	return c.result("add", fusion.Attrs{}, idx, s)
}

func convPad(c *ctx) error {
	in, err := c.dims(0)
	if err != nil {
		return err
	}
	mode, err := c.attrString("mode", "constant")
	if err != nil {
		return err
	}
	if mode != "constant" {
		return fmt.Errorf("pad mode %q is not supported (only constant)", mode)
	}
	var pads []int64
	value := 0.0
	if c.opset() < 11 {
		if pads, _, err = c.attrInts("pads"); err != nil {
			return err
		}
		if value, err = c.attrFloat("value", 0); err != nil {
			return err
		}
	} else {
		if pads, err = c.ints(1, "pads"); err != nil {
			return err
		}
		if c.has(2) {
			k, err := c.mustKnow(2, "constant_value")
			if err != nil {
				return err
			}
			if k.len() != 1 {
				return fmt.Errorf("constant_value has %d elements, not 1", k.len())
			}
			value = k.value(0)
		}
	}
	if c.has(3) {
		axes, err := c.ints(3, "axes")
		if err != nil {
			return err
		}
		if len(pads) != 2*len(axes) {
			return fmt.Errorf("pads %v do not fit axes %v", pads, axes)
		}
		full := make([]int64, 2*len(in))
		for j, a := range axes {
			ax, err := axisOf(a, len(in), "axis")
			if err != nil {
				return err
			}
			full[ax], full[len(in)+ax] = pads[j], pads[len(axes)+j]
		}
		pads = full
	}
	if len(pads) != 2*len(in) {
		return fmt.Errorf("pads %v do not fit rank %d", pads, len(in))
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(pads, func(p int64) bool { return p != 0 }) {
		c.set(0, x)
		return nil
	}
	attrs := fusion.Attrs{Pads: pads}
	if value != 0 {
		attrs.Value = &value
	}
	return c.result("pad", attrs, x)
}

// iotaOf returns a tensor of the given shape holding each element's index
// along axis, of type dt.
func iotaOf(c *ctx, shape []fusion.Dim, axis int, dt ast.DType, name string) (*fusion.Tensor, error) {
	zero, err := c.scalar(ast.Int64, 0)
	if err != nil {
		return nil, err
	}
	like, err := c.op(c.tmp("like"), "broadcast_to", fusion.Attrs{Shape: jsonDims(shape)}, zero)
	if err != nil {
		return nil, err
	}
	attrs := fusion.Attrs{DType: dt.String()}
	if axis != 0 {
		attrs.Axis = &axis
	}
	return c.op(name, "iota", attrs, like)
}

// triluSymbolic masks a triangle of axes whose sizes are known only at
// run time: the column index minus the row index, against k.
func triluSymbolic(c *ctx, x *fusion.Tensor, xs fusion.Shape, k int64, upper bool) error {
	r, err := iotaOf(c, xs[len(xs)-2:], 0, ast.Int64, c.tmp("row"))
	if err != nil {
		return err
	}
	cl, err := iotaOf(c, xs[len(xs)-2:], 1, ast.Int64, c.tmp("col"))
	if err != nil {
		return err
	}
	diff, err := c.op(c.tmp("diag"), "sub", fusion.Attrs{}, cl, r)
	if err != nil {
		return err
	}
	kt, err := c.scalar(ast.Int64, float64(k))
	if err != nil {
		return err
	}
	cmp := "less_equal"
	if upper {
		cmp = "greater_equal"
	}
	mask, err := c.op(c.tmp("mask"), cmp, fusion.Attrs{}, diff, kt)
	if err != nil {
		return err
	}
	xz, err := c.scalar(x.DType, 0)
	if err != nil {
		return err
	}
	return c.result("where", fusion.Attrs{}, mask, x, xz)
}

// convTile repeats each axis: axis a of size d, repeated r times, is a
// new axis of size r before it, broadcast, then merged with it.
func convTile(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	reps, err := c.ints(1, "repeats")
	if err != nil {
		return err
	}
	in := c.shapeOf(x)
	if len(reps) != len(in) {
		return fmt.Errorf("repeats %v do not fit rank %d", reps, len(in))
	}
	var split, bcast, out []fusion.Dim
	for a, d := range in {
		r := reps[a]
		if r < 0 || r > 1<<20 {
			return fmt.Errorf("repeats %v: %d is out of range", reps, r)
		}
		rd := fusion.Const(r)
		split = append(split, fusion.Const(1), d)
		bcast = append(bcast, rd, d)
		m, err := rd.Mul(d)
		if err != nil {
			return err
		}
		out = append(out, m)
	}
	s, err := reshapeDims(c, x, split, c.tmp("split"))
	if err != nil {
		return err
	}
	b, err := c.op(c.tmp("tiled"), "broadcast_to", fusion.Attrs{Shape: jsonDims(bcast)}, s)
	if err != nil {
		return err
	}
	return c.result("reshape", fusion.Attrs{Shape: jsonDims(out)}, b)
}

// convTrilu keeps the lower (upper = 0) or upper triangle of the last two
// axes, from diagonal k, and zeroes the rest: a constant mask of the two
// axes, which must be of constant size.
func convTrilu(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	upper, err := c.attrInt("upper", 1)
	if err != nil {
		return err
	}
	k := int64(0)
	if c.has(1) {
		ks, err := c.ints(1, "k")
		if err != nil {
			return err
		}
		if len(ks) != 1 {
			return fmt.Errorf("k has %d elements, not 1", len(ks))
		}
		k = ks[0]
	}
	xs := c.shapeOf(x)
	if len(xs) < 2 {
		return fmt.Errorf("Trilu needs a tensor of rank 2 or more, got %s", xs)
	}
	rows, ok1 := xs[len(xs)-2].IsConst()
	cols, ok2 := xs[len(xs)-1].IsConst()
	if !ok1 || !ok2 {
		return triluSymbolic(c, x, xs, k, upper != 0)
	}
	if rows*cols > 1<<24 {
		return fmt.Errorf("a Trilu of %d x %d is too large", rows, cols)
	}
	mask := make([]float64, rows*cols)
	for i := int64(0); i < rows; i++ {
		for j := int64(0); j < cols; j++ {
			if (upper != 0 && j-i >= k) || (upper == 0 && j-i <= k) {
				mask[i*cols+j] = 1
			}
		}
	}
	m, err := c.im.tensorOf(&value{k: newFloats(ast.Bool, []int64{rows, cols}, mask)}, c.tmp("mask"))
	if err != nil {
		return err
	}
	zero, err := c.scalar(x.DType, 0)
	if err != nil {
		return err
	}
	return c.result("where", fusion.Attrs{}, m, x, zero)
}

// convScatterND is ONNX's ScatterND without a reduction: data with the
// slices indices name replaced by updates. loom computes it on known
// values (Swin's attention masks, built from sizes); on tensors known only
// at run time it is refused.
func convScatterND(c *ctx) error {
	if red, err := c.attrString("reduction", "none"); err != nil {
		return err
	} else if red != "none" {
		return fmt.Errorf("ScatterND with reduction %q is not supported", red)
	}
	data, idx, upd := c.known(0), c.known(1), c.known(2)
	for j, k := range []*known{data, idx, upd} {
		if k == nil || k.symbolic() {
			return fmt.Errorf("ScatterND of tensors computed at run time is not supported (input %d, %s, is); loom computes it on known values only", j, []string{"data", "indices", "updates"}[j])
		}
	}
	if !idx.dtype.IsInt() || data.dtype != upd.dtype || len(idx.shape) == 0 {
		return fmt.Errorf("ScatterND takes integer indices and updates of the data's type, got %s indices, %s data, %s updates", idx.dtype, data.dtype, upd.dtype)
	}
	k := int(idx.shape[len(idx.shape)-1])
	if k < 1 || k > len(data.shape) {
		return fmt.Errorf("ScatterND: the indices' last dimension is %d for data of rank %d", k, len(data.shape))
	}
	// updates' shape is indices.shape[:-1] + data.shape[k:].
	want := append(slices.Clone(idx.shape[:len(idx.shape)-1]), data.shape[k:]...)
	if !slices.Equal(want, upd.shape) {
		return fmt.Errorf("ScatterND: updates of shape %v, want %v for indices %v and data %v", upd.shape, want, idx.shape, data.shape)
	}
	slice := elems(data.shape[k:])
	st := strides(data.shape)
	out := &known{dtype: data.dtype, shape: data.shape, f: slices.Clone(data.f), i: slices.Clone(data.i)}
	for u := int64(0); u*int64(k) < int64(len(idx.i)); u++ {
		at := int64(0)
		for d := range k {
			j := idx.i[u*int64(k)+int64(d)]
			if j < 0 {
				j += data.shape[d]
			}
			if j < 0 || j >= data.shape[d] {
				return fmt.Errorf("ScatterND: index %d out of range for dimension %d of size %d", idx.i[u*int64(k)+int64(d)], d, data.shape[d])
			}
			at += j * st[d]
		}
		if data.dtype.IsInt() {
			copy(out.i[at:at+slice], upd.i[u*slice:(u+1)*slice])
		} else {
			copy(out.f[at:at+slice], upd.f[u*slice:(u+1)*slice])
		}
	}
	c.setKnown(0, out)
	return nil
}
