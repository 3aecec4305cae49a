package ast

import (
	"fmt"
	"math"
	"slices"

	"github.com/loom-go/loom/internal/sysmem"
)

// Interpret runs f on the given data and returns the first fault, if any.
// It is loom's correctness oracle: every schedule and every generated kernel
// is checked against it, so it is written to be obviously right, not fast.
//
// sizes gives the value of each symbolic size of f (none may be missing or
// unknown, or negative). buffers gives the data of each buffer parameter by
// name, as a Go slice of the element type in row-major order: []float32,
// []float64, []int32, []int64, []bool, or []uint16 holding the bits of
// float16 or bfloat16 values (see [Float16Bits]). Each slice must have
// exactly as many elements as the buffer's shape. Interpret reads and writes
// the slices in place.
//
// Every loop runs serially, whatever its kind (GPU-bound loops included), in
// order. Each block instance checks that its bindings fall inside its
// iteration domains, runs its init first when all its reduce variables are at
// their minimum (an output element whose reduce loops run no iteration gets
// the init all the same: see [InitEmptyReductions]), and checks every
// access of its own statements against the shape of the buffer (an *OutOfBoundsError, wrapping ErrOutOfBounds, naming
// the buffer, the index and the statement) and against the block's declared
// read or write regions (a *RuntimeError). Buffers from an Alloc start filled
// with NaN (floats) or 0xDEADBEEF (integers), so that a read before a write
// shows in the results.
//
// f is verified first; an ill-formed f returns its *VerifyError.
func Interpret(f *Func, sizes map[string]int64, buffers map[string]any) error {
	_, err := InterpretWithin(f, sizes, buffers, 0)
	return err
}

// InterpretWithin is [Interpret] that gives up after iterations loop
// iterations in all (0: no limit), returning an error wrapping ErrBudget;
// the buffers are then partly written. It returns the loop iterations it
// ran. Callers that check many schedules (a property test, a search) use
// it to skip one whose loops, legal but padded by splits far beyond the
// extents they split, would take hours to interpret.
func InterpretWithin(f *Func, sizes map[string]int64, buffers map[string]any, iterations int64) (int64, error) {
	if err := Verify(f); err != nil {
		return 0, err
	}
	in := &interp{bufs: map[string]*tensor{}, budget: iterations}
	err := catch(func() {
		in.bind(f, sizes, buffers)
		in.stmt(InitEmptyReductions(f).Body)
	})
	return in.spent, err
}

// NewData returns a zeroed Go slice of the right element type and length
// for buffer b at the given sizes, ready to pass to [Interpret].
func NewData(b *Buffer, sizes map[string]int64) (any, error) {
	n, err := DataSize(b, sizes)
	if err != nil {
		return nil, err
	}
	return makeData(b.DType, n), nil
}

// DataSize returns the number of elements of buffer b at the given sizes,
// without allocating them: an error when a dimension is negative, a size
// is missing, or the buffer is larger than the interpreter's limit of
// 2^30 elements.
func DataSize(b *Buffer, sizes map[string]int64) (int64, error) {
	in := &interp{}
	for name, v := range sizes {
		in.bind1(name, value{i: v})
	}
	var n int64
	err := catch(func() { n = product(in.shape(b)) })
	return n, err
}

// maxElements bounds the size of one buffer the interpreter will hold.
const maxElements = 1 << 30

// maxLive bounds the bytes of the buffers the interpreter allocates itself
// (the function's Allocs) that are live at once: half the machine's
// memory, or 8 GiB where that cannot be told. A run that needs more stops
// with a RuntimeError instead of exhausting the machine.
var maxLive = func() int64 {
	if t := sysmem.Total(); t > 0 {
		return t / 2
	}
	return 8 << 30
}

// interp is the state of one run.
type interp struct {
	live   int64              // bytes of the Alloc buffers in scope
	env    []binding          // sizes, then loop and iteration variables, innermost last
	bufs   map[string]*tensor // every buffer in scope, by name
	stmt0  Stmt               // the statement being executed, for messages
	block  *blockInstance     // the innermost block instance, nil outside blocks
	budget int64              // loop iterations left before ErrBudget; 0: no limit
	spent  int64              // loop iterations run
}

