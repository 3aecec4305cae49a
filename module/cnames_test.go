package module_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/internal/check"
)

// TestCLibraryReservedNames: a library may not take a name C, its library
// or loom's runtime already uses (its header did not compile, or it did
// not link beside a program: main, free, int64_t); the error names the
// graph and the name.
func TestCLibraryReservedNames(t *testing.T) {
	for _, name := range []string{"main", "free", "int64_t", "memcpy", "sqrtf", "_Bool", "class", "loom_parallel_for", "lg_fail", "pthread_create", "pthread"} {
		_, m := compiled(t, fmt.Sprintf(`{"name": %q, "inputs": [{"name": "X", "dtype": "float32", "shape": [4]}],
  "nodes": [{"op": "exp", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`, strings.ReplaceAll(name, "_", "x")))
		_, err := m.Build(t.TempDir(), name)
		want := fmt.Sprintf("the library's name %q is a name C, its library or loom's runtime already uses", name)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "graph ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Build %s: %v\nwant one line saying %s", name, err, want)
		}
	}
}

// TestCLibraryTensorNamesLikeC: tensors named like C's types, functions
// and keywords, and two that meet once made safe (int64_t and int64_t_),
// give a header that compiles, and a library that links beside a program
// using those names and computes what the interpreter does.
func TestCLibraryTensorNamesLikeC(t *testing.T) {
	needCC(t)
	g, m := compiled(t, `{"name": "cnames", "inputs": [
    {"name": "int64_t", "dtype": "float32", "shape": ["size_t", 3]},
    {"name": "int64_t_", "dtype": "float32", "shape": [3]},
    {"name": "free", "dtype": "float32", "shape": [3]},
    {"name": "_Bool", "dtype": "float32", "shape": [3]}],
  "nodes": [
    {"op": "add", "inputs": ["int64_t", "int64_t_"], "output": "malloc"},
    {"op": "mul", "inputs": ["malloc", "free"], "output": "class"},
    {"op": "sub", "inputs": ["class", "_Bool"], "output": "memcpy"}],
  "outputs": ["memcpy", "class"]}`)
	var cases []cCase
	var wants []map[string]any
	for i, n := range []int64{1, 3} {
		sizes := map[string]int64{"size_t": n}
		ins, raw := inputsAt(t, g, sizes, uint64(i))
		want, err := reference(t, nil, g, sizes, raw)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := m.NewOutputs(ins)
		if err != nil {
			t.Fatal(err)
		}
		cases, wants = append(cases, cCase{ins, outs}), append(wants, want)
	}
	got := buildAndRun(t, m, t.TempDir(), "cnames", cases, false)
	for i, want := range wants {
		for name, w := range want {
			if e := check.MaxRelErr(got[i][name], w); e > 1e-5 {
				t.Errorf("case %d: output %s differs from the interpreter's by %g", i, name, e)
			}
		}
	}
}
