package schedgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/schedule"
)

// FailKind classifies a failure of a sequence.
type FailKind string

// The kinds of failure Run finds.
const (
	// ResultChange: an accepted step changed what the function computes.
	ResultChange FailKind = "result change"
	// Fault: the interpreter faults on an accepted schedule (an access out
	// of bounds or outside a declared region, a binding outside its
	// domain).
	Fault FailKind = "fault"
	// ValidatorDisagreement: a primitive accepted a step that the
	// translation validator (or the verifier) rejects: its refusal wraps
	// schedule.ErrInternal.
	ValidatorDisagreement FailKind = "validator disagreement"
	// Panic: a primitive panicked.
	Panic FailKind = "panic"
	// Untyped: a primitive returned an error that is not a
	// *schedule.Error.
	Untyped FailKind = "untyped error"
	// RefusedButChanged: a primitive returned an error but changed the
	// function or the trace.
	RefusedButChanged FailKind = "refused but changed"
	// ReplayMismatch: the sequence's trace, marshalled and replayed on a
	// fresh schedule, fails or gives another function.
	ReplayMismatch FailKind = "replay mismatch"
	// NativeMismatch: the schedule, compiled with codegen/llvm and run,
	// disagrees with the interpreter, or the code generator rejects it
	// for a reason other than an unsupported feature.
	NativeMismatch FailKind = "native mismatch"
)

// ErrNotCompiled is wrapped by the error of a Config.Native hook that did
// not compile a function because the code generator does not support
// something in it; Run counts it by reason, not as a failure.
var ErrNotCompiled = errors.New("schedgen: not compiled")

// Config says how Run runs a sequence.
type Config struct {
	Mode  Mode
	Steps int // accepted steps to aim for in a sequence (default 20)
	Tries int // ops to try at most in a sequence (default 5 * Steps)
	// NoValidation turns the translation validator off (it is on by
	// default: schedule.WithValidation(true)).
	NoValidation bool
	// Native, when not nil, compiles f, runs it on args (in place) and
	// returns the error, wrapping ErrNotCompiled when it could not compile
	// f for a reason that is no bug. Run calls it on every NativeEvery-th
	// accepted schedule and on the last schedule of each sequence.
	Native      func(f *ast.Func, sizes map[string]int64, args map[string]any) error
	NativeEvery int
}

func (c Config) steps() int {
	if c.Steps <= 0 {
		return 20
	}
	return c.Steps
}

func (c Config) tries() int {
	if c.Tries <= 0 {
		return 5 * c.steps()
	}
	return c.Tries
}

// Stats counts what sequences did.
type Stats struct {
	Sequences   int
	Tried       int            // ops tried
	Accepted    int            // ops accepted (each checked by the interpreter)
	AcceptedBy  map[string]int // by primitive
	RefusedBy   map[string]int // by "primitive: sentinel"
	Reasons     map[string]int // by "primitive: sentinel: reason", names elided
	Compiled    int            // schedules compiled, run and compared
	NotCompiled map[string]int // by reason
	// TooCostly counts sequences ended by a step the interpreter could not
	// check within its budget (see interpBudget): not counted as accepted.
	TooCostly int
	Failures  map[FailKind]int
	PrimTime  time.Duration // in the primitives (validation included)
	CheckTime time.Duration // in the interpreter and the native runs
	Slowest   time.Duration // the slowest primitive call (validation included)
	SlowestOp string        // which, and where
}

// NewStats returns empty counts.
func NewStats() *Stats {
	return &Stats{AcceptedBy: map[string]int{}, RefusedBy: map[string]int{}, Reasons: map[string]int{},
		NotCompiled: map[string]int{}, Failures: map[FailKind]int{}}
}

