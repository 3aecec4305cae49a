package module_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/module"
)

// needCC skips a test when there is no C compiler.
func needCC(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"cc", "ar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
}

// runC compiles the C program src against the static library libNAME.a
// of dir, runs it, and returns what it printed.
func runC(t *testing.T, dir, name, src string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "prog.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := exec.Command("cc", "-std=c11", "-I", dir, "prog.c", "-o", "prog", filepath.Join(dir, "lib"+name+".a"), "-lm", "-pthread")
	cc.Dir = dir
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "prog")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return string(out)
}

// cCase is one call a generated C driver makes.
type cCase struct {
	inputs  map[string]module.Tensor
	outputs map[string]module.Tensor // of the right shapes; the driver fills them with NaN
}

// cDriver returns a C program that, for each case i, reads the inputs
// from in<i>.bin (raw, in the module's input order), checks what
// NAME_output_shapes says, runs the graph on 2 threads and writes the
// outputs raw to out<i>.bin.
func cDriver(m *module.Module, name string, cases []cCase) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	// The C library's headers first: the graph's header must survive
	// their macros (NULL, EOF, ...).
	p("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <errno.h>\n#include <assert.h>\n#include \"%s.h\"\n\n", name)
	b.WriteString(`static char *readall(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) { perror(path); exit(2); }
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc(n ? n : 1);
	if (fread(buf, 1, n, f) != (size_t)n) { perror(path); exit(2); }
	fclose(f);
	return buf;
}

static void *copyout(char **at, size_t n) {
	void *p = malloc(n ? n : 1);
	memcpy(p, *at, n);
	*at += n;
	return p;
}

int main(void) {
	loom_status st;
	char path[64];
`)
	ins, outs := m.Inputs(), m.Outputs()
	for i, c := range cases {
		p("\t{ /* case %d */\n\t\tsnprintf(path, sizeof path, \"in%d.bin\");\n\t\tchar *data = readall(path), *at = data;\n", i, i)
		var args, shapeArgs, outShapeArgs []string
		for j, t := range ins {
			x := c.inputs[t.Name]
			p("\t\tstatic const int64_t is%d[] = {%s};\n", j, cList(x.Shape))
			p("\t\tvoid *i%d = copyout(&at, %d);\n", j, dataBytes(x.Data))
			args = append(args, fmt.Sprintf("i%d", j), fmt.Sprintf("is%d", j))
			shapeArgs = append(shapeArgs, fmt.Sprintf("is%d", j))
		}
		for j, t := range outs {
			y := c.outputs[t.Name]
			p("\t\tstatic const int64_t want%d[] = {%s};\n\t\tint64_t os%d[%d];\n", j, cList(y.Shape), j, max(len(y.Shape), 1))
			// Outputs start as NaN (all bits set), so an unwritten element shows.
			p("\t\tvoid *o%d = malloc(%d + 1);\n\t\tmemset(o%d, 0xff, %d + 1);\n", j, dataBytes(y.Data), j, dataBytes(y.Data))
			args = append(args, fmt.Sprintf("o%d", j), fmt.Sprintf("os%d", j))
			outShapeArgs = append(outShapeArgs, fmt.Sprintf("os%d", j))
		}
		p("\t\tif (%s_output_shapes(%s, &st)) { printf(\"case %d: output shapes: %%s\\n\", st.message); return 1; }\n", name, strings.Join(append(shapeArgs, outShapeArgs...), ", "), i)
		for j, t := range outs {
			p("\t\tif (memcmp(os%d, want%d, sizeof want%d)) { printf(\"case %d: output %s: wrong shape\\n\"); return 1; }\n", j, j, j, i, t.Name)
		}
		p("\t\tif (%s(%s, 2, &st)) { printf(\"case %d: %%s\\n\", st.message); return 1; }\n", name, strings.Join(args, ", "), i)
		p("\t\tsnprintf(path, sizeof path, \"out%d.bin\");\n\t\tFILE *f = fopen(path, \"wb\");\n", i)
		for j, t := range outs {
			p("\t\tfwrite(o%d, 1, %d, f); /* %s */\n", j, dataBytes(c.outputs[t.Name].Data), t.Name)
		}
		b.WriteString("\t\tfclose(f);\n\t\tfree(data);\n\t}\n")
	}
	b.WriteString("\tprintf(\"ok\\n\");\n\treturn 0;\n}\n")
	return b.String()
}

