package ast

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A Renaming gives a function's identifiers new names, each kind of
// identifier on its own: the function, its buffers (parameters and
// allocations), its variables (loop and iteration variables; symbolic
// sizes are never renamed, their names are how callers give their values)
// and its schedule blocks. A name a map does not hold is kept.
//
// With Derived set, a name that extends a renamed one by a suffix that
// starts with an underscore is renamed with it (i_o from i, A_shared from
// A; a block's name may extend a buffer's and a buffer's a block's): the names schedule primitives derive from a function's names follow
// the function's when the renaming undoes [Canonical] on a scheduled
// function.
type Renaming struct {
	Func    string // the function's new name; "" keeps it
	Buffers map[string]string
	Vars    map[string]string
	Blocks  map[string]string
	Derived bool
}

// Canonical returns f with its identifiers renamed in the order they first
// appear (the function "kernel", buffers _b0, _b1, ..., variables _v0,
// _v1, ..., blocks _s0, _s1, ...; symbolic sizes and the root block keep
// their names), and the
// renaming that gives a function scheduled from the canonical form f's
// names back ([Rename]). Two functions that differ only in their names
// have equal canonical forms, so [Hash] of the canonical form keys the
// structure of a computation whatever its names: the layers of a network
// whose kernels are named after the layer share one.
func Canonical(f *Func) (*Func, *Renaming) {
	c := &canonicalizer{
		names:   [3]map[string]string{{}, {}, {}},
		renamer: renamer{bufs: map[*Buffer]*Buffer{}, sizes: map[string]bool{}},
	}
	for _, v := range f.Sizes {
		c.sizes[v.Name] = true
	}
	c.renamer.name = c.assign
	g := c.function(f, "kernel")
	back := &Renaming{Func: f.Name, Buffers: inverse(c.names[buffers]), Vars: inverse(c.names[vars]), Blocks: inverse(c.names[blocks]), Derived: true}
	return g, back
}

// Rename returns f with its identifiers renamed by r, or an error when the
// renaming would give two identifiers of one kind the same name (a new
// name that f already uses for another, a variable named like a symbolic
// size).
func Rename(f *Func, r *Renaming) (*Func, error) {
	n := &renamingWalk{r: r, used: [3]map[string]string{{}, {}, {}}}
	n.renamer = renamer{bufs: map[*Buffer]*Buffer{}, sizes: map[string]bool{}, name: n.lookup}
	for _, v := range f.Sizes {
		n.sizes[v.Name] = true
		n.used[vars][v.Name] = v.Name
	}
	name := f.Name
	if r.Func != "" {
		name = r.Func
	}
	g := n.function(f, name)
	if n.err != nil {
		return nil, fmt.Errorf("ast: renaming %s: %w", f.Name, n.err)
	}
	return g, nil
}

// The kinds of identifiers, each renamed on its own.
const (
	buffers = iota
	vars
	blocks
)

var kindNames = [3]string{"buffer", "variable", "block"}

// renamer rebuilds a function with every identifier passed through name,
// buffers rebuilt once each so that every access refers to the new
// declaration.
type renamer struct {
	name  func(kind int, old string) string
	bufs  map[*Buffer]*Buffer
	sizes map[string]bool
}

func (r *renamer) function(f *Func, name string) *Func {
	g := &Func{Name: name, Sizes: f.Sizes, Params: make([]*Buffer, len(f.Params))}
	for i, b := range f.Params {
		g.Params[i] = r.buffer(b)
	}
	if f.Body != nil {
		g.Body = r.stmt(f.Body)
	}
	return g
}

func (r *renamer) buffer(b *Buffer) *Buffer {
	if b == nil {
		return nil
	}
	if nb, ok := r.bufs[b]; ok {
		return nb
	}
	nb := &Buffer{Name: r.name(buffers, b.Name), DType: b.DType, Scope: b.Scope, Shape: make([]Expr, len(b.Shape))}
	r.bufs[b] = nb
	for i, d := range b.Shape {
		nb.Shape[i] = r.expr(d)
	}
	return nb
}

func (r *renamer) variable(v *Var) *Var {
	if v == nil || r.sizes[v.Name] {
		return v
	}
	return &Var{Name: r.name(vars, v.Name), DType: v.DType}
}

func (r *renamer) regions(rs []Region) []Region {
	out := slices.Clone(rs)
	for i := range out {
		out[i].Buffer = r.buffer(out[i].Buffer)
	}
	return out
}

func (r *renamer) expr(e Expr) Expr {
	switch x := e.(type) {
	case *Var:
		return r.variable(x)
	case *Load:
		b := r.buffer(x.Buffer)
		l := MapChildren(x, r.stmt, r.expr)
		return &Load{Buffer: b, Indices: l.Indices}
	}
	return MapChildren(e, r.stmt, r.expr)
}