// Add adds o's counts to s.
func (s *Stats) Add(o *Stats) {
	s.Sequences += o.Sequences
	s.Tried += o.Tried
	s.Accepted += o.Accepted
	s.Compiled += o.Compiled
	s.TooCostly += o.TooCostly
	s.PrimTime += o.PrimTime
	s.CheckTime += o.CheckTime
	if o.Slowest > s.Slowest {
		s.Slowest, s.SlowestOp = o.Slowest, o.SlowestOp
	}
	for k, v := range o.AcceptedBy {
		s.AcceptedBy[k] += v
	}
	for k, v := range o.RefusedBy {
		s.RefusedBy[k] += v
	}
	for k, v := range o.Reasons {
		s.Reasons[k] += v
	}
	for k, v := range o.NotCompiled {
		s.NotCompiled[k] += v
	}
	for k, v := range o.Failures {
		s.Failures[k] += v
	}
}

// Refused returns the number of refused ops.
func (s *Stats) Refused() int {
	n := 0
	for _, v := range s.RefusedBy {
		n += v
	}
	return n
}

// String prints the counts as a table; reasons seen at most minReason
// times are summed into one line per primitive... (all are printed when
// there are few).
func (s *Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sequences %d, ops tried %d, accepted %d, refused %d, compiled and compared %d\n",
		s.Sequences, s.Tried, s.Accepted, s.Refused(), s.Compiled)
	fmt.Fprintf(&b, "time in primitives (validation included) %v, in checks (interpreter, native) %v\n",
		s.PrimTime.Round(time.Millisecond), s.CheckTime.Round(time.Millisecond))
	if s.SlowestOp != "" {
		fmt.Fprintf(&b, "slowest primitive call %v: %s\n", s.Slowest.Round(time.Millisecond), s.SlowestOp)
	}
	fails := 0
	for _, v := range s.Failures {
		fails += v
	}
	if s.TooCostly > 0 {
		fmt.Fprintf(&b, "sequences ended by a step too costly to interpret: %d\n", s.TooCostly)
	}
	fmt.Fprintf(&b, "failures: %d\n", fails)
	table(&b, "failures by kind", stringKeys(s.Failures))
	table(&b, "accepted by primitive", s.AcceptedBy)
	table(&b, "refused by primitive and sentinel", s.RefusedBy)
	table(&b, "refused by reason", s.Reasons)
	table(&b, "not compiled, by reason", s.NotCompiled)
	return b.String()
}

func stringKeys[K ~string](m map[K]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

func table(b *strings.Builder, title string, m map[string]int) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int {
		if m[x] != m[y] {
			return m[y] - m[x]
		}
		return strings.Compare(x, y)
	})
	fmt.Fprintf(b, "%s:\n", title)
	for _, k := range keys {
		fmt.Fprintf(b, "  %8d  %s\n", m[k], k)
	}
}

// Failure is a sequence that broke a property.
type Failure struct {
	Kind   FailKind
	Case   Case
	Sizes  map[string]int64
	Seed   uint64 // the seed of the argument data (and of the generator)
	Ops    []Op   // the sequence: the ops accepted before, and the op that failed last
	Msg    string // what went wrong
	Shrunk int    // the length of the sequence before shrinking, or 0
	// Note is a second look at a validator disagreement (see Diagnose),
	// and Verdict its gist: "primitive wrong", "validator too strict?" or
	// "fails earlier".
	Note, Verdict string
}

