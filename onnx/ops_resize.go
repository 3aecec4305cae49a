package onnx

import (
	"fmt"
	"math"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// convResize resizes axis by axis (the modes loom imports are separable):
// each resized axis, of constant size, is a gather of the source indices
// its output elements read; linear mode gathers the two neighbours and
// mixes them with constant weights. Modes: nearest (every nearest_mode)
// and linear, with the coordinate transformations half_pixel,
// pytorch_half_pixel, align_corners and asymmetric.
func convResize(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	xs := c.shapeOf(x)
	mode, err := c.attrString("mode", "nearest")
	if err != nil {
		return err
	}
	coord, err := c.attrString("coordinate_transformation_mode", "half_pixel")
	if err != nil {
		return err
	}
	nearest, err := c.attrString("nearest_mode", "round_prefer_floor")
	if err != nil {
		return err
	}
	if c.opset() < 11 {
		coord = "asymmetric"
		nearest = "floor"
	}
	if mode != "nearest" && mode != "linear" {
		return fmt.Errorf("mode %q is not supported (nearest and linear are)", mode)
	}
	switch coord {
	case "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric":
	default:
		return fmt.Errorf("coordinate_transformation_mode %q is not supported", coord)
	}
	if a, err := c.attrInt("exclude_outside", 0); err != nil || a != 0 {
		return fmt.Errorf("exclude_outside is not supported")
	}
	if a, err := c.attrInt("antialias", 0); err != nil || a != 0 {
		return fmt.Errorf("antialias is not supported")
	}
	if p, err := c.attrString("keep_aspect_ratio_policy", "stretch"); err != nil || p != "stretch" {
		return fmt.Errorf("keep_aspect_ratio_policy %q is not supported (stretch is)", p)
	}
	if c.nin() > 4 || c.attr("axes") != nil {
		return fmt.Errorf("Resize with axes is not supported")
	}
	// Output sizes: from sizes, else from scales.
	in := make([]int64, len(xs))
	for a, d := range xs {
		v, ok := d.IsConst()
		if !ok {
			return fmt.Errorf("Resize needs constant sizes, got %s", xs)
		}
		in[a] = v
	}
	out := make([]int64, len(xs))
	scales := make([]float64, len(xs))
	scalesAt, sizesAt := 2, 3
	if c.opset() < 11 {
		scalesAt, sizesAt = 1, -1
	}
	if sizesAt > 0 && c.has(sizesAt) {
		sz, err := c.ints(sizesAt, "sizes")
		if err != nil {
			return err
		}
		if len(sz) != len(xs) {
			return fmt.Errorf("sizes %v do not fit rank %d", sz, len(xs))
		}
		for a := range sz {
			out[a] = sz[a]
			scales[a] = float64(sz[a]) / float64(in[a])
		}
	} else {
		k, err := c.mustKnow(scalesAt, "scales")
		if err != nil {
			return err
		}
		if k.len() != len(xs) || k.dtype.IsInt() {
			return fmt.Errorf("scales %v do not fit rank %d", k.f, len(xs))
		}
		for a := range xs {
			scales[a] = k.f[a]
			out[a] = int64(math.Floor(float64(in[a]) * scales[a]))
		}
	}
	y := x
	for a := range xs {
		if out[a] == in[a] && scales[a] == 1 {
			continue
		}
		if out[a] < 0 || out[a] > 1<<20 || scales[a] <= 0 {
			return fmt.Errorf("axis %d: output size %d (scale %v) is out of range", a, out[a], scales[a])
		}
		if in[a] == 0 {
			return fmt.Errorf("axis %d is empty", a)
		}
		src := func(i int64) float64 {
			switch coord {
			case "asymmetric":
				return float64(i) / scales[a]
			case "align_corners":
				if out[a] == 1 {
					return 0
				}
				return float64(i) * float64(in[a]-1) / float64(out[a]-1)
			case "pytorch_half_pixel":
				if out[a] == 1 {
					return 0
				}
			}
			return (float64(i)+0.5)/scales[a] - 0.5
		}
		clampIdx := func(v int64) int64 { return max(0, min(v, in[a]-1)) }
		last := a == len(xs)-1
		name := c.tmp(fmt.Sprintf("axis%d", a))
		if mode == "nearest" {
			idx := make([]int64, out[a])
			for i := range idx {
				s := src(int64(i))
				var v float64
				switch nearest {
				case "floor":
					v = math.Floor(s)
				case "ceil":
					v = math.Ceil(s)
				case "round_prefer_ceil":
					v = math.Floor(s + 0.5)
				default: // round_prefer_floor
					v = math.Ceil(s - 0.5)
				}
				idx[i] = clampIdx(int64(v))
			}
			if last && allResized(in, out, scales, a) {
				name = c.outName(0)
			}
			if y, err = gatherAxis(c, y, a, idx, name); err != nil {
				return err
			}
			continue
		}
		lo, hi := make([]int64, out[a]), make([]int64, out[a])
		frac := make([]float64, out[a])
		for i := range lo {
			s := max(src(int64(i)), 0)
			f := math.Floor(s)
			lo[i], hi[i] = clampIdx(int64(f)), clampIdx(int64(f)+1)
			frac[i] = s - f
			if lo[i] == in[a]-1 {
				frac[i] = 0
			}
		}
		a0, err := gatherAxis(c, y, a, lo, c.tmp("lo"))
		if err != nil {
			return err
		}
		a1, err := gatherAxis(c, y, a, hi, c.tmp("hi"))
		if err != nil {
			return err
		}
		// y = a0 + (a1 - a0) * frac, frac along axis a.
		shape := make([]int64, len(xs))
		for k := range shape {
			shape[k] = 1
		}
		shape[a] = out[a]
		fk, err := newFloats(ast.Float64, shape, frac).toDType(x.DType)
		if err != nil {
			return err
		}
		ft, err := c.im.tensorOf(&value{k: fk}, c.tmp("frac"))
		if err != nil {
			return err
		}
		d, err := c.op(c.tmp("diff"), "sub", fusion.Attrs{}, a1, a0)
		if err != nil {
			return err
		}
		if d, err = c.op(c.tmp("step"), "mul", fusion.Attrs{}, d, ft); err != nil {
			return err
		}
		if y, err = c.op(name, "add", fusion.Attrs{}, a0, d); err != nil {
			return err
		}
	}
	if y == x {
		return c.result("identity", fusion.Attrs{}, x)
	}
	c.set(0, y)
	return nil
}

// allResized reports whether axis a is the last one Resize changes.
func allResized(in, out []int64, scales []float64, a int) bool {
	for k := a + 1; k < len(in); k++ {
		if out[k] != in[k] || scales[k] != 1 {
			return false
		}
	}
	return true
}

// gatherAxis gathers x along axis a at constant indices.
func gatherAxis(c *ctx, x *fusion.Tensor, a int, idx []int64, name string) (*fusion.Tensor, error) {
	it, err := c.im.tensorOf(&value{k: newInts(ast.Int64, []int64{int64(len(idx))}, idx)}, c.tmp("idx"))
	if err != nil {
		return nil, err
	}
	attrs := fusion.Attrs{}
	if a != 0 {
		attrs.Axis = &a
	}
	return c.op(name, "gather", attrs, x, it)
}