// cList prints a shape as a C initializer (a zero for a scalar's).
func cList(shape []int64) string {
	if len(shape) == 0 {
		return "0"
	}
	var s []string
	for _, d := range shape {
		s = append(s, fmt.Sprint(d))
	}
	return strings.Join(s, ", ")
}

func dataBytes(data any) int { return binary.Size(data) }

// buildAndRun builds m as library NAME in dir, compiles the driver of
// cases against its static library (or its shared one), runs it, and
// returns every case's outputs.
func buildAndRun(t *testing.T, m *module.Module, dir, name string, cases []cCase, shared bool) []map[string]any {
	t.Helper()
	lib, err := m.Build(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte(cDriver(m, name, cases)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-O1", "-std=c11", "-I", dir, "main.c", "-o", "prog"}
	if shared {
		args = append(args, "-L"+dir, "-l"+name, "-Wl,-rpath,"+dir)
	} else {
		args = append(args, lib.Static)
	}
	args = append(args, "-lm", "-pthread")
	cc := exec.Command("cc", args...)
	cc.Dir = dir
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for i, c := range cases {
		var in bytes.Buffer
		for _, x := range m.Inputs() {
			if err := binary.Write(&in, binary.NativeEndian, c.inputs[x.Name].Data); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("in%d.bin", i)), in.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prog := exec.Command(filepath.Join(dir, "prog"))
	prog.Dir = dir
	if out, err := prog.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	var results []map[string]any
	for i, c := range cases {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out%d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		r := bytes.NewReader(data)
		res := map[string]any{}
		for _, y := range m.Outputs() {
			d := c.outputs[y.Name].Data
			if err := binary.Read(r, binary.NativeEndian, d); err != nil {
				t.Fatalf("output %s: %v", y.Name, err)
			}
			res[y.Name] = d
		}
		results = append(results, res)
	}
	return results
}

// TestCLibraryMatchesInterpreter: the shipped graphs (testdata/graphs)
// and a few goldens of testdata/fusion (every one with -long), built as
// a C library, called from a C program linked against nothing else,
// compute what the interpreter computes at each of their sizes. The
// library's driver and descriptors are the same for every graph, whose
// kernels TestGoldensMatchInterpreter runs natively from Go.
func TestCLibraryMatchesInterpreter(t *testing.T) {
	needCC(t)
	cache := goldenCache(t)
	gs := goldens(t)
	if !*long {
		gs = slices.DeleteFunc(gs, func(gg goldenGraph) bool {
			return filepath.Ext(gg.name) == ".txtar" && !strings.Contains(gg.name, "attention") && !strings.Contains(gg.name, "bert") &&
				!strings.Contains(gg.name, "resnet") && !strings.Contains(gg.name, "layernorm") && !strings.Contains(gg.name, "softmax")
		})
	}
	if !*long {
		// A third of the package's time, for a library whose kernels,
		// driver and descriptors the other graphs cover (attention,
		// layernorm and softmax among them); the same layer runs natively
		// from Go in TestGoldensMatchInterpreter and, imported from ONNX,
		// in package onnx's TestCompiledMatchesOnnxRuntime.
		gs = slices.DeleteFunc(gs, func(gg goldenGraph) bool { return gg.name == "bert_layer.txtar" })
	}
	runs := 0
	defer func() { t.Logf("%d runs compared", runs) }()
	for gi, gg := range gs {
		t.Run(gg.name, func(t *testing.T) {
			m, err := module.Compile(gg.g, module.Options{Cache: cache, Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			var cases []cCase
			var wants []map[string]any
			for i, sizes := range gg.sizes {
				ins, raw := inputsAt(t, gg.g, sizes, uint64(100+i))
				want, err := reference(t, cache, gg.g, sizes, raw)
				if err != nil {
					t.Fatalf("at %v: %v", sizes, err)
				}
				outs, err := poisonedOutputs(m, ins)
				if err != nil {
					t.Fatal(err)
				}
				cases = append(cases, cCase{ins, outs})
				wants = append(wants, want)
			}
			got := buildAndRun(t, m, t.TempDir(), "graph", cases, gi%4 == 0)
			for i, want := range wants {
				runs++
				for name, w := range want {
					if e := check.MaxRelErr(got[i][name], w); e > 1e-4 {
						t.Errorf("at %v: output %s differs from the interpreter's by %g", gg.sizes[i], name, e)
					}
				}
			}
		})
	}
}

// TestCLibraryBadInputs: through the C entry point, wrong shapes, NULL
// data and NULL shapes are LOOM_BAD_ARGUMENT with the message the Go API
// gives for the same call (where Go can express it); nothing runs.
func TestCLibraryBadInputs(t *testing.T) {
	needCC(t)
	_, m := compiled(t, `{"name": "addrow", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 4]}, {"name": "B", "dtype": "float32", "shape": [4]}],
  "nodes": [{"op": "add", "inputs": ["X", "B"], "output": "T"}, {"op": "exp", "inputs": ["T"], "output": "Y"}, {"op": "reduce_sum", "inputs": ["Y"], "output": "S", "attrs": {"axes": [1]}}], "outputs": ["Y", "S"]}`)
	dir := t.TempDir()
	if _, err := m.Build(dir, "addrow"); err != nil {
		t.Fatal(err)
	}
	goErr := func(ins map[string]module.Tensor, outs map[string]module.Tensor) string {
		err := m.Run(ins, outs)
		if err == nil {
			t.Fatal("Go accepted a bad call")
		}
		return err.Error()
	}
	x := module.Tensor{Shape: []int64{3, 4}, Data: make([]float32, 12)}
	b := module.Tensor{Shape: []int64{4}, Data: make([]float32, 4)}
	y := module.Tensor{Shape: []int64{3, 4}, Data: make([]float32, 12)}
	s := module.Tensor{Shape: []int64{3}, Data: make([]float32, 3)}
	cases := []struct {
		name string
		call string // the C call; X, B, Y, S are good buffers, xs, bs, ys, ss good shapes
		want string
	}{
		{"good", "addrow(X, xs, B, bs, Y, ys, S, ss, 1, &st)", ""},
		{"wrong dimension", "addrow(X, xs, B, (int64_t[]){5}, Y, ys, S, ss, 1, &st)",
			goErr(map[string]module.Tensor{"X": x, "B": {Shape: []int64{5}, Data: make([]float32, 5)}}, nil)},
		{"negative size", "addrow(X, (int64_t[]){-3, 4}, B, bs, Y, ys, S, ss, 1, &st)", "module: input X: dimension 0 is -3"},
		{"wrong output shape", "addrow(X, xs, B, bs, Y, (int64_t[]){4, 4}, S, ss, 1, &st)",
			goErr(map[string]module.Tensor{"X": x, "B": b}, map[string]module.Tensor{"Y": {Shape: []int64{4, 4}, Data: make([]float32, 16)}, "S": s})},
		{"wrong second output shape", "addrow(X, xs, B, bs, Y, ys, S, (int64_t[]){2}, 1, &st)",
			goErr(map[string]module.Tensor{"X": x, "B": b}, map[string]module.Tensor{"Y": y, "S": {Shape: []int64{2}, Data: make([]float32, 2)}})},
		{"null data", "addrow(NULL, xs, B, bs, Y, ys, S, ss, 1, &st)", "module: input X has no data (NULL)"},
		{"null output", "addrow(X, xs, B, bs, NULL, ys, S, ss, 1, &st)", "module: output Y has no data (NULL)"},
		{"null shape", "addrow(X, xs, B, NULL, Y, ys, S, ss, 1, &st)", "module: input B has no shape (NULL)"},
		{"null data, no elements", "addrow(NULL, (int64_t[]){0, 4}, B, bs, NULL, (int64_t[]){0, 4}, NULL, (int64_t[]){0}, 1, &st)", ""},
		{"huge", "addrow(X, (int64_t[]){(int64_t)1 << 62, 4}, B, bs, Y, ys, S, ss, 1, &st)", "module: input X: its size overflows int64 or is negative at these inputs"},
	}
	var src strings.Builder
	src.WriteString("#include \"addrow.h\"\n#include <stdio.h>\n\nint main(void) {\n\tloom_status st;\n\tfloat X[12] = {0}, B[4] = {0}, Y[12], S[3];\n\tint64_t xs[] = {3, 4}, bs[] = {4}, ys[] = {3, 4}, ss[] = {3};\n\tint32_t rc;\n")
	for _, c := range cases {
		fmt.Fprintf(&src, "\trc = %s;\n\tprintf(\"%%d|%%s\\n\", rc, st.message);\n", c.call)
	}
	src.WriteString("\treturn 0;\n}\n")
	out := runC(t, dir, "addrow", src.String())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("%d lines for %d calls:\n%s", len(lines), len(cases), out)
	}
	for i, c := range cases {
		code, msg, _ := strings.Cut(lines[i], "|")
		switch {
		case c.want == "" && (code != "0" || msg != ""):
			t.Errorf("%s: got %s %q, want success", c.name, code, msg)
		case c.want != "" && (code != "8" || msg != c.want):
			t.Errorf("%s:\n got %s %q\nwant 8 (LOOM_BAD_ARGUMENT) %q", c.name, code, msg, c.want)
		}
	}
}

// TestCLibraryMemory: NAME_memory reports the peak and naive bytes the Go
// API plans, at several sizes (both run package memplan's algorithm).
func TestCLibraryMemory(t *testing.T) {
	needCC(t)
	g, m := compiled(t, "fusion/mlp.json")
	dir := t.TempDir()
	if _, err := m.Build(dir, "mlp"); err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	src.WriteString("#include \"mlp.h\"\n#include <stdio.h>\n\nint main(void) {\n\tloom_status st;\n\tint64_t peak, naive;\n")
	var want []string
	for _, v := range []int64{1, 7, 64, 1000} {
		sizes := map[string]int64{}
		for _, s := range g.Symbols() {
			sizes[s] = v
		}
		ins := map[string]module.Tensor{}
		var shapes []string
		for _, x := range m.Inputs() {
			var shape []int64
			for _, d := range x.Shape {
				n, err := d.Eval(sizes)
				if err != nil {
					t.Fatal(err)
				}
				shape = append(shape, n)
			}
			n := int64(1)
			for _, d := range shape {
				n *= d
			}
			buf := ast.NewBuffer(x.Name, x.DType, ast.I64(n))
			d, err := ast.NewData(buf, nil)
			if err != nil {
				t.Fatal(err)
			}
			ins[x.Name] = module.Tensor{Shape: shape, Data: d}
			shapes = append(shapes, "(int64_t[]){"+cList(shape)+"}")
		}
		peak, naive, err := m.Memory(ins)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%d %d", peak, naive))
		fmt.Fprintf(&src, "\tif (mlp_memory(%s, &peak, &naive, &st)) { printf(\"%%s\\n\", st.message); return 1; }\n\tprintf(\"%%lld %%lld\\n\", (long long)peak, (long long)naive);\n", strings.Join(shapes, ", "))
	}
	src.WriteString("\treturn 0;\n}\n")
	out := runC(t, dir, "mlp", src.String())
	if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, want) {
		t.Errorf("C peak and naive bytes %q, Go's %q", got, want)
	}
}

// TestCLibraryHostileNames: tensors named like C keywords and macros, the
// library's own symbols or each other's shape parameters still give a
// header and a library that compile, and the right results.
func TestCLibraryHostileNames(t *testing.T) {
	needCC(t)
	g, m := compiled(t, `{"name": "odd", "inputs": [
    {"name": "int", "dtype": "float32", "shape": ["N", 3]},
    {"name": "int_shape", "dtype": "float32", "shape": [3]},
    {"name": "odd_k0", "dtype": "float32", "shape": [3]},
    {"name": "double", "dtype": "float32", "shape": [3]},
    {"name": "NULL", "dtype": "float32", "shape": [3]},
    {"name": "threads", "dtype": "float32", "shape": [3]},
    {"name": "lg_in0", "dtype": "float32", "shape": [3]}],
  "nodes": [
    {"op": "add", "inputs": ["int", "int_shape"], "output": "status"},
    {"op": "mul", "inputs": ["status", "odd_k0"], "output": "main"},
    {"op": "add", "inputs": ["main", "double"], "output": "while"},
    {"op": "sub", "inputs": ["while", "NULL"], "output": "sz"},
    {"op": "reduce_sum", "inputs": ["sz"], "output": "odd_memory", "attrs": {"axes": [0]}},
    {"op": "mul", "inputs": ["odd_memory", "threads"], "output": "st"},
    {"op": "add", "inputs": ["st", "lg_in0"], "output": "lg_out0"}],
  "outputs": ["lg_out0", "sz"]}`)
	var cases []cCase
	var wants []map[string]any
	for i, n := range []int64{1, 4} {
		sizes := map[string]int64{"N": n}
		ins, raw := inputsAt(t, g, sizes, uint64(i))
		want, err := reference(t, nil, g, sizes, raw)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := poisonedOutputs(m, ins)
		if err != nil {
			t.Fatal(err)
		}
		cases, wants = append(cases, cCase{ins, outs}), append(wants, want)
	}
	got := buildAndRun(t, m, t.TempDir(), "odd", cases, false)
	for i, want := range wants {
		for name, w := range want {
			if e := check.MaxRelErr(got[i][name], w); e > 1e-5 {
				t.Errorf("case %d: output %s differs from the interpreter's by %g", i, name, e)
			}
		}
	}
}

// TestCLibraryConcurrentCalls: four threads call the library's entry
// point at once, each on its own data and size, many times; every call
// gives what the same call gives alone.
func TestCLibraryConcurrentCalls(t *testing.T) {
	needCC(t)
	_, m := compiled(t, "fusion/mlp.json")
	dir := t.TempDir()
	if _, err := m.Build(dir, "mlp"); err != nil {
		t.Fatal(err)
	}
	prog := `#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mlp.h"

static float w1[64 * 256], b1[256], w2[256 * 64], b2[64], g[64], beta[64];
static const int64_t w1s[] = {64, 256}, b1s[] = {256}, w2s[] = {256, 64}, vs[] = {64};

static int run(int64_t T, float *x, float *y, int threads) {
	int64_t xs[] = {T, 64};
	loom_status st;
	if (mlp(x, xs, w1, w1s, b1, b1s, w2, w2s, b2, vs, g, vs, beta, vs, y, xs, threads, &st)) {
		printf("%s\n", st.message);
		return 1;
	}
	return 0;
}

static void *worker(void *arg) {
	int id = (int)(intptr_t)arg;
	int64_t T = 3 + 5 * id;
	float *x = malloc(T * 64 * sizeof(float)), *want = malloc(T * 64 * sizeof(float)), *y = malloc(T * 64 * sizeof(float));
	for (int i = 0; i < T * 64; i++) x[i] = (float)((i * 7 + id) % 13) / 13.0f - 0.5f;
	if (run(T, x, want, 0)) return (void *)1;
	for (int rep = 0; rep < 200; rep++) {
		memset(y, 0, T * 64 * sizeof(float));
		if (run(T, x, y, 0) || memcmp(y, want, T * 64 * sizeof(float))) {
			printf("thread %d, call %d: a different result\n", id, rep);
			return (void *)1;
		}
	}
	free(x), free(want), free(y);
	return NULL;
}

int main(void) {
	for (int i = 0; i < 64 * 256; i++) w1[i] = w2[i] = (float)(i % 17) / 17.0f - 0.5f;
	for (int i = 0; i < 64; i++) g[i] = 1, beta[i] = 0.1f * (i % 3);
	pthread_t th[4];
	for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	int bad = 0;
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(th[i], &r);
		bad |= r != NULL;
	}
	printf(bad ? "failed\n" : "ok\n");
	return 0;
}
`
	if out := strings.TrimSpace(runC(t, dir, "mlp", prog)); out != "ok" {
		t.Errorf("%s", out)
	}
}

// TestCLibraryNoInputs: a graph of constants alone (no input, no symbol)
// gives a library whose functions take the outputs alone.
func TestCLibraryNoInputs(t *testing.T) {
	needCC(t)
	_, m := compiled(t, `{"name": "noin", "inputs": [], "constants": [{"name": "C", "dtype": "float32", "shape": [4], "data": [1, 2, 3, 4]}],
  "nodes": [{"op": "mul", "inputs": ["C", "C"], "output": "Y"}], "outputs": ["Y"]}`)
	dir := t.TempDir()
	if _, err := m.Build(dir, "noin"); err != nil {
		t.Fatal(err)
	}
	out := runC(t, dir, "noin", `#include <stdio.h>
#include "noin.h"
int main(void) {
	float y[4];
	int64_t ys[1], peak, naive;
	loom_status st;
	if (noin_output_shapes(ys, &st) || noin_memory(&peak, &naive, &st)) { printf("%s\n", st.message); return 0; }
	int rc = noin(y, ys, 0, &st);
	printf("%d %lld %g %g %g %g\n", rc, (long long)ys[0], y[0], y[1], y[2], y[3]);
	return 0;
}
`)
	if got := strings.TrimSpace(out); got != "0 4 1 4 9 16" {
		t.Errorf("the program printed %q, want \"0 4 1 4 9 16\"", got)
	}
}

// TestCLibraryTwoInOneProgram: two graphs' libraries, built into
// directories named relative to the working directory, link into one C
// program, statically and as shared libraries, and each computes its own
// graph there (they share loom's runtime: one thread pool a process).
func TestCLibraryTwoInOneProgram(t *testing.T) {
	needCC(t)
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct{ name, op string }{{"ga", "exp"}, {"gb", "neg"}} {
		_, m := compiled(t, fmt.Sprintf(`{"name": %q, "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 4]}],
  "nodes": [{"op": %q, "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`, c.name, c.op))
		if _, err := m.Build(c.name, c.name); err != nil { // a relative directory
			t.Fatal(err)
		}
	}
	prog := `#include <stdio.h>
#include "ga.h"
#include "gb.h"
int main(void) {
	float x[8] = {0, 1, 2, 3, -1, 0, 0, 1}, y[8], z[8];
	int64_t s[2] = {2, 4};
	loom_status st;
	if (ga(x, s, y, s, 2, &st) || gb(y, s, z, s, 2, &st)) {
		printf("failed: %s\n", st.message);
		return 1;
	}
	for (int i = 0; i < 8; i++) printf("%.4f ", z[i]);
	printf("\n");
	return 0;
}
`
	if err := os.WriteFile("prog.c", []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "-1.0000 -2.7183 -7.3891 -20.0855 -0.3679 -1.0000 -1.0000 -2.7183 \n"
	for _, link := range [][]string{
		{"ga/libga.a", "gb/libgb.a"},
		{"-Lga", "-Lgb", "-lga", "-lgb", "-Wl,-rpath," + filepath.Join(dir, "ga") + ":" + filepath.Join(dir, "gb")},
	} {
		args := append([]string{"-std=c11", "-Iga", "-Igb", "prog.c", "-o", "prog"}, link...)
		if out, err := exec.Command("cc", append(args, "-lm", "-pthread")...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v: %v\n%s", link, err, out)
		}
		out, err := exec.Command("./prog").CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("linked with %v: %v\n%s\nwant %s", link, err, out, want)
		}
	}
}
