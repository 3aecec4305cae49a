package autotune

import (
	"errors"
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/schedule"
)

// Space is a search space: rules applied to every block of a function.
type Space struct {
	Rules  []Rule
	Target Target
}

// Sample applies the rules to every block, consumers first (so that a
// producer's compute location sees its consumer's tiling), with the
// random stream of seed, then Finish, and returns the schedule: its
// function is the candidate to build, its trace holds every decision and
// every step. A rule's error that wraps schedule.ErrInternal comes back
// as an *InternalError.
func (sp *Space) Sample(f *ast.Func, seed uint64) (*schedule.Schedule, error) {
	s, err := schedule.New(f, schedule.WithSeed(seed))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, b := range f.Blocks() {
		if b.Name != ast.RootBlock {
			names = append(names, b.Name)
		}
	}
	slices.Reverse(names)
	for _, name := range names {
		for _, r := range sp.Rules {
			b, err := s.GetBlock(name)
			if err != nil {
				break // inlined by an earlier rule
			}
			// A primitive a rule tries may be refused (illegal here);
			// what the rule did before stays, legal as it is.
			err = r.Apply(s, b, sp.Target)
			var se *schedule.Error
			if errors.Is(err, errDone) {
				break // the block is scheduled: no later rule touches it
			}
			switch {
			case err == nil || errors.Is(err, errSkip):
			case internal(err) != nil:
				return nil, &InternalError{Trace: s.Trace(), Err: fmt.Errorf("rule %s on block %s: %w", r.Name(), name, err)}
			case !errors.As(err, &se):
				return nil, fmt.Errorf("autotune: rule %s on block %s: %w", r.Name(), name, err)
			}
		}
	}
	if err := Finish(s); err != nil {
		if internal(err) != nil {
			return nil, &InternalError{Trace: s.Trace(), Err: fmt.Errorf("finish: %w", err)}
		}
		return nil, fmt.Errorf("autotune: finish: %w", err)
	}
	return s, nil
}

// Finish applies the steps that follow the rules to s, after an
// EnterPostproc mark, as schedule instructions recorded in its trace:
// under each loop annotated with a sampled unroll limit, the loops that
// limit unrolls are unrolled (see unrolls), a channel reduction around a
// register tile gets four steps unrolled (see reductionsToUnroll), its
// loop over those steps prefetches the next pass's operands
// (llvm.PrefetchKey), and where a window's taps lie between, the kernel
// is compiled without llc's loop strength reduction (llvm.NoLSRKey), and
// under each loop annotated with a sampled vector width, the vectorized
// loops get the code generator's annotation of that width
// (llvm.VectorBitsKey). So the trace rebuilds exactly the function that
// is built and measured.
//
// Space.Sample ends with Finish. The steps follow from the decisions
// before the mark: a trace replayed with another decision (a mutant)
// drops them (Trace.WithoutPostproc) and finishes anew, and so does
// Record.Schedule, which finishes the records of a loom that did not
// record the steps. On a schedule it finished already Finish adds
// nothing. A step can only fail with an error wrapping
// schedule.ErrInternal: the steps are always legal.
func Finish(s *schedule.Schedule) error {
	f := s.Func()
	if !s.Trace().HasPostproc() {
		s.EnterPostproc()
	}
	for _, name := range unrolls(f) {
		l, err := s.GetLoop(name)
		if err != nil {
			return err
		}
		if err := s.Unroll(l); err != nil {
			return err
		}
	}
	if err := unrollReductions(s); err != nil {
		return err
	}
	for _, w := range vectorWidths(s.Func()) {
		l, err := s.GetLoop(w.loop)
		if err != nil {
			return err
		}
		if err := s.AnnotateLoop(l, llvm.VectorBitsKey, w.bits); err != nil {
			return err
		}
	}
	return nil
}

// InternalError is a candidate that loom's own checks rejected: a step
// whose result the translation validator refused (see
// schedule.WithValidation) or that came out ill-formed, an error wrapping
// schedule.ErrInternal. It is a bug of loom, never of the candidate: the
// search records the candidate as failed and counts it apart
// (Result.Internal), so that it is reported rather than hidden.
type InternalError struct {
	// Trace is the candidate's trace up to the rejected step (for a
	// mutant, the trace replayed): the step is the next one.
	Trace *schedule.Trace
	Err   error
}

// Error says what was rejected and why.
func (e *InternalError) Error() string { return "autotune: " + e.Err.Error() }

// Unwrap returns the rejection (it wraps schedule.ErrInternal).
func (e *InternalError) Unwrap() error { return e.Err }
