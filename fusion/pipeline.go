package fusion

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// pass is one graph-to-graph step. run reports whether it changed g; it
// may leave new nodes' output shapes unset, since Infer runs after every
// pass and checks the graph.
type pass struct {
	name string
	run  func(g *Graph) (bool, error)
	// runWith, where set, is run instead: a pass the options steer.
	runWith func(g *Graph, o Options) (bool, error)
}

// pipeline is the list of graph passes Compile runs, in order, before
// fusion and lowering.
var pipeline = [...]pass{
	{name: "decompose", run: decompose},   // composites into primitives, so fusion sees them
	{name: "unstride", run: unstride},     // strided 1x1 convolutions into a slice and a convolution of stride 1
	{name: "fold", run: fold},             // constant subgraphs into constants
	{name: "foldaffine", run: foldAffine}, // per-channel scales and shifts after a convolution into its weights
	{name: "taps", run: deadTaps},         // taps of a convolution that read only padding dropped
	{name: "layout", runWith: layoutPass}, // convolutions and poolings in NHWC where Options.Layout says
	{name: "concat", run: concatLast},     // element-wise work after a concat onto its inputs
	{name: "pack", runWith: packWeights},  // constant weight matrices in panels of columns
	{name: "rows", run: rowsPass},         // element-wise epilogues of a product before its reshape
	{name: "simplify", run: simplify},     // exact algebraic identities (rules.go)
	{name: "cse", run: cse},               // redirects uses of duplicates; dce removes them
	{name: "dce", run: dce},               // nodes and constants no output needs
}

// mustPrecede lists pass orderings the pipeline relies on (checked by a
// test).
var mustPrecede = [...][2]string{{"decompose", "fold"}, {"fold", "foldaffine"}, {"foldaffine", "taps"}, {"taps", "layout"}, {"foldaffine", "layout"}, {"layout", "pack"}, {"layout", "concat"}, {"pack", "simplify"}, {"rows", "simplify"}, {"layout", "simplify"}, {"simplify", "dce"}, {"cse", "dce"}}

// Options control Compile.
type Options struct {
	// NoFuse makes one kernel per operator: the reference lowering fused
	// plans are checked against.
	NoFuse bool
	// Dump names the passes after which the graph is printed to DumpTo
	// ("all" for every pass, "fuse" for the groups).
	Dump   []string
	DumpTo io.Writer
	// Layout is where the channels of 2-d convolutions and poolings go:
	// LayoutChannelsLast runs them in NHWC (the layout pass),
	// LayoutChannelsFirst as the graph says, and LayoutAuto (the zero
	// value) lets loom choose (NHWC for a graph with a 2-d convolution
	// of constant weights; with PlainWeights, only for a grouped or
	// depthwise one).
	Layout string
	// PlainWeights keeps every weight as the graph gives it; by default
	// the pack pass stores a large constant matrix in panels of columns
	// and a convolution's constant filters in panels of filters
	// (pass_pack.go).
	PlainWeights bool
}

// DumpNames lists what Options.Dump may name: the passes in order, then
// "fuse" (the groups) and "all".
func DumpNames() []string {
	var names []string
	for _, p := range pipeline {
		names = append(names, p.name)
	}
	return append(names, "fuse", "all")
}

func (o *Options) dump(name string, text func() string) {
	if o.DumpTo != nil && (slices.Contains(o.Dump, name) || slices.Contains(o.Dump, "all")) {
		fmt.Fprintf(o.DumpTo, "=== after %s ===\n%s", name, text())
	}
}

// Compile runs the pipeline on a copy of g, fuses its nodes into groups
// and lowers each group to one kernel.
func Compile(g *Graph, opts Options) (*Plan, error) {
	for _, name := range opts.Dump {
		if !slices.Contains(DumpNames(), name) {
			return nil, fmt.Errorf("fusion: no pass %q to dump after (have %s)", name, strings.Join(DumpNames(), ", "))
		}
	}
	g = g.Clone()
	if err := Infer(g); err != nil {
		return nil, err
	}
	switch opts.Layout {
	case LayoutAuto, LayoutChannelsFirst, LayoutChannelsLast:
	default:
		return nil, fmt.Errorf("fusion: layout %q is none of %q, %q and %q (loom's choice)", opts.Layout, LayoutChannelsFirst, LayoutChannelsLast, LayoutAuto)
	}
	for _, p := range pipeline {
		var changed bool
		var err error
		if p.runWith != nil {
			changed, err = p.runWith(g, opts)
		} else {
			changed, err = p.run(g)
		}
		if err != nil {
			return nil, fmt.Errorf("fusion: pass %s: %w", p.name, err)
		}
		if err := infer(g); err != nil {
			return nil, fmt.Errorf("fusion: after pass %s: %w", p.name, err)
		}
		opts.dump(p.name, func() string {
			if !changed {
				return "(unchanged)\n"
			}
			return g.String()
		})
	}
	if len(g.Outputs) == 0 {
		return nil, errNoOutputs
	}
	var groups []*group
	if opts.NoFuse {
		for _, n := range g.Nodes {
			groups = append(groups, &group{nodes: []*Node{n}, kind: groupKind(n)})
		}
	} else {
		groups = fuse(g)
	}
	opts.dump("fuse", func() string {
		s := ""
		for i, grp := range groups {
			s += fmt.Sprintf("group %d %s\n", i, grp.describe())
		}
		return s
	})
	graphOrder := groups
	if !opts.NoFuse {
		groups = orderForMemory(g, groups)
	}
	plan, err := newPlan(g, groups)
	if err != nil {
		return nil, err
	}
	for _, grp := range groups {
		plan.GraphOrder = append(plan.GraphOrder, slices.Index(graphOrder, grp))
	}
	return plan, nil
}

func groupKind(n *Node) Kind {
	k := ops[n.Op].kind
	if k == Injective {
		return Elementwise
	}
	return k
}

// freshName returns base, or base with a number, naming no tensor of g.
func (g *Graph) freshName(base string) string {
	name := base
	for k := 1; g.Tensor(name) != nil; k++ {
		name = fmt.Sprintf("%s%d", base, k)
	}
	return name
}

// replaceUses makes every reader of t read r instead. A graph output
// keeps its name: its node becomes identity(r).
func (g *Graph) replaceUses(t, r *Tensor) {
	for _, n := range g.Nodes {
		if n.Output == t {
			continue
		}
		for i, in := range n.Inputs {
			if in == t {
				n.Inputs[i] = r
			}
		}
	}
	if g.IsOutput(t) && t.Producer != nil {
		n := t.Producer
		n.Op, n.Inputs, n.Attrs = "identity", []*Tensor{r}, Attrs{}
	}
}

// newNode appends-before: it returns a node computing a fresh tensor
// named after base, to be placed by the caller.
func (g *Graph) newNode(base, op string, attrs Attrs, inputs ...*Tensor) *Node {
	n := &Node{Op: op, Inputs: inputs, Attrs: attrs}
	n.Output = &Tensor{Name: g.freshName(base), Producer: n}
	return n
}

// scalar returns a new scalar constant of type t and value v.
func (g *Graph) scalar(base string, t Tensor, v float64) *Tensor {
	c := &Tensor{Name: g.freshName(base), DType: t.DType, Data: []float64{v}}
	g.Constants = append(g.Constants, c)
	return c
}
