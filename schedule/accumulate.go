package schedule

import (
	"fmt"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Accumulate makes reduction block b accumulate buffer buf in a cache of
// the wider float type dt (float32 sums of float16 or bfloat16 products,
// float64 sums of float32 ones), in memory of scope "global", "shared" or
// "local" (named "S_local"): b's update then computes in dt, every value
// it reads converted to dt (exactly: a widening conversion) and every
// operation it does done in dt, its init writes its value in dt, and a new
// block copies the cache back to buf, rounding once to buf's type.
// Accumulate returns that block; move it next to b with ReverseComputeAt,
// as CacheWrite's.
//
// Accumulate is the one primitive that changes what a function computes:
// its rounding, never its arithmetic. The result is the same terms
// combined the same way, each step rounded less: a float16 gemm
// accumulated in float32 (the Tensor Cores' mma.sync with float32
// accumulators) is closer to the exact result than the float16 sums of
// the function as written. A function whose results must stay bit for
// bit those of its own types must not use it.
//
// b must be a reduction with an init whose update writes buf from its own
// value (buf[i] = buf[i] op e, before DecomposeReduction), buf a float
// type narrower than dt; no other block in b's top-level statement may
// access buf (as for CacheWrite).
func (s *Schedule) Accumulate(b Block, buf string, dt ast.DType, scope string) (Block, error) {
	const prim = "accumulate"
	blk, _, err := s.block(prim, b)
	if err != nil {
		return Block{}, err
	}
	here := nodes(blk)
	orig := findBuffer(blk, buf)
	writes := false
	for _, w := range blk.Writes {
		writes = writes || orig != nil && w.Buffer == orig
	}
	switch {
	case orig == nil:
		return Block{}, badArg(prim, s.f, here, "block %s does not access a buffer named %q", blk.Name, buf)
	case !writes:
		return Block{}, badArg(prim, s.f, here, "block %s does not write %s", blk.Name, orig.Name)
	case !dt.IsFloat():
		return Block{}, badArg(prim, s.f, here, "the accumulator type %s is not a float type", dt)
	case !orig.DType.IsFloat() || orig.DType.Bits() >= dt.Bits():
		return Block{}, badArg(prim, s.f, here, "buffer %s is %s: %s is not a wider float type to accumulate it in", orig.Name, orig.DType, dt)
	case !blk.IsReduction() || blk.Init == nil || !blk.IsUpdate():
		return Block{}, illegal(prim, s.f, here, "block %s is not a reduction with an init that updates %s from its own value", blk.Name, orig.Name)
	}
	return s.cache(prim, b, buf, scope, true, dt)
}

// computeIn returns block b (whose accumulator was just replaced by its
// cache of type dt) with its init and update computed in dt.
func computeIn(b *ast.ScheduleBlock, dt ast.DType) *ast.ScheduleBlock {
	var stmt func(s ast.Stmt) ast.Stmt
	stmt = func(s ast.Stmt) ast.Stmt {
		if st, ok := s.(*ast.Store); ok {
			v := promote(st.Value, dt)
			if v.Type() != st.Buffer.DType {
				v = ast.NewCast(st.Buffer.DType, v) // a store to another buffer than the cache
			}
			return &ast.Store{Buffer: st.Buffer, Indices: st.Indices, Value: v}
		}
		return ast.MapChildren(s, stmt, keepExpr)
	}
	c := *b
	if c.Init != nil {
		c.Init = stmt(c.Init)
	}
	c.Body = stmt(c.Body)
	return &c
}

// promote returns float expression e computed in type dt: the floats
// narrower than dt it reads (loads, constants) are converted to dt and the
// operations on them are done in dt; a conversion that e writes to a
// narrower float type keeps its rounding. Integer and boolean
// subexpressions, and the indices of loads, stay as they are.
func promote(e ast.Expr, dt ast.DType) ast.Expr {
	narrower := func(t ast.DType) bool { return t.IsFloat() && t.Bits() < dt.Bits() }
	switch x := e.(type) {
	case *ast.Load:
		if narrower(x.Type()) {
			return ast.NewCast(dt, x)
		}
		return x
	case *ast.Const:
		if narrower(x.DType) {
			return ast.FloatConst(dt, x.Float)
		}
		return x
	case *ast.Cast:
		inner := promote(x.X, dt)
		if narrower(x.To) {
			if inner.Type() == x.To {
				return ast.NewCast(dt, inner) // x.X was no float to promote
			}
			return ast.NewCast(dt, ast.NewCast(x.To, inner))
		}
		if inner.Type() == x.To {
			return inner
		}
		return ast.NewCast(x.To, inner)
	}
	return ast.MapChildren(e, keepStmt, func(c ast.Expr) ast.Expr { return promote(c, dt) })
}

// keepStmt leaves a statement as it is (for MapChildren over expressions).
func keepStmt(s ast.Stmt) ast.Stmt { return s }

// dtypeGo is the Go of the ast.DType constant of a type's name.
var dtypeGo = map[string]string{
	"float16": "ast.Float16", "bfloat16": "ast.BFloat16", "float32": "ast.Float32", "float64": "ast.Float64",
}

func init() {
	register("accumulate", instKind{
		args: 4,
		replay: func(s *Schedule, args []any) error {
			b, buf, scope, err := replayBlockBufferScope(args[:3])
			if err != nil {
				return err
			}
			name, err := argString(args[3])
			if err != nil {
				return err
			}
			dt, ok := ast.ParseDType(name)
			if !ok {
				return fmt.Errorf("accumulate: unknown type %q", name)
			}
			_, err = s.Accumulate(b, buf, dt, scope)
			return err
		},
		goCall: func(args []string) string {
			dt := dtypeGo[strings.Trim(args[3], `"`)]
			if dt == "" {
				dt = "ast.Invalid /* " + args[3] + " */"
			}
			return fmt.Sprintf("sch.Accumulate(%s, %s, %s, %s)", args[0], args[1], dt, args[2])
		},
		outputs: "one",
	})
}
