package autotune

import (
	"errors"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// Target is what the rules need to know of the machine.
type Target struct {
	VectorLanes int // float32 lanes of a vector register (8 on AVX2, 16 on AVX-512)
	Threads     int
}

// Rule is one rule of the search space: applied to a block of a
// schedule, it transforms it with sampled decisions (so the trace can be
// mutated and replayed), or leaves it alone when it does not apply. A
// rule that fails part-way returns the error; the candidate is dropped.
type Rule interface {
	Name() string
	Apply(s *schedule.Schedule, b schedule.Block, t Target) error
}

// DefaultRules are the CPU rules, in the order they are applied to each
// block.
func DefaultRules() []Rule {
	return []Rule{
		AutoInline{},
		MultiLevelTiling{Structure: "SSRSRS", MaxInnermost: 64},
		ParallelVectorizeUnroll{MaxUnroll: []int64{0, 16, 64}},
		RandomComputeLocation{},
	}
}

// errSkip tells the space a rule does not apply; it is not a failure.
var errSkip = errors.New("rule does not apply")

// blockInfo describes a block of the current function.
type blockInfo struct {
	blk    *ast.ScheduleBlock
	loops  []schedule.Loop
	roles  []role // per loop
	output bool   // writes a parameter of the function
	reads  int    // blocks reading what it writes
}

type role uint8

const (
	roleNone role = iota
	roleSpatial
	roleReduce
	roleMixed
)

func info(s *schedule.Schedule, b schedule.Block) (*blockInfo, error) {
	f := s.Func()
	var blk *ast.ScheduleBlock
	for _, x := range f.Blocks() {
		if x.Name == b.Name() {
			blk = x
		}
	}
	if blk == nil {
		return nil, errSkip
	}
	loops, err := s.GetLoops(b)
	if err != nil {
		return nil, err
	}
	bi := &blockInfo{blk: blk, loops: loops}
	for _, l := range loops {
		r := roleNone
		for _, it := range blk.Iters {
			if !ast.Mentions(it.Binding, l.Name()) {
				continue
			}
			k := roleSpatial
			if it.Kind == ast.Reduce {
				k = roleReduce
			}
			if r != roleNone && r != k {
				k = roleMixed
			}
			r = k
		}
		bi.roles = append(bi.roles, r)
	}
	for _, p := range f.Params {
		for _, w := range blk.Writes {
			if w.Buffer.Name == p.Name {
				bi.output = true
			}
		}
	}
	for _, x := range f.Blocks() {
		for _, rd := range x.Reads {
			for _, w := range blk.Writes {
				if x != blk && rd.Buffer.Name == w.Buffer.Name {
					bi.reads++
				}
			}
		}
	}
	return bi, nil
}

func (bi *blockInfo) hasReduce() bool {
	return slices.ContainsFunc(bi.blk.Iters, func(it *ast.IterVar) bool { return it.Kind == ast.Reduce })
}

// AutoInline inlines blocks that compute cheap element-wise values into
// their consumers (MetaSchedule's auto-inline): not outputs, not
// reductions, read by some other block.
type AutoInline struct{}

func (AutoInline) Name() string { return "auto-inline" }

func (AutoInline) Apply(s *schedule.Schedule, b schedule.Block, _ Target) error {
	bi, err := info(s, b)
	if err != nil || bi.output || bi.hasReduce() || bi.reads == 0 {
		return errSkip
	}
	if s.ComputeInline(b) != nil {
		return errSkip // not inlinable here: leave it
	}
	return nil
}

// MultiLevelTiling tiles a block that reuses data (a reduction whose
// inputs are not all indexed by every loop, as matmul and conv2d) in the
// structure given by a string of S (spatial) and R (reduce) levels:
// "SSRSRS" splits each spatial loop in four and each reduce loop in two,
// and orders the levels S0 R... as written. Tile sizes are sampled with
// SamplePerfectTile, the innermost capped at MaxInnermost.
type MultiLevelTiling struct {
	Structure    string
	MaxInnermost int
}

func (MultiLevelTiling) Name() string { return "multi-level-tiling" }

func (m MultiLevelTiling) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || !bi.hasReduce() || !reuses(bi) {
		return errSkip
	}
	nS, nR := 0, 0
	for _, c := range m.Structure {
		if c == 'S' {
			nS++
		} else {
			nR++
		}
	}
	// levels[k] lists, for level k of the structure, the loops at it.
	levels := make([][]schedule.Loop, len(m.Structure))
	lastR := strings.LastIndexByte(m.Structure, 'R')
	firstReduce := true
	for i, l := range bi.loops {
		n, want := nS, 'S'
		switch bi.roles[i] {
		case roleReduce:
			n, want = nR, 'R'
			// Only the outermost reduce loop is spread over the R
			// levels: interleaving two reduce loops would reorder the
			// accumulation, which the schedule refuses as a change of
			// result. The others stay whole at the last R level.
			if !firstReduce {
				levels[lastR] = append(levels[lastR], l)
				continue
			}
			firstReduce = false
		case roleSpatial:
		default:
			return errSkip
		}
		vals, err := s.SamplePerfectTile(l, n, m.MaxInnermost)
		if err != nil {
			return err
		}
		parts, err := s.SplitBy(l, vals)
		if err != nil {
			return err
		}
		k := 0
		for lv, c := range m.Structure {
			if c == want {
				levels[lv] = append(levels[lv], parts[k])
				k++
			}
		}
	}
	var order []schedule.Loop
	for _, lv := range levels {
		order = append(order, lv...)
	}
	return s.Reorder(order...)
}

