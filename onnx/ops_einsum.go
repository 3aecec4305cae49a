package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/fusion"
)

// convEinsum imports an Einsum of one or two operands without repeated
// letters in an operand (no diagonals) and without ellipses, as
// transposes, reshapes, a reduction and one batched matmul: the letters of
// both operands and the output are the batch, those of both operands
// only are contracted, those of one operand and the output stay, those of
// one operand only are summed first.
func convEinsum(c *ctx) error {
	eq, err := c.attrString("equation", "")
	if err != nil {
		return err
	}
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, out, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != c.nin() || len(terms) < 1 || len(terms) > 2 {
		return fmt.Errorf("equation %q: loom imports Einsum of one or two operands matching the inputs", eq)
	}
	if strings.Contains(eq, ".") {
		return fmt.Errorf("equation %q: ellipses are not supported", eq)
	}
	count := map[rune]int{}
	for _, t := range terms {
		for _, r := range t {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
				return fmt.Errorf("equation %q: %q is not a letter", eq, r)
			}
			if strings.Count(t, string(r)) > 1 {
				return fmt.Errorf("equation %q: a letter repeated in one operand (a diagonal) is not supported", eq)
			}
			count[r]++
		}
	}
	if !explicit {
		// Implicit output: the letters that occur once, in order.
		var letters []rune
		for r, n := range count {
			if n == 1 {
				letters = append(letters, r)
			}
		}
		slices.Sort(letters)
		out = string(letters)
	}
	for _, r := range out {
		if count[r] == 0 || strings.Count(out, string(r)) > 1 {
			return fmt.Errorf("equation %q: output letter %q is not an input letter, or repeated", eq, r)
		}
	}
	ops := make([]*fusion.Tensor, len(terms))
	sizes := map[rune]fusion.Dim{}
	for j, t := range terms {
		if ops[j], err = c.tensor(j); err != nil {
			return err
		}
		shape := c.shapeOf(ops[j])
		if len(shape) != len(t) {
			return fmt.Errorf("equation %q: operand %d has rank %d, its term %q %d letters", eq, j, len(shape), t, len(t))
		}
		for k, r := range t {
			sizes[r] = shape[k]
		}
	}
	// Sum each operand's letters that occur nowhere else.
	for j, t := range terms {
		var axes []int
		var keep string
		for k, r := range t {
			if count[r] == 1 && !strings.ContainsRune(out, r) {
				axes = append(axes, k)
			} else {
				keep += string(r)
			}
		}
		if axes != nil {
			if ops[j], err = c.op(c.tmp("sum"), "reduce_sum", fusion.Attrs{Axes: axes}, ops[j]); err != nil {
				return err
			}
			terms[j] = keep
		}
	}
	if len(terms) == 1 {
		return permuteTo(c, ops[0], terms[0], out)
	}
	a, b := terms[0], terms[1]
	var batch, left, right, contract string
	for _, r := range a {
		switch {
		case strings.ContainsRune(b, r) && strings.ContainsRune(out, r):
			batch += string(r)
		case strings.ContainsRune(b, r):
			contract += string(r)
		default:
			left += string(r)
		}
	}
	for _, r := range b {
		if !strings.ContainsRune(a, r) {
			right += string(r)
		}
	}
	prod := func(letters string) (fusion.Dim, error) {
		p := fusion.Const(1)
		for _, r := range letters {
			var err error
			if p, err = p.Mul(sizes[r]); err != nil {
				return fusion.Dim{}, err
			}
		}
		return p, nil
	}
	dims := func(letters string) []fusion.Dim {
		var ds []fusion.Dim
		for _, r := range letters {
			ds = append(ds, sizes[r])
		}
		return ds
	}
	B, err := prod(batch)
	if err != nil {
		return err
	}
	M, err := prod(left)
	if err != nil {
		return err
	}
	K, err := prod(contract)
	if err != nil {
		return err
	}
	N, err := prod(right)
	if err != nil {
		return err
	}
	am, err := arrange(c, ops[0], a, batch+left+contract, []fusion.Dim{B, M, K})
	if err != nil {
		return err
	}
	bm, err := arrange(c, ops[1], b, batch+contract+right, []fusion.Dim{B, K, N})
	if err != nil {
		return err
	}
	mm, err := c.op(c.tmp("mm"), "matmul", fusion.Attrs{}, am, bm)
	if err != nil {
		return err
	}
	full := batch + left + right
	res, err := reshapeDims(c, mm, dims(full), c.tmp("unflat"))
	if err != nil {
		return err
	}
	return permuteTo(c, res, full, out)
}

// arrange transposes t (whose axes are the letters from) to the letters
// to, then reshapes it to shape.
func arrange(c *ctx, t *fusion.Tensor, from, to string, shape []fusion.Dim) (*fusion.Tensor, error) {
	perm := make([]int, len(to))
	for k, r := range to {
		perm[k] = strings.IndexRune(from, r)
	}
	var err error
	if !slices.IsSorted(perm) {
		if t, err = c.op(c.tmp("perm"), "transpose", fusion.Attrs{Perm: perm}, t); err != nil {
			return nil, err
		}
	}
	return reshapeDims(c, t, shape, c.tmp("flat"))
}

// permuteTo makes output 0 t, whose axes are the letters from, with its
// axes in the order of to.
func permuteTo(c *ctx, t *fusion.Tensor, from, to string) error {
	perm := make([]int, len(to))
	for k, r := range to {
		perm[k] = strings.IndexRune(from, r)
	}
	if slices.IsSorted(perm) {
		c.set(0, t)
		return nil
	}
	return c.result("transpose", fusion.Attrs{Perm: perm}, t)
}
