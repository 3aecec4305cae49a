package module_test

import (
	"os"
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// BenchmarkRunMLP calls the smallest shipped graph (mlp at T=1, three
// kernels of a few hundred operations): the time per call is mostly the
// runtime's (shapes, checks, arena, calls), which issue 22 wants under
// 10 µs.
//
//	go test ./module -run '^$' -bench RunMLP
func BenchmarkRunMLP(b *testing.B) {
	data, err := os.ReadFile("../testdata/fusion/mlp.json")
	if err != nil {
		b.Fatal(err)
	}
	g, err := fusion.ParseJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	m, err := module.Compile(g, module.Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	ins, _ := inputsAt(b, g, map[string]int64{"T": 1}, 1)
	outs, err := m.NewOutputs(ins)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := m.Run(ins, outs); err != nil {
			b.Fatal(err)
		}
	}
}
