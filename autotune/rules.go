package autotune

import (
	"errors"
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/schedule"
)

// Target is what the rules need to know of the machine.
type Target struct {
	VectorLanes int // float32 lanes of a vector register (8 on AVX2, 16 on AVX-512)
	Threads     int
	GPU         *GPU // a CUDA device (GPURules); nil for a CPU
	// Caches are a CPU core's cache sizes, which Default sizes its
	// cache tiles and reduction steps by (0: DefaultCaches's).
	Caches Caches
	// Bounds, when set, are the values the symbolic sizes take at
	// most and at least (a bucket's ends): the search then draws no
	// tile of a symbolic loop larger than the loop can be, leaves serial
	// a block with too little work at the largest sizes, and spreads
	// over threads a loop that has work for each of them at the
	// smallest (parallelLoop). (A pointer keeps Target comparable.)
	Bounds *SizeBounds

	// decide makes the rules take each choice by a heuristic instead of
	// a random draw (Default).
	decide bool
	// shrink makes the GPU tiles Default decides smaller, halving the
	// threads and the fetched chunk that many times (see gpuTiles).
	shrink int
	// fixedGPUTiles leaves blocks with loops of symbolic extent to the
	// GPU rules other than MultiLevelTilingGPU (Default's last resort,
	// when its tiling of them fails at every shrink).
	fixedGPUTiles bool
	// panelsOuter, set by MultiLevelTiling for one block under decide,
	// steps through the vectorized loop's panels outermost and through
	// the other spatial loops within each panel: a weight that only the
	// vectorized loop indexes and that does not fit the L2 (ResNet-50's
	// last 3x3 convolutions, 9.4 MB of filters over 7x7 pixels) is then
	// read from memory once, a panel at a time, instead of once per tile
	// of pixels (streamsPanels).
	panelsOuter bool
	// panelsUnderRows, set with panelsOuter on more than one thread
	// where the block reads a buffer its own function writes (a pad
	// stage's padded copy) along its outermost spatial loop (the
	// image's rows), puts the threads' shares of that loop outermost
	// and the panels under them (see rowsForThreads); threadRows is set
	// for that one loop's split.
	panelsUnderRows, threadRows bool
	// channelwise, set by MultiLevelTiling for one block under decide,
	// makes Default's register tile of a block whose every input is
	// indexed by the vectorized loop (a depthwise convolution) up to four
	// vectors wide and its rows all from the innermost other spatial
	// loop, where neighbouring windows share inputs (see channelwise).
	channelwise bool
	// wideWindows, set with channelwise where the windows span more
	// than maxSharedTaps along the width (a 7x7 depthwise convolution),
	// makes that register tile one vector wide and its rows two along
	// the height by as many along the width as fill accumulators and
	// two registers more: the inputs are operands of the FMAs, not
	// kept in registers (see wideWindowTile).
	wideWindows bool
	// groupLanes, set by MultiLevelTiling for one block, is the lanes
	// of a grouped convolution's narrow groups (see groupLanes): its
	// register tile's rows are one vector of them, whatever the target's
	// vectors are.
	groupLanes int64
	// rowless, set by MultiLevelTiling for one block under decide, makes
	// Default's register tile of a block with no spatial loop but the
	// vectorized one (a matrix-vector product: one row of outputs) up to
	// four vectors wide, tails allowed: its vectors are the only
	// independent accumulators it has (see rowless).
	rowless bool
	// aliasedPanels, set with rowless, says that the operand the
	// vectorized loop reads (a matrix-vector product's matrix) has its
	// rows a multiple of l1SetSpan apart: Default then steps through
	// the reduction outside the panels, a few rows at a time, reading
	// each row of the matrix straight through (see aliasedPanels).
	aliasedPanels bool
}

// SizeBounds are the largest and the smallest values of symbolic sizes,
// by name (Min may be nil: no lower bound but 1).
type SizeBounds struct {
	Max, Min map[string]int64
}

// max returns the bounds' map (nil when there are none).
func (b *SizeBounds) max() map[string]int64 {
	if b == nil {
		return nil
	}
	return b.Max
}

