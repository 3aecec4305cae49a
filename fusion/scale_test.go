package fusion

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
)

// chainGraph is a chain of n unary operators over X[S, 64].
func chainGraph(n int) string {
	var b strings.Builder
	b.WriteString(`{"name": "chain", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 64]}], "nodes": [`)
	prev := "X"
	ops := []string{"exp", "neg", "abs", "relu"}
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"op": %q, "inputs": [%q], "output": "T%d"}`, ops[i%len(ops)], prev, i)
		prev = fmt.Sprintf("T%d", i)
	}
	fmt.Fprintf(&b, `], "outputs": [%q]}`, prev)
	return b.String()
}

// fanGraph is n independent exp outputs of one input X[S, 64].
func fanGraph(n int) string {
	var b strings.Builder
	b.WriteString(`{"name": "fan", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 64]}], "nodes": [`)
	var outs []string
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"op": "exp", "inputs": ["X"], "output": "E%d"}`, i)
		outs = append(outs, fmt.Sprintf("%q", fmt.Sprintf("E%d", i)))
	}
	fmt.Fprintf(&b, `], "outputs": [%s]}`, strings.Join(outs, ","))
	return b.String()
}

func compileText(tb testing.TB, src string) *Plan {
	tb.Helper()
	g, err := ParseJSON([]byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	p, err := Compile(g, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func BenchmarkCompileChain(b *testing.B) { benchCompile(b, chainGraph, 1000, 10000) }

func BenchmarkCompileFan(b *testing.B) { benchCompile(b, fanGraph, 100, 1000) }

// benchCompile times compiling the graphs graph makes at each size.
func benchCompile(b *testing.B, graph func(n int) string, sizes ...int) {
	for _, n := range sizes {
		src := graph(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				compileText(b, src)
			}
		})
	}
}

// TestCompileLargeGraphs compiles a long chain of operators and a wide
// fan of outputs: each fuses into one kernel (the benchmarks time the
// large sizes: 10,000-node chains and 1,000-output fans compile in
// seconds, near-linearly).
func TestCompileLargeGraphs(t *testing.T) {
	chain, fan := 2000, 200
	if testing.Short() {
		chain, fan = 300, 40
	}
	for _, c := range []struct {
		name   string
		src    string
		blocks int
	}{
		{"chain", chainGraph(chain), chain / (maxInline + 1)}, // the steps inline, maxInline to a block
		{"fan", fanGraph(fan), fan},
	} {
		p := compileText(t, c.src)
		if len(p.Kernels) != 1 {
			t.Errorf("%s: %d kernels, want the whole graph fused into one", c.name, len(p.Kernels))
			continue
		}
		if n := len(p.Kernels[0].Func.Blocks()); n < c.blocks {
			t.Errorf("%s: the kernel has %d blocks, want at least %d", c.name, n, c.blocks)
		}
	}
}

// reductionChainGraph is n steps of T = T - reduce_max(T, axis 1) from
// X[S, 8]: 2n nodes that fuse into one kernel of 2n loop nests.
func reductionChainGraph(n int) string {
	var b strings.Builder
	b.WriteString(`{"name": "rchain", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 8]}], "nodes": [`)
	prev := "X"
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"op": "reduce_max", "inputs": [%q], "output": "M%d", "attrs": {"axes": [1], "keepdims": true}},`, prev, i)
		fmt.Fprintf(&b, `{"op": "sub", "inputs": [%q, "M%d"], "output": "T%d"}`, prev, i, i)
		prev = fmt.Sprintf("T%d", i)
	}
	fmt.Fprintf(&b, `], "outputs": [%q]}`, prev)
	return b.String()
}

// addChainGraph is n steps of T = T + X over X[S, 8].
func addChainGraph(n int) string {
	var b strings.Builder
	b.WriteString(`{"name": "achain", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 8]}], "nodes": [`)
	prev := "X"
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"op": "add", "inputs": [%q, "X"], "output": "T%d"}`, prev, i)
		prev = fmt.Sprintf("T%d", i)
	}
	fmt.Fprintf(&b, `], "outputs": [%q]}`, prev)
	return b.String()
}

