package schedule

import (
	"fmt"
	"go/token"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Simplified returns trace t, made on function f, as a person would write
// it, for reading: the same primitives on the same blocks and loops with
// the same factors, so that it rebuilds exactly the function t does (it
// is checked: a trace that would not is an error), but
//
//   - a look-up of blocks or loops that earlier instructions already hold
//     (get_block, get_loop, get_loops) is dropped, its outputs replaced by
//     theirs: a block or loop handle is its name, so the two denote the
//     same thing wherever they are used;
//   - each sampling decision that a primitive takes (a split factor, an
//     annotation) is written into the primitive, and the sampling
//     instruction dropped: split(l1, [-1, v2]) with v2's decision 32
//     reads split(l1, [-1, 32]);
//   - a sampled compute location is looked up by its loop's name, and a
//     compute_at at the root location (which leaves the block where it
//     is) is dropped;
//   - a look-up or sampling instruction whose outputs nothing uses is
//     dropped;
//   - the random variables are named after what they denote: a block's
//     after the block, a loop's after its loop variable.
//
// The result no longer records what the search sampled (a tuner replays
// t, not this), only what it decided.
func (t *Trace) Simplified(f *ast.Func) (*Trace, error) {
	s, err := New(f)
	if err != nil {
		return nil, err
	}
	alias := map[string]string{} // a dropped look-up's output -> the variable held before
	ints := map[string]int64{}   // a dropped sampling's output -> its decision
	held := map[string]string{}  // "b:NAME" or "l:NAME" -> the variable holding it
	roots := map[string]bool{}   // sampled locations that are the root
	blank := map[string]bool{}   // outputs another variable stands for: _
	var out []Inst
	for i, in := range t.Insts {
		if err := s.replayInst(i, in, nil, false); err != nil {
			return nil, err
		}
		var keys []string
		for _, o := range in.Outputs {
			keys = append(keys, handleKey(s.handles[o]))
		}
		if in.Kind == "sample_compute_location" {
			if l, ok := s.handles[in.Outputs[0]].(Loop); ok {
				if l.IsRoot() {
					roots[in.Outputs[0]] = true
					continue
				}
				// The decided location is a loop: look it up by name.
				in = Inst{Kind: "get_loop", Args: []Arg{Str(l.name)}, Outputs: in.Outputs}
			}
		}
		if (in.Kind == "compute_at" || in.Kind == "reverse_compute_at") && len(in.Args) == 2 && roots[in.Args[1].RV] {
			continue // at the root: the block stays where it is
		}
		switch in.Kind {
		case "get_block", "get_loop", "get_loops":
			if all(keys, func(k string) bool { return k != "" && held[k] != "" }) {
				for j, o := range in.Outputs {
					alias[o] = held[keys[j]]
				}
				continue
			}
		case "sample_categorical", "sample_perfect_tile":
			if all(in.Outputs, func(o string) bool { _, ok := s.handles[o].(Value); return ok }) {
				for _, o := range in.Outputs {
					ints[o] = s.handles[o].(Value).v
				}
				continue
			}
		}
		in.Args = rewriteArgs(in.Args, alias, ints)
		lookup := in.Kind == "get_block" || in.Kind == "get_loop" || in.Kind == "get_loops"
		for j, o := range in.Outputs {
			switch {
			case keys[j] == "":
			case lookup && held[keys[j]] != "":
				alias[o] = held[keys[j]] // a look-up kept for its other outputs
				blank[o] = true
			default:
				held[keys[j]] = o
			}
		}
		out = append(out, in)
	}
	out = dropUnused(out)
	simple := &Trace{Insts: renameVariables(out, s, blank)}
	check, err := Replay(f, simple, nil)
	if err != nil {
		return nil, fmt.Errorf("schedule: the simplified trace does not replay: %w", err)
	}
	if ast.Hash(check.Func()) != ast.Hash(s.Func()) {
		return nil, fmt.Errorf("schedule: the simplified trace builds another function")
	}
	return simple, nil
}

// handleKey names what a handle denotes: "b:NAME" for a block, "l:NAME"
// for a loop, "" for anything else (a value, the root location).
func handleKey(h any) string {
	switch h := h.(type) {
	case Block:
		return "b:" + h.name
	case Loop:
		if h.name == "" {
			return ""
		}
		return "l:" + h.name
	}
	return ""
}

func all(xs []string, ok func(string) bool) bool {
	for _, x := range xs {
		if !ok(x) {
			return false
		}
	}
	return true
}

// rewriteArgs replaces references to dropped look-ups by the variables
// they alias, and to dropped samplings by their decisions.
func rewriteArgs(args []Arg, alias map[string]string, ints map[string]int64) []Arg {
	out := make([]Arg, len(args))
	for i, a := range args {
		switch {
		case a.RV != "":
			if v, ok := ints[a.RV]; ok {
				out[i] = IntArg(v)
			} else if to, ok := alias[a.RV]; ok {
				out[i] = Ref(to)
			} else {
				out[i] = a
			}
		case a.IsList:
			out[i] = ListArg(rewriteArgs(a.List, alias, ints)...)
		default:
			out[i] = a
		}
	}
	return out
}

// dropUnused drops, last to first, the look-ups and samplings whose
// outputs no later instruction uses.
func dropUnused(insts []Inst) []Inst {
	used := map[string]bool{}
	var kept []Inst
	for i := len(insts) - 1; i >= 0; i-- {
		in := insts[i]
		pure := in.Kind == "get_block" || in.Kind == "get_loop" || in.Kind == "get_loops" ||
			strings.HasPrefix(in.Kind, "sample_")
		if pure && !anyUsed(in.Outputs, used) {
			continue
		}
		markUsed(in.Args, used)
		kept = append(kept, in)
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return kept
}

func anyUsed(outputs []string, used map[string]bool) bool {
	for _, o := range outputs {
		if used[o] {
			return true
		}
	}
	return false
}

func markUsed(args []Arg, used map[string]bool) {
	for _, a := range args {
		if a.RV != "" {
			used[a.RV] = true
		}
		markUsed(a.List, used)
	}
}

// renameVariables names each variable after what it denotes in the
// schedule s the trace was replayed into (a block after the block, a
// loop after its loop variable, a value vN), each name once; those in
// blank are _.
func renameVariables(insts []Inst, s *Schedule, blank map[string]bool) []Inst {
	names := map[string]string{}
	taken := map[string]bool{"true": true, "false": true, "sch": true, "err": true, "schedule": true, "apply": true}
	fresh := func(base string) string {
		name := identifier(base)
		if token.Lookup(name).IsKeyword() || taken[name] {
			for n := 2; ; n++ {
				if c := fmt.Sprintf("%s_%d", name, n); !taken[c] {
					name = c
					break
				}
			}
		}
		taken[name] = true
		return name
	}
	values := 0
	out := make([]Inst, len(insts))
	for i, in := range insts {
		in.Args = renameArgs(in.Args, names)
		outs := make([]string, len(in.Outputs))
		for j, o := range in.Outputs {
			if blank[o] {
				outs[j] = "_"
				continue
			}
			switch h := s.handles[o].(type) {
			case Block:
				outs[j] = fresh(h.name)
			case Loop:
				outs[j] = fresh(h.name)
			default:
				outs[j] = fresh(fmt.Sprintf("v%d", values))
				values++
			}
			names[o] = outs[j]
		}
		in.Outputs = outs
		out[i] = in
	}
	return out
}

func renameArgs(args []Arg, names map[string]string) []Arg {
	out := make([]Arg, len(args))
	for i, a := range args {
		switch {
		case a.RV != "":
			out[i] = Ref(names[a.RV])
		case a.IsList:
			out[i] = ListArg(renameArgs(a.List, names)...)
		default:
			out[i] = a
		}
	}
	return out
}

// identifier turns a block's or loop's name into a Go identifier.
func identifier(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			b.WriteString("_")
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}