// Diagnose looks again at a disagreement between a primitive and the
// translation validator: it replays the sequence with the validator off,
// so that the step is taken, at every binding of the case's sizes (each
// with its own data), and sets f.Note and f.Verdict to what the
// interpreter says: a changed result means the primitive is wrong; results
// unchanged everywhere lean towards the validator being too strict, though
// other sizes or data may still differ, and instances run in another order
// may happen to commute.
func Diagnose(f *Failure, cfg Config) {
	if f.Kind != ValidatorDisagreement || !strings.Contains(f.Msg, "translation validator") {
		return
	}
	cfg.NoValidation = true
	cfg.Native = nil
	var earlier string
	for k := range max(len(f.Case.Sizes), 1) {
		seed := f.Seed + uint64(k)
		g := Replay(f.Case, seed, f.Ops, cfg)
		switch {
		case g == nil:
		case len(g.Ops) == len(f.Ops):
			f.Verdict = "primitive wrong"
			f.Note = fmt.Sprintf("with the validator off the step is taken and the interpreter finds a %s at sizes %v: the primitive is wrong:\n%s", g.Kind, f.Case.SizesFor(seed), firstLine(g.Msg))
			return
		default:
			earlier = fmt.Sprintf("with the validator off, the sequence fails earlier at sizes %v (%s at %s)", f.Case.SizesFor(seed), g.Kind, g.Ops[len(g.Ops)-1])
		}
	}
	if earlier != "" {
		f.Verdict, f.Note = "fails earlier", earlier
		return
	}
	f.Verdict = "validator too strict?"
	f.Note = "with the validator off the step is taken and the interpreter's results do not change, at every binding of the sizes: the validator may be too strict, or the instances whose order changed commute in this function (an in-place update such as A = A * 2 + 1 applied twice gives the same result in either order)"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Error returns the report.
func (f *Failure) Error() string { return f.Report() }

// Report returns what a developer needs to reproduce the failure: the
// function, the sizes, the minimal sequence as ops, as Go and as a trace,
// and what went wrong.
func (f *Failure) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedgen: %s in function %s (%s), sizes %v, data seed %d", f.Kind, f.Case.Name, f.Case.Source, f.Sizes, f.Seed)
	if f.Shrunk > 0 {
		fmt.Fprintf(&b, ", shrunk from %d to %d ops", f.Shrunk, len(f.Ops))
	}
	b.WriteString(":\n")
	for _, op := range f.Ops {
		fmt.Fprintf(&b, "  %s\n", op)
	}
	fmt.Fprintf(&b, "%s\n", strings.TrimRight(f.Msg, "\n"))
	if f.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", f.Note)
	}
	fmt.Fprintf(&b, "as Go (sch from schedule.New(f, schedule.WithValidation(true))):\n%s", GoProgram(f.Ops))
	if tr := f.traceText(); tr != "" {
		fmt.Fprintf(&b, "as a trace (the last op's instruction is missing when it was refused):\n%s", tr)
	}
	return b.String()
}

// traceText replays the ops (the validator off, errors ignored) and
// returns the schedule's trace text.
func (f *Failure) traceText() (out string) {
	defer func() {
		if recover() != nil {
			out = ""
		}
	}()
	s, err := schedule.New(f.Case.Func, schedule.WithValidation(false), schedule.WithSeed(f.Seed))
	if err != nil {
		return ""
	}
	for _, op := range f.Ops {
		_, _ = op.Apply(s, func() {})
	}
	return s.Trace().String()
}

// opSource gives the ops of a sequence: a generator's, or a fixed list's.
type opSource interface {
	next(f *ast.Func) (Op, bool)
	observe(op Op, before, after *ast.Func, accepted bool)
}

type genSource struct{ g *Gen }

func (s genSource) next(f *ast.Func) (Op, bool) {
	op := s.g.Next(f)
	return op, op.Prim != ""
}

func (s genSource) observe(op Op, before, after *ast.Func, accepted bool) {
	s.g.Observe(op, before, after, accepted)
}

type listSource struct{ ops []Op }

func (s *listSource) next(*ast.Func) (Op, bool) {
	if len(s.ops) == 0 {
		return Op{}, false
	}
	op := s.ops[0]
	s.ops = s.ops[1:]
	return op, true
}

func (s *listSource) observe(Op, *ast.Func, *ast.Func, bool) {}

// Run runs one sequence of generated ops on a schedule of c (at the sizes
// and with the data its seed chooses) and checks every step. It returns the
// counts and the first failure, if any (the sequence stops there; the
// failure is not shrunk).
func Run(c Case, seed uint64, cfg Config) (*Stats, *Failure) {
	return run(c, seed, cfg, genSource{NewGen(seed, cfg.Mode)}, cfg.steps(), cfg.tries(), false)
}

// Replay applies ops in order to a schedule of c and checks them as Run
// does; refused ops are skipped. It returns the first failure, if any.
func Replay(c Case, seed uint64, ops []Op, cfg Config) *Failure {
	_, f := run(c, seed, cfg, &listSource{ops: slices.Clone(ops)}, len(ops), len(ops), true)
	return f
}

