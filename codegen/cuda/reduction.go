package cuda

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Cross-thread reductions.
//
// A thread loop that binds a reduce variable of the one block under it
// (through serial loops) is a cross-thread reduction: each thread folds its
// share of the iterations into a register, the threads combine their
// registers (butterfly shuffles within a warp; across warps through a
// small shared array), and the block's update is applied once with the
// total, by every thread when the result is local, by thread 0 otherwise.
// The combiner is read off the update (x = x + e, x = max(x, e), ...);
// the partial results are combined in another order than the loop's,
// as rfactor's are.

// xreduce is a recognized cross-thread reduction.
type xreduce struct {
	block    *ast.ScheduleBlock
	inner    []*ast.For // the serial loops between the thread loop and the block
	op       ast.BinaryOp
	operand  ast.Expr // e of x = x op e
	identity string
	store    *ast.Store
}

var reductionOps = map[ast.BinaryOp]string{ast.OpAdd: "add", ast.OpMul: "mul", ast.OpMin: "min", ast.OpMax: "max"}

// crossThreadReduction recognizes one under thread loop l, or returns nil.
func (k *kernelWriter) crossThreadReduction(l *ast.For) *xreduce {
	r := &xreduce{}
	s := l.Body
	for {
		inner, ok := s.(*ast.For)
		if !ok {
			break
		}
		if inner.Kind != ast.Serial && inner.Kind != ast.Unrolled {
			return nil
		}
		r.inner = append(r.inner, inner)
		s = inner.Body
	}
	b, ok := s.(*ast.ScheduleBlock)
	if !ok {
		return nil
	}
	bindsReduce := false
	for _, it := range b.Iters {
		if ast.Mentions(it.Binding, l.Var.Name) {
			if it.Kind != ast.Reduce {
				return nil
			}
			bindsReduce = true
		}
	}
	st, ok := b.Body.(*ast.Store)
	if !bindsReduce || !ok {
		return nil
	}
	bin, ok := st.Value.(*ast.Binary)
	if !ok || reductionOps[bin.Op] == "" {
		return nil
	}
	self := func(e ast.Expr) bool {
		ld, ok := e.(*ast.Load)
		return ok && ld.Buffer == st.Buffer && ast.Equal(&ast.Load{Buffer: ld.Buffer, Indices: ld.Indices}, &ast.Load{Buffer: st.Buffer, Indices: st.Indices})
	}
	switch {
	case self(bin.A):
		r.operand = bin.B
	case self(bin.B):
		r.operand = bin.A
	default:
		return nil
	}
	r.block, r.op, r.store = b, bin.Op, st
	r.identity = identity(bin.Op, st.Buffer.DType)
	return r
}

// racingReduction returns a block under thread loop l one of whose reduce
// variables l binds, unless l is also the whole binding of one of its
// spatial variables (each thread then has its own reduction, as the rows
// of a triangle split over threads); nil if there is none.
func racingReduction(l *ast.For) *ast.ScheduleBlock {
	var found *ast.ScheduleBlock
	ast.Inspect(l.Body, func(n ast.Node) bool {
		b, ok := n.(*ast.ScheduleBlock)
		if !ok || found != nil {
			return found == nil
		}
		own := slices.ContainsFunc(b.Iters, func(it *ast.IterVar) bool {
			v, ok := it.Binding.(*ast.Var)
			return it.Kind == ast.Spatial && ok && v.Name == l.Var.Name
		})
		for _, it := range b.Iters {
			if it.Kind == ast.Reduce && !own && ast.Mentions(it.Binding, l.Var.Name) {
				found = b
			}
		}
		return true
	})
	return found
}

// identity is the C literal of op's identity on t.
func identity(op ast.BinaryOp, t ast.DType) string {
	c := &ast.Const{DType: t}
	switch op {
	case ast.OpMul:
		c.Int, c.Float = 1, 1
	case ast.OpMin:
		c.Int, c.Float = math.MaxInt64, math.Inf(1)
		if t == ast.Int32 {
			c.Int = math.MaxInt32
		}
	case ast.OpMax:
		c.Int, c.Float = math.MinInt64, math.Inf(-1)
		if t == ast.Int32 {
			c.Int = math.MinInt32
		}
	}
	return constant(c)
}

// runsAlways reports whether every thread that enters r's loops runs
// its update at least once: no predicate guards it, and each serial loop
// inside runs a constant, positive number of times.
func (r *xreduce) runsAlways() bool {
	if r.block.Predicate != nil {
		return false
	}
	for _, in := range r.inner {
		if n, ok := ast.ConstIntValue(ast.Simplify(in.Extent)); !ok || n < 1 {
			return false
		}
	}
	return true
}