// reuses reports whether some buffer the block reads is not indexed by
// every iteration variable: its elements are read more than once.
func reuses(bi *blockInfo) bool {
	for _, r := range bi.blk.Reads {
		if slices.ContainsFunc(bi.blk.Writes, func(w ast.Region) bool { return w.Buffer.Name == r.Buffer.Name }) {
			continue
		}
		for _, it := range bi.blk.Iters {
			used := false
			for _, rg := range r.Ranges {
				if ast.Mentions(rg.Min, it.Var.Name) {
					used = true
				}
			}
			if !used {
				return true
			}
		}
	}
	return false
}

// ParallelVectorizeUnroll parallelizes a block's outermost spatial loop,
// vectorizes its innermost loop when that is spatial with a constant
// extent, and unrolls the loop above it when a sampled limit allows (0
// never unrolls).
type ParallelVectorizeUnroll struct {
	MaxUnroll []int64
}

func (ParallelVectorizeUnroll) Name() string { return "parallel-vectorize-unroll" }

func (p ParallelVectorizeUnroll) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || len(bi.loops) == 0 {
		return errSkip
	}
	if bi.roles[0] == roleSpatial && t.Threads > 1 {
		_ = s.Parallel(bi.loops[0]) // refused when illegal: stays serial
	}
	last := len(bi.loops) - 1
	if bi.roles[last] == roleSpatial && last > 0 {
		_ = s.Vectorize(bi.loops[last])
	}
	if len(p.MaxUnroll) > 0 && last > 0 && bi.roles[last-1] != roleMixed {
		probs := make([]float64, len(p.MaxUnroll))
		for i := range probs {
			probs[i] = 1
		}
		v, err := s.SampleCategorical(p.MaxUnroll, probs)
		if err != nil {
			return err
		}
		// The limit is an annotation, so a mutated decision takes effect
		// on replay; unrollAnnotated applies it before building.
		return s.AnnotateLoopBy(bi.loops[last-1], unrollKey, v)
	}
	return nil
}

// unrollKey annotates a loop with the largest extent it is unrolled at.
const unrollKey = "autotune.unroll_max"

// unrollAnnotated unrolls the serial loops whose constant extent is
// within their unrollKey annotation (always legal: unrolling keeps the
// order of iterations).
func unrollAnnotated(f *ast.Func) *ast.Func {
	var fix func(s ast.Stmt) ast.Stmt
	fix = func(s ast.Stmt) ast.Stmt {
		s = ast.MapChildren(s, fix, func(e ast.Expr) ast.Expr { return e })
		lp, ok := s.(*ast.For)
		if !ok || lp.Kind != ast.Serial {
			return s
		}
		limit, ok := lp.Annotations[unrollKey]
		n, isInt := limit.(int64)
		ext, isConst := ast.ConstIntValue(ast.Simplify(lp.Extent))
		if !ok || !isInt || !isConst || n == 0 || ext > n {
			return s
		}
		c := *lp
		c.Kind = ast.Unrolled
		return &c
	}
	g := *f
	g.Body = fix(f.Body)
	return &g
}

func loopExtent(s *schedule.Schedule, name string) (int64, bool) {
	var ext int64
	ok := false
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		if f, isFor := n.(*ast.For); isFor && f.Var.Name == name {
			ext, ok = ast.ConstIntValue(ast.Simplify(f.Extent))
		}
		return true
	})
	return ext, ok
}

// RandomComputeLocation moves a block that is not an output under a
// sampled loop of its consumer (or leaves it at the root).
type RandomComputeLocation struct{}

func (RandomComputeLocation) Name() string { return "random-compute-location" }

func (RandomComputeLocation) Apply(s *schedule.Schedule, b schedule.Block, _ Target) error {
	bi, err := info(s, b)
	if err != nil || bi.output || bi.reads == 0 {
		return errSkip
	}
	l, err := s.SampleComputeLocation(b)
	if err != nil {
		return errSkip
	}
	if l.IsRoot() {
		return nil
	}
	return s.ComputeAt(b, l)
}
