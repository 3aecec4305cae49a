package schedule

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
)

// SamplePerfectTile draws n factors whose product is the extent of loop l
// (a constant), the innermost at most maxInnermost (0: no limit), for
// splitting l with SplitBy. The decision is recorded; a replay may give
// another decision, which must be a valid tiling too.
func (s *Schedule) SamplePerfectTile(l Loop, n, maxInnermost int) ([]Value, error) {
	return s.samplePerfectTile(l, n, maxInnermost, s.replayed())
}

// SamplePerfectTileWith is SamplePerfectTile taking decision, the factors,
// instead of drawing them: they must be a valid tiling of l (n positive
// factors whose product is its extent, the innermost at most maxInnermost
// when that is not 0), as on replay, else the error wraps ErrArgument. The
// trace records the same instruction as a draw of those factors would:
// this is how Trace.Go prints a sampling instruction, so that the printed
// program takes the trace's decisions.
func (s *Schedule) SamplePerfectTileWith(l Loop, n, maxInnermost int, decision []int64) ([]Value, error) {
	if decision == nil {
		return nil, badArg("sample_perfect_tile", s.f, nil, "no decision given")
	}
	return s.samplePerfectTile(l, n, maxInnermost, decision)
}

// replayed returns the decision a replay prescribes to the sampling
// instruction being replayed, or nil: draw one.
func (s *Schedule) replayed() []int64 {
	if s.replaying {
		return s.replayDecision
	}
	return nil
}

// samplePerfectTile takes decision when it is not nil, else draws one.
func (s *Schedule) samplePerfectTile(l Loop, n, maxInnermost int, decision []int64) ([]Value, error) {
	const prim = "sample_perfect_tile"
	loop, _, err := s.loop(prim, l)
	if err != nil {
		return nil, err
	}
	extent, ok := ast.ConstIntValue(ast.Simplify(loop.Extent))
	if !ok {
		return nil, badArg(prim, s.f, nodes(loop), "loop %s has the non-constant extent %s; perfect tiles need a constant (for a symbolic extent, draw each inner factor with sample_categorical, e.g. among 1, 2, 3, 4, 6, 8, ..., and split with the outermost factor inferred: the tail is guarded)", loop.Var.Name, loop.Extent)
	}
	if n < 1 || extent < 1 {
		return nil, badArg(prim, s.f, nodes(loop), "cannot tile an extent of %d into %d factors", extent, n)
	}
	if decision != nil {
		if err := checkPerfectTile(decision, extent, n, maxInnermost); err != nil && s.replaying && s.adapt && len(decision) == n {
			decision = fitTile(decision, extent, maxInnermost)
		} else if err != nil {
			return nil, badArg(prim, s.f, nodes(loop), "decision %v: %v", decision, err)
		}
	} else {
		decision = s.randomTile(extent, n, maxInnermost)
	}
	out := make([]Value, n)
	rvs := make([]string, n)
	for i, f := range decision {
		out[i] = s.valueHandle(f)
		rvs[i] = out[i].rv
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(l.rv), IntArg(int64(n)), IntArg(int64(maxInnermost))}, Outputs: rvs, Decision: slices.Clone(decision)})
	return out, nil
}

// fitTile returns the perfect tiling of extent nearest to d: from the
// innermost factor out, each the divisor of what is left closest to d's
// (the innermost at most maxInnermost, when set), the outermost the rest.
func fitTile(d []int64, extent int64, maxInnermost int) []int64 {
	out := make([]int64, len(d))
	left := extent
	for i := len(d) - 1; i > 0; i-- {
		best := int64(1)
		consider := func(q int64) {
			if i == len(d)-1 && maxInnermost > 0 && q > int64(maxInnermost) {
				return
			}
			// Nearest, the smaller on a tie.
			if e, b := abs64(q-d[i]), abs64(best-d[i]); e < b || e == b && q < best {
				best = q
			}
		}
		for q := int64(1); q*q <= left; q++ {
			if left%q == 0 {
				consider(q)
				consider(left / q)
			}
		}
		out[i] = best
		left /= best
	}
	out[0] = left
	return out
}

func checkPerfectTile(d []int64, extent int64, n, maxInnermost int) error {
	if len(d) != n {
		return fmt.Errorf("%d factors, want %d", len(d), n)
	}
	p := int64(1)
	for _, f := range d {
		if f < 1 {
			return fmt.Errorf("factor %d is not positive", f)
		}
		p *= f
		if p > extent {
			break
		}
	}
	if p != extent {
		return fmt.Errorf("the factors' product is not the extent %d", extent)
	}
	if maxInnermost > 0 && d[n-1] > int64(maxInnermost) {
		return fmt.Errorf("the innermost factor exceeds %d", maxInnermost)
	}
	return nil
}

