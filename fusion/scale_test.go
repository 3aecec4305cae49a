package fusion

import (
	"fmt"
	"strings"
	"testing"
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
		{"chain", chainGraph(chain), 1}, // the elementwise steps inline into one block
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
