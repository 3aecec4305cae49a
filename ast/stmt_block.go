package ast

// IterKind marks a block iteration variable as spatial or reduce.
type IterKind uint8

// The iteration variable kinds. A spatial variable indexes independent
// results; a reduce variable runs over values combined into one result, so
// its iterations depend on each other and must not run in parallel.
const (
	Spatial IterKind = iota
	Reduce
)

// String returns "spatial" or "reduce".
func (k IterKind) String() string {
	switch k {
	case Spatial:
		return "spatial"
	case Reduce:
		return "reduce"
	}
	return "?"
}

// Range is the half-open interval [Min, Min+Extent).
type Range struct {
	Min, Extent Expr
}

// IterVar is one iteration variable of a [ScheduleBlock]: its name, kind,
// domain, and the expression over the enclosing loop variables that it is
// bound to (the text form's axis.bind).
type IterVar struct {
	Var     *Var
	Kind    IterKind
	Dom     Range
	Binding Expr
}

// Region is the part of a buffer a block reads or writes: one [Range] per
// dimension of the buffer, over the block's iteration variables.
type Region struct {
	Buffer *Buffer
	Ranges []Range
}

// SameRanges reports whether r and o have structurally equal ranges (the
// same indices, whatever the buffers).
func (r Region) SameRanges(o Region) bool {
	if len(r.Ranges) != len(o.Ranges) {
		return false
	}
	for i := range r.Ranges {
		if !Equal(r.Ranges[i].Min, o.Ranges[i].Min) || !Equal(r.Ranges[i].Extent, o.Ranges[i].Extent) {
			return false
		}
	}
	return true
}

// ScheduleBlock is the unit the schedule primitives move and transform: a
// named computation over its own iteration variables, placed in the loop nest
// by binding those variables to expressions over the enclosing loops.
//
// One execution of the block (an instance) happens for each iteration of the
// enclosing loops where Predicate holds. The instance first evaluates each
// Binding to get the values of Iters; they must lie inside the iteration
// domains. The body sees only its iteration variables (and the function's
// symbolic sizes and loops of its own), never the enclosing loop variables,
// so a schedule that rewrites the loops needs only to rewrite the bindings.
//
// Init, when present, is the reduction's initial statement: it runs before
// the body in the instance whose reduce variables are all at the minimum of
// their domains. An output element whose reduce loops run no instance of
// the block (a reduce axis of size 0) still gets its init, once, before
// the loops: [InitEmptyReductions] spells out where, and every runner of a
// function (the interpreter, the code generators) runs what it returns.
//
// Reads and Writes declare what the block may access: every load in the
// block's own statements (not counting nested blocks) falls inside a read
// region, and every store inside a write region. The verifier checks the
// buffers and the interpreter checks every index.
type ScheduleBlock struct {
	Name        string
	Iters       []*IterVar
	Predicate   Expr // nil means true
	Reads       []Region
	Writes      []Region
	Annotations Annotations
	Init        Stmt // nil when the block is not a reduction with an initial value
	Body        Stmt
}

// IterVarByName returns the iteration variable of b named name, or nil.
func (b *ScheduleBlock) IterVarByName(name string) *IterVar {
	for _, it := range b.Iters {
		if it.Var != nil && it.Var.Name == name {
			return it
		}
	}
	return nil
}

// IsPure reports whether running an instance of b again writes what it
// wrote the first time, given the same inputs: b has no init, no reduce
// iteration variable, and reads no buffer it writes. A pure block may be
// recomputed (compute_at over overlapping regions does); another may not.
func (b *ScheduleBlock) IsPure() bool {
	if b.Init != nil || b.IsReduction() {
		return false
	}
	for _, w := range b.Writes {
		for _, r := range b.Reads {
			if r.Buffer == w.Buffer {
				return false
			}
		}
	}
	return true
}

// HoldsBlock reports whether b holds another block in its init or body:
// the root block, or a block around a nest (schedule.Blockize makes one).
// Only a block that holds none computes: the others give context.
func (b *ScheduleBlock) HoldsBlock() bool {
	found := false
	for _, s := range []Stmt{b.Init, b.Body} {
		if s == nil {
			continue
		}
		Inspect(s, func(n Node) bool {
			if _, ok := n.(*ScheduleBlock); ok {
				found = true
			}
			return !found
		})
	}
	return found
}

// IsReduction reports whether b has a reduce iteration variable.
func (b *ScheduleBlock) IsReduction() bool {
	for _, it := range b.Iters {
		if it.Kind == Reduce {
			return true
		}
	}
	return false
}
