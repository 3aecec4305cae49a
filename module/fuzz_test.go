package module_test

import (
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/golden"
	"github.com/loom-go/loom/module"
)

// FuzzCompile: any graph JSON either fails to parse or compile with an
// error, or compiles into a module that runs at every symbol 2 (or says
// why not): never a panic. The seeds are small graphs of testdata/fusion;
// `go test ./module -fuzz FuzzCompile` explores (opt-in, on a quiet
// machine: each new graph is a native build of seconds, and an input
// slower than the fuzzer's patience is reported as a hang).
func FuzzCompile(f *testing.F) {
	for _, name := range []string{"softmax", "chain", "embedding_mask"} {
		ar, err := txtar.ParseFile("../testdata/fusion/" + name + ".txtar")
		if err != nil {
			f.Fatal(err)
		}
		src, _ := golden.Section(ar, "graph.json")
		f.Add(src)
	}
	f.Add(`{"name": "x", "inputs": [{"name": "A", "dtype": "float32", "shape": ["N"]}], "nodes": [{"op": "exp", "inputs": ["A"], "output": "B"}], "outputs": ["B"]}`)
	f.Add(`{"name": "x", "inputs": [], "nodes": [], "outputs": []}`)
	cache, err := native.NewCache(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := fusion.ParseJSON([]byte(src))
		if err != nil {
			return
		}
		m, err := module.Compile(g, module.Options{Cache: cache})
		if err != nil {
			return
		}
		sizes := map[string]int64{}
		for _, s := range g.Symbols() {
			sizes[s] = 2
		}
		ins := map[string]module.Tensor{}
		for _, x := range g.Inputs {
			d, err := fusion.NewData(x, sizes)
			if err != nil {
				return
			}
			shape := make([]int64, len(x.Shape))
			for k, dim := range x.Shape {
				if shape[k], err = dim.Eval(sizes); err != nil {
					return
				}
			}
			ins[x.Name] = module.Tensor{Shape: shape, Data: d}
		}
		outs, err := m.NewOutputs(ins)
		if err != nil {
			return
		}
		_ = m.Run(ins, outs)
	})
}
