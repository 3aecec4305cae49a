package schedgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/schedule"
)

// Op is one schedule primitive with its arguments. Blocks, loops and
// buffers are named (loops by their variable, which a schedule keeps
// unique), so an op applies to any schedule whose function has them, and a
// sequence of ops replays on a fresh schedule of the same function.
type Op struct {
	Prim  string   // the primitive's trace name: "split", "compute_at", ...
	Block string   // the block argument, if the primitive takes one
	Loops []string // the loop arguments, in order
	Ints  []int    // split factors or tile sizes
	Str   string   // the buffer (caches, set_scope) or the GPU axis (bind)
	Scope string   // the storage scope (caches, set_scope)
	// Layout is transform_layout's index map, applied with a fill of 0 for
	// the padding (TransformLayoutPadded).
	Layout string
}

// Prims lists the primitives an Op can name. Two are sampling steps:
// sample_perfect_tile(l, [n, maxInnermost]) samples a perfect tiling of l
// in n parts and splits l by it (SplitBy), and sample_compute_location(b)
// samples a location for b and computes b there. Apply returns them
// resolved to the split or compute_at they made, so that a recorded
// sequence replays the same decisions.
var Prims = []string{
	"split", "fuse", "reorder", "tile", "align",
	"parallel", "vectorize", "unroll", "bind",
	"compute_at", "reverse_compute_at", "compute_inline", "reverse_compute_inline",
	"rfactor", "decompose_reduction", "cache_read", "cache_write", "set_scope",
	"sample_perfect_tile", "sample_compute_location",
	"transform_layout", // drawn apart from the others (see layoutEvery)
}

// drawn is how many of Prims a generator draws by weight.
const drawn = 20

// String returns the op in the style of the trace text:
// split(i, [-1, 4]), compute_at(Y, i_j_fused), cache_read(C, A, "local").
func (op Op) String() string {
	var args []string
	if op.Block != "" {
		args = append(args, op.Block)
	}
	switch op.Prim {
	case "tile":
		args = append(args, "["+strings.Join(op.Loops, ", ")+"]")
	default:
		args = append(args, op.Loops...)
	}
	if op.Ints != nil {
		args = append(args, "["+strings.Join(ints(op.Ints), ", ")+"]")
	}
	if op.Str != "" {
		args = append(args, strconv.Quote(op.Str))
	}
	if op.Scope != "" {
		args = append(args, strconv.Quote(op.Scope))
	}
	if op.Layout != "" {
		args = append(args, strconv.Quote(op.Layout))
	}
	return op.Prim + "(" + strings.Join(args, ", ") + ")"
}

func ints(xs []int) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Itoa(x)
	}
	return out
}

// Go returns the op as a Go statement over a *schedule.Schedule named sch
// and the helpers block and loop that GoProgram declares.
func (op Op) Go() string {
	b := fmt.Sprintf("block(%q)", op.Block)
	ls := make([]string, len(op.Loops))
	for i, l := range op.Loops {
		ls[i] = fmt.Sprintf("loop(%q)", l)
	}
	l0 := "schedule.Loop{}"
	if len(ls) > 0 {
		l0 = ls[0]
	}
	var call string
	results := "err"
	switch op.Prim {
	case "split":
		call, results = fmt.Sprintf("sch.Split(%s, %s)", l0, strings.Join(ints(op.Ints), ", ")), "_, err"
	case "fuse", "align":
		name := map[string]string{"fuse": "Fuse", "align": "Align"}[op.Prim]
		call, results = fmt.Sprintf("sch.%s(%s)", name, strings.Join(ls, ", ")), "_, err"
	case "reorder":
		call = fmt.Sprintf("sch.Reorder(%s)", strings.Join(ls, ", "))
	case "tile":
		call, results = fmt.Sprintf("sch.Tile([]schedule.Loop{%s}, []int{%s})", strings.Join(ls, ", "), strings.Join(ints(op.Ints), ", ")), "_, err"
	case "parallel", "vectorize", "unroll":
		call = fmt.Sprintf("sch.%s(%s)", strings.ToUpper(op.Prim[:1])+op.Prim[1:], l0)
	case "bind":
		call = fmt.Sprintf("sch.Bind(%s, %q)", l0, op.Str)
	case "compute_at":
		call = fmt.Sprintf("sch.ComputeAt(%s, %s)", b, l0)
	case "reverse_compute_at":
		call = fmt.Sprintf("sch.ReverseComputeAt(%s, %s)", b, l0)
	case "compute_inline":
		call = fmt.Sprintf("sch.ComputeInline(%s)", b)
	case "reverse_compute_inline":
		call = fmt.Sprintf("sch.ReverseComputeInline(%s)", b)
	case "rfactor":
		call, results = fmt.Sprintf("sch.RFactor(%s)", l0), "_, err"
	case "decompose_reduction":
		call, results = fmt.Sprintf("sch.DecomposeReduction(%s, %s)", b, l0), "_, err"
	case "cache_read":
		call, results = fmt.Sprintf("sch.CacheRead(%s, %q, %q)", b, op.Str, op.Scope), "_, err"
	case "cache_write":
		call, results = fmt.Sprintf("sch.CacheWrite(%s, %q, %q)", b, op.Str, op.Scope), "_, err"
	case "set_scope":
		call = fmt.Sprintf("sch.SetScope(%s, %q, %q)", b, op.Str, op.Scope)
	case "transform_layout":
		call = fmt.Sprintf("sch.TransformLayoutPadded(%s, %q, %q, 0)", b, op.Str, op.Layout)
	case "sample_compute_location":
		return fmt.Sprintf("if l, err := sch.SampleComputeLocation(%s); err != nil {\n\treturn err\n} else if err := sch.ComputeAt(%s, l); err != nil {\n\treturn err\n}", b, b)
	case "sample_perfect_tile":
		return fmt.Sprintf("if vs, err := sch.SamplePerfectTile(%s, %s); err != nil {\n\treturn err\n} else if _, err := sch.SplitBy(%s, vs); err != nil {\n\treturn err\n}", l0, strings.Join(ints(op.Ints), ", "), l0)
	default:
		return "// unknown primitive " + op.Prim
	}
	return fmt.Sprintf("if %s := %s; err != nil {\n\treturn err\n}", results, call)
}