// stmt names a statement's definitions before its children, so that
// names are given in the order they first appear.
func (r *renamer) stmt(s Stmt) Stmt {
	switch x := s.(type) {
	case *For:
		v := r.variable(x.Var)
		c := *MapChildren(x, r.stmt, r.expr)
		c.Var = v
		return &c
	case *ScheduleBlock:
		name := r.name(blocks, x.Name)
		iters := make([]*IterVar, len(x.Iters))
		for i, it := range x.Iters {
			if it != nil {
				iters[i] = &IterVar{Var: r.variable(it.Var), Kind: it.Kind}
			}
		}
		c := *MapChildren(x, r.stmt, r.expr)
		for i, it := range c.Iters {
			if it != nil {
				iters[i].Dom, iters[i].Binding = it.Dom, it.Binding
			}
		}
		c.Name, c.Iters = name, iters
		c.Reads, c.Writes = r.regions(c.Reads), r.regions(c.Writes)
		return &c
	case *Store:
		b := r.buffer(x.Buffer)
		c := MapChildren(x, r.stmt, r.expr)
		return &Store{Buffer: b, Indices: c.Indices, Value: c.Value}
	case *Alloc:
		return &Alloc{Buffer: r.buffer(x.Buffer)}
	}
	return MapChildren(s, r.stmt, r.expr)
}

// canonicalizer names identifiers in order of first appearance.
type canonicalizer struct {
	renamer
	names [3]map[string]string // old -> canonical, by kind
	next  [3]int               // the number of the next canonical name
}

var canonicalPrefix = [3]string{"_b", "_v", "_s"}

func (c *canonicalizer) assign(kind int, old string) string {
	if n, ok := c.names[kind][old]; ok {
		return n
	}
	if kind == blocks && old == RootBlock {
		return old
	}
	n := canonicalPrefix[kind] + strconv.Itoa(c.next[kind])
	c.next[kind]++
	for kind == vars && c.sizes[n] { // a symbolic size has the name
		n = canonicalPrefix[kind] + strconv.Itoa(c.next[kind])
		c.next[kind]++
	}
	c.names[kind][old] = n
	return n
}

// renamingWalk applies a Renaming and checks that no two identifiers of
// a kind end up with one name.
type renamingWalk struct {
	renamer
	r    *Renaming
	used [3]map[string]string // new name -> the old name that has it
	err  error
}

func (n *renamingWalk) lookup(kind int, old string) string {
	name := n.r.name(kind, old)
	if prev, ok := n.used[kind][name]; ok && prev != old && n.err == nil {
		n.err = fmt.Errorf("%s %s and %s would both be named %s", kindNames[kind], prev, old, name)
	}
	n.used[kind][name] = old
	return name
}

// Buffer, Var and Block give the new name of a buffer, a variable or a
// block under r (the name itself when r keeps it), as [Rename] names
// it: for the names a schedule's trace refers to (schedule.Trace.Renamed).
func (r *Renaming) Buffer(name string) string { return r.name(buffers, name) }
func (r *Renaming) Var(name string) string    { return r.name(vars, name) }
func (r *Renaming) Block(name string) string  { return r.name(blocks, name) }

func (r *Renaming) name(kind int, old string) string {
	m := [3]map[string]string{r.Buffers, r.Vars, r.Blocks}[kind]
	if name, ok := m[old]; ok {
		return name
	}
	if r.Derived {
		if name, ok := derivedName(m, old); ok {
			return name
		}
		// Primitives name blocks after buffers and buffers after blocks
		// (a cache of A is the block A_local).
		switch kind {
		case blocks:
			m = r.Buffers
		case buffers:
			m = r.Blocks
		}
		if name, ok := derivedName(m, old); ok {
			return name
		}
	}
	return old
}

// derivedName renames a name that extends a renamed one by a suffix that
// starts with an underscore, by the longest such renamed prefix.
func derivedName(m map[string]string, old string) (string, bool) {
	for i := len(old) - 1; i > 0; i-- {
		if old[i] != '_' {
			continue
		}
		if n, ok := m[old[:i]]; ok {
			return n + old[i:], true
		}
	}
	return "", false
}

func inverse(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// String prints the renaming, each kind's names sorted: for error messages
// and tests.
func (r *Renaming) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "func %q", r.Func)
	for k, m := range [3]map[string]string{r.Buffers, r.Vars, r.Blocks} {
		fmt.Fprintf(&b, "; %ss", kindNames[k])
		for _, old := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, " %s->%s", old, m[old])
		}
	}
	return b.String()
}
