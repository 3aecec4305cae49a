package onnx

import (
	"fmt"
	"math"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// unary returns the converter of an element-wise operator loom has under
// another name; on a known input it computes the result here.
func unary(op string) func(c *ctx) error {
	return func(c *ctx) error {
		if done, err := unaryKnown(c); done || err != nil {
			return err
		}
		x, err := c.tensor(0)
		if err != nil {
			return err
		}
		y, err := c.op(c.outName(0), op, fusion.Attrs{}, x)
		if err != nil {
			return err
		}
		c.set(0, y)
		return nil
	}
}

// passThrough makes output 0 input 0 (Identity; Dropout at inference).
func passThrough(c *ctx) error {
	if c.n.GetOpType() == "Dropout" && c.has(2) {
		// Training mode drops nothing at a ratio of 0 (Swin's attention
		// dropout, exported with training_mode true and ratio 0).
		training := c.known(2)
		ratio := c.known(1)
		dropsNone := c.has(1) && ratio != nil && ratio.len() == 1 && ratio.value(0) == 0
		if (training == nil || training.value(0) != 0) && !dropsNone {
			return fmt.Errorf("Dropout in training mode is not supported (unless its ratio is 0)")
		}
	}
	if len(c.n.GetOutput()) > 1 && c.n.GetOutput()[1] != "" && c.im.read[c.n.GetOutput()[1]] {
		return fmt.Errorf("Dropout's mask output is not supported (it is read)")
	}
	if _, err := c.value(0); err != nil {
		return err
	}
	c.alias(0, 0)
	return nil
}

// binaryOps are ONNX's two-input element-wise operators: loom's name and
// the arithmetic on known values (nil where only graph tensors go).
var binaryOps = map[string]struct {
	op   string
	f    func(a, b float64) float64
	dims func(a, b fusion.Dim) (fusion.Dim, bool)
}{
	"Add": {"add", func(a, b float64) float64 { return a + b }, func(a, b fusion.Dim) (fusion.Dim, bool) {
		d, err := a.Add(b)
		return d, err == nil
	}},
	"Sub": {"sub", func(a, b float64) float64 { return a - b }, func(a, b fusion.Dim) (fusion.Dim, bool) {
		d, err := a.Sub(b)
		return d, err == nil
	}},
	"Mul": {"mul", func(a, b float64) float64 { return a * b }, func(a, b fusion.Dim) (fusion.Dim, bool) {
		d, err := a.Mul(b)
		return d, err == nil
	}},
	"Div": {"div", func(a, b float64) float64 { return a / b }, func(a, b fusion.Dim) (fusion.Dim, bool) {
		return a.DivExact(b)
	}},
	"Pow":            {"pow", math.Pow, nil},
	"Equal":          {"equal", cmp(func(a, b float64) bool { return a == b }), eqDims},
	"Less":           {"less", cmp(func(a, b float64) bool { return a < b }), nil},
	"LessOrEqual":    {"less_equal", cmp(func(a, b float64) bool { return a <= b }), nil},
	"Greater":        {"greater", cmp(func(a, b float64) bool { return a > b }), nil},
	"GreaterOrEqual": {"greater_equal", cmp(func(a, b float64) bool { return a >= b }), nil},
	"Max":            {"max", math.Max, nil},
	"Min":            {"min", math.Min, nil},
}

func cmp(p func(a, b float64) bool) func(a, b float64) float64 {
	return func(a, b float64) float64 {
		if p(a, b) {
			return 1
		}
		return 0
	}
}

// eqDims compares two sizes where that is decidable.
func eqDims(a, b fusion.Dim) (fusion.Dim, bool) {
	if a.Equal(b) {
		return fusion.Const(1), true
	}
	_, ac := a.IsConst()
	_, bc := b.IsConst()
	if ac && bc {
		return fusion.Const(0), true
	}
	return fusion.Dim{}, false
}

func isCompare(op string) bool {
	switch op {
	case "equal", "less", "less_equal", "greater", "greater_equal":
		return true
	}
	return false
}

// foldLimit bounds the elements of a known value computed here; larger
// ones are left to the graph (and fusion's constant folding).
const foldLimit = 1 << 16

// broadcastShapes is numpy's broadcast of constant shapes.
func broadcastShapes(a, b []int64) ([]int64, bool) {
	r := max(len(a), len(b))
	out := make([]int64, r)
	for k := 0; k < r; k++ {
		x, y := int64(1), int64(1)
		if j := k - (r - len(a)); j >= 0 {
			x = a[j]
		}
		if j := k - (r - len(b)); j >= 0 {
			y = b[j]
		}
		switch {
		case x == y || y == 1:
			out[k] = x
		case x == 1:
			out[k] = y
		default:
			return nil, false
		}
	}
	return out, true
}

// broadcastIndex maps element e of the broadcast shape to element of a.
func broadcastIndex(out, a []int64) func(e int) int {
	os, as := strides(out), strides(a)
	off := len(out) - len(a)
	return func(e int) int {
		src, rest := int64(0), int64(e)
		for k := range out {
			idx := rest / os[k]
			rest %= os[k]
			if j := k - off; j >= 0 && a[j] != 1 {
				src += idx * as[j]
			}
		}
		return int(src)
	}
}

// binaryKnown computes a binary operator on known values; ok is false
// when it cannot (too large, or sizes it cannot compare).
func binaryKnown(opType string, a, b *known) (*known, bool) {
	spec := binaryOps[opType]
	shape, ok := broadcastShapes(a.shape, b.shape)
	if !ok || elems(shape) > foldLimit || a.dtype != b.dtype {
		return nil, false
	}
	n := int(elems(shape))
	ia, ib := broadcastIndex(shape, a.shape), broadcastIndex(shape, b.shape)
	outType := a.dtype
	if isCompare(spec.op) {
		outType = ast.Bool
	}
	if a.symbolic() || b.symbolic() {
		if spec.dims == nil {
			return nil, false
		}
		d := make([]fusion.Dim, n)
		for e := range d {
			v, ok := spec.dims(a.dim(ia(e)), b.dim(ib(e)))
			if !ok {
				return nil, false
			}
			d[e] = v
		}
		if outType == ast.Bool {
			f := make([]float64, n)
			for e := range f {
				v, _ := d[e].IsConst()
				f[e] = float64(v)
			}
			return newFloats(ast.Bool, shape, f), true
		}
		return newDims(outType, shape, d), true
	}
	if a.dtype.IsInt() && outType.IsInt() {
		i := make([]int64, n)
		for e := range i {
			x, y := a.i[ia(e)], b.i[ib(e)]
			switch spec.op {
			case "add":
				i[e] = x + y
			case "sub":
				i[e] = x - y
			case "mul":
				i[e] = x * y
			case "div":
				if y == 0 {
					return nil, false
				}
				i[e] = x / y // ONNX's integer Div truncates
			case "max":
				i[e] = max(x, y)
			case "min":
				i[e] = min(x, y)
			default:
				return nil, false
			}
		}
		return newInts(outType, shape, i), true
	}
	f := make([]float64, n)
	for e := range f {
		f[e] = spec.f(a.value(ia(e)), b.value(ib(e)))
	}
	k, err := newFloats(ast.Float64, shape, f).toDType(outType)
	return k, err == nil
}

func convBinary(c *ctx) error {
	spec := binaryOps[c.n.GetOpType()]
	if c.nin() != 2 && spec.op != "max" && spec.op != "min" {
		return fmt.Errorf("%s takes 2 inputs, got %d", c.n.GetOpType(), c.nin())
	}
	if a, b := c.known(0), c.known(1); a != nil && b != nil && c.nin() == 2 {
		if k, ok := binaryKnown(c.n.GetOpType(), a, b); ok {
			c.setKnown(0, k)
			return nil
		}
	}
	if spec.op == "pow" {
		r0, err := c.rank(0)
		if err != nil {
			return err
		}
		if k := c.known(1); k != nil && k.len() == 1 && !k.dtype.IsInt() && len(k.shape) <= r0 {
			switch k.value(0) {
			case 1:
				c.alias(0, 0)
				return nil
			case 2, 3: // x*x (and *x): exact, and faster than pow
				x, err := c.tensor(0)
				if err != nil {
					return err
				}
				name := c.outName(0)
				if k.value(0) == 3 {
					name = c.tmp("sq")
				}
				y, err := c.op(name, "mul", fusion.Attrs{}, x, x)
				if err == nil && k.value(0) == 3 {
					y, err = c.op(c.outName(0), "mul", fusion.Attrs{}, y, x)
				}
				if err != nil {
					return err
				}
				c.set(0, y)
				return nil
			case 0.5:
				x, err := c.tensor(0)
				if err != nil {
					return err
				}
				y, err := c.op(c.outName(0), "sqrt", fusion.Attrs{}, x)
				if err != nil {
					return err
				}
				c.set(0, y)
				return nil
			}
		}
	}
	ins, err := c.tensors()
	if err != nil {
		return err
	}
	if len(ins) == 1 {
		c.set(0, ins[0])
		return nil
	}
	if spec.op == "pow" && ins[1].DType != ins[0].DType {
		// ONNX lets the exponent have its own type.
		if ins[1], err = c.op(c.tmp("exp"), "cast", fusion.Attrs{DType: ins[0].DType.String()}, ins[1]); err != nil {
			return err
		}
	}
	// Variadic Max and Min fold left.
	acc := ins[0]
	for j := 1; j < len(ins); j++ {
		name := c.tmp(spec.op)
		if j == len(ins)-1 {
			name = c.outName(0)
		}
		if acc, err = c.op(name, spec.op, fusion.Attrs{}, acc, ins[j]); err != nil {
			return err
		}
	}
	c.set(0, acc)
	return nil
}

// convSum adds its inputs (Sum) or averages them (Mean).
func convSum(c *ctx) error {
	ins, err := c.tensors()
	if err != nil {
		return err
	}
	if len(ins) == 0 {
		return fmt.Errorf("%s needs an input", c.n.GetOpType())
	}
	acc := ins[0]
	mean := c.n.GetOpType() == "Mean"
	for j := 1; j < len(ins); j++ {
		name := c.tmp("sum")
		if j == len(ins)-1 && !mean {
			name = c.outName(0)
		}
		if acc, err = c.op(name, "add", fusion.Attrs{}, acc, ins[j]); err != nil {
			return err
		}
	}
	if mean && len(ins) > 1 {
		n, err := c.scalar(acc.DType, float64(len(ins)))
		if err != nil {
			return err
		}
		if acc, err = c.op(c.outName(0), "div", fusion.Attrs{}, acc, n); err != nil {
			return err
		}
	}
	c.set(0, acc)
	return nil
}

func convWhere(c *ctx) error {
	cond, a, b := c.known(0), c.known(1), c.known(2)
	if cond != nil && a != nil && b != nil && !cond.symbolic() && a.dtype == b.dtype {
		shape, ok := broadcastShapes(cond.shape, a.shape)
		if ok {
			shape, ok = broadcastShapes(shape, b.shape)
		}
		if ok && elems(shape) <= foldLimit {
			n := int(elems(shape))
			ic, ia, ib := broadcastIndex(shape, cond.shape), broadcastIndex(shape, a.shape), broadcastIndex(shape, b.shape)
			pick := func(e int) (*known, int) {
				if cond.value(ic(e)) != 0 {
					return a, ia(e)
				}
				return b, ib(e)
			}
			switch {
			case a.symbolic() || b.symbolic():
				d := make([]fusion.Dim, n)
				for e := range d {
					k, j := pick(e)
					d[e] = k.dim(j)
				}
				c.setKnown(0, newDims(a.dtype, shape, d))
			case a.dtype.IsInt():
				i := make([]int64, n)
				for e := range i {
					k, j := pick(e)
					i[e] = k.i[j]
				}
				c.setKnown(0, newInts(a.dtype, shape, i))
			default:
				f := make([]float64, n)
				for e := range f {
					k, j := pick(e)
					f[e] = k.f[j]
				}
				c.setKnown(0, newFloats(a.dtype, shape, f))
			}
			return nil
		}
	}
	ins, err := c.tensors()
	if err != nil {
		return err
	}
	if len(ins) != 3 {
		return fmt.Errorf("Where takes 3 inputs, got %d", len(ins))
	}
	return c.result("where", fusion.Attrs{}, ins...)
}

func convNot(c *ctx) error {
	if k := c.known(0); k != nil {
		f := make([]float64, k.len())
		for e := range f {
			if k.value(e) == 0 {
				f[e] = 1
			}
		}
		c.setKnown(0, newFloats(ast.Bool, k.shape, f))
		return nil
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	// not x == (int(x) == 0)
	i, err := c.op(c.tmp("int"), "cast", fusion.Attrs{DType: "int32"}, x)
	if err != nil {
		return err
	}
	zero, err := c.scalar(ast.Int32, 0)
	if err != nil {
		return err
	}
	return c.result("equal", fusion.Attrs{}, i, zero)
}

func convCast(c *ctx) error {
	var dt ast.DType
	if c.n.GetOpType() == "CastLike" {
		v, err := c.value(1)
		if err != nil {
			return err
		}
		if v.t != nil {
			dt = v.t.DType
		} else {
			dt = v.k.dtype
		}
	} else {
		to, err := c.attrInt("to", -1)
		if err != nil {
			return err
		}
		var ok bool
		if dt, ok = dtypeOf(int32(to)); !ok {
			return fmt.Errorf("cast to %s, which loom does not support", typeName(int32(to)))
		}
	}
	if k := c.known(0); k != nil {
		out, err := k.toDType(dt)
		if err != nil {
			return err
		}
		c.setKnown(0, out)
		return nil
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	if x.DType == dt {
		c.set(0, x)
		return nil
	}
	return c.result("cast", fusion.Attrs{DType: dt.String()}, x)
}

// affine returns a*x + b, skipping a multiply by 1 and an add of 0.
func affine(c *ctx, x *fusion.Tensor, a, b float64, name string) (*fusion.Tensor, error) {
	y := x
	if a != 1 {
		s, err := c.scalar(x.DType, a)
		if err != nil {
			return nil, err
		}
		out := c.tmp("scaled")
		if b == 0 {
			out = name
		}
		if y, err = c.op(out, "mul", fusion.Attrs{}, y, s); err != nil {
			return nil, err
		}
	}
	if b != 0 {
		s, err := c.scalar(x.DType, b)
		if err != nil {
			return nil, err
		}
		if y, err = c.op(name, "add", fusion.Attrs{}, y, s); err != nil {
			return nil, err
		}
	}
	return y, nil
}

// clamp returns min(max(x, lo), hi), either bound absent when nil.
func clamp(c *ctx, x *fusion.Tensor, lo, hi *float64, name string) (*fusion.Tensor, error) {
	y := x
	if lo != nil {
		l, err := c.scalar(x.DType, *lo)
		if err != nil {
			return nil, err
		}
		out := c.tmp("lo")
		if hi == nil {
			out = name
		}
		if *lo == 0 && x.DType.IsFloat() {
			y, err = c.op(out, "relu", fusion.Attrs{}, y)
		} else {
			y, err = c.op(out, "max", fusion.Attrs{}, y, l)
		}
		if err != nil {
			return nil, err
		}
	}
	if hi != nil {
		h, err := c.scalar(x.DType, *hi)
		if err != nil {
			return nil, err
		}
		if y, err = c.op(name, "min", fusion.Attrs{}, y, h); err != nil {
			return nil, err
		}
	}
	if y == x {
		return c.op(name, "identity", fusion.Attrs{}, x)
	}
	return y, nil
}

func convClip(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	var lo, hi *float64
	if c.opset() < 11 {
		if a := c.attr("min"); a != nil {
			v := float64(a.GetF())
			lo = &v
		}
		if a := c.attr("max"); a != nil {
			v := float64(a.GetF())
			hi = &v
		}
	} else {
		for j, p := range []**float64{&lo, &hi} {
			if !c.has(j + 1) {
				continue
			}
			k, err := c.mustKnow(j+1, [2]string{"min", "max"}[j])
			if err != nil {
				return err
			}
			if k.len() != 1 {
				return fmt.Errorf("Clip's %s has %d elements, not 1", [2]string{"min", "max"}[j], k.len())
			}
			v := k.value(0)
			*p = &v
		}
	}
	y, err := clamp(c, x, lo, hi, c.outName(0))
	if err != nil {
		return err
	}
	c.set(0, y)
	return nil
}

func convReciprocal(c *ctx) error {
	if done, err := unaryKnown(c); done || err != nil {
		return err
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	one, err := c.scalar(x.DType, 1)
	if err != nil {
		return err
	}
	return c.result("div", fusion.Attrs{}, one, x)
}

func convLeakyRelu(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	alpha, err := c.attrFloat("alpha", 0.01)
	if err != nil {
		return err
	}
	zero, err := c.scalar(x.DType, 0)
	if err != nil {
		return err
	}
	neg, err := c.op(c.tmp("neg"), "less", fusion.Attrs{}, x, zero)
	if err != nil {
		return err
	}
	scaled, err := affine(c, x, alpha, 0, c.tmp("scaled"))
	if err != nil {
		return err
	}
	return c.result("where", fusion.Attrs{}, neg, scaled, x)
}

// convHardSigmoid computes max(0, min(1, alpha*x + beta)); HardSwish is
// x times that with alpha 1/6 and beta 1/2.
func convHardSigmoid(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	alpha, beta := 1.0/6, 0.5
	swish := c.n.GetOpType() == "HardSwish"
	if !swish {
		if alpha, err = c.attrFloat("alpha", 0.2); err != nil {
			return err
		}
		if beta, err = c.attrFloat("beta", 0.5); err != nil {
			return err
		}
	}
	lin, err := affine(c, x, alpha, beta, c.tmp("lin"))
	if err != nil {
		return err
	}
	zero, one := 0.0, 1.0
	name := c.outName(0)
	if swish {
		name = c.tmp("gate")
	}
	y, err := clamp(c, lin, &zero, &one, name)
	if err != nil {
		return err
	}
	if swish {
		if y, err = c.op(c.outName(0), "mul", fusion.Attrs{}, x, y); err != nil {
			return err
		}
	}
	c.set(0, y)
	return nil
}

func convGelu(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	approx, err := c.attrString("approximate", "none")
	if err != nil {
		return err
	}
	attrs := fusion.Attrs{}
	switch approx {
	case "none":
	case "tanh":
		attrs.Approximate = "tanh"
	default:
		return fmt.Errorf("approximate %q is not none or tanh", approx)
	}
	return c.result("gelu", attrs, x)
}

// knownUnary are the element-wise operators computed here on a known
// float input (the exporter's constant arithmetic: an inverse frequency's
// reciprocal, say), in float64 and rounded to the input's type.
var knownUnary = map[string]func(float64) float64{
	"Neg": func(x float64) float64 { return -x }, "Abs": math.Abs, "Sqrt": math.Sqrt, "Exp": math.Exp,
	"Log": math.Log, "Tanh": math.Tanh, "Erf": math.Erf, "Reciprocal": func(x float64) float64 { return 1 / x },
	"Relu":    func(x float64) float64 { return math.Max(x, 0) },
	"Sigmoid": func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
	"Sin":     math.Sin, "Cos": math.Cos, "Tan": math.Tan, "Floor": math.Floor, "Ceil": math.Ceil,
	"Round": math.RoundToEven, // ONNX rounds halves to even
}

// unaryKnown computes node c on its known input; done is false when the
// input is not known (or not a float tensor loom computes this way).
func unaryKnown(c *ctx) (done bool, err error) {
	k, fn := c.known(0), knownUnary[c.n.GetOpType()]
	if k == nil || fn == nil || !k.dtype.IsFloat() || k.len() > knownMathLimit {
		return false, nil
	}
	out := make([]float64, k.len())
	for i, v := range k.f {
		out[i] = fn(v)
	}
	r, err := newFloats(ast.Float64, k.shape, out).toDType(k.dtype)
	if err != nil {
		return false, err
	}
	c.setKnown(0, r)
	return true, nil
}

// knownMathLimit bounds the elements a known value computed here may have;
// a larger one is computed at run time.
const knownMathLimit = 1 << 24

// convTan is sin(x) / cos(x): loom's kernels have no tangent of their own.
func convTan(c *ctx) error {
	if done, err := unaryKnown(c); done || err != nil {
		return err
	}
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	sin, err := c.op(c.tmp("sin"), "sin", fusion.Attrs{}, x)
	if err != nil {
		return err
	}
	cos, err := c.op(c.tmp("cos"), "cos", fusion.Attrs{}, x)
	if err != nil {
		return err
	}
	return c.result("div", fusion.Attrs{}, sin, cos)
}

// convMod is ONNX's Mod: the remainder with the divisor's sign (fmod 0,
// Python's %; integers only) or the dividend's (fmod 1, C's fmod),
// computed here on known values (Swin's window masks, computed from
// sizes); a remainder of tensors known only at run time is refused.
func convMod(c *ctx) error {
	fmod, err := c.attrInt("fmod", 0)
	if err != nil {
		return err
	}
	if fmod != 0 && fmod != 1 {
		return fmt.Errorf("attribute fmod is %d; ONNX allows 0 and 1", fmod)
	}
	if a, b := c.known(0), c.known(1); a != nil && b != nil && !a.symbolic() && !b.symbolic() && a.dtype == b.dtype {
		if fmod == 0 && !a.dtype.IsInt() {
			return fmt.Errorf("Mod with fmod 0 takes integers (fmod 1 for floats), got %s", a.dtype)
		}
		shape, ok := broadcastShapes(a.shape, b.shape)
		if ok && elems(shape) <= foldLimit {
			n := int(elems(shape))
			ia, ib := broadcastIndex(shape, a.shape), broadcastIndex(shape, b.shape)
			if a.dtype.IsInt() {
				i := make([]int64, n)
				for e := range i {
					x, y := a.i[ia(e)], b.i[ib(e)]
					if y == 0 {
						return fmt.Errorf("Mod by zero (element %d of input 1)", ib(e))
					}
					i[e] = x % y // the dividend's sign
					if fmod == 0 && i[e] != 0 && (i[e] < 0) != (y < 0) {
						i[e] += y
					}
				}
				c.setKnown(0, newInts(a.dtype, shape, i))
				return nil
			}
			f := make([]float64, n)
			for e := range f {
				f[e] = math.Mod(a.value(ia(e)), b.value(ib(e)))
			}
			k, err := newFloats(ast.Float64, shape, f).toDType(a.dtype)
			if err != nil {
				return err
			}
			c.setKnown(0, k)
			return nil
		}
	}
	return fmt.Errorf("Mod of tensors computed at run time is not supported; loom computes it on known values (sizes, constants) only")
}
