package autotune

import (
	"errors"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/schedule"
)

// reductionUnroll is how many steps of a channel reduction Finish unrolls
// around a register tile (see reductionsToUnroll). Four is what hand
// written kernels use (ONNX Runtime's SGEMM kernels unroll their
// reduction by four). Other counts made LLVM keep a 28-accumulator
// tile's accumulators on the stack on some of ResNet-50's convolutions:
// two on a 1x1 (2.4x slower), eight on a 3x3 (1.3x), sixteen on another
// 1x1 (1.3x); four on none of them.
const reductionUnroll = 4

// tileReduction is a reduce loop to unroll around a register tile: the
// loop, and the reduce loops of constant extent (a convolution's window
// taps) between it and the tile.
type tileReduction struct {
	loop string
	taps []string
	// partial: a row of the tile is whole vectors and a partial one (24
	// channels of 16 lanes), where llc's loop strength reduction is off
	// (see unrollReductions).
	partial bool
}

// reductionsToUnroll finds, in f after Finish's unrolls, the register
// tiles of CPU kernels (one or more unrolled loops around a vectorized
// loop around one block: a matmul's or a convolution's accumulators)
// under a serial reduce loop of constant extent that reductionUnroll
// divides, with at most the window's taps between (serial reduce loops of
// constant extent), under a nonzero unroll limit. Such a loop is split by
// reductionUnroll and its inner part moved in past the taps and unrolled:
// the steps of the reduction then run as one straight stretch of code
// (ResNet-50's 1x1 convolutions 0.86-0.97 of the time before, its 3x3
// ones with the taps outside 0.95), as ONNX Runtime's kernels do.
func reductionsToUnroll(f *ast.Func) []tileReduction {
	var out []tileReduction
	var walk func(s ast.Stmt, limit, bits int64)
	walk = func(s ast.Stmt, limit, bits int64) {
		if lp, ok := s.(*ast.For); ok {
			if lp.Kind.IsGPUBlock() || lp.Kind.IsGPUThread() {
				return
			}
			if n, ok := lp.Annotations[unrollKey].(int64); ok {
				limit = n
			}
			if n, ok := lp.Annotations[vectorBitsKey].(int64); ok {
				bits = n
			}
			if r, ok := tileReductionAt(lp, bits); ok && limit > 0 {
				out = append(out, r)
				return
			}
		}
		ast.MapChildren(s, func(c ast.Stmt) ast.Stmt {
			walk(c, limit, bits)
			return c
		}, func(e ast.Expr) ast.Expr { return e })
	}
	walk(f.Body, 0, 0)
	return out
}

// tileReductionAt reports whether lp is a reduce loop to unroll around a
// register tile (see reductionsToUnroll), its vectors of bits (0:
// unknown).
func tileReductionAt(lp *ast.For, bits int64) (tileReduction, bool) {
	n, ok := ast.ConstIntValue(ast.Simplify(lp.Extent))
	if lp.Kind != ast.Serial || !ok || n%reductionUnroll != 0 || n < 2*reductionUnroll {
		return tileReduction{}, false
	}
	r := tileReduction{loop: lp.Var.Name}
	reduce := []*ast.Var{lp.Var}
	s := lp.Body
	for {
		in, ok := s.(*ast.For)
		if !ok || in.Kind != ast.Serial {
			break
		}
		if _, ok := ast.ConstIntValue(ast.Simplify(in.Extent)); !ok {
			return tileReduction{}, false
		}
		r.taps = append(r.taps, in.Var.Name)
		reduce = append(reduce, in.Var)
		s = in.Body
	}
	var unrolled []*ast.Var
	for {
		in, ok := s.(*ast.For)
		if !ok || in.Kind != ast.Unrolled {
			break
		}
		unrolled = append(unrolled, in.Var)
		s = in.Body
	}
	vec, ok := s.(*ast.For)
	if len(unrolled) == 0 || !ok || vec.Kind != ast.Vectorized {
		return tileReduction{}, false
	}
	b, ok := vec.Body.(*ast.ScheduleBlock)
	if !ok || b.Init != nil {
		return tileReduction{}, false
	}
	if n, ok := ast.ConstIntValue(ast.Simplify(vec.Extent)); ok && bits > 0 && len(b.Writes) > 0 {
		lanes := bits / int64(8*b.Writes[0].Buffer.DType.Bytes())
		r.partial = lanes > 0 && n > lanes && n%lanes != 0
	}
	// Every loop moved or split binds reduce variables only, and the
	// tile spatial ones only (a reduction unrolled already is not unrolled
	// again).
	for _, it := range b.Iters {
		vars := reduce
		if it.Kind == ast.Reduce {
			vars = unrolled
		}
		for _, v := range vars {
			if ast.Mentions(it.Binding, v.Name) {
				return tileReduction{}, false
			}
		}
	}
	return r, true
}

// unrollReductions applies reductionsToUnroll's splits to s. A primitive
// that refuses (a schedule.Error: the reorder would not be legal here)
// leaves that loop as it was.
func unrollReductions(s *schedule.Schedule) error {
	for _, r := range reductionsToUnroll(s.Func()) {
		l, err := s.GetLoop(r.loop)
		if err != nil {
			return err
		}
		taps := make([]schedule.Loop, len(r.taps))
		for i, name := range r.taps {
			if taps[i], err = s.GetLoop(name); err != nil {
				return err
			}
		}
		parts, err := s.Split(l, -1, reductionUnroll)
		if err != nil {
			return refusal(err)
		}
		if len(taps) > 0 {
			order := append(append([]schedule.Loop{parts[0]}, taps...), parts[1])
			if err := s.Reorder(order...); err != nil {
				if err := refusal(err); err != nil {
					return err
				}
				continue // the split stays, rolled
			}
		}
		if err := s.Unroll(parts[1]); err != nil {
			return err
		}
		if len(taps) > 0 && r.partial {
			// A window's register tile of rows ending in a partial
			// vector: llc's loop strength reduction keeps a pointer a
			// row there (llvm.NoLSRKey).
			if err := s.AnnotateLoop(widest(s, taps), llvm.NoLSRKey, int64(1)); err != nil {
				return err
			}
		}
		if n, ok := s.Extent(parts[0]); ok && n > 1 {
			// Each pass over the chunk fetches the next chunk's operands
			// (llvm.PrefetchKey): the first register tile of a pass reads
			// them from memory, the others from the L1D.
			if err := s.AnnotateLoop(parts[0], llvm.PrefetchKey, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// widest returns the loop of loops with the largest constant extent (the
// first of them), one that stays a loop in the code.
func widest(s *schedule.Schedule, loops []schedule.Loop) schedule.Loop {
	best, most := loops[0], int64(0)
	for _, l := range loops {
		if n, ok := s.Extent(l); ok && n > most {
			best, most = l, n
		}
	}
	return best
}

// refusal returns nil for a primitive's refusal and err otherwise.
func refusal(err error) error {
	var se *schedule.Error
	if errors.As(err, &se) && internal(err) == nil {
		return nil
	}
	return err
}
