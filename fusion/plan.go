package fusion

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion/memplan"
)

// Plan is a compiled graph: kernels to run in order and the buffers
// between them.
type Plan struct {
	Graph   *Graph // after the passes
	Kernels []*Kernel
	Buffers []*Buffer // every tensor a kernel reads or writes
	// GraphOrder[k] is where kernel k would run in the graph's own order
	// (its first node's), before the exec-order pass chose the order of
	// Kernels to lower the peak memory.
	GraphOrder []int
}

// Kernel is one fused group lowered to one function. The function's
// parameters are the buffers named in Inputs then Outputs (each a tensor
// of the graph), after its sizes (symbols of the graph).
type Kernel struct {
	Name    string
	Func    *ast.Func
	Kind    Kind     // Elementwise, Reduce or Anchor
	Nodes   []string // the nodes it computes, by output tensor
	Inputs  []string
	Outputs []string
	// Alias, when not empty, says that the kernel only reshapes the
	// tensor so named into its one output: row-major, the same elements
	// in the same order. A runtime skips it and lets the output share
	// the input's memory (Buffer.AliasOf); its function is the copy, for
	// runtimes that do not.
	Alias string
}

// Role says where a buffer comes from.
type Role uint8

const (
	RoleInput        Role = iota // passed by the caller
	RoleConstant                 // a constant of the graph
	RoleIntermediate             // written by one kernel, read by later ones
	RoleOutput                   // returned to the caller
)

var roleNames = [...]string{"input", "constant", "intermediate", "output"}

func (r Role) String() string { return roleNames[r] }

// Buffer is a tensor passed between kernels. First and Last are the
// kernel steps of its first write and last read (for inputs and
// constants, First is 0).
type Buffer struct {
	Tensor      *Tensor
	Role        Role
	First, Last int
	// AliasOf, for the output of an alias kernel (Kernel.Alias) or of a
	// kernel that updates an input in place (markInPlace), is the tensor
	// whose memory it shares (never itself an alias); Memory does not
	// place it, and the live range of AliasOf covers its readers.
	AliasOf *Tensor
}

// Weights returns the positions among the parameters of k's function of
// the graph's constants k reads: a model's weights, which one run of the
// plan reads once each (autotune.Task.Cold times a kernel with them out
// of the caches). A kernel's parameters are its inputs, then its
// outputs.
func (p *Plan) Weights(k *Kernel) []int {
	if len(k.Func.Params) != len(k.Inputs)+len(k.Outputs) {
		return nil
	}
	role := map[string]Role{}
	for _, b := range p.Buffers {
		role[b.Tensor.Name] = b.Role
	}
	var out []int
	for i, name := range k.Inputs {
		if r, ok := role[name]; ok && r == RoleConstant {
			out = append(out, i)
		}
	}
	return out
}

// newPlan builds the plan of g's groups.
func newPlan(g *Graph, groups []*group) (*Plan, error) {
	p := &Plan{Graph: g}
	consumers := g.Consumers()
	bufs := map[*Tensor]*Buffer{}
	use := func(t *Tensor, step int, write bool) {
		b := bufs[t]
		if b == nil {
			b = &Buffer{Tensor: t, First: step, Last: step}
			switch {
			case t.IsConst():
				b.Role, b.First = RoleConstant, 0
			case t.Producer == nil:
				b.Role, b.First = RoleInput, 0
			case g.IsOutput(t):
				b.Role = RoleOutput
			default:
				b.Role = RoleIntermediate
			}
			bufs[t] = b
			p.Buffers = append(p.Buffers, b)
		}
		b.Last = max(b.Last, step)
	}
	names := namesOf(g)
	for i, grp := range groups {
		name := fmt.Sprintf("%s_%d", g.Name, i)
		f, ins, outs, err := lowerGroup(g, grp, name, consumers, names)
		if err != nil {
			return nil, err
		}
		if grp.kind != Anchor {
			// An anchor's epilogue stays a nest of its own after the
			// anchor: the tiling rules tile the anchor's nest alone and
			// move the epilogue under the tile they choose
			// (reverse_compute_at), which they cannot do once it shares
			// the anchor's loops.
			f, _ = align(f)
		}
		k := &Kernel{Name: name, Func: f, Kind: grp.kind}
		for _, n := range grp.nodes {
			k.Nodes = append(k.Nodes, n.Output.Name)
		}
		for _, t := range ins {
			k.Inputs = append(k.Inputs, t.Name)
			use(t, i, false)
		}
		for _, t := range outs {
			k.Outputs = append(k.Outputs, t.Name)
			use(t, i, true)
		}
		p.Kernels = append(p.Kernels, k)
	}
	for _, b := range p.Buffers {
		if b.Role == RoleOutput || b.Role == RoleInput {
			b.Last = len(p.Kernels) - 1
		}
	}
	markAliases(p, groups, bufs)
	markInPlace(p, bufs)
	return p, nil
}