// GoProgram returns ops as the body of a Go function that applies them to
// a schedule, ready to paste into a test:
//
//	func apply(sch *schedule.Schedule) error {
//		block := ...
//		if _, err := sch.Split(loop("i"), -1, 4); err != nil {
//			return err
//		}
//		...
func GoProgram(ops []Op) string {
	var b strings.Builder
	b.WriteString("func apply(sch *schedule.Schedule) error {\n")
	b.WriteString("\t// A name that does not exist gives the zero handle, which the primitive refuses.\n")
	b.WriteString("\tblock := func(name string) schedule.Block { b, _ := sch.GetBlock(name); return b }\n")
	b.WriteString("\tloop := func(name string) schedule.Loop { l, _ := sch.GetLoop(name); return l }\n")
	b.WriteString("\t_, _ = block, loop\n")
	for _, op := range ops {
		for _, line := range strings.Split(op.Go(), "\n") {
			b.WriteString("\t" + line + "\n")
		}
	}
	b.WriteString("\treturn nil\n}\n")
	return b.String()
}

// Apply applies op to s and returns it resolved: a sampling op becomes the
// split or compute_at it made (see Prims), any other op is returned as it
// is. Apply resolves the op's names to handles first (each getter is a
// trace instruction of its own), then calls snap, then the primitive, so
// that what changed between snap and the return is the primitive's doing;
// a sampling op calls snap again between the sampling and the primitive.
// A name that does not exist is refused with the getter's error (wrapping
// schedule.ErrHandle) before snap. Apply panics on an unknown primitive.
func (op Op) Apply(s *schedule.Schedule, snap func()) (Op, error) {
	var b schedule.Block
	if op.Block != "" {
		var err error
		if b, err = s.GetBlock(op.Block); err != nil {
			return op, err
		}
	}
	ls := make([]schedule.Loop, len(op.Loops))
	for i, name := range op.Loops {
		var err error
		if ls[i], err = s.GetLoop(name); err != nil {
			return op, err
		}
	}
	var l0 schedule.Loop
	if len(ls) > 0 {
		l0 = ls[0]
	}
	snap()
	var err error
	switch op.Prim {
	case "split":
		_, err = s.Split(l0, op.Ints...)
	case "fuse":
		_, err = s.Fuse(ls...)
	case "reorder":
		err = s.Reorder(ls...)
	case "tile":
		_, err = s.Tile(ls, op.Ints)
	case "align":
		_, err = s.Align(ls...)
	case "parallel":
		err = s.Parallel(l0)
	case "vectorize":
		err = s.Vectorize(l0)
	case "unroll":
		err = s.Unroll(l0)
	case "bind":
		err = s.Bind(l0, op.Str)
	case "compute_at":
		err = s.ComputeAt(b, l0)
	case "reverse_compute_at":
		err = s.ReverseComputeAt(b, l0)
	case "compute_inline":
		err = s.ComputeInline(b)
	case "reverse_compute_inline":
		err = s.ReverseComputeInline(b)
	case "rfactor":
		_, err = s.RFactor(l0)
	case "decompose_reduction":
		_, err = s.DecomposeReduction(b, l0)
	case "cache_read":
		_, err = s.CacheRead(b, op.Str, op.Scope)
	case "cache_write":
		_, err = s.CacheWrite(b, op.Str, op.Scope)
	case "set_scope":
		err = s.SetScope(b, op.Str, op.Scope)
	case "transform_layout":
		err = s.TransformLayoutPadded(b, op.Str, op.Layout, 0)
	case "sample_perfect_tile":
		if len(op.Ints) != 2 {
			panic("schedgen: sample_perfect_tile takes [n, maxInnermost]")
		}
		var vs []schedule.Value
		if vs, err = s.SamplePerfectTile(l0, op.Ints[0], op.Ints[1]); err != nil {
			return op, err
		}
		fs := make([]int, len(vs))
		for i, v := range vs {
			fs[i] = int(v.Int())
		}
		snap()
		_, err = s.SplitBy(l0, vs)
		return Op{Prim: "split", Loops: op.Loops, Ints: fs}, err
	case "sample_compute_location":
		var l schedule.Loop
		if l, err = s.SampleComputeLocation(b); err != nil {
			return op, err
		}
		snap()
		err = s.ComputeAt(b, l)
		if l.IsRoot() {
			return op, err
		}
		return Op{Prim: "compute_at", Block: op.Block, Loops: []string{l.Name()}}, err
	default:
		panic("schedgen: unknown primitive " + op.Prim)
	}
	return op, err
}

