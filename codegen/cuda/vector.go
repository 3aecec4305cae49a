package cuda

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Vectorized loops.
//
// A vectorized loop of 2 or 4 iterations over one block that stores one
// float32 element per iteration becomes float2 or float4 accesses (of 2, 4
// or 8 iterations storing float16 or bfloat16, words of 16-bit lanes: see
// vecKind): each global or shared buffer the block reads at consecutive elements
// along the loop (the last index moves by one, the others stay) is loaded
// as one vector, the lanes are computed one after the other from its
// components, and the result is stored as one vector. Accesses that do not
// move with the loop (a scale, a bias) and those of local buffers (kept in
// registers) stay scalar.
//
// A vector access needs its address aligned to the vector's size. Buffers
// start aligned (the launcher's allocations are, and shared arrays are
// declared so), so an access is aligned when its element offset at the
// first lane is a multiple of the lanes: each dimension's index (less the
// origin of a compacted buffer) is, or the product of the extents after
// it is. When every access is, the loop is the vector code alone.
// Otherwise (a row of symbolic length, or a slice of a row, moves every
// other row's start) the alignment of the others is tested where the
// kernel runs: the vector path when they are aligned, else the loop as
// scalar code. A loop whose
// accesses are neither consecutive nor invariant along it runs as scalar
// code, unrolled.

// vecKind is how a vector access of n lanes of element type dt loads and
// stores: float2 and float4 for float32; for float16 and bfloat16, whose
// lanes are 16-bit encodings, the unsigned int, uint2 or uint4 that holds
// 2, 4 or 8 of them (half2 and its wider kin, without CUDA's headers), a
// lane the low or high half of a word.
type vecKind struct {
	name string
	dt   ast.DType
	n    int64
}

var xyzw = []string{"x", "y", "z", "w"}

// vectorKind returns the vector access of n lanes of dt, if there is one.
func vectorKind(dt ast.DType, n int64) (vecKind, bool) {
	var name string
	switch {
	case dt == ast.Float32 && n == 2:
		name = "float2"
	case dt == ast.Float32 && n == 4:
		name = "float4"
	case isHalf(dt) && n == 2:
		name = "unsigned int"
	case isHalf(dt) && n == 4:
		name = "uint2"
	case isHalf(dt) && n == 8:
		name = "uint4"
	default:
		return vecKind{}, false
	}
	return vecKind{name, dt, n}, true
}

// bytes is the size of the vector, to which its address must be aligned.
func (v vecKind) bytes() int64 { return v.n * int64(v.dt.Bytes()) }

// word returns the C of the 32-bit word of vector value x that holds
// lane i of a 16-bit type.
func (v vecKind) word(x string, i int64) string {
	if v.n == 2 {
		return x
	}
	return x + "." + xyzw[i/2]
}

// component returns the C of lane i of vector value x, in register form.
func (k *kernelWriter) component(v vecKind, x string, i int64) string {
	if !isHalf(v.dt) {
		return x + "." + xyzw[i]
	}
	return k.fromMem(v.dt, fmt.Sprintf("(unsigned short)(%s >> %d)", v.word(x, i), 16*(i%2)))
}

// vectorAccess is one access of a vectorized block that moves one element
// a lane.
type vectorAccess struct {
	buf     *ast.Buffer
	indices []ast.Expr // as the block writes them
	load    *ast.Load  // nil for the store
	aligned bool       // provably: no test where the kernel runs
	ptr     string     // C name of its address at lane 0
	value   string     // C name of the loaded vector
	kind    vecKind
}

