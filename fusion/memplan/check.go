package memplan

import (
	"errors"
	"fmt"
)

// ErrPlan is wrapped by every error [Plan.Check] returns.
var ErrPlan = errors.New("memplan: invalid plan")

// OverlapError: two buffers live at a common step share bytes of the arena.
type OverlapError struct{ A, B Placement }

func (e *OverlapError) Error() string {
	return fmt.Sprintf("memplan: check: %q [%d, %d) live %d..%d overlaps %q [%d, %d) live %d..%d",
		e.A.Name, e.A.Offset, e.A.Offset+e.A.Size, e.A.First, e.A.Last,
		e.B.Name, e.B.Offset, e.B.Offset+e.B.Size, e.B.First, e.B.Last)
}

func (e *OverlapError) Unwrap() error { return ErrPlan }

// Check verifies that no two buffers that are live at a common step overlap
// in the arena, that offsets are aligned and that every buffer ends within
// Peak. It returns an [*OverlapError] naming the two buffers for an
// overlap, and an error wrapping [ErrPlan] naming the buffer for any other
// fault. Check does not trust the plan: it may be hand-made or edited.
func (p *Plan) Check() error {
	if p.Align < 1 || p.Align&(p.Align-1) != 0 {
		return fmt.Errorf("memplan: check: align %d is not a power of two: %w", p.Align, ErrPlan)
	}
	for _, q := range p.Places {
		switch {
		case q.Size < 0 || q.Offset < 0 || q.Last < q.First:
			return fmt.Errorf("memplan: check: %q: bad offset %d, size %d or live range %d..%d: %w",
				q.Name, q.Offset, q.Size, q.First, q.Last, ErrPlan)
		case q.Offset%p.Align != 0:
			return fmt.Errorf("memplan: check: %q: offset %d is not a multiple of %d: %w", q.Name, q.Offset, p.Align, ErrPlan)
		case q.Offset > p.Peak-q.Size: // offset+size > Peak, without overflow
			return fmt.Errorf("memplan: check: %q: ends at %d+%d, past peak %d: %w", q.Name, q.Offset, q.Size, p.Peak, ErrPlan)
		}
	}
	for i, a := range p.Places {
		for _, b := range p.Places[i+1:] {
			live := a.First <= b.Last && b.First <= a.Last
			// Both end within Peak, so the sums cannot overflow; an
			// empty buffer overlaps nothing.
			overlap := a.Offset < b.Offset+b.Size && b.Offset < a.Offset+a.Size
			if live && overlap {
				return &OverlapError{A: a, B: b}
			}
		}
	}
	return nil
}