// markAliases finds the kernels that only reshape an intermediate or an
// input into an intermediate (a flatten before a matmul, say) and makes
// their outputs views of their inputs' memory, unless some kernel reads
// both (kernels assume their buffers do not overlap).
func markAliases(p *Plan, groups []*group, bufs map[*Tensor]*Buffer) {
	for i, k := range p.Kernels {
		if len(k.Inputs) != 1 || len(k.Outputs) != 1 || slices.ContainsFunc(groups[i].nodes, func(n *Node) bool { return n.Op != "reshape" }) {
			continue
		}
		src, out := bufs[p.Graph.Tensor(k.Inputs[0])], bufs[p.Graph.Tensor(k.Outputs[0])]
		if src == nil || out == nil || out.Role != RoleIntermediate || src.Tensor.DType != out.Tensor.DType {
			continue
		}
		root := src
		if src.AliasOf != nil {
			root = bufs[src.AliasOf]
		}
		both := false
		for _, o := range p.Kernels {
			if o == k {
				continue
			}
			names := append(slices.Clone(o.Inputs), o.Outputs...)
			if slices.Contains(names, out.Tensor.Name) && (slices.Contains(names, root.Tensor.Name) || slices.ContainsFunc(p.Buffers, func(b *Buffer) bool {
				return b.AliasOf == root.Tensor && slices.Contains(names, b.Tensor.Name)
			})) {
				both = true
			}
		}
		if both {
			continue
		}
		k.Alias = root.Tensor.Name
		out.AliasOf = root.Tensor
		root.Last = max(root.Last, out.Last)
	}
}

// Memory places the intermediate buffers in one arena, reusing the space
// of buffers that are no longer live, for the given sizes of the symbols
// (none for a graph with static shapes). Inputs, outputs and constants
// belong to the caller and are not placed.
func (p *Plan) Memory(sizes map[string]int64) (*memplan.Plan, error) {
	if err := p.checkSizes(sizes); err != nil {
		return nil, err
	}
	return p.place(sizes, func(b *Buffer) (int, int) { return b.First, b.Last })
}

// GraphOrderMemory is Memory with the kernels run in the graph's order
// (GraphOrder): the figure the exec-order pass improves on.
func (p *Plan) GraphOrderMemory(sizes map[string]int64) (*memplan.Plan, error) {
	if err := p.checkSizes(sizes); err != nil {
		return nil, err
	}
	return p.place(sizes, func(b *Buffer) (int, int) {
		first, last := -1, -1
		touches := func(kern *Kernel, name string) bool {
			return slices.Contains(kern.Inputs, name) || slices.Contains(kern.Outputs, name)
		}
		for k, kern := range p.Kernels {
			if touches(kern, b.Tensor.Name) || slices.ContainsFunc(p.Buffers, func(a *Buffer) bool { return a.AliasOf == b.Tensor && touches(kern, a.Tensor.Name) }) {
				step := p.GraphOrder[k]
				if first < 0 || step < first {
					first = step
				}
				last = max(last, step)
			}
		}
		return first, last
	})
}

// place places the intermediates with the live ranges steps gives.
func (p *Plan) place(sizes map[string]int64, steps func(*Buffer) (int, int)) (*memplan.Plan, error) {
	var bufs []memplan.Buffer
	for _, b := range p.Buffers {
		if b.Role != RoleIntermediate || b.AliasOf != nil {
			continue
		}
		n, err := b.Tensor.Shape.Elems()
		if err != nil {
			return nil, err
		}
		v, err := n.Eval(sizes)
		if err != nil {
			return nil, err
		}
		if v < 0 {
			return nil, fmt.Errorf("fusion: %s has %d elements for the given sizes", b.Tensor.Name, v)
		}
		bytes, ok := mul64(v, int64(max(b.Tensor.DType.Bytes(), 1)))
		if !ok {
			return nil, errDimOverflow
		}
		first, last := steps(b)
		bufs = append(bufs, memplan.Buffer{Name: b.Tensor.Name, Size: bytes, First: first, Last: last})
	}
	return memplan.Place(bufs, 64)
}

// checkSizes checks that every symbol has a value and every shape is
// non-negative for them.
func (p *Plan) checkSizes(sizes map[string]int64) error {
	for _, s := range p.Graph.Symbols() {
		v, ok := sizes[s]
		if !ok {
			return fmt.Errorf("fusion: no value for the size %s", s)
		}
		if v < 0 {
			return fmt.Errorf("fusion: size %s = %d is negative", s, v)
		}
	}
	for _, b := range p.Buffers {
		for k, d := range b.Tensor.Shape {
			v, err := d.Eval(sizes)
			if err != nil {
				return err
			}
			if v < 0 {
				return fmt.Errorf("fusion: dimension %d of %s (%s) is %d for these sizes", k, b.Tensor.Name, d, v)
			}
		}
	}
	return nil
}

// NewData returns zeroed data for tensor t at the given sizes, of the Go
// type ast.Interpret takes for its dtype.
func NewData(t *Tensor, sizes map[string]int64) (any, error) {
	n, err := t.Shape.Elems()
	if err != nil {
		return nil, err
	}
	v, err := n.Eval(sizes)
	if err != nil {
		return nil, err
	}
	if v < 0 || v > 1<<30 {
		return nil, fmt.Errorf("fusion: %s would have %d elements", t.Name, v)
	}
	return ast.NewData(ast.NewBuffer(t.Name, t.DType, ast.I64(v)), nil)
}