// randomTile distributes the prime factors of extent over n slots at
// random, then moves factors out of the innermost slot until it respects
// the limit.
func (s *Schedule) randomTile(extent int64, n, maxInnermost int) []int64 {
	d := make([]int64, n)
	for i := range d {
		d[i] = 1
	}
	for _, p := range PrimeFactors(extent) {
		d[s.rng.IntN(n)] *= p
	}
	if maxInnermost > 0 {
		for d[n-1] > int64(maxInnermost) {
			p := PrimeFactors(d[n-1])[0]
			d[n-1] /= p
			d[s.rng.IntN(max(n-1, 1))] *= p
			if n == 1 {
				break
			}
		}
	}
	return d
}

// PrimeFactors returns the prime factors of v in ascending order, with
// repeats: the units SamplePerfectTile distributes over the factors of a
// tile (the autotuner's mutations move them between factors).
func PrimeFactors(v int64) []int64 {
	var out []int64
	for p := int64(2); p*p <= v; p++ {
		for v%p == 0 {
			out = append(out, p)
			v /= p
		}
	}
	if v > 1 {
		out = append(out, v)
	}
	return out
}

// SampleCategorical draws one of candidates with the given probabilities
// (which must be non-negative, one per candidate, and not all zero). The
// decision recorded is the index of the choice.
func (s *Schedule) SampleCategorical(candidates []int64, probs []float64) (Value, error) {
	return s.sampleCategorical(candidates, probs, s.replayed())
}

// SampleCategoricalWith is SampleCategorical taking decision, the index
// of the choice among candidates, instead of drawing it; an index out of
// range is refused with an error wrapping ErrArgument, as on replay. The
// trace records the same instruction as a draw of that choice would (see
// SamplePerfectTileWith).
func (s *Schedule) SampleCategoricalWith(candidates []int64, probs []float64, decision int64) (Value, error) {
	return s.sampleCategorical(candidates, probs, []int64{decision})
}

// sampleCategorical takes decision when it is not nil, else draws one.
func (s *Schedule) sampleCategorical(candidates []int64, probs []float64, decision []int64) (Value, error) {
	const prim = "sample_categorical"
	if len(candidates) == 0 || len(candidates) != len(probs) {
		return Value{}, badArg(prim, s.f, nil, "%d candidates with %d probabilities", len(candidates), len(probs))
	}
	total := 0.0
	for _, p := range probs {
		if p < 0 {
			return Value{}, badArg(prim, s.f, nil, "probability %v is negative", p)
		}
		total += p
	}
	if total <= 0 {
		return Value{}, badArg(prim, s.f, nil, "the probabilities sum to zero")
	}
	var index int64
	if decision != nil {
		if len(decision) != 1 || decision[0] < 0 || decision[0] >= int64(len(candidates)) {
			return Value{}, badArg(prim, s.f, nil, "decision %v is not an index into %d candidates", decision, len(candidates))
		}
		index = decision[0]
	} else {
		x := s.rng.Float64() * total
		for i, p := range probs {
			if x < p || i == len(probs)-1 {
				index = int64(i)
				break
			}
			x -= p
		}
	}
	v := s.valueHandle(candidates[index])
	cargs := make([]Arg, len(candidates))
	pargs := make([]Arg, len(probs))
	for i := range candidates {
		cargs[i] = IntArg(candidates[i])
		p := probs[i]
		pargs[i] = Arg{Float: &p}
	}
	s.record(Inst{Kind: prim, Args: []Arg{ListArg(cargs...), ListArg(pargs...)}, Outputs: []string{v.rv}, Decision: []int64{index}})
	return v, nil
}

func init() {
	register("sample_perfect_tile", instKind{
		args: 3,
		replay: func(s *Schedule, args []any) error {
			if len(args) != 3 {
				return fmt.Errorf("sample_perfect_tile takes a loop, n and max_innermost")
			}
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			n, err := argInt(args[1])
			if err != nil {
				return err
			}
			m, err := argInt(args[2])
			if err != nil {
				return err
			}
			_, err = s.SamplePerfectTile(l, int(n), int(m))
			return err
		},
		goCall: func(args []string) string {
			return fmt.Sprintf("sch.SamplePerfectTile(%s, %s, %s)", args[0], args[1], args[2])
		},
		goDecided: func(args []string, d []int64) string {
			return fmt.Sprintf("sch.SamplePerfectTileWith(%s, %s, %s, %s)", args[0], args[1], args[2], goInts(d))
		},
		outputs: "list",
	})
	register("sample_categorical", instKind{
		args: 2,
		replay: func(s *Schedule, args []any) error {
			if len(args) != 2 {
				return fmt.Errorf("sample_categorical takes candidates and probabilities")
			}
			cl, err := argList(args[0])
			if err != nil {
				return err
			}
			pl, err := argList(args[1])
			if err != nil {
				return err
			}
			var cands []int64
			for _, c := range cl {
				v, err := argInt(c)
				if err != nil {
					return err
				}
				cands = append(cands, v)
			}
			var probs []float64
			for _, p := range pl {
				switch v := p.(type) {
				case float64:
					probs = append(probs, v)
				case int64:
					probs = append(probs, float64(v))
				default:
					return fmt.Errorf("probability of type %T", p)
				}
			}
			_, err = s.SampleCategorical(cands, probs)
			return err
		},
		goCall: func(args []string) string {
			return fmt.Sprintf("sch.SampleCategorical([]int64{%s}, []float64{%s})", args[0], args[1])
		},
		goDecided: func(args []string, d []int64) string {
			if len(d) != 1 {
				return "" // not a decision of this kind: print the draw
			}
			return fmt.Sprintf("sch.SampleCategoricalWith([]int64{%s}, []float64{%s}, %d)", args[0], args[1], d[0])
		},
		outputs: "one",
	})
	register("sample_compute_location", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			b, err := argBlock(args[0])
			if err != nil {
				return err
			}
			_, err = s.SampleComputeLocation(b)
			return err
		},
		goCall: func(args []string) string { return fmt.Sprintf("sch.SampleComputeLocation(%s)", args[0]) },
		goDecided: func(args []string, d []int64) string {
			if len(d) != 1 {
				return ""
			}
			return fmt.Sprintf("sch.SampleComputeLocationWith(%s, %d)", args[0], d[0])
		},
		outputs: "one",
	})
}