func run(c Case, seed uint64, cfg Config, src opSource, steps, tries int, replaying bool) (*Stats, *Failure) {
	st := NewStats()
	st.Sequences = 1
	sizes := c.SizesFor(seed)
	args := c.Args(sizes, seed)
	want := check.Clone(args)
	spent, err := ast.InterpretWithin(c.Func, sizes, want, 0)
	if err != nil {
		panic(fmt.Sprintf("schedgen: case %s does not run at sizes %v: %s", c.Name, sizes, ast.Explain(c.Func, err)))
	}
	budget := interpBudget(spent)
	var checked *ast.Func // when a step was too costly to check: the schedule before it
	s, err := schedule.New(c.Func, schedule.WithValidation(!cfg.NoValidation), schedule.WithSeed(seed))
	if err != nil {
		panic(fmt.Sprintf("schedgen: case %s: %v", c.Name, err))
	}
	var ops []Op
	reassociated := false // an rfactor or a reorder was accepted: sums may round differently
	fail := func(kind FailKind, op Op, format string, a ...any) (*Stats, *Failure) {
		st.Failures[kind]++
		return st, &Failure{Kind: kind, Case: c, Sizes: sizes, Seed: seed, Ops: append(slices.Clone(ops), op), Msg: fmt.Sprintf(format, a...)}
	}
	for try := 0; try < tries && st.Accepted < steps; try++ {
		op, ok := src.next(s.Func())
		if !ok {
			break
		}
		st.Tried++
		var before *ast.Func
		var beforeTrace int
		var start time.Time
		var panicked any
		var stack []byte
		resolved := op
		func() {
			defer func() {
				if p := recover(); p != nil {
					panicked, stack = p, debug.Stack()
				}
			}()
			resolved, err = op.Apply(s, func() {
				before, beforeTrace = s.Func(), len(s.Trace().Insts)
				start = time.Now()
			})
		}()
		if !start.IsZero() {
			d := time.Since(start)
			st.PrimTime += d
			if d > st.Slowest {
				st.Slowest, st.SlowestOp = d, fmt.Sprintf("%s in %s (seed %d, after %d accepted)", op, c.Name, seed, len(ops))
			}
		}
		if panicked != nil {
			return fail(Panic, op, "%s panicked: %v\n%s", op, panicked, stack)
		}
		if err != nil {
			se, ok := errors.AsType[*schedule.Error](err)
			if !ok {
				return fail(Untyped, op, "%s returned an error that is not a *schedule.Error: %T: %v", op, err, err)
			}
			if before != nil && (s.Func() != before || len(s.Trace().Insts) != beforeTrace) {
				return fail(RefusedButChanged, op, "%s was refused (%v) but changed the schedule", op, err)
			}
			if errors.Is(err, schedule.ErrInternal) {
				return fail(ValidatorDisagreement, op, "%s was accepted by the primitive but rejected by loom's own checks:\n%v", op, err)
			}
			key := se.Primitive + ": " + sentinel(err)
			st.RefusedBy[key]++
			st.Reasons[key+": "+reasonKey(se, s.Func())]++
			src.observe(op, s.Func(), s.Func(), false)
			continue
		}
		st.Accepted++
		st.AcceptedBy[op.Prim]++
		op = resolved
		ops = append(ops, op)
		switch op.Prim {
		case "rfactor", "reorder", "tile":
			// A reduction's updates of one element may now run in
			// another order (a reorder of its reduce loops).
			reassociated = true
		}
		src.observe(op, before, s.Func(), true)
		t0 := time.Now()
		got := check.Clone(args)
		if _, err := ast.InterpretWithin(s.Func(), sizes, got, budget); errors.Is(err, ast.ErrBudget) {
			// Legal, but its loops are padded so far beyond what they
			// split that checking it would take hours: the sequence
			// ends here, the step unchecked and not counted.
			st.CheckTime += time.Since(t0)
			st.Accepted--
			st.AcceptedBy[op.Prim]--
			st.TooCostly++
			ops = ops[:len(ops)-1]
			checked = before
			break
		} else if err != nil {
			st.CheckTime += time.Since(t0)
			ops = ops[:len(ops)-1]
			return fail(Fault, op, "after %s the interpreter faults: %s", op, ast.Explain(s.Func(), err))
		}
		if msg := compare(c.Func, got, want, reassociated); msg != "" {
			st.CheckTime += time.Since(t0)
			ops = ops[:len(ops)-1]
			return fail(ResultChange, op, "%s changed the result: %s\nbefore:\n%s\nafter:\n%s", op, msg, ast.Print(before), ast.Print(s.Func()))
		}
		last := st.Accepted == steps
		if cfg.Native != nil && !replaying && (last || cfg.NativeEvery > 0 && st.Accepted%cfg.NativeEvery == 0) {
			if msg := native(cfg, st, s.Func(), sizes, args, got); msg != "" {
				st.CheckTime += time.Since(t0)
				ops = ops[:len(ops)-1]
				return fail(NativeMismatch, op, "after %s: %s\n%s", op, msg, ast.Print(s.Func()))
			}
		}
		st.CheckTime += time.Since(t0)
	}
	if cfg.Native != nil && st.Accepted > 0 && (replaying || st.Accepted < steps) {
		// A replayed sequence, or one that ended early: compile its last
		// schedule (checked by the interpreter).
		f := s.Func()
		if checked != nil {
			f = checked
		}
		got := check.Clone(args)
		if _, err := ast.InterpretWithin(f, sizes, got, budget); err == nil {
			if msg := native(cfg, st, f, sizes, args, got); msg != "" {
				last := ops[len(ops)-1]
				ops = ops[:len(ops)-1]
				return fail(NativeMismatch, last, "%s\n%s", msg, ast.Print(f))
			}
		}
	}
	if msg := checkReplay(c, seed, s); msg != "" {
		if len(ops) == 0 {
			return fail(ReplayMismatch, Op{Prim: "none"}, "%s", msg)
		}
		last := ops[len(ops)-1]
		ops = ops[:len(ops)-1]
		return fail(ReplayMismatch, last, "%s", msg)
	}
	return st, nil
}

