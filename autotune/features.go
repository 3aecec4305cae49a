package autotune

import (
	"math"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// featureNames name the entries of a candidate's feature vector; each is
// summed over the function's blocks, weighted by the block's share of the
// iterations.
var featureNames = [...]string{
	"bias",
	"log2 iterations",
	"log2 parallel extent",
	"vector lanes",
	"log2 unrolled extent",
	"log2 innermost serial extent",
	"loop depth",
	"unit-stride accesses in the innermost loop",
	"invariant accesses in the innermost loop",
	"strided accesses in the innermost loop",
	"log2 bytes touched by the innermost 2 loops",
	"log2 bytes touched by the innermost 4 loops",
	"log2 bytes touched by the innermost 6 loops",
	"arithmetic intensity (flops per byte of the innermost 4 loops)",
	"vector bits narrowed to (0: the target's)",
	"blocks",
}

const numFeatures = len(featureNames)

// FeaturesVersion numbers the definition of Features: records store it
// beside their features, and a model learns only from the current
// version's. Change it whenever Features changes.
const FeaturesVersion = 1

// Features extracts the feature vector of a scheduled function, the cost
// model's input: loop extents and kinds above each block, the strides of
// its accesses in the innermost loop, bytes touched per loop level and
// arithmetic intensity.
func Features(f *ast.Func, sizes map[string]int64) []float64 {
	out := make([]float64, numFeatures)
	out[0] = 1
	type blockFeat struct {
		iters float64
		v     []float64
	}
	var blocks []blockFeat
	eachBlock(f, func(b *ast.ScheduleBlock, loops []*ast.For) {
		if b.Body != nil && len(b.Iters) > 0 {
			it, v := blockFeatures(b, loops, sizes)
			blocks = append(blocks, blockFeat{it, v})
		}
	})
	total := 0.0
	for _, b := range blocks {
		total += b.iters
	}
	for _, b := range blocks {
		w := 1.0
		if total > 0 {
			w = b.iters / total
		}
		for k := 1; k < numFeatures; k++ {
			out[k] += w * b.v[k]
		}
	}
	out[numFeatures-1] = float64(len(blocks))
	return out
}

// eachBlock calls fn for every block of f with the loops around it,
// outermost first.
func eachBlock(f *ast.Func, fn func(b *ast.ScheduleBlock, loops []*ast.For)) {
	var walk func(s ast.Stmt, loops []*ast.For)
	walk = func(s ast.Stmt, loops []*ast.For) {
		switch s := s.(type) {
		case *ast.For:
			walk(s.Body, append(loops[:len(loops):len(loops)], s))
		case *ast.Seq:
			for _, c := range s.Stmts {
				walk(c, loops)
			}
		case *ast.IfThenElse:
			walk(s.Then, loops)
			if s.Else != nil {
				walk(s.Else, loops)
			}
		case *ast.ScheduleBlock:
			fn(s, loops)
			if s.Body != nil {
				walk(s.Body, loops)
			}
		}
	}
	walk(f.Body, nil)
}

func extentOf(e ast.Expr, sizes map[string]int64) float64 {
	if v, ok := ast.ConstIntValue(ast.Simplify(e)); ok {
		return float64(max(v, 1))
	}
	// A symbolic extent: substitute the sizes.
	m := map[string]ast.Expr{}
	for k, v := range sizes {
		m[k] = ast.I64(v)
	}
	if v, ok := ast.ConstIntValue(ast.Simplify(ast.Substitute(e, m))); ok {
		return float64(max(v, 1))
	}
	return 16
}

func blockFeatures(b *ast.ScheduleBlock, loops []*ast.For, sizes map[string]int64) (float64, []float64) {
	v := make([]float64, numFeatures)
	iters, par, unr := 1.0, 1.0, 1.0
	lanes, narrowed := 1.0, 0.0
	for _, l := range loops {
		e := extentOf(l.Extent, sizes)
		iters *= e
		switch l.Kind {
		case ast.Parallel:
			par *= e
		case ast.Vectorized:
			lanes = e
			if n, ok := l.Annotations[llvm.VectorBitsKey].(int64); ok {
				narrowed = float64(n)
			}
		case ast.Unrolled:
			unr *= e
		}
	}
	v[1] = math.Log2(iters)
	v[2] = math.Log2(par)
	v[3] = lanes
	v[4] = math.Log2(unr)
	if n := len(loops); n > 0 {
		v[5] = math.Log2(extentOf(loops[n-1].Extent, sizes))
	}
	v[6] = float64(len(loops))
	// Strides of the accesses in the innermost loop.
	var loads []*ast.Load
	ast.Inspect(b.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.Load); ok {
			loads = append(loads, l)
		}
		return true
	})
	if n := len(loops); n > 0 {
		inner := loops[n-1].Var.Name
		for _, l := range loads {
			if len(l.Indices) == 0 {
				continue
			}
			last := l.Indices[len(l.Indices)-1]
			uses := func(e ast.Expr) bool { return usesVarDeep(e, inner, b) }
			usedElsewhere := false
			for _, ix := range l.Indices[:len(l.Indices)-1] {
				if uses(ix) {
					usedElsewhere = true
				}
			}
			switch {
			case !uses(last) && !usedElsewhere:
				v[8]++
			case uses(last) && !usedElsewhere:
				v[7]++
			default:
				v[9]++
			}
		}
	}
	// Bytes touched by the innermost loops: extents' product times the
	// bytes of each access (an upper bound that ignores reuse).
	bytesPerIter := 0.0
	for _, l := range loads {
		bytesPerIter += float64(l.Buffer.DType.Bytes())
	}
	for k, depth := range []int{2, 4, 6} {
		p := 1.0
		for i := max(len(loops)-depth, 0); i < len(loops); i++ {
			p *= extentOf(loops[i].Extent, sizes)
		}
		v[10+k] = math.Log2(1 + p*bytesPerIter)
	}
	flops := 0.0
	ast.Inspect(b.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.Binary); ok {
			flops++
		}
		return true
	})
	v[13] = flops / math.Max(1, bytesPerIter)
	v[14] = narrowed
	return iters, v
}

// usesVarDeep reports whether e depends on the loop variable name through
// the block's bindings (indices are in iteration variables).
func usesVarDeep(e ast.Expr, name string, b *ast.ScheduleBlock) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if v, ok := n.(*ast.Var); ok {
			for _, it := range b.Iters {
				if it.Var.Name == v.Name && ast.Mentions(it.Binding, name) {
					found = true
				}
			}
			if v.Name == name {
				found = true
			}
		}
		return !found
	})
	return found
}
