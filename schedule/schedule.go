package schedule

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
	"github.com/loom-go/loom/validate"
)

// Schedule owns a function and transforms it with primitives. It hands out
// Block and Loop handles, records every primitive and sampling decision in
// a Trace, and checks every transformation: a primitive that would change
// what the function computes, or that it cannot prove safe, returns an
// *Error and leaves the schedule exactly as it was.
//
// A Schedule is not safe for concurrent use.
type Schedule struct {
	f       *ast.Func
	trace   Trace
	rng     *rand.Rand
	nrv     int            // random variables named so far
	handles map[string]any // every handle given out, by random variable name
	prog    *poly.Program  // the model of f, computed on first use
	// validation says after which primitives the translation validator
	// runs (see WithValidation).
	validation validation

	// While replaying a trace: the names the next outputs must get, and
	// the decision the next sampling instruction must take.
	replayOutputs  []string
	replayDecision []int64
	replaying      bool
	adapt          bool // a replayed tiling that does not fit is fitted (AdaptDecisions)
	onStep         func(Inst, *ast.Func)
}

// Block is a handle to a schedule block. Handles name their block, so one
// stays valid until a primitive removes or renames the block.
type Block struct {
	s    *Schedule
	name string
	rv   string
}

// Loop is a handle to a loop, named by its loop variable (New makes loop
// variable names unique).
type Loop struct {
	s    *Schedule
	name string
	rv   string
}

// Value is an integer decided by a sampling primitive. Passing it to a
// primitive (SplitBy, AnnotateBy) links the two in the trace, so that
// replaying the trace with another decision changes the primitive too.
type Value struct {
	s  *Schedule
	v  int64
	rv string
}

// Name returns the block's name.
func (b Block) Name() string { return b.name }

// Name returns the loop variable's name.
func (l Loop) Name() string { return l.name }

// Int returns the value.
func (v Value) Int() int64 { return v.v }

// String returns the block's name.
func (b Block) String() string { return b.name }

// String returns the loop variable's name.
func (l Loop) String() string { return l.name }

// Option configures New.
type Option func(*Schedule)

// WithSeed seeds the random choices of the sampling primitives, so that a
// schedule with the same seed and the same calls makes the same choices.
func WithSeed(seed uint64) Option {
	return func(s *Schedule) { s.rng = rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }
}

// AdaptDecisions makes a replay fit a perfect-tile decision that does not
// fit its loop (a trace recorded at other sizes) to the nearest one that
// does, innermost factor first, instead of refusing it. The schedule is
// then not the recorded one: its trace holds the fitted decisions.
func AdaptDecisions() Option {
	return func(s *Schedule) { s.adapt = true }
}

// OnStep calls step after each instruction the schedule records (each
// primitive applied, each sampling decision, each handle taken) with the
// function as it then is: every stage of a schedule, for a user who wants
// to see them (loom lower -stages).
func OnStep(step func(in Inst, f *ast.Func)) Option {
	return func(s *Schedule) { s.onStep = step }
}

// WithValidation turns the translation validator (package validate) on
// or off for every primitive of the schedule; without it a schedule
// follows SetValidation, and by default validates the steps of the
// primitives it costs less than (cheapToValidate). The validator checks
// each primitive's result against the function the primitive started
// from, independently of the primitive's reasoning, sharing the models the
// primitive built. A result it rejects is refused with an error wrapping
// ErrInternal: a bug of loom, not of the schedule.
func WithValidation(on bool) Option {
	return func(s *Schedule) {
		s.validation = validateNone
		if on {
			s.validation = validateAll
		}
	}
}

// validation says which steps of a schedule the validator checks.
type validation uint8

const (
	validateCheap validation = iota // the steps of cheapToValidate's primitives
	validateAll
	validateNone
)