// reduce prints the cross-thread reduction r under thread loop l;
// blockLevel says every thread of the block gets there.
func (k *kernelWriter) reduce(l *ast.For, r *xreduce, blockLevel bool) {
	axis := l.Kind - ast.GPUThreadX
	width := k.block[axis]
	if axis != 0 {
		k.fail(k.errorAt(l, "a cross-thread reduction must be bound to threadIdx.x (loop %s is bound to %s)", l.Var.Name, l.Kind))
		return
	}
	blockWide := width > 32
	switch {
	case !blockWide && width&(width-1) != 0:
		k.fail(k.errorAt(l, "a cross-thread reduction over %d threads: within a warp the threads must be a power of two", width))
		return
	case blockWide && width%32 != 0:
		k.fail(k.errorAt(l, "a cross-thread reduction over %d threads: across warps it must take whole warps", width))
		return
	case blockWide && !blockLevel:
		k.fail(k.errorAt(l, "the cross-thread reduction over %s spans warps, so it needs __syncthreads, but not every thread of the block gets here (it is under a loop or condition that depends on the thread)", l.Var.Name))
		return
	}
	// Rows of threads (threadIdx.y, z) reduce at once, each with its
	// warps' slots of the scratch array.
	rows := k.block[1] * k.block[2]
	t := k.ctypeOf(r.store.Buffer.DType)
	op := reductionOps[r.op] + "_" + suffix(r.store.Buffer.DType)
	if r.op == ast.OpMin || r.op == ast.OpMax {
		k.use("loom_" + op) // the shuffle trees combine with it
	}
	combine := func(a, b string) string {
		switch r.op {
		case ast.OpAdd:
			return a + " + " + b
		case ast.OpMul:
			return a + " * " + b
		}
		name := "loom_" + reductionOps[r.op] + "_" + suffix(r.store.Buffer.DType)
		k.use(name)
		return name + "(" + a + ", " + b + ")"
	}
	k.tmp++
	acc := fmt.Sprintf("red%d", k.tmp)
	saved := k.savedNames()
	defer k.restoreNames(saved)
	k.line("{")
	k.indent++
	k.line("%s %s = %s;", t, acc, r.identity)
	// Whether any iteration ran: a reduction of no iterations (a symbolic
	// extent of 0, a predicate that holds nowhere) leaves its output as it
	// was, init included. Known when no predicate guards the update and
	// every loop inside runs a constant number of times.
	ran := ""
	if !r.runsAlways() {
		ran = fmt.Sprintf("ran%d", k.tmp)
		k.line("int %s = 0;", ran)
	}
	// This thread's share.
	tv := k.declare(l.Var)
	lt := k.ctypeOf(l.Var.DType)
	n, _ := ast.ConstIntValue(ast.Simplify(l.Extent))
	k.line("{")
	k.indent++
	k.line("const %s %s = %s + (%s)threadIdx.x;", lt, tv, k.expr(l.Min), lt)
	k.line("if (%s < %s + %d) {", tv, k.expr(l.Min), n)
	k.indent++
	depth := 0
	for _, in := range r.inner {
		if in.Kind == ast.Unrolled {
			k.line("#pragma unroll")
		}
		v := k.declare(in.Var)
		k.line("for (%s %s = %s; %s < %s + %s; ++%s) {", k.ctypeOf(in.Var.DType), v, k.expr(in.Min), v, k.expr(in.Min), k.expr(in.Extent), v)
		k.indent++
		depth++
	}
	k.bindIters(r.block)
	value := k.expr(r.operand)
	switch {
	case r.block.Predicate != nil && ran != "":
		k.line("if (%s) { %s = %s; %s = 1; }", k.expr(r.block.Predicate), acc, combine(acc, value), ran)
	case r.block.Predicate != nil:
		k.line("if (%s) %s = %s;", k.expr(r.block.Predicate), acc, combine(acc, value))
	case ran != "":
		k.line("%s = %s;", acc, combine(acc, value))
		k.line("%s = 1;", ran)
	default:
		k.line("%s = %s;", acc, combine(acc, value))
	}
	for ; depth > 0; depth-- {
		k.indent--
		k.line("}")
	}
	k.indent--
	k.line("}")
	k.indent--
	k.line("}")
	// The threads' shares combined, in every thread.
	if blockWide {
		name := "loom_block_" + op
		k.use(name)
		k.use("loom_warp_" + op)
		scratch := "loom_scratch_" + suffix(r.store.Buffer.DType)
		if !k.scratch[scratch] {
			k.scratch[scratch] = true
			k.shared = append(k.shared, fmt.Sprintf("__shared__ %s %s[%d];", t, scratch, 32*rows))
			k.nShared += 32 * rows * int64(max(r.store.Buffer.DType.Bytes(), 4)) // 16-bit floats reduce as floats
		}
		if rows > 1 {
			scratch = fmt.Sprintf("%s + 32 * (threadIdx.y + blockDim.y * threadIdx.z)", scratch)
		}
		k.line("%s = %s(%s, %s);", acc, name, acc, scratch)
		if ran != "" {
			k.use("loom_block_max_i32")
			k.use("loom_warp_max_i32")
			k.use("loom_max_i32")
			flags := "loom_scratch_ran"
			if !k.scratch[flags] {
				k.scratch[flags] = true
				k.shared = append(k.shared, fmt.Sprintf("__shared__ int %s[%d];", flags, 32*rows))
				k.nShared += 32 * rows * 4
			}
			if rows > 1 {
				flags = fmt.Sprintf("%s + 32 * (threadIdx.y + blockDim.y * threadIdx.z)", flags)
			}
			k.line("%s = loom_block_max_i32(%s, %s);", ran, ran, flags)
		}
	} else if width > 1 {
		name := "loom_warp_" + op
		k.use(name)
		k.line("%s = %s(%s, %d);", acc, name, acc, width)
		if ran != "" {
			k.use("loom_warp_max_i32")
			k.use("loom_max_i32")
			k.line("%s = loom_warp_max_i32(%s, %d);", ran, ran, width)
		}
	}
	// The update, once, with the reduce variables of the loops inside at
	// their first values (for the init test; the store's element does not
	// depend on them).
	for _, in := range append([]*ast.For{l}, r.inner...) {
		k.names[in.Var.Name] = "(" + k.expr(in.Min) + ")"
	}
	once := r.store.Buffer.Scope != ast.Local
	var cond []string
	if once {
		cond = append(cond, "threadIdx.x == 0")
	}
	if ran != "" {
		cond = append(cond, ran)
	}
	if len(cond) > 0 {
		k.line("if (%s) {", strings.Join(cond, " && "))
		k.indent++
	}
	k.bindIters(r.block)
	if r.block.Init != nil {
		var first []string
		for _, it := range r.block.Iters {
			if it.Kind == ast.Reduce {
				first = append(first, fmt.Sprintf("%s == %s", k.names[it.Var.Name], k.expr(it.Dom.Min)))
			}
		}
		init := k.savedNames()
		k.line("if (%s) {", strings.Join(first, " && "))
		k.indent++
		k.stmt(r.block.Init, false)
		k.indent--
		k.line("}")
		k.restoreNames(init)
	}
	target := k.access(r.store.Buffer, r.store.Indices)
	dt := r.store.Buffer.DType
	k.line("%s = %s;", target, k.toMem(dt, combine(k.fromMem(dt, target), acc)))
	if len(cond) > 0 {
		k.indent--
		k.line("}")
	}
	k.indent--
	k.line("}")
}

