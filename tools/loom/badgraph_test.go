package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadGraphsAndNames: the graph and C-name classes of issue 45's bad
// input (its item 7): out-of-range gather indices, constants their type
// cannot hold, names that break a C header, and a long chain of
// reductions that hung loom fuse. Each is one line that names what is
// wrong, in a child process under runLimited's limits.
func TestBadGraphsAndNames(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	gather := func(idx int64) string {
		return file(fmt.Sprintf("gather%d.json", idx), fmt.Sprintf(`{"name": "g", "inputs": [{"name": "E", "dtype": "float32", "shape": [4, 3]}],
  "constants": [{"name": "I", "dtype": "int32", "shape": [2], "data": [1, %d]}],
  "nodes": [{"op": "gather", "inputs": ["E", "I"], "output": "Y"}], "outputs": ["Y"]}`, idx))
	}
	constant := func(dtype, value string) string {
		return file("c_"+dtype+".json", fmt.Sprintf(`{"name": "g", "inputs": [{"name": "X", "dtype": %q, "shape": [2]}],
  "constants": [{"name": "C", "dtype": %q, "shape": [2], "data": [1, %s]}],
  "nodes": [{"op": "add", "inputs": ["X", "C"], "output": "Y"}], "outputs": ["Y"]}`, dtype, dtype, value))
	}
	pad := file("pad.json", `{"name": "g", "inputs": [{"name": "X", "dtype": "int32", "shape": [3]}],
  "nodes": [{"op": "pad", "inputs": ["X"], "output": "P", "attrs": {"pads": [1, 1], "value": 0.5}}], "outputs": ["P"]}`)
	named := func(name string) string {
		return file(name+".json", fmt.Sprintf(`{"name": %q, "inputs": [{"name": "X", "dtype": "float32", "shape": [4]}],
  "nodes": [{"op": "exp", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`, name))
	}
	funcNamed := file("main.loom", "func main(A: float32[4]) {\n  ScheduleBlock(root) {\n  }\n}\n")
	sizeParam := file("sizeparam.loom", "func f[N: int32](N: float32[4]) {\n  ScheduleBlock(root) {\n  }\n}\n")
	out := filepath.Join(dir, "out")

	for _, c := range []struct {
		args []string
		want string
	}{
		// Out-of-range gather indices: fuse's check reported them, the
		// rest built a library returning clamped rows.
		{[]string{"fuse", "-check", "off", gather(100)}, "nodes[0].inputs[1] (Y = gather): index 100 (I.data[1]) is out of range for axis 0 of E, of size 4: want -4 to 3"},
		{[]string{"build", "-graph", gather(-100), "-out", out}, "index -100 (I.data[1]) is out of range for axis 0 of E"},
		{[]string{"bench", "-graph", gather(1 << 30)}, "index 1073741824 (I.data[1]) is out of range"},
		{[]string{"tune", "-graph", gather(100), "-trials", "1"}, "index 100 (I.data[1]) is out of range"},
		// Constants their type cannot hold: they became inf, or 0.
		{[]string{"fuse", constant("float32", "1e300")}, "constants[0].data[1]: constant C: 1e+300 is out of the float32 range"},
		{[]string{"fuse", constant("float16", "1e300")}, "constant C: 1e+300 is out of the float16 range"},
		{[]string{"build", "-graph", constant("bfloat16", "-1e300"), "-out", out}, "constant C: -1e+300 is out of the bfloat16 range"},
		{[]string{"fuse", pad}, "nodes[0].attrs.value (P = pad): 0.5 is not an int32 value"},
		// Names that broke the C header or the link.
		{[]string{"build", "-graph", named("main"), "-out", out}, `graph main: the library's name "main" is a name C, its library or loom's runtime already uses`},
		{[]string{"build", "-graph", named("free"), "-out", out}, `the library's name "free" is a name C`},
		{[]string{"build", "-graph", named("int64_t"), "-out", out}, `the library's name "int64_t" is a name C`},
		{[]string{"build", "-func", funcNamed, "-out", out}, `kernel symbol "main" is a name C`},
		{[]string{"fmt", sizeParam}, "sizeparam.loom:1:18: parameter N has the name of a symbolic size"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			code, stderr := runLimited(t, c.args...)
			checkOneLine(t, code, stderr, c.want)
		})
	}
}

// TestFuseLongReductionChain: loom fuse -check off of a chain of 600
// reductions and the element-wise steps between them (1,200 nodes) hung:
// its time grew as n^2.6. It now ends, with the chain in one kernel.
func TestFuseLongReductionChain(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"name": "rchain", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 8]}], "nodes": [`)
	prev := "X"
	for i := range 600 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"op": "reduce_sum", "inputs": [%q], "output": "R%d", "attrs": {"axes": [1], "keepdims": true}},`, prev, i)
		fmt.Fprintf(&b, `{"op": "sub", "inputs": [%q, "R%d"], "output": "T%d"}`, prev, i, i)
		prev = fmt.Sprintf("T%d", i)
	}
	fmt.Fprintf(&b, `], "outputs": [%q]}`, prev)
	path := filepath.Join(t.TempDir(), "rchain.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runLoom(t, "fuse", "-check", "off", "-size", "S=4", path)
	if code != 0 {
		t.Fatalf("exit %d: %.2000s", code, stderr)
	}
	if !strings.Contains(stdout, "kernel 0 rchain_0 (reduce)") || strings.Contains(stdout, "kernel 1 ") {
		t.Errorf("want the chain in one kernel:\n%.2000s", stdout)
	}
}

// TestBenchGraphGatherInputsInRange: loom bench -graph fills an integer
// input that a gather indexes with indices of the gathered axis (it drew
// 0..3, out of range for an axis of 2, which the compiled gather now
// reports as an error).
func TestBenchGraphGatherInputsInRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "embed.json")
	src := `{"name": "embed", "inputs": [{"name": "E", "dtype": "float32", "shape": [2, 8]}, {"name": "I", "dtype": "int32", "shape": ["T"]}],
  "nodes": [{"op": "gather", "inputs": ["E", "I"], "output": "Y"}], "outputs": ["Y"]}`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runLoom(t, "bench", "-graph", path, "-size", "T=64", "-json")
	if code != 0 || !strings.Contains(stdout, `"kernels"`) {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