// cheapToValidate are the primitives whose steps the validator checks in
// less time than the primitive takes: the median step validated takes
// less than twice the median step unvalidated on the adversarial corpus
// (go test ./schedule -run TestValidationCostInSchedule -long -v: 1.2x
// for compute_at, 1.4x reverse_compute_at, 1.6x align, 1.8x parallel and
// reorder, 1.9x compute_inline; 2.0x bind, 5.5x rfactor, 6-8x the
// caches, 11-23x split, fuse, unroll and vectorize, whose work is
// syntactic). They are validated by default.
var cheapToValidate = map[string]bool{
	"compute_at":         true,
	"reverse_compute_at": true,
	"align":              true,
	"parallel":           true,
	"reorder":            true,
	"compute_inline":     true,
}

// validateEverywhere is the process-wide setting of SetValidation.
var validateEverywhere atomic.Bool

// SetValidation sets whether schedules made from now on without
// WithValidation run the translation validator after every primitive
// (true) or after the primitives it costs less than (false, the default),
// and returns the previous setting. Tests turn it on for a whole package;
// loom tune -validate for a run.
func SetValidation(on bool) (was bool) { return validateEverywhere.Swap(on) }

// New returns a schedule of f. f must be well formed (see ast.Verify). Loop
// variables that share a name with another loop are renamed (i, i_1, ...),
// so that every loop can be named by its variable; the function a schedule
// starts from is Func() before any primitive.
func New(f *ast.Func, opts ...Option) (*Schedule, error) {
	if err := ast.Verify(f); err != nil {
		return nil, err
	}
	s := &Schedule{f: uniqueLoops(f), handles: map[string]any{}}
	if validateEverywhere.Load() {
		s.validation = validateAll
	}
	WithSeed(1)(s)
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Func returns the current function.
func (s *Schedule) Func() *ast.Func { return s.f }

// Trace returns the instructions applied so far.
func (s *Schedule) Trace() *Trace {
	t := s.trace
	t.Insts = append([]Inst(nil), s.trace.Insts...)
	return &t
}

// newRV returns the name of the next random variable of a kind ("b", "l"
// or "v"), or the recorded name while replaying.
func (s *Schedule) newRV(prefix string) string {
	if s.replaying && len(s.replayOutputs) > 0 {
		name := s.replayOutputs[0]
		s.replayOutputs = s.replayOutputs[1:]
		return name
	}
	name := fmt.Sprintf("%s%d", prefix, s.nrv)
	s.nrv++
	return name
}

func (s *Schedule) blockHandle(name string) Block {
	b := Block{s: s, name: name, rv: s.newRV("b")}
	s.handles[b.rv] = b
	return b
}

func (s *Schedule) loopHandle(name string) Loop {
	l := Loop{s: s, name: name, rv: s.newRV("l")}
	s.handles[l.rv] = l
	return l
}

func (s *Schedule) valueHandle(v int64) Value {
	x := Value{s: s, v: v, rv: s.newRV("v")}
	s.handles[x.rv] = x
	return x
}

// block resolves a handle to the current block.
func (s *Schedule) block(prim string, b Block) (*ast.ScheduleBlock, place, error) {
	switch {
	case b.s == nil:
		return nil, nil, badHandle(prim, s.f, "the block handle is the zero value")
	case b.s != s:
		return nil, nil, badHandle(prim, s.f, "block %s belongs to another schedule", b.name)
	}
	blk, at, ok := findBlock(s.f, b.name)
	if !ok {
		return nil, nil, badHandle(prim, s.f, "block %s no longer exists (an earlier primitive removed it)", b.name)
	}
	return blk, at, nil
}

// loop resolves a handle to the current loop.
func (s *Schedule) loop(prim string, l Loop) (*ast.For, place, error) {
	switch {
	case l.s == nil:
		return nil, nil, badHandle(prim, s.f, "the loop handle is the zero value")
	case l.s != s:
		return nil, nil, badHandle(prim, s.f, "loop %s belongs to another schedule", l.name)
	}
	loop, at, ok := findLoop(s.f, l.name)
	if !ok {
		return nil, nil, badHandle(prim, s.f, "loop %s no longer exists (an earlier primitive replaced it)", l.name)
	}
	return loop, at, nil
}

// GetBlock returns a handle to the block named name.
func (s *Schedule) GetBlock(name string) (Block, error) {
	if _, _, ok := findBlock(s.f, name); !ok {
		return Block{}, badHandle("get_block", s.f, "there is no block named %q", name)
	}
	b := s.blockHandle(name)
	s.record(Inst{Kind: "get_block", Args: []Arg{Str(name)}, Outputs: []string{b.rv}})
	return b, nil
}

// GetLoops returns handles to the loops around block b, outermost first.
func (s *Schedule) GetLoops(b Block) ([]Loop, error) {
	_, at, err := s.block("get_loops", b)
	if err != nil {
		return nil, err
	}
	var out []Loop
	var rvs []string
	for _, l := range at.loops() {
		h := s.loopHandle(l.Var.Name)
		out = append(out, h)
		rvs = append(rvs, h.rv)
	}
	s.record(Inst{Kind: "get_loops", Args: []Arg{Ref(b.rv)}, Outputs: rvs})
	return out, nil
}

// GetLoop returns a handle to the loop whose variable is named name.
func (s *Schedule) GetLoop(name string) (Loop, error) {
	if _, _, ok := findLoop(s.f, name); !ok {
		return Loop{}, badHandle("get_loop", s.f, "there is no loop named %q", name)
	}
	l := s.loopHandle(name)
	s.record(Inst{Kind: "get_loop", Args: []Arg{Str(name)}, Outputs: []string{l.rv}})
	return l, nil
}

// Blocks returns handles to every block, in the order the text form prints
// them (the root block first).
func (s *Schedule) Blocks() []Block {
	var out []Block
	for _, b := range s.f.Blocks() {
		h, _ := s.GetBlock(b.Name)
		out = append(out, h)
	}
	return out
}

// record appends an instruction to the trace.
func (s *Schedule) record(in Inst) {
	s.trace.Insts = append(s.trace.Insts, in)
	if s.onStep != nil {
		s.onStep(in, s.f)
	}
}

// commit installs a new function after checking it is well formed. An
// ill-formed result is a bug in a primitive, reported as an error rather
// than left in the schedule.
func (s *Schedule) commit(prim string, g *ast.Func) error {
	g = refreshNests(g) // blocks around nests declare what is inside them now
	if err := ast.Verify(g); err != nil {
		return &Error{Primitive: prim, Reason: "internal error: the transformed function is ill-formed: " + err.Error(), Func: g, Kind: ErrInternal}
	}
	var after *poly.Program
	if s.validation == validateAll || s.validation == validateCheap && cheapToValidate[prim] {
		var err error
		after, err = s.validateStep(g)
		if err != nil {
			return &Error{Primitive: prim, Reason: "internal error: the translation validator rejects the result (" + err.Error() + "); the transformed function is:\n" + ast.Print(g), Func: s.f, Kind: ErrInternal}
		}
	}
	s.f = g
	if after != nil {
		s.prog = after // the next primitive's model
	}
	return nil
}

// validateStep checks g, the result of a primitive, against the current
// function with the translation validator, sharing the models: the
// current one, which the primitive's proof may have made already, and g's,
// which the next primitive will use. A function outside the model is not
// checked.
func (s *Schedule) validateStep(g *ast.Func) (*poly.Program, error) {
	before, err := s.model()
	if err != nil {
		return nil, nil
	}
	after, err := poly.Extract(g)
	if err != nil {
		return nil, nil
	}
	if err := validate.CheckPrograms(before, after); err != nil && !errors.Is(err, validate.ErrUnsupported) {
		return nil, err
	}
	return after, nil
}

// Extent returns the number of iterations of loop l when it is a
// constant.
func (s *Schedule) Extent(l Loop) (int64, bool) {
	loop, _, err := s.loop("extent", l)
	if err != nil {
		return 0, false
	}
	return ast.ConstIntValue(ast.Simplify(loop.Extent))
}