// vectorLoop prints vectorized loop l with vector accesses and reports
// whether it could; when it cannot, it prints nothing.
func (k *kernelWriter) vectorLoop(l *ast.For, blockLevel bool) bool {
	n, ok := ast.ConstIntValue(ast.Simplify(l.Extent))
	if !ok {
		return false
	}
	body := flatten(l.Body)
	if len(body) != 1 {
		return false
	}
	b, ok := body[0].(*ast.ScheduleBlock)
	if !ok || b.Init != nil {
		return false
	}
	store, ok := b.Body.(*ast.Store)
	if !ok {
		return false
	}
	storeKind, ok := vectorKind(store.Buffer.DType, n)
	if !ok {
		return false
	}
	for _, c := range k.plans {
		if c.Loop == l {
			return false // a buffer lives in one iteration: the scalar loop declares it
		}
	}
	if blockLevel && k.acrossIterations(l) {
		return false // its lanes meet other threads' lanes in memory
	}
	bindings := map[string]ast.Expr{}
	for _, it := range b.Iters {
		bindings[it.Var.Name] = it.Binding
	}
	// along classifies an access: moving one element a lane, or not
	// moving at all.
	along := func(indices []ast.Expr) (moves, ok bool) {
		last := len(indices) - 1
		for d, ix := range indices {
			at := ast.Substitute(ix, bindings)
			next := ast.Substitute(at, map[string]ast.Expr{l.Var.Name: ast.Add(l.Var, ast.One(l.Var.DType))})
			step, isConst := ast.ConstIntValue(ast.Simplify(ast.Sub(next, at)))
			switch {
			case !isConst:
				return false, false
			case step == 0:
			case step == 1 && d == last:
				moves = true
			default:
				return false, false
			}
		}
		return moves, true
	}
	if b.Predicate != nil {
		// A predicate that holds for all the lanes or none (a tail of the
		// threads, not of the lanes) guards the vector code as a whole.
		at := ast.Substitute(b.Predicate, bindings)
		if ast.Mentions(at, l.Var.Name) {
			return false
		}
	}
	moves, ok := along(store.Indices)
	if !ok || !moves || !vectorScope(store.Buffer) {
		return false
	}
	accesses := []*vectorAccess{{buf: store.Buffer, indices: store.Indices, kind: storeKind}}
	clean := true
	ast.Inspect(store.Value, func(nd ast.Node) bool {
		ld, isLoad := nd.(*ast.Load)
		if !isLoad || !clean {
			return clean
		}
		moves, ok := along(ld.Indices)
		kind, isVector := vectorKind(ld.Buffer.DType, n)
		switch {
		case !ok:
			clean = false
		case moves && (!isVector || !vectorScope(ld.Buffer)):
			// Scalar loads, one a lane.
		case moves:
			accesses = append(accesses, &vectorAccess{buf: ld.Buffer, indices: ld.Indices, load: ld, kind: kind})
		}
		return true
	})
	if !clean {
		return false
	}
	for _, a := range accesses {
		a.aligned = k.alignedAt(l, bindings, a, n)
	}
	k.printVectorLoop(l, b, n, accesses)
	return k.err == nil
}

// alignedAt reports whether access a is provably aligned to n elements at
// the first lane of loop l: its offset is a multiple of n whatever the
// other loops' values.
func (k *kernelWriter) alignedAt(l *ast.For, bindings map[string]ast.Expr, a *vectorAccess, n int64) bool {
	shape, origin := a.buf.Shape, []ast.Expr(nil)
	if c, ok := k.plans[a.buf]; ok {
		shape, origin = c.Shape, c.Origin
	}
	first := map[string]ast.Expr{l.Var.Name: l.Min}
	for d, ix := range a.indices {
		at := ast.Substitute(ast.Substitute(ix, bindings), first)
		if origin != nil {
			o := origin[d]
			if o.Type() != at.Type() {
				o = ast.NewCast(at.Type(), o)
			}
			at = ast.Sub(at, o)
		}
		if multipleOf(ast.Simplify(at), n) {
			continue
		}
		stride := int64(1)
		for _, e := range shape[d+1:] {
			c, ok := ast.ConstIntValue(ast.Simplify(e))
			if !ok {
				return false
			}
			stride *= c
		}
		if stride%n != 0 {
			return false
		}
	}
	return true
}