// interpBudget returns the loop iterations the interpreter may run to
// check a schedule of a function that ran spent: 64 times as many, and at
// least two million (a few seconds). Splits by factors far beyond the
// extents they split are legal (their predicates guard the padding) and
// multiply the iterations; a sequence of them took skewed_sym's nest from
// 50 iterations to billions (hours in the interpreter).
func interpBudget(spent int64) int64 { return max(2_000_000, 64*spent) }

// compare returns what differs between got and want, or "". Results must
// be exactly equal, unless a reduction was reassociated (rfactor, or a
// reorder of its reduce loops): then
// within check.Tolerance of the buffer's type.
func compare(f *ast.Func, got, want map[string]any, reassociated bool) string {
	for _, p := range f.Params {
		tol := 0.0
		if reassociated {
			tol = check.Tolerance(p.DType)
		}
		if e := check.MaxRelErr(got[p.Name], want[p.Name]); e > tol {
			return fmt.Sprintf("buffer %s differs by %g (tolerance %g)%s", p.Name, e, tol, firstDiff(got[p.Name], want[p.Name]))
		}
	}
	return ""
}

// firstDiff describes the first element where got and want differ.
func firstDiff(got, want any) string {
	show := func(g, w []float64) string {
		var idx []string
		for i := range w {
			if g[i] != w[i] && !(g[i] != g[i] && w[i] != w[i]) {
				idx = append(idx, fmt.Sprintf("[%d] %v, want %v", i, g[i], w[i]))
				if len(idx) == 4 {
					break
				}
			}
		}
		return "; at " + strings.Join(idx, ", ")
	}
	switch w := want.(type) {
	case []float32:
		g, _ := got.([]float32)
		if len(g) != len(w) {
			return ""
		}
		gg, ww := make([]float64, len(g)), make([]float64, len(w))
		for i := range w {
			gg[i], ww[i] = float64(g[i]), float64(w[i])
		}
		return show(gg, ww)
	case []float64:
		g, _ := got.([]float64)
		if len(g) != len(w) {
			return ""
		}
		return show(g, w)
	}
	return ""
}

