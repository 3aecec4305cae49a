package onnx

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// The activations and logic operators loom has no operator of its own
// for, written with the ones it has.

// expm1Where returns where(x > 0, x, alpha*(exp(x) - 1)), named name.
func expm1Where(c *ctx, x *fusion.Tensor, alpha float64, name string) (*fusion.Tensor, error) {
	zero, err := c.scalar(x.DType, 0)
	if err != nil {
		return nil, err
	}
	pos, err := c.op(c.tmp("pos"), "greater", fusion.Attrs{}, x, zero)
	if err != nil {
		return nil, err
	}
	e, err := c.op(c.tmp("exp"), "exp", fusion.Attrs{}, x)
	if err != nil {
		return nil, err
	}
	neg, err := affine(c, e, alpha, -alpha, c.tmp("neg"))
	if err != nil {
		return nil, err
	}
	return c.op(name, "where", fusion.Attrs{}, pos, x, neg)
}

func convElu(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	alpha, err := c.attrFloat("alpha", 1)
	if err != nil {
		return err
	}
	y, err := expm1Where(c, x, alpha, c.outName(0))
	if err != nil {
		return err
	}
	c.set(0, y)
	return nil
}

func convSelu(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	alpha, err := c.attrFloat("alpha", 1.67326319217681884765625)
	if err != nil {
		return err
	}
	gamma, err := c.attrFloat("gamma", 1.05070102214813232421875)
	if err != nil {
		return err
	}
	y, err := expm1Where(c, x, alpha, c.tmp("elu"))
	if err != nil {
		return err
	}
	if y, err = affine(c, y, gamma, 0, c.outName(0)); err != nil {
		return err
	}
	c.set(0, y)
	return nil
}

// convMish is x * tanh(softplus(x)).
func convMish(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	sp, err := c.op(c.tmp("softplus"), "softplus", fusion.Attrs{}, x)
	if err != nil {
		return err
	}
	th, err := c.op(c.tmp("tanh"), "tanh", fusion.Attrs{}, sp)
	if err != nil {
		return err
	}
	return c.result("mul", fusion.Attrs{}, x, th)
}

// convPRelu is where(x < 0, slope * x, x), slope broadcast to x.
func convPRelu(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	slope, err := c.tensor(1)
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
	scaled, err := c.op(c.tmp("scaled"), "mul", fusion.Attrs{}, x, slope)
	if err != nil {
		return err
	}
	return c.result("where", fusion.Attrs{}, neg, scaled, x)
}

// convSign is where(x > 0, 1, where(x < 0, -1, 0)).
func convSign(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	var one, minus, zero *fusion.Tensor
	for _, p := range []struct {
		t **fusion.Tensor
		v float64
	}{{&one, 1}, {&minus, -1}, {&zero, 0}} {
		if *p.t, err = c.scalar(x.DType, p.v); err != nil {
			return err
		}
	}
	pos, err := c.op(c.tmp("pos"), "greater", fusion.Attrs{}, x, zero)
	if err != nil {
		return err
	}
	neg, err := c.op(c.tmp("neg"), "less", fusion.Attrs{}, x, zero)
	if err != nil {
		return err
	}
	inner, err := c.op(c.tmp("nonpos"), "where", fusion.Attrs{}, neg, minus, zero)
	if err != nil {
		return err
	}
	return c.result("where", fusion.Attrs{}, pos, one, inner)
}

// convLogic computes And, Or and Xor of bool tensors on their int32
// values: a*b == 1, max(a, b) == 1, a != b.
func convLogic(c *ctx) error {
	if a, b := c.known(0), c.known(1); a != nil && b != nil && a.dtype == ast.Bool && b.dtype == ast.Bool {
		shape, ok := broadcastShapes(a.shape, b.shape)
		if ok && elems(shape) <= foldLimit {
			ia, ib := broadcastIndex(shape, a.shape), broadcastIndex(shape, b.shape)
			f := make([]float64, elems(shape))
			for e := range f {
				x, y := a.f[ia(e)] != 0, b.f[ib(e)] != 0
				var v bool
				switch c.n.GetOpType() {
				case "And":
					v = x && y
				case "Or":
					v = x || y
				default:
					v = x != y
				}
				if v {
					f[e] = 1
				}
			}
			c.setKnown(0, newFloats(ast.Bool, shape, f))
			return nil
		}
	}
	var ints [2]*fusion.Tensor
	for j := range ints {
		t, err := c.tensor(j)
		if err != nil {
			return err
		}
		if t.DType != ast.Bool {
			return fmt.Errorf("%s takes bool tensors, input %d is %s", c.n.GetOpType(), j, t.DType)
		}
		if ints[j], err = c.op(c.tmp("int"), "cast", fusion.Attrs{DType: "int32"}, t); err != nil {
			return err
		}
	}
	if c.n.GetOpType() == "Xor" {
		return c.result("not_equal", fusion.Attrs{}, ints[0], ints[1])
	}
	op := "mul"
	if c.n.GetOpType() == "Or" {
		op = "max"
	}
	v, err := c.op(c.tmp(op), op, fusion.Attrs{}, ints[0], ints[1])
	if err != nil {
		return err
	}
	one, err := c.scalar(ast.Int32, 1)
	if err != nil {
		return err
	}
	return c.result("equal", fusion.Attrs{}, v, one)
}