// bindIters declares the block's iteration variables from their bindings.
func (k *kernelWriter) bindIters(b *ast.ScheduleBlock) {
	values := make([]string, len(b.Iters))
	for i, it := range b.Iters {
		values[i] = k.expr(it.Binding)
	}
	for i, it := range b.Iters {
		k.line("const %s %s = %s;", k.ctypeOf(it.Var.DType), k.declare(it.Var), values[i])
	}
}

// reductionHelpers are the shuffle trees, by name.
var reductionHelpers = map[string]string{}

func init() {
	types := []struct{ s, c string }{{"f32", "float"}, {"f64", "double"}, {"i32", "int"}, {"i64", "long long"}}
	for _, t := range types {
		for op, name := range reductionOps {
			var combine string
			switch op {
			case ast.OpAdd:
				combine = "v + o"
			case ast.OpMul:
				combine = "v * o"
			default:
				combine = fmt.Sprintf("loom_%s_%s(v, o)", name, t.s)
			}
			id := identity(op, map[string]ast.DType{"f32": ast.Float32, "f64": ast.Float64, "i32": ast.Int32, "i64": ast.Int64}[t.s])
			reductionHelpers[fmt.Sprintf("loom_warp_%s_%s", name, t.s)] = fmt.Sprintf(`// Every lane of a group of width lanes gets the %[1]s of the group's values.
__device__ __forceinline__ %[2]s loom_warp_%[1]s_%[3]s(%[2]s v, int width) {
  for (int off = width / 2; off > 0; off /= 2) {
    %[2]s o = __shfl_xor_sync(LOOM_FULL_MASK, v, off, width);
    v = %[4]s;
  }
  return v;
}`, name, t.c, t.s, combine)
			reductionHelpers[fmt.Sprintf("loom_block_%s_%s", name, t.s)] = fmt.Sprintf(`// Every thread of a row of the block (threadIdx.y, z) gets the %[1]s of the
// row's values (blockDim.x a multiple of 32, scratch the row's 32 slots;
// every thread of the block calls it).
__device__ %[2]s loom_block_%[1]s_%[3]s(%[2]s v, %[2]s* scratch) {
  v = loom_warp_%[1]s_%[3]s(v, 32);
  const int lane = threadIdx.x %% 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x / 32) ? scratch[lane] : %[4]s;
  return loom_warp_%[1]s_%[3]s(v, 32);
}`, name, t.c, t.s, id)
		}
	}
}