// Bytes returns the bytes of every buffer of the plan at sizes (inputs,
// constants, intermediates and outputs, each allocated whole): what
// executing it without reuse takes.
func (p *Plan) Bytes(sizes map[string]int64) (int64, error) {
	if err := p.checkSizes(sizes); err != nil {
		return 0, err
	}
	var total int64
	for _, b := range p.Buffers {
		n, err := b.Tensor.Shape.Elems()
		if err != nil {
			return 0, err
		}
		v, err := n.Eval(sizes)
		if err != nil {
			return 0, err
		}
		bytes, ok := mul64(max(v, 0), int64(max(b.Tensor.DType.Bytes(), 1)))
		if !ok || total+bytes < total {
			return 0, errDimOverflow
		}
		total += bytes
	}
	return total, nil
}

// Interpret runs the plan's kernels one after the other with the
// interpreter of package ast: the reference every compiled plan is
// checked against. inputs holds one Go slice per graph input (see
// ast.GoType); the result holds the outputs.
func (p *Plan) Interpret(sizes map[string]int64, inputs map[string]any) (map[string]any, error) {
	return p.Execute(sizes, inputs, ast.Interpret)
}

// Execute runs the plan's kernels one after the other with run (the
// interpreter, as Interpret does, or compiled kernels), which gets each
// kernel's function, its sizes and its buffers' data by name. The
// intermediates and outputs start poisoned (ast.Poison: NaN), so that an
// element no kernel writes shows in the result. A tensor with
// Buffer.AliasOf shares its memory, as a runtime runs it: views are not
// run, and an update in place reads what it overwrites.
func (p *Plan) Execute(sizes map[string]int64, inputs map[string]any, run func(f *ast.Func, sizes map[string]int64, args map[string]any) error) (map[string]any, error) {
	if err := p.checkSizes(sizes); err != nil {
		return nil, err
	}
	data := map[string]any{}
	for _, b := range p.Buffers {
		t := b.Tensor
		switch {
		case b.AliasOf != nil:
			continue // below: the memory of the tensor it names
		case b.Role == RoleInput:
			d, ok := inputs[t.Name]
			if !ok {
				return nil, fmt.Errorf("fusion: no data for the input %s", t.Name)
			}
			data[t.Name] = d
		case b.Role == RoleConstant:
			data[t.Name] = ast.DataOf(t.DType, t.Data)
		default:
			d, err := NewData(t, sizes)
			if err != nil {
				return nil, err
			}
			ast.Poison(t.DType, d) // an element no kernel writes shows as NaN
			data[t.Name] = d
		}
	}
	for _, b := range p.Buffers {
		if b.AliasOf != nil {
			data[b.Tensor.Name] = data[b.AliasOf.Name] // the same memory, as a runtime gives it
		}
	}
	for _, k := range p.Kernels {
		if k.Alias != "" {
			continue // a view: its output is its input's memory already
		}
		args := map[string]any{}
		for _, name := range append(slices.Clone(k.Inputs), k.Outputs...) {
			args[name] = data[name]
		}
		ks := map[string]int64{}
		for _, s := range k.Func.Sizes {
			ks[s.Name] = sizes[s.Name]
		}
		if err := run(k.Func, ks, args); err != nil {
			return nil, fmt.Errorf("fusion: kernel %s: %w", k.Name, err)
		}
	}
	out := map[string]any{}
	for _, t := range p.Graph.Outputs {
		out[t.Name] = data[t.Name]
	}
	return out, nil
}

// String prints the kernels, each with the nodes it computes and its
// buffers, then each function.
func (p *Plan) String() string {
	var b strings.Builder
	for i, k := range p.Kernels {
		fmt.Fprintf(&b, "kernel %d %s (%s): %s\n", i, k.Name, k.Kind, strings.Join(k.Nodes, " "))
		fmt.Fprintf(&b, "  reads %s\n  writes %s\n", strings.Join(k.Inputs, " "), strings.Join(k.Outputs, " "))
		if k.Alias != "" {
			fmt.Fprintf(&b, "  a view of %s (runtimes skip it)\n", k.Alias)
		}
	}
	for _, buf := range p.Buffers {
		fmt.Fprintf(&b, "buffer %s: %s%s %s, kernels %d..%d", buf.Tensor.Name, buf.Tensor.DType, buf.Tensor.Shape, buf.Role, buf.First, buf.Last)
		if buf.AliasOf != nil {
			fmt.Fprintf(&b, ", the memory of %s", buf.AliasOf.Name)
		}
		b.WriteString("\n")
	}
	for _, k := range p.Kernels {
		b.WriteString("\n")
		b.WriteString(ast.Print(k.Func))
	}
	return b.String()
}

var errNoOutputs = errors.New("fusion: the graph has no outputs")
