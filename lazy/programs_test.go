package lazy

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// step is one operation of a random program: an operator, its attributes
// and its operands (indexes into the program's values).
type step struct {
	op       string
	attrs    fusion.Attrs
	operands []int
}

// program is a random straight-line program over [R, C] matrices, with
// barriers between its steps.
type program struct {
	rows, cols int
	inputs     [][]float32 // [R, C] each
	row        []float32   // an input of shape [1, C]
	weight     []float32   // a Weight of shape [C, C]
	steps      []step
	syncs      map[int][]int // after step i, Sync these values
}

// The values of a program: 0..len(inputs)-1 the inputs, then the row, the
// weight, then one per step.
func (p *program) rowValue() int    { return len(p.inputs) }
func (p *program) weightValue() int { return len(p.inputs) + 1 }
func (p *program) stepValue(i int) int {
	return len(p.inputs) + 2 + i
}

func randomProgram(r *rand.Rand) *program {
	sizes := []int{1, 2, 3, 5, 8, 17}
	p := &program{rows: sizes[r.IntN(len(sizes))], cols: sizes[r.IntN(len(sizes))], syncs: map[int][]int{}}
	for range 1 + r.IntN(2) {
		p.inputs = append(p.inputs, randomFloats(r, p.rows*p.cols))
	}
	p.row, p.weight = randomFloats(r, p.cols), randomFloats(r, p.cols*p.cols)
	// matrices: the values of shape [R, C] so far
	matrices := []int{}
	for i := range p.inputs {
		matrices = append(matrices, i)
	}
	pick := func() int { return matrices[r.IntN(len(matrices))] }
	n := 4 + r.IntN(6)
	for i := range n {
		var s step
		switch r.IntN(7) {
		case 0, 1:
			s = step{op: []string{"tanh", "sigmoid", "neg", "abs", "relu", "sin"}[r.IntN(6)], operands: []int{pick()}}
		case 2:
			s = step{op: []string{"add", "mul", "sub", "max"}[r.IntN(4)], operands: []int{pick(), pick()}}
		case 3:
			s = step{op: "add", operands: []int{pick(), p.rowValue()}}
		case 4:
			s = step{op: "matmul", operands: []int{pick(), p.weightValue()}}
		case 5:
			s = step{op: "softmax", attrs: fusion.Attrs{Axis: intPtr(-1)}, operands: []int{pick()}}
		case 6:
			// a [R, 1] sum, added back: two steps
			p.steps = append(p.steps, step{op: "reduce_sum", attrs: fusion.Attrs{Axes: []int{1}, KeepDims: true}, operands: []int{pick()}})
			s = step{op: "add", operands: []int{pick(), p.stepValue(len(p.steps) - 1)}}
		}
		p.steps = append(p.steps, s)
		matrices = append(matrices, p.stepValue(len(p.steps)-1))
		if r.IntN(4) == 0 && i < n-1 {
			p.syncs[len(p.steps)-1] = []int{pick(), pick()}
		}
	}
	return p
}

// runLazily runs the program on a device, with its barriers, and returns
// the values of every step.
func (p *program) runLazily(d *Device) ([]*Tensor, error) {
	var vals []*Tensor
	for _, in := range p.inputs {
		vals = append(vals, d.FromFloat32s(in, p.rows, p.cols))
	}
	vals = append(vals, d.FromFloat32s(p.row, 1, p.cols), d.Weight(p.weight, p.cols, p.cols))
	for i, s := range p.steps {
		ops := make([]*Tensor, len(s.operands))
		for j, o := range s.operands {
			ops[j] = vals[o]
		}
		vals = append(vals, Op(s.op, s.attrs, ops...))
		if sync, ok := p.syncs[i]; ok {
			var ts []*Tensor
			for _, v := range sync {
				ts = append(ts, vals[v])
			}
			if err := d.Sync(ts...); err != nil {
				return nil, err
			}
		}
	}
	return vals[p.stepValue(0):], nil
}

// viaModule computes every step's value as one graph through package
// module.
func (p *program) viaModule(t *testing.T) []any {
	t.Helper()
	b := fusion.NewBuilder("program")
	var vals []*fusion.Tensor
	feed := map[string]module.Tensor{}
	for i, in := range p.inputs {
		name := "x" + strconv.Itoa(i)
		x, err := b.Input(name, ast.Float32, fusion.Const(int64(p.rows)), fusion.Const(int64(p.cols)))
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, x)
		feed[name] = module.Tensor{Shape: []int64{int64(p.rows), int64(p.cols)}, Data: in}
	}
	row, err := b.Input("row", ast.Float32, fusion.Const(1), fusion.Const(int64(p.cols)))
	if err != nil {
		t.Fatal(err)
	}
	feed["row"] = module.Tensor{Shape: []int64{1, int64(p.cols)}, Data: p.row}
	w := make([]float64, len(p.weight))
	for i, v := range p.weight {
		w[i] = float64(v)
	}
	weight, err := b.Constant("w", ast.Float32, []int64{int64(p.cols), int64(p.cols)}, w)
	if err != nil {
		t.Fatal(err)
	}
	vals = append(vals, row, weight)
	var outs []*fusion.Tensor
	for i, s := range p.steps {
		ins := make([]*fusion.Tensor, len(s.operands))
		for j, o := range s.operands {
			ins[j] = vals[o]
		}
		y, err := b.Node("s"+strconv.Itoa(i), s.op, s.attrs, ins...)
		if err != nil {
			t.Fatal(err)
		}
		vals, outs = append(vals, y), append(outs, y)
	}
	g, err := b.Graph(outs...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.Compile(g, module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	used := map[string]module.Tensor{} // a module takes only the inputs it reads
	for _, in := range m.Inputs() {
		used[in.Name] = feed[in.Name]
	}
	feed = used
	res, err := m.NewOutputs(feed)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res {
		ast.Poison(ast.Float32, o.Data)
	}
	if err := m.Run(feed, res); err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(outs))
	for i, o := range outs {
		out[i] = res[o.Name].Data
	}
	return out
}

// TestRandomPrograms runs random programs with barriers between their
// steps (so that computed results feed later traces, and intermediates
// are read after the results they fed) and compares every step's value
// with the whole program compiled as one graph.
func TestRandomPrograms(t *testing.T) {
	n := 4
	if *long {
		n = 40
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 51))
		p := randomProgram(r)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			d := newDevice(t)
			got, err := p.runLazily(d)
			if err != nil {
				t.Fatal(err)
			}
			want := p.viaModule(t)
			// read in reverse: later values first, then what fed them
			for i := len(got) - 1; i >= 0; i-- {
				v, err := got[i].Data()
				if err != nil {
					t.Fatal(err)
				}
				if j, ok := sameData(v, want[i]); !ok {
					t.Fatalf("step %d (%s): element %d is %v, the module's %v", i, p.steps[i].op, j, formatElement(v, j), formatElement(want[i], j))
				}
			}
		})
	}
}