// multipleOf reports whether integer expression e is a multiple of n for
// all values of its variables, by the sums and products that say so.
func multipleOf(e ast.Expr, n int64) bool {
	switch e := e.(type) {
	case *ast.Const:
		c, ok := ast.ConstIntValue(e)
		return ok && c%n == 0
	case *ast.Cast:
		return e.X.Type().IsInt() && multipleOf(e.X, n)
	case *ast.Binary:
		switch e.Op {
		case ast.OpAdd, ast.OpSub:
			return multipleOf(e.A, n) && multipleOf(e.B, n)
		case ast.OpMul:
			return multipleOf(e.A, n) || multipleOf(e.B, n)
		}
	}
	return false
}

// vectorScope reports whether buf's accesses may be vectors: global or
// shared memory, not registers.
func vectorScope(buf *ast.Buffer) bool {
	return buf.Scope == ast.Global || buf.Scope == ast.Shared
}

func (k *kernelWriter) printVectorLoop(l *ast.For, b *ast.ScheduleBlock, n int64, accesses []*vectorAccess) {
	store := b.Body.(*ast.Store)
	k.line("{")
	k.indent++
	defer func() { k.indent--; k.line("}") }()
	for i, a := range accesses {
		k.tmp++
		a.ptr = fmt.Sprintf("loom_vp%d", k.tmp)
		if i > 0 {
			a.value = fmt.Sprintf("loom_vv%d", k.tmp)
		}
		k.line("%s* %s;", k.memTypeOf(a.buf.DType), a.ptr)
	}
	// The addresses at the first lane, and the predicate.
	var addressed []ast.Expr
	for _, a := range accesses {
		addressed = append(addressed, a.indices...)
	}
	guard := ""
	if b.Predicate != nil {
		k.tmp++
		guard = fmt.Sprintf("loom_vg%d", k.tmp)
		k.line("bool %s;", guard)
		addressed = append(addressed, b.Predicate)
	}
	k.lane(l, b, 0, addressed, nil, func() {
		for _, a := range accesses {
			k.line("%s = &%s;", a.ptr, k.access(a.buf, a.indices))
		}
		if guard != "" {
			k.line("%s = %s;", guard, k.expr(b.Predicate))
		}
	})
	if guard != "" {
		k.line("if (%s) {", guard)
		k.indent++
		defer func() { k.indent--; k.line("}") }()
	}
	var tests []string
	for _, a := range accesses {
		if !a.aligned {
			tests = append(tests, fmt.Sprintf("((unsigned long long)%s & %d) == 0", a.ptr, a.kind.bytes()-1))
		}
	}
	if len(tests) > 0 {
		k.line("if (%s) {", strings.Join(tests, " && "))
		k.indent++
	}
	out := accesses[0].kind
	if len(accesses) == 2 && store.Value == ast.Expr(accesses[1].load) && accesses[1].kind == out {
		// A copy moves the vector as it is.
		src := accesses[1]
		if cp, ok := k.asyncCopy(store.Buffer, store.Value, out.bytes(), accesses[0].ptr, src.ptr); ok {
			k.line("%s", cp)
		} else {
			// Through the components: a copy of the whole struct may
			// become narrower moves.
			k.tmp++
			v := fmt.Sprintf("loom_vc%d", k.tmp)
			k.line("const %s %s = *reinterpret_cast<const %s*>(%s);", out.name, v, out.name, src.ptr)
			value := v
			if words := out.bytes() / 4; words > 1 {
				var parts []string
				for w := range words {
					parts = append(parts, v+"."+xyzw[w])
				}
				value = out.name + "{" + strings.Join(parts, ", ") + "}"
			}
			k.line("*reinterpret_cast<%s*>(%s) = %s;", out.name, accesses[0].ptr, value)
		}
		k.scalarFallback(l, tests)
		return
	}
	for _, a := range accesses[1:] {
		k.line("const %s %s = *reinterpret_cast<const %s*>(%s);", a.kind.name, a.value, a.kind.name, a.ptr)
	}
	k.tmp++
	result := fmt.Sprintf("loom_vr%d", k.tmp)
	half := isHalf(out.dt)
	if half {
		// The lanes' encodings, packed into words after the last.
		k.line("unsigned short %s[%d];", result, n)
	} else {
		k.line("%s %s;", out.name, result)
	}
	for i := range n {
		components := map[*ast.Load]string{}
		for _, a := range accesses[1:] {
			components[a.load] = k.component(a.kind, a.value, i)
		}
		k.lane(l, b, i, []ast.Expr{store.Value}, components, func() {
			k.laneLoads = components
			if half {
				k.line("%s[%d] = %s;", result, i, k.toMem(out.dt, k.expr(store.Value)))
			} else {
				k.line("%s.%s = %s;", result, xyzw[i], k.expr(store.Value))
			}
			k.laneLoads = nil
		})
	}
	if half {
		var words []string
		for w := int64(0); w < n/2; w++ {
			words = append(words, fmt.Sprintf("(unsigned)%[1]s[%[2]d] | (unsigned)%[1]s[%[3]d] << 16", result, 2*w, 2*w+1))
		}
		packed := words[0]
		if n > 2 {
			packed = out.name + "{" + strings.Join(words, ", ") + "}"
		}
		k.line("*reinterpret_cast<%s*>(%s) = %s;", out.name, accesses[0].ptr, packed)
	} else {
		k.line("*reinterpret_cast<%s*>(%s) = %s;", out.name, accesses[0].ptr, result)
	}
	k.scalarFallback(l, tests)
}

