package memplan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrInvalid is wrapped by every error [Place] returns.
var ErrInvalid = errors.New("memplan: invalid input")

// maxSize bounds sizes and the alignment, so that rounding up never overflows.
const maxSize = 1 << 60

// Buffer is one buffer to place.
type Buffer struct {
	Name  string
	Size  int64 // bytes, >= 0
	First int   // first step (kernel index) at which it is live
	Last  int   // last step at which it is live, >= First
}

// Placement is where a buffer lives in the arena.
type Placement struct {
	Name        string
	Offset      int64
	Size        int64
	First, Last int
}

// Plan is the arena layout.
type Plan struct {
	Align  int64       // alignment of every offset
	Peak   int64       // arena size: max offset+size (rounded up to Align)
	Naive  int64       // what allocating every buffer separately would take (sum of aligned sizes)
	Places []Placement // in the order of the input buffers
}

// Place computes a plan for bufs, with every offset a multiple of align.
// It returns an error wrapping [ErrInvalid] when align is not a power of
// two in [1, 1<<60], or when a buffer has Last < First, a negative size, a
// size above 1<<60 or a name used before (the error names the buffer), or
// when the sizes add up to more than an int64 holds. Zero-size buffers get
// offset 0 and never conflict. An empty bufs gives an empty plan of peak 0.
func Place(bufs []Buffer, align int64) (*Plan, error) {
	if align < 1 || align > maxSize || align&(align-1) != 0 {
		return nil, fmt.Errorf("memplan: place: align %d is not a power of two in [1, 2^60]: %w", align, ErrInvalid)
	}
	p := &Plan{Align: align, Places: make([]Placement, len(bufs))}
	seen := make(map[string]bool, len(bufs))
	for i, b := range bufs {
		switch {
		case seen[b.Name]:
			return nil, fmt.Errorf("memplan: place: duplicate buffer %q: %w", b.Name, ErrInvalid)
		case b.Size < 0:
			return nil, fmt.Errorf("memplan: place: buffer %q: negative size %d: %w", b.Name, b.Size, ErrInvalid)
		case b.Size > maxSize:
			return nil, fmt.Errorf("memplan: place: buffer %q: size %d exceeds 2^60: %w", b.Name, b.Size, ErrInvalid)
		case b.Last < b.First:
			return nil, fmt.Errorf("memplan: place: buffer %q: live range %d..%d ends before it starts: %w", b.Name, b.First, b.Last, ErrInvalid)
		}
		seen[b.Name] = true
		a := roundUp(b.Size, align)
		if a > math.MaxInt64-p.Naive {
			return nil, fmt.Errorf("memplan: place: total size overflows int64 at buffer %q: %w", b.Name, ErrInvalid)
		}
		p.Naive += a
		p.Places[i] = Placement{Name: b.Name, Size: b.Size, First: b.First, Last: b.Last}
	}

	order := make([]int, len(bufs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := p.Places[i], p.Places[j]
		return cmp.Or(cmp.Compare(b.Size, a.Size), cmp.Compare(a.First, b.First), cmp.Compare(i, j))
	})
	var placed []*Placement // nonempty buffers placed so far
	for _, i := range order {
		q := &p.Places[i]
		if q.Size == 0 {
			continue // offset 0, conflicts with nothing
		}
		q.Offset = p.lowestFit(q, placed)
		placed = append(placed, q)
		p.Peak = max(p.Peak, q.Offset+roundUp(q.Size, align))
	}
	return p, nil
}

// lowestFit returns the lowest aligned offset at which q overlaps none of
// the placed buffers whose live range intersects q's.
func (p *Plan) lowestFit(q *Placement, placed []*Placement) int64 {
	var live []*Placement
	for _, c := range placed {
		if c.First <= q.Last && q.First <= c.Last {
			live = append(live, c)
		}
	}
	slices.SortFunc(live, func(a, b *Placement) int { return cmp.Compare(a.Offset, b.Offset) })
	var off int64
	for _, c := range live {
		if off+q.Size <= c.Offset {
			break // q fits in the gap below c, and every later c starts higher
		}
		// Offsets are aligned, so this is c's end rounded up, without overflow.
		off = max(off, c.Offset+roundUp(c.Size, p.Align))
	}
	return off
}

// roundUp rounds n up to a multiple of align, a power of two; both are at
// most 1<<60, so the sum cannot overflow.
func roundUp(n, align int64) int64 {
	return (n + align - 1) &^ (align - 1)
}