// binding is a variable's value in scope.
type binding struct {
	name string
	v    value
}

// bind1 brings a variable into scope, innermost.
func (in *interp) bind1(name string, v value) { in.env = append(in.env, binding{name, v}) }

// lookup returns the innermost value of a variable. Scopes are shallow (a
// loop nest and a block's iteration variables), so a scan from the
// innermost binding is faster than a map.
func (in *interp) lookup(name string) (value, bool) {
	for i := len(in.env) - 1; i >= 0; i-- {
		if in.env[i].name == name {
			return in.env[i].v, true
		}
	}
	return value{}, false
}

// blockInstance is one execution of a block: its regions evaluated at its
// iteration values, and the buffers allocated inside it (nil until one is).
type blockInstance struct {
	b      *ScheduleBlock
	reads  []box
	writes []box
	own    map[*Buffer]bool
}

// box is a region evaluated at run time: an interval of indices per
// dimension of the buffer.
type box struct {
	buf  *Buffer
	dims []Interval
}

func (in *interp) fail(n Node, format string, args ...any) {
	panic(bailout{&RuntimeError{Node: n, Msg: fmt.Sprintf(format, args...)}})
}

// bind checks the arguments and binds sizes and parameters.
func (in *interp) bind(f *Func, sizes map[string]int64, buffers map[string]any) {
	for name, v := range sizes {
		s := f.Size(name)
		if s == nil {
			in.fail(nil, "%s is not a symbolic size of %s", name, f.Name)
		}
		if lo, hi := intRange(s.DType); v < 0 || v < lo || v > hi {
			in.fail(s, "size %s = %d is negative or out of the %s range", name, v, s.DType)
		}
		in.bind1(name, value{i: v})
	}
	for _, s := range f.Sizes {
		if _, ok := sizes[s.Name]; !ok {
			in.fail(s, "no value given for size %s", s.Name)
		}
	}
	for name := range buffers {
		if f.Param(name) == nil {
			in.fail(nil, "%s is not a buffer parameter of %s", name, f.Name)
		}
	}
	for _, b := range f.Params {
		data, ok := buffers[b.Name]
		if !ok {
			in.fail(b, "no data given for buffer %s", b.Name)
		}
		shape := in.shape(b)
		n, ok := DataLen(b.DType, data)
		if !ok {
			in.fail(b, "buffer %s holds %s, so its data must be a %s, not %T", b.Name, b.DType, GoType(b.DType), data)
		}
		if int64(n) != product(shape) {
			in.fail(b, "buffer %s has shape %v (%d elements), but its data has %d elements", b.Name, shape, product(shape), n)
		}
		in.bufs[b.Name] = &tensor{buf: b, shape: shape, data: data}
	}
}

// shape evaluates a buffer's shape in the current environment.
func (in *interp) shape(b *Buffer) []int64 {
	shape := make([]int64, len(b.Shape))
	total := int64(1)
	for i, d := range b.Shape {
		shape[i] = in.eval(d).i
		if shape[i] < 0 {
			in.fail(b, "dimension %d of buffer %s is %d", i, b.Name, shape[i])
		}
		if shape[i] > 0 && total > maxElements/shape[i] {
			in.fail(b, "buffer %s is larger than %d elements, the interpreter's limit", b.Name, maxElements)
		}
		total *= shape[i]
	}
	return shape
}

