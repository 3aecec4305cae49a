package validate

import (
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// ErrUnsupported is wrapped by the error Check returns when the model
// cannot hold one of the functions at all (poly.Extract refuses it).
var ErrUnsupported = errors.New("validate: the function is outside the polyhedral model")

// Error is a step the validator rejects: which question failed, for which
// block and buffer, and a witness in words.
type Error struct {
	Question string // "instances", "order", "bounds", "outputs" or "created"
	Block    string // the block the finding is about
	Reason   string // one sentence, with a witness where there is one
}

func (e *Error) Error() string {
	return fmt.Sprintf("validate: %s of block %s: %s", e.Question, e.Block, e.Reason)
}

// Check reports whether after, made from before by one schedule step,
// computes what before does, as far as the questions of the package
// documentation tell: nil when every question it can ask is answered yes,
// an *Error for the first that is not, or an error wrapping ErrUnsupported.
func Check(before, after *ast.Func) error {
	pf, err := poly.Extract(before)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	pg, err := poly.Extract(after)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	return CheckPrograms(pf, pg)
}

// CheckPrograms is Check on the models of the two functions (poly.Extract
// of each), for a caller that has them already: a model computes its
// dependences once, so sharing one saves the work.
func CheckPrograms(before, after *poly.Program) error {
	totals.note("checks")
	return check(before, after, &totals)
}

// Stats counts what the validator could not decide exactly, by kind: how
// often it fell back to checking at sample sizes, left a question open,
// or skipped a block it cannot model exactly.
type Stats struct {
	mu     sync.Mutex
	counts map[string]int
}

func (s *Stats) note(what string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	s.counts[what]++
}

// totals are the counts of every Check of the process.
var totals Stats

// Counts returns the counts of every Check so far in this process: "checks"
// and the kinds of questions left open or answered at sample sizes.
func Counts() map[string]int {
	totals.mu.Lock()
	defer totals.mu.Unlock()
	return maps.Clone(totals.counts)
}
