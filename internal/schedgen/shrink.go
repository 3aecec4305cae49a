package schedgen

import (
	"slices"
	"strings"
)

// Shrink returns f with its sequence of ops reduced to a minimal one that
// still fails the same way (the same kind of failure, at the same
// primitive). It alternates two reductions until neither helps: delta
// debugging (replay the sequence with chunks of ops left out, keeping every
// shorter sequence that still fails; ops that a shorter sequence refuses
// drop out on their own), and leaving out one op that made loops while
// renaming the later ops' loops back to the loops it started from (a split
// left out turns i_0 and i_1 back into i), since names chain through a
// sequence. A failure that does not reproduce on replay is returned as it
// is, its message saying so. A validator disagreement is diagnosed (see
// Diagnose).
func Shrink(f *Failure, cfg Config) *Failure {
	fails := func(ops []Op) *Failure {
		g := Replay(f.Case, f.Seed, ops, cfg)
		if g == nil || g.Kind != f.Kind {
			return nil
		}
		if f.Kind != ReplayMismatch && g.Ops[len(g.Ops)-1].Prim != f.Ops[len(f.Ops)-1].Prim {
			return nil
		}
		return g
	}
	best := fails(f.Ops)
	if best == nil {
		g := *f
		g.Msg += "\n(the sequence does not fail again when replayed: not shrunk)"
		return &g
	}
	for {
		n := len(best.Ops)
		best = ddmin(best, fails)
		best = dropRenaming(best, fails)
		if len(best.Ops) == n {
			break
		}
	}
	best.Shrunk = len(f.Ops)
	Diagnose(best, cfg)
	return best
}

// ddmin removes chunks of ops while the sequence still fails.
func ddmin(best *Failure, fails func([]Op) *Failure) *Failure {
	ops := best.Ops
	for n := 2; len(ops) >= 2; {
		chunk := (len(ops) + n - 1) / n
		reduced := false
		for start := 0; start < len(ops); start += chunk {
			cand := append(slices.Clone(ops[:start]), ops[min(start+chunk, len(ops)):]...)
			if g := fails(cand); g != nil {
				best, ops, reduced = g, g.Ops, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if n >= len(ops) {
				break
			}
			n = min(2*n, len(ops))
		}
	}
	return best
}

// dropRenaming tries to leave out each op, last first, renaming the later
// ops' loops as if it had not run.
func dropRenaming(best *Failure, fails func([]Op) *Failure) *Failure {
	for k := len(best.Ops) - 2; k >= 0; k-- {
		if k >= len(best.Ops)-1 {
			continue
		}
		ren := renames(best.Ops[k])
		if len(ren) == 0 {
			continue
		}
		cand := slices.Clone(best.Ops[:k])
		for _, op := range best.Ops[k+1:] {
			op.Loops = slices.Clone(op.Loops)
			for i, l := range op.Loops {
				op.Loops[i] = rename(l, ren)
			}
			cand = append(cand, op)
		}
		if g := fails(cand); g != nil {
			best = g
		}
	}
	return best
}

// renames returns, for an op that makes loops, the names of the loops it
// makes and the names they fall back to when the op is left out.
func renames(op Op) [][2]string {
	var out [][2]string
	switch op.Prim {
	case "split":
		for i := range op.Ints {
			out = append(out, [2]string{op.Loops[0] + "_" + itoa(i), op.Loops[0]})
		}
	case "tile":
		for _, l := range op.Loops {
			out = append(out, [2]string{l + "_0", l}, [2]string{l + "_1", l})
		}
	case "fuse":
		if len(op.Loops) > 0 {
			out = append(out, [2]string{strings.Join(op.Loops, "_") + "_fused", op.Loops[0]})
		}
	}
	// Longest first, so that i_1_j_fused goes before i_1.
	slices.SortFunc(out, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	return out
}

func itoa(i int) string { return string(rune('0' + i)) }

// rename replaces in the loop name l, in one pass, each run of whole name
// components (the parts between underscores) that names a made loop by the
// loop it falls back to.
func rename(l string, ren [][2]string) string {
	var b strings.Builder
	for p := 0; p < len(l); {
		if p == 0 || l[p-1] == '_' {
			done := false
			for _, r := range ren {
				end := p + len(r[0])
				if strings.HasPrefix(l[p:], r[0]) && (end == len(l) || l[end] == '_') {
					b.WriteString(r[1])
					p, done = end, true
					break
				}
			}
			if done {
				continue
			}
		}
		b.WriteByte(l[p])
		p++
	}
	return b.String()
}