func product(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Statements.

func (in *interp) stmt(s Stmt) {
	switch s := s.(type) {
	case *For:
		in.stmt0 = s
		lo, ext := in.eval(s.Min).i, in.eval(s.Extent).i
		at := len(in.env)
		in.bind1(s.Var.Name, value{})
		for i := lo; i < lo+ext; i++ {
			if in.spent++; in.budget > 0 && in.spent > in.budget {
				panic(bailout{fmt.Errorf("ast: interpret: more than %d loop iterations (at loop %s): %w", in.budget, s.Var.Name, ErrBudget)})
			}
			in.env[at].v = value{i: i}
			in.stmt(s.Body)
		}
		in.env = in.env[:at]
	case *ScheduleBlock:
		in.blockStmt(s)
	case *Store:
		in.stmt0 = s
		t, off := in.locate(s, s.Buffer, s.Indices, true)
		t.set(off, in.eval(s.Value))
	case *IfThenElse:
		in.stmt0 = s
		if in.eval(s.Cond).i != 0 {
			in.stmt(s.Then)
		} else if !isNilStmt(s.Else) {
			in.stmt(s.Else)
		}
	case *Seq:
		var allocated []string
		for _, st := range s.Stmts {
			in.stmt(st)
			if a, ok := st.(*Alloc); ok {
				allocated = append(allocated, a.Buffer.Name)
			}
		}
		for _, name := range allocated {
			t := in.bufs[name]
			in.live -= product(t.shape) * int64(max(t.buf.DType.Bytes(), 1))
			delete(in.bufs, name)
		}
	case *Alloc:
		in.stmt0 = s
		shape := in.shape(s.Buffer)
		bytes := product(shape) * int64(max(s.Buffer.DType.Bytes(), 1))
		if limit := maxLive(); in.live+bytes > limit {
			in.fail(s, "allocating %s (%s) would bring the interpreter's own buffers to %s, more than its limit of %s (half this machine's memory)",
				s.Buffer.Name, sysmem.Bytes(bytes), sysmem.Bytes(in.live+bytes), sysmem.Bytes(limit))
		}
		in.live += bytes
		in.bufs[s.Buffer.Name] = &tensor{buf: s.Buffer, shape: shape, data: poisoned(s.Buffer.DType, product(shape))}
		if in.block != nil {
			if in.block.own == nil {
				in.block.own = map[*Buffer]bool{}
			}
			in.block.own[s.Buffer] = true
		}
	default:
		panic(fmt.Sprintf("ast.Interpret: unexpected statement %T", s))
	}
}

func (in *interp) blockStmt(b *ScheduleBlock) {
	in.stmt0 = b
	if !isNilExpr(b.Predicate) && in.eval(b.Predicate).i == 0 {
		return
	}
	vals := make([]value, len(b.Iters))
	for i, it := range b.Iters {
		vals[i] = in.eval(it.Binding)
	}
	first := true // all reduce variables at their minimum
	for i, it := range b.Iters {
		lo, ext := in.eval(it.Dom.Min).i, in.eval(it.Dom.Extent).i
		if v := vals[i].i; v < lo || v >= lo+ext {
			in.fail(b, "block %s: %s = %d is outside its domain [%d, %d)", b.Name, it.Var.Name, v, lo, lo+ext)
		}
		if it.Kind == Reduce && vals[i].i != lo {
			first = false
		}
	}
	base := len(in.env)
	for i, it := range b.Iters {
		in.bind1(it.Var.Name, vals[i])
	}
	outer := in.block
	in.block = &blockInstance{b: b, reads: in.regions(b.Reads), writes: in.regions(b.Writes)}
	if !isNilStmt(b.Init) && first {
		in.stmt(b.Init)
	}
	in.stmt(b.Body)
	in.block = outer
	in.env = in.env[:base]
}

// regions evaluates a block's regions at the current iteration values.
func (in *interp) regions(rs []Region) []box {
	boxes := make([]box, len(rs))
	for i, r := range rs {
		dims := make([]Interval, len(r.Ranges))
		for d, rg := range r.Ranges {
			lo, ext := in.eval(rg.Min).i, in.eval(rg.Extent).i
			dims[d] = Interval{lo, lo + ext - 1}
		}
		boxes[i] = box{r.Buffer, dims}
	}
	return boxes
}

// locate evaluates the indices of an access, checks them against the
// buffer's shape and the block's regions, and returns the tensor and the
// element offset.
func (in *interp) locate(access Node, b *Buffer, indices []Expr, write bool) (*tensor, int64) {
	t := in.bufs[b.Name]
	if t == nil {
		in.fail(access, "buffer %s is not allocated here", b.Name)
	}
	var scratch [8]int64 // most buffers have few dimensions: keep idx off the heap
	idx := scratch[:0]
	for _, e := range indices {
		idx = append(idx, in.eval(e).i)
	}
	var off int64
	for i, v := range idx {
		if v < 0 || v >= t.shape[i] {
			oob := &OutOfBoundsError{Buffer: b, Index: slices.Clone(idx), Shape: t.shape, Access: access, Stmt: in.stmt0}
			if in.block != nil {
				oob.Block = in.block.b.Name
			}
			panic(bailout{oob})
		}
		off = off*t.shape[i] + v
	}
	if blk := in.block; blk != nil && !blk.own[b] {
		regions, what := blk.reads, "reads"
		if write {
			regions, what = blk.writes, "writes"
		}
		if !inAnyRegion(regions, b, idx) {
			in.fail(access, "block %s accesses %s%s, outside the region its %s declare for %s", blk.b.Name, b.Name, formatIndex(idx), what, b.Name)
		}
	}
	return t, off
}

// inAnyRegion reports whether one of the boxes of buffer b holds idx.
func inAnyRegion(boxes []box, b *Buffer, idx []int64) bool {
	for _, bx := range boxes {
		if bx.buf != b {
			continue
		}
		inside := true
		for i, iv := range bx.dims {
			if idx[i] < iv.Min || idx[i] > iv.Max {
				inside = false
				break
			}
		}
		if inside {
			return true
		}
	}
	return false
}

// Expressions.

func (in *interp) eval(e Expr) value {
	switch e := e.(type) {
	case *Const:
		return constValue(e)
	case *Var:
		v, ok := in.lookup(e.Name)
		if !ok {
			in.fail(e, "variable %s has no value here", e.Name)
		}
		return v
	case *Binary:
		a := in.eval(e.A)
		// && and || do not evaluate their right operand when the left one
		// decides, so a guard such as i < n && A[i] > 0 is safe.
		if e.Op == OpAnd && a.i == 0 || e.Op == OpOr && a.i != 0 {
			return a
		}
		b := in.eval(e.B)
		r, err := evalBinary(e.Op, e.A.Type(), a, b)
		if err != nil {
			in.fail(e, "%v in %s", err, firstLine(e))
		}
		return r
	case *Not:
		return boolValue(in.eval(e.X).i == 0)
	case *Select:
		c, t, f := in.eval(e.Cond), in.eval(e.T), in.eval(e.F)
		if c.i != 0 {
			return t
		}
		return f
	case *Cast:
		return evalCast(e.To, e.X.Type(), in.eval(e.X))
	case *Call:
		args := make([]value, len(e.Args))
		for i, a := range e.Args {
			args[i] = in.eval(a)
		}
		return evalCall(e.Func, e.Args[0].Type(), args)
	case *Load:
		t, off := in.locate(e, e.Buffer, e.Indices, false)
		return t.get(off)
	}
	panic(fmt.Sprintf("ast.Interpret: unexpected expression %T", e))
}

// Buffers at run time.

// tensor is a buffer's data at run time.
type tensor struct {
	buf   *Buffer
	shape []int64
	data  any
}

func (t *tensor) get(off int64) value {
	switch d := t.data.(type) {
	case []float32:
		return value{f: float64(d[off])}
	case []float64:
		return value{f: d[off]}
	case []int32:
		return value{i: int64(d[off])}
	case []int64:
		return value{i: d[off]}
	case []bool:
		return boolValue(d[off])
	case []uint16:
		if t.buf.DType == Float16 {
			return value{f: Float16Value(d[off])}
		}
		return value{f: BFloat16Value(d[off])}
	}
	panic(fmt.Sprintf("ast.Interpret: data of type %T", t.data))
}

func (t *tensor) set(off int64, v value) {
	switch d := t.data.(type) {
	case []float32:
		d[off] = float32(v.f)
	case []float64:
		d[off] = v.f
	case []int32:
		d[off] = int32(v.i)
	case []int64:
		d[off] = v.i
	case []bool:
		d[off] = v.i != 0
	case []uint16:
		if t.buf.DType == Float16 {
			d[off] = Float16Bits(v.f)
		} else {
			d[off] = BFloat16Bits(v.f)
		}
	default:
		panic(fmt.Sprintf("ast.Interpret: data of type %T", t.data))
	}
}

// GoType returns the Go type of the data of a buffer of element type t,
// as Interpret takes it ("[]float32"; "[]uint16" for float16 and
// bfloat16).
func GoType(t DType) string {
	switch t {
	case Float32:
		return "[]float32"
	case Float64:
		return "[]float64"
	case Int32:
		return "[]int32"
	case Int64:
		return "[]int64"
	case Bool:
		return "[]bool"
	}
	return "[]uint16"
}

// DataLen returns the length of data, a Go slice, and whether its type
// is the one GoType names for element type t.
func DataLen(t DType, data any) (int, bool) {
	switch d := data.(type) {
	case []float32:
		return len(d), t == Float32
	case []float64:
		return len(d), t == Float64
	case []int32:
		return len(d), t == Int32
	case []int64:
		return len(d), t == Int64
	case []bool:
		return len(d), t == Bool
	case []uint16:
		return len(d), t == Float16 || t == BFloat16
	}
	return 0, false
}

func makeData(t DType, n int64) any {
	switch t {
	case Float32:
		return make([]float32, n)
	case Float64:
		return make([]float64, n)
	case Int32:
		return make([]int32, n)
	case Int64:
		return make([]int64, n)
	case Bool:
		return make([]bool, n)
	}
	return make([]uint16, n)
}

// poisoned returns new data filled with a value that stands out.
func poisoned(t DType, n int64) any {
	data := makeData(t, n)
	Poison(t, data)
	return data
}

// Poison fills data, a Go slice of the type GoType names for t, with the
// value the interpreter gives a buffer it allocates: NaN for floating-point
// types, 0xDEADBEEF for integers (bools are left alone). A check that runs
// a function on outputs poisoned so finds every element it leaves
// unwritten: NaN propagates, and compares equal only to NaN.
func Poison(t DType, data any) {
	switch d := data.(type) {
	case []float32:
		for i := range d {
			d[i] = float32(math.NaN())
		}
	case []float64:
		for i := range d {
			d[i] = math.NaN()
		}
	case []int32:
		for i := range d {
			d[i] = -0x21524111 // 0xDEADBEEF
		}
	case []int64:
		for i := range d {
			d[i] = -0x21524111
		}
	case []uint16:
		nan := uint16(0x7e00) // a quiet NaN in float16
		if t == BFloat16 {
			nan = 0x7fc0
		}
		for i := range d {
			d[i] = nan
		}
	}
}

// Float64s returns the elements of data, a Go slice of the type GoType
// names for t, as float64 values (int64 values beyond 2^53 round; bools
// are 0 and 1). It returns nil for data of another type.
func Float64s(t DType, data any) []float64 {
	var out []float64
	switch d := data.(type) {
	case []float32:
		for _, v := range d {
			out = append(out, float64(v))
		}
	case []float64:
		out = append(out, d...)
	case []int32:
		for _, v := range d {
			out = append(out, float64(v))
		}
	case []int64:
		for _, v := range d {
			out = append(out, float64(v))
		}
	case []bool:
		for _, v := range d {
			if v {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	case []uint16:
		for _, v := range d {
			if t == BFloat16 {
				out = append(out, BFloat16Value(v))
			} else {
				out = append(out, Float16Value(v))
			}
		}
	}
	return out
}

// DataOf returns values as a Go slice of the type GoType names for t,
// each value converted to t (rounded to nearest for floats, truncated
// for integers, non-zero as true for bool).
func DataOf(t DType, values []float64) any {
	switch t {
	case Float32:
		out := make([]float32, len(values))
		for i, v := range values {
			out[i] = float32(v)
		}
		return out
	case Float64:
		return append([]float64(nil), values...)
	case Int32:
		out := make([]int32, len(values))
		for i, v := range values {
			out[i] = int32(v)
		}
		return out
	case Int64:
		out := make([]int64, len(values))
		for i, v := range values {
			out[i] = int64(v)
		}
		return out
	case Bool:
		out := make([]bool, len(values))
		for i, v := range values {
			out[i] = v != 0
		}
		return out
	}
	out := make([]uint16, len(values))
	for i, v := range values {
		if t == BFloat16 {
			out[i] = BFloat16Bits(v)
		} else {
			out[i] = Float16Bits(v)
		}
	}
	return out
}