// blockPrims are the primitives whose first argument is a block.
var blockPrims = map[string]bool{
	"compute_at": true, "reverse_compute_at": true, "compute_inline": true, "reverse_compute_inline": true,
	"decompose_reduction": true, "cache_read": true, "cache_write": true, "set_scope": true,
	"sample_compute_location": true, "transform_layout": true,
}

// ParseOps reads ops in the form Op.String prints, separated by
// semicolons or newlines: "split(i, [-1, 4]); compute_at(Y, i_0)".
func ParseOps(text string) ([]Op, error) {
	var ops []Op
	for _, part := range strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		op, err := parseOp(part)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func parseOp(s string) (Op, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return Op{}, fmt.Errorf("schedgen: op %q is not prim(args)", s)
	}
	op := Op{Prim: strings.TrimSpace(s[:open])}
	if !slices.Contains(Prims, op.Prim) {
		return Op{}, fmt.Errorf("schedgen: op %q: unknown primitive %s", s, op.Prim)
	}
	// Split the arguments at top-level commas.
	var args []string
	depth, start := 0, open+1
	body := s[:len(s)-1]
	quoted := false
	for i := open + 1; i < len(body); i++ {
		switch {
		case quoted:
			if body[i] == '\\' {
				i++
			} else if body[i] == '"' {
				quoted = false
			}
			continue
		case body[i] == '"':
			quoted = true
			continue
		}
		switch body[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(body[start:i]))
				start = i + 1
			}
		}
	}
	if last := strings.TrimSpace(body[start:]); last != "" {
		args = append(args, last)
	}
	var strs []string
	for i, a := range args {
		switch {
		case i == 0 && blockPrims[op.Prim]:
			op.Block = a
		case strings.HasPrefix(a, "["):
			items := strings.Split(strings.Trim(a, "[]"), ",")
			if op.Prim == "tile" && op.Loops == nil {
				for _, it := range items {
					op.Loops = append(op.Loops, strings.TrimSpace(it))
				}
				continue
			}
			op.Ints = []int{}
			for _, it := range items {
				n, err := strconv.Atoi(strings.TrimSpace(it))
				if err != nil {
					return Op{}, fmt.Errorf("schedgen: op %q: %q is not an integer", s, it)
				}
				op.Ints = append(op.Ints, n)
			}
		case strings.HasPrefix(a, `"`):
			u, err := strconv.Unquote(a)
			if err != nil {
				return Op{}, fmt.Errorf("schedgen: op %q: %v", s, err)
			}
			strs = append(strs, u)
		default:
			op.Loops = append(op.Loops, a)
		}
	}
	switch {
	case len(strs) == 2 && op.Prim == "transform_layout":
		op.Str, op.Layout = strs[0], strs[1]
	case len(strs) == 2:
		op.Str, op.Scope = strs[0], strs[1]
	case len(strs) == 1 && op.Prim == "bind":
		op.Str = strs[0]
	case len(strs) == 1:
		op.Scope = strs[0]
	}
	return op, nil
}
