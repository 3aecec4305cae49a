package onnx

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/fusion"
)

// convConvTranspose is the convolution whose gradient ConvTranspose is,
// written as one: the input with stride-1 zeros between its elements
// (each element followed by that many zeros along every spatial axis, the
// trailing ones sliced off), padded by dilation*(kernel-1) minus the pads
// (a negative pad is a slice), convolved at stride 1 with the weights
// flipped along every spatial axis and their two channel axes swapped
// within each group. The weights must be known at import.
func convConvTranspose(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	w, err := c.mustKnow(1, "weights")
	if err != nil {
		return err
	}
	xs := c.shapeOf(x)
	s := len(xs) - 2
	if s < 1 || s > 3 || len(w.shape) != len(xs) {
		return fmt.Errorf("a transposed convolution of an input %s with weights %v: loom has 1-, 2- and 3-D ones", xs, w.shape)
	}
	group, err := c.attrInt("group", 1)
	if err != nil {
		return err
	}
	cin, coutPer := w.shape[0], w.shape[1]
	if group < 1 || cin%group != 0 {
		return fmt.Errorf("weights %v do not split into %d groups", w.shape, group)
	}
	kernel := w.shape[2:]
	if ks, given, err := c.attrInts("kernel_shape"); err != nil {
		return err
	} else if given && !slices.Equal(ks, kernel) {
		return fmt.Errorf("kernel_shape %v does not match the weights %v", ks, w.shape)
	}
	stride, err := c.attrIntsOr("strides", 1, s)
	if err != nil {
		return err
	}
	dilations, err := c.attrIntsOr("dilations", 1, s)
	if err != nil {
		return err
	}
	pads, err := c.attrIntsOr("pads", 0, 2*s)
	if err != nil {
		return err
	}
	outPad, err := c.attrIntsOr("output_padding", 0, s)
	if err != nil {
		return err
	}
	if auto, err := c.attrString("auto_pad", "NOTSET"); err != nil || (auto != "NOTSET" && auto != "VALID") {
		return fmt.Errorf("auto_pad %q is not supported for ConvTranspose (give pads)", auto)
	}
	if _, given, _ := c.attrInts("output_shape"); given {
		return fmt.Errorf("output_shape is not supported for ConvTranspose (give pads and output_padding)")
	}
	for d := 0; d < s; d++ {
		if stride[d] < 1 || dilations[d] < 1 || outPad[d] < 0 || outPad[d] >= max(stride[d], dilations[d]) {
			return fmt.Errorf("strides %v, dilations %v, output_padding %v are out of range", stride, dilations, outPad)
		}
	}
	// Zeros between the elements.
	up := x
	if slices.ContainsFunc(stride, func(v int64) bool { return v > 1 }) {
		var split, padded, merged []fusion.Dim
		split = append(split, xs[0], xs[1])
		padded, merged = slices.Clone(split), slices.Clone(split)
		padAttr := make([]int64, 2*(2+2*s))
		for d := 0; d < s; d++ {
			split = append(split, xs[2+d], fusion.Const(1))
			padded = append(padded, xs[2+d], fusion.Const(stride[d]))
			m, err := xs[2+d].Scale(stride[d])
			if err != nil {
				return err
			}
			merged = append(merged, m)
			padAttr[(2+2*s)+2+2*d+1] = stride[d] - 1 // the end of the new axis
		}
		if up, err = reshapeDims(c, x, split, c.tmp("split")); err != nil {
			return err
		}
		if up, err = c.op(c.tmp("zeros"), "pad", fusion.Attrs{Pads: padAttr}, up); err != nil {
			return err
		}
		if up, err = reshapeDims(c, up, merged, c.tmp("dilated")); err != nil {
			return err
		}
		var attrs fusion.Attrs
		for d := 0; d < s; d++ {
			if stride[d] > 1 {
				n, ok := xs[2+d].IsConst()
				if !ok {
					return fmt.Errorf("a strided ConvTranspose needs constant spatial sizes, got %s", xs)
				}
				attrs.Axes = append(attrs.Axes, 2+d)
				attrs.Starts = append(attrs.Starts, 0)
				attrs.Ends = append(attrs.Ends, (n-1)*stride[d]+1)
				attrs.Steps = append(attrs.Steps, 1)
			}
		}
		if up, err = c.op(c.tmp("trimmed"), "slice", attrs, up); err != nil {
			return err
		}
	}
	// The border: dilation*(kernel-1) - pad on each side, plus
	// output_padding at the end; negative amounts are cut off.
	border := make([]int64, 2*(2+s))
	var cut fusion.Attrs
	upShape := c.shapeOf(up)
	for d := 0; d < s; d++ {
		full := dilations[d] * (kernel[d] - 1)
		begin, end := full-pads[d], full-pads[s+d]+outPad[d]
		border[2+d], border[2+s+2+d] = max(begin, 0), max(end, 0)
		if begin < 0 || end < 0 {
			n, ok := upShape[2+d].IsConst()
			if !ok {
				return fmt.Errorf("pads %v larger than the kernel need constant spatial sizes", pads)
			}
			cut.Axes = append(cut.Axes, 2+d)
			cut.Starts = append(cut.Starts, max(-begin, 0))
			cut.Ends = append(cut.Ends, n+max(begin, 0)+max(end, 0)-max(-end, 0))
			cut.Steps = append(cut.Steps, 1)
		}
	}
	if slices.ContainsFunc(border, func(v int64) bool { return v > 0 }) {
		if up, err = c.op(c.tmp("border"), "pad", fusion.Attrs{Pads: border}, up); err != nil {
			return err
		}
	}
	if cut.Axes != nil {
		if up, err = c.op(c.tmp("cut"), "slice", cut, up); err != nil {
			return err
		}
	}
	// The weights: [cin, cout/group, k...] -> [cout, cin/group, k...],
	// flipped.
	cinPer := cin / group
	shape := append([]int64{group * coutPer, cinPer}, kernel...)
	inner := elems(kernel)
	ws := strides(w.shape)
	flipped := w.gatherElems(shape, int(elems(shape)), func(e int) int {
		o := int64(e) / (cinPer * inner) // the output channel
		rest := int64(e) % (cinPer * inner)
		i, tap := rest/inner, rest%inner
		g, op := o/coutPer, o%coutPer
		src := (g*cinPer+i)*ws[0] + op*ws[1]
		// Flip the tap along every spatial axis.
		for d := s - 1; d >= 0; d-- {
			k := tap % kernel[d]
			tap /= kernel[d]
			src += (kernel[d] - 1 - k) * ws[2+d]
		}
		return int(src)
	})
	wt, err := c.im.tensorOf(&value{k: flipped}, c.n.GetInput()[1]+"_flipped")
	if err != nil {
		return err
	}
	return convolve(c, s, fusion.Attrs{Dilations: dilations}, group, up, wt)
}