// min returns the lower bounds' map (nil when there are none).
func (b *SizeBounds) min() map[string]int64 {
	if b == nil {
		return nil
	}
	return b.Min
}

// vectorRegisters is the target's vector register file: 32 registers
// with AVX-512, 16 otherwise.
func (t Target) vectorRegisters() int64 {
	if t.VectorLanes >= 16 {
		return 32
	}
	return 16
}

// accumulators is how many vector registers a dense register tile (a
// matrix product's, a convolution's) may take: all but four, which hold
// its operands (a vector of weights per vector of the tile's width, at
// most two, the rest broadcasts). With AVX-512 that is 28: ResNet-50's
// 3x3 convolutions at 14x14 then take rows of 14 pixels by two vectors
// where 24 gave 7, its 1x1 ones 14 rows of 196 where 24 gave 11 (guarded
// to 198).
func (t Target) accumulators() int64 { return t.vectorRegisters() - 4 }

// sharedAccumulators is how many vector registers the register tile of a
// channel-wise block starts from (see channelwise and wideWindowTile):
// three quarters of the file, as the inputs that neighbouring windows
// share, or the operands of wide windows, take the rest.
func (t Target) sharedAccumulators() int64 { return t.vectorRegisters() * 3 / 4 }

// Rule is one rule of the search space: applied to a block of a
// schedule, it transforms it with sampled decisions (so the trace can be
// mutated and replayed), or leaves it alone when it does not apply. A
// rule that fails part-way returns the error; the candidate is dropped,
// unless the error wraps schedule.ErrInternal (see InternalError).
type Rule interface {
	Name() string
	Apply(s *schedule.Schedule, b schedule.Block, t Target) error
}

// DefaultRules are the CPU rules, in the order they are applied to each
// block. The compute location comes before parallel-vectorize-unroll:
// compute_at makes the moved block's loops anew, as plain serial loops.
func DefaultRules() []Rule {
	return []Rule{
		AutoInline{NoSelect: true},
		MultiLevelTiling{Structure: "SSRSRS", MaxInnermost: 64, MaxInnermostReduce: 256, WriteCache: []int64{1, 2}},
		OuterReduction{MaxVectors: 4},
		TransposeTiling{MaxTile: 64},
		RandomComputeLocation{},
		ParallelVectorizeUnroll{MaxUnroll: []int64{0, 16, 64}, HalfVectors: true},
		VectorRFactor{MaxVectors: 4},
		DecomposeReduction{},
	}
}

// errSkip tells the space a rule does not apply; it is not a failure.
var errSkip = errors.New("rule does not apply")

// errDone is returned by a rule that scheduled its block completely: the
// rules after it leave the block alone (TensorCoreTiling: its nest is one
// instruction).
var errDone = errors.New("rule scheduled the block completely")

// internal returns err when it wraps schedule.ErrInternal, else nil. A
// rule may take a primitive's refusal for an answer (the loop stays
// serial, the block where it is), but not a bug of loom (a result the
// translation validator rejects): that ends the candidate, which the
// search records as failed (see InternalError).
func internal(err error) error {
	if errors.Is(err, schedule.ErrInternal) {
		return err
	}
	return nil
}

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

// HostTarget is the Target of this machine's CPU, running on threads:
// its vector width, and its cache sizes as the machine reports them.
func HostTarget(threads int) Target {
	return Target{VectorLanes: llvm.Host().VectorBits() / 32, Threads: threads, Caches: HostCaches()}
}

// TargetKey names a CPU target and thread count as records store it: a
// record is only the best for the machine it was measured on.
func TargetKey(t llvm.Target, threads int) string {
	return fmt.Sprintf("%s/%s/%dbit/%dT", t.Triple, t.CPU, t.VectorBits(), threads)
}

// sampleAmong samples one of choices, all equally likely.
func sampleAmong(s *schedule.Schedule, choices []int64) (schedule.Value, error) {
	probs := make([]float64, len(choices))
	for i := range probs {
		probs[i] = 1
	}
	return s.SampleCategorical(choices, probs)
}