// TestReductionChainAligns: a chain of 1,000 reductions, each followed by
// the element-wise step that reads it (2,000 nodes, one kernel), took
// minutes to compile (loom fuse of 600 nodes: about n^2.6), because
// aligning its nests checked every merge on the whole kernel. Now each
// merge is decided by the blocks it reorders: none needs
// schedule.Align's check, the rows still share one loop, and the fused
// plan computes what one kernel per operator does.
func TestReductionChainAligns(t *testing.T) {
	steps := 1000
	if testing.Short() {
		steps = 200
	}
	g, err := ParseJSON([]byte(reductionChainGraph(steps)))
	if err != nil {
		t.Fatal(err)
	}
	groups := fuse(g)
	if len(groups) != 1 {
		t.Fatalf("%d groups, want the chain fused into one", len(groups))
	}
	f, _, _, err := lowerGroup(g, groups[0], "rchain_0", g.Consumers(), namesOf(g))
	if err != nil {
		t.Fatal(err)
	}
	aligned, checks := align(f)
	if checks != 0 {
		t.Errorf("aligning made %d schedule.Align checks, want none (each merge decided by its blocks)", checks)
	}
	top := stmtsOf(aligned.Body.(*ast.ScheduleBlock).Body)
	loops := slices.DeleteFunc(slices.Clone(top), func(s ast.Stmt) bool { _, ok := s.(*ast.For); return !ok })
	if len(loops) != 1 || len(aligned.Blocks()) != len(f.Blocks()) {
		t.Errorf("%d top-level loops over %d blocks, want the rows of all %d blocks under one loop", len(loops), len(aligned.Blocks()), len(f.Blocks()))
	}

	p := compileText(t, reductionChainGraph(steps))
	apart, err := Compile(g, Options{NoFuse: true})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{"S": 3}
	x, _ := NewData(g.Inputs[0], sizes)
	check.FillRandom(x, rand.New(rand.NewPCG(1, 2)))
	in := map[string]any{"X": x}
	got, err := p.Interpret(sizes, in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := apart.Interpret(sizes, in)
	if err != nil {
		t.Fatal(err)
	}
	out := g.Outputs[0].Name
	if e := check.MaxRelErr(got[out], want[out]); e != 0 {
		t.Errorf("the fused chain differs from one kernel per operator by %g", e)
	}
}

// TestLongElementwiseChain: a chain of 40,000 element-wise nodes took
// 104 s in loom fuse: inlined into one expression 40,000 levels deep,
// every pass over it recursed that deep, some doing work at each level
// that grows with the depth. Now no inlined expression chains more than
// maxInline nodes: the chain is blocks of at most that many steps, all
// under one loop nest. By default a chain of 5,000 nodes (blocks enough
// to show the limit), with -long the 40,000 of the report.
func TestLongElementwiseChain(t *testing.T) {
	n := 5000
	// -long is package fusion_test's flag (ops_test.go), of this binary
	if f := flag.Lookup("long"); f != nil && f.Value.String() == "true" && !testing.Short() {
		n = 40000
	}
	p := compileText(t, addChainGraph(n))
	if len(p.Kernels) != 1 {
		t.Fatalf("%d kernels, want one", len(p.Kernels))
	}
	f := p.Kernels[0].Func
	if blocks := len(f.Blocks()); blocks < n/(maxInline+1) {
		t.Errorf("%d blocks, want at least %d (a buffer after every %d inlined nodes)", blocks, n/(maxInline+1), maxInline)
	}
	deepest := 0
	ast.Inspect(f.Body, func(x ast.Node) bool {
		if e, ok := x.(ast.Expr); ok {
			deepest = max(deepest, exprDepth(e))
			return false
		}
		return true
	})
	if deepest > 2*maxInline {
		t.Errorf("an expression %d levels deep, want at most %d", deepest, 2*maxInline)
	}
}

// exprDepth returns the depth of the expression tree e.
func exprDepth(e ast.Expr) int {
	d := 0
	ast.Inspect(e, func(x ast.Node) bool {
		if c, ok := x.(ast.Expr); ok && c != e {
			d = max(d, exprDepth(c))
			return false
		}
		return true
	})
	return d + 1
}

// TestNodeLimit: a graph of more than MaxNodes nodes is refused before
// any work, with an error that says so.
func TestNodeLimit(t *testing.T) {
	x := &Tensor{Name: "X", DType: ast.Float32, Shape: Shape{Const(4)}}
	g := &Graph{Name: "huge", Inputs: []*Tensor{x}}
	prev := x
	for i := 0; i <= MaxNodes; i++ {
		n := &Node{Op: "relu", Inputs: []*Tensor{prev}}
		n.Output = &Tensor{Name: fmt.Sprintf("T%d", i), Producer: n}
		g.Nodes = append(g.Nodes, n)
		prev = n.Output
	}
	g.Outputs = []*Tensor{prev}
	err := Infer(g)
	want := fmt.Sprintf("fusion: nodes: the graph has %d nodes, more than the %d loom compiles", MaxNodes+1, MaxNodes)
	if err == nil || err.Error() != want {
		t.Errorf("Infer: %v\nwant %s", err, want)
	}
	if _, err := Compile(g, Options{}); err == nil || err.Error() != want {
		t.Errorf("Compile: %v\nwant %s", err, want)
	}
}