// native compiles f with the Native hook and compares its results with
// the interpreter's (interp); it returns what went wrong, or "".
func native(cfg Config, st *Stats, f *ast.Func, sizes map[string]int64, args, interp map[string]any) string {
	out := check.Clone(args)
	if err := cfg.Native(f, sizes, out); err != nil {
		if errors.Is(err, ErrNotCompiled) {
			st.NotCompiled[firstWords(strings.TrimPrefix(err.Error(), ErrNotCompiled.Error()+": "), 8)]++
			return ""
		}
		return fmt.Sprintf("the compiled kernel fails: %v", err)
	}
	st.Compiled++
	for _, p := range f.Params {
		if e := check.MaxRelErr(out[p.Name], interp[p.Name]); e > check.Tolerance(p.DType) {
			return fmt.Sprintf("the compiled kernel's buffer %s differs from the interpreter's by %g%s", p.Name, e, firstDiff(out[p.Name], interp[p.Name]))
		}
	}
	return ""
}

// checkReplay marshals the schedule's trace to JSON and to text, replays
// both on fresh schedules and compares the functions.
func checkReplay(c Case, seed uint64, s *schedule.Schedule) string {
	data, err := json.Marshal(s.Trace())
	if err != nil {
		return fmt.Sprintf("marshal the trace: %v", err)
	}
	tr, err := schedule.ParseTrace(data)
	if err != nil {
		return fmt.Sprintf("parse the trace: %v", err)
	}
	again, err := schedule.Replay(c.Func, tr, nil, schedule.WithSeed(seed), schedule.WithValidation(false))
	if err != nil {
		return fmt.Sprintf("replay the JSON trace: %v\n%s", err, s.Trace())
	}
	if ast.Hash(again.Func()) != ast.Hash(s.Func()) {
		return fmt.Sprintf("the replayed JSON trace gives another function:\n%s\ntrace:\n%s", ast.Print(again.Func()), s.Trace())
	}
	tt, err := schedule.ParseTraceText(s.Trace().String())
	if err != nil {
		return fmt.Sprintf("parse the trace text: %v\n%s", err, s.Trace())
	}
	again, err = schedule.Replay(c.Func, tt, nil, schedule.WithSeed(seed), schedule.WithValidation(false))
	if err != nil {
		return fmt.Sprintf("replay the trace text: %v\n%s", err, s.Trace())
	}
	if ast.Hash(again.Func()) != ast.Hash(s.Func()) {
		return fmt.Sprintf("the replayed trace text gives another function:\n%s\ntrace:\n%s", ast.Print(again.Func()), s.Trace())
	}
	return ""
}

// sentinel names the sentinel err wraps.
func sentinel(err error) string {
	switch {
	case errors.Is(err, schedule.ErrInternal):
		return "internal"
	case errors.Is(err, schedule.ErrIllegal):
		return "illegal"
	case errors.Is(err, schedule.ErrHandle):
		return "handle"
	case errors.Is(err, schedule.ErrArgument):
		return "argument"
	}
	return "other"
}

// reasonKey returns the start of a refusal's reason with the names of f's
// loops, blocks, buffers and variables and all numbers replaced by "_", so
// that refusals group by what they say rather than where.
func reasonKey(e *schedule.Error, f *ast.Func) string {
	known := map[string]bool{}
	ast.Inspect(f.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.For:
			known[n.Var.Name] = true
		case *ast.ScheduleBlock:
			known[n.Name] = true
			for _, it := range n.Iters {
				known[it.Var.Name] = true
			}
		case *ast.Alloc:
			known[n.Buffer.Name] = true
		}
		return true
	})
	for _, p := range f.Params {
		known[p.Name] = true
	}
	reason := e.Reason
	if i := strings.IndexAny(reason, ":;("); i > 0 {
		reason = reason[:i]
	}
	words := strings.Fields(reason)
	for i, w := range words {
		core := strings.Trim(w, ".,'\"`[]{}")
		if known[core] || strings.ContainsAny(core, "0123456789") {
			words[i] = "_"
		}
	}
	return firstWords(strings.Join(words, " "), 10)
}

func firstWords(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		w = append(w[:n], "...")
	}
	return strings.Join(w, " ")
}