// scalarFallback ends the vector code of loop l, under the alignment
// tests when there are any, with the loop as scalar code for the
// addresses that fail them.
func (k *kernelWriter) scalarFallback(l *ast.For, tests []string) {
	if len(tests) == 0 {
		return
	}
	k.indent--
	k.line("} else {")
	k.indent++
	unrolled := *l
	unrolled.Kind = ast.Unrolled
	k.loop(&unrolled, false)
	k.indent--
	k.line("}")
}

// lane prints, in a scope of its own, the loop variable of l at lane i
// and those of block b's iteration variables that uses mention (loads in
// skip excepted), and then what body prints.
func (k *kernelWriter) lane(l *ast.For, b *ast.ScheduleBlock, i int64, uses []ast.Expr, skip map[*ast.Load]string, body func()) {
	saved := k.savedNames()
	defer k.restoreNames(saved)
	mentioned := func(name string, es ...ast.Expr) bool {
		found := false
		for _, e := range es {
			ast.Inspect(e, func(n ast.Node) bool {
				if ld, ok := n.(*ast.Load); ok && skip[ld] != "" {
					return false
				}
				if v, ok := n.(*ast.Var); ok && v.Name == name {
					found = true
				}
				return !found
			})
		}
		return found
	}
	var iters []*ast.IterVar
	bindings := slices.Clone(uses)
	for _, it := range b.Iters {
		if mentioned(it.Var.Name, uses...) {
			iters = append(iters, it)
			bindings = append(bindings, it.Binding)
		}
	}
	scoped := len(iters) > 0 || mentioned(l.Var.Name, uses...)
	if scoped {
		k.line("{")
		k.indent++
	}
	if mentioned(l.Var.Name, bindings...) {
		t := k.ctypeOf(l.Var.DType)
		min := k.expr(l.Min)
		name := k.declare(l.Var)
		if min == "0" || min == "0LL" {
			k.line("const %s %s = %d;", t, name, i)
		} else {
			k.line("const %s %s = %s + %d;", t, name, min, i)
		}
	}
	values := make([]string, len(iters))
	for j, it := range iters {
		values[j] = k.expr(it.Binding)
	}
	for j, it := range iters {
		k.line("const %s %s = %s;", k.ctypeOf(it.Var.DType), k.declare(it.Var), values[j])
	}
	body()
	if scoped {
		k.indent--
		k.line("}")
	}
}
