package autotune

import (
	"errors"
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// Space is a search space: rules applied to every block of a function.
type Space struct {
	Rules  []Rule
	Target Target
}

// Sample applies the rules to every block, consumers first (so that a
// producer's compute location sees its consumer's tiling), with the
// random stream of seed, and returns the schedule; its trace holds every
// decision.
func (sp *Space) Sample(f *ast.Func, seed uint64) (*schedule.Schedule, error) {
	s, err := schedule.New(f, schedule.WithSeed(seed))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, b := range f.Blocks() {
		if b.Name != "root" {
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
			var se *schedule.Error
			if err := r.Apply(s, b, sp.Target); err != nil && !errors.Is(err, errSkip) && !errors.As(err, &se) {
				return nil, fmt.Errorf("autotune: rule %s on block %s: %w", r.Name(), name, err)
			}
		}
	}
	return s, nil
}

// Finish returns the function a schedule builds: the scheduled function
// with the sampled unroll limits and vector widths applied.
func Finish(s *schedule.Schedule) *ast.Func {
	return vectorBitsAnnotated(unrollAnnotated(s.Func()))
}