// SampleComputeLocation draws a loop at which block b could be computed
// (see ComputeAt): a loop around every block that reads what b writes, but
// not around b and not vectorized or inside a vectorized loop; or the root, meaning b stays where it is, which the
// returned Loop reports with IsRoot. The decision recorded is the index of
// the loop among the candidates, outermost first, or -1 for the root.
func (s *Schedule) SampleComputeLocation(b Block) (Loop, error) {
	return s.sampleComputeLocation(b, s.replayed())
}

// SampleComputeLocationWith is SampleComputeLocation taking decision, the
// index of the location among the candidates (outermost first) or -1 for
// the root, instead of drawing it; an index out of range is refused with
// an error wrapping ErrArgument, as on replay. The trace records the same
// instruction as a draw of that location would (see
// SamplePerfectTileWith).
func (s *Schedule) SampleComputeLocationWith(b Block, decision int64) (Loop, error) {
	return s.sampleComputeLocation(b, []int64{decision})
}

// sampleComputeLocation takes decision when it is not nil, else draws
// one.
func (s *Schedule) sampleComputeLocation(b Block, decision []int64) (Loop, error) {
	const prim = "sample_compute_location"
	blk, at, err := s.block(prim, b)
	if err != nil {
		return Loop{}, err
	}
	cands := computeLocations(s.f, blk, at)
	var choice int64
	if decision != nil {
		if len(decision) != 1 || decision[0] < -1 || decision[0] >= int64(len(cands)) {
			return Loop{}, badArg(prim, s.f, nodes(blk), "decision %v is not -1 or an index into %d locations", decision, len(cands))
		}
		choice = decision[0]
	} else {
		choice = int64(s.rng.IntN(len(cands)+1)) - 1
	}
	var l Loop
	if choice < 0 {
		l = Loop{s: s, rv: s.newRV("l")}
		s.handles[l.rv] = l
	} else {
		l = s.loopHandle(cands[choice].Var.Name)
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv)}, Outputs: []string{l.rv}, Decision: []int64{choice}})
	return l, nil
}

// IsRoot reports whether l is the root location of SampleComputeLocation
// rather than a loop.
func (l Loop) IsRoot() bool { return l.s != nil && l.name == "" }

// computeLocations returns the loops around every consumer of b (blocks
// reading what b writes) that are not around b, outermost first, down to
// the first vectorized one.
func computeLocations(f *ast.Func, b *ast.ScheduleBlock, at place) []*ast.For {
	if leafAtRoot("", f, b, at) != nil {
		return nil // compute_at moves leaf blocks outside blocks around nests only
	}
	var consumers []*ast.ScheduleBlock
	for _, w := range b.Writes {
		_, readers := accessors(f, w.Buffer)
		for _, r := range readers {
			if r != b && !slices.Contains(consumers, r) {
				consumers = append(consumers, r)
			}
		}
	}
	if len(consumers) == 0 {
		return nil
	}
	var common []*ast.For
	for i, c := range consumers {
		_, cat, _ := findBlock(f, c.Name)
		ls := rootLoops(f, cat) // compute_at goes no further
		if i == 0 {
			common = ls
			continue
		}
		n := 0
		for n < len(common) && n < len(ls) && common[n] == ls[n] {
			n++
		}
		common = common[:n]
	}
	own := at.loops()
	var out []*ast.For
	for _, l := range common {
		if l.Kind == ast.Vectorized {
			break // its lanes run at once: no place for b's loops
		}
		if !slices.Contains(own, l) {
			out = append(out, l)
		}
	}
	return out
}
