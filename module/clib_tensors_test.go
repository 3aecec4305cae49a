package module_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/module"
	"github.com/loom-go/loom/onnx"
)

// TestCLibraryDescriptors builds the library of an imported ONNX network
// (weights embedded as bytes) and calls it from C through its descriptor
// interface: it describes its inputs and outputs, computes the output
// shapes, runs on DLTensor-style descriptors and matches ONNX Runtime's
// outputs; bad descriptors are refused with a status naming the tensor.
func TestCLibraryDescriptors(t *testing.T) {
	needCC(t)
	caseDir := filepath.Join("..", "testdata", "onnx", "net_dense")
	m, err := onnx.ImportFile(filepath.Join(caseDir, "model.onnx"), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mod, err := module.Compile(m.Graph, module.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := mod.Build(dir, "dense"); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "dense_graph.c"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "lg_weights = dense_weights;") || !strings.Contains(string(src), "(lg_weights + 0))") {
		t.Errorf("the graph's weights should be bytes in the library (dense_weights), not C text:\n%s", src)
	}
	in, err := onnx.ReadTensorFile(filepath.Join(caseDir, "test_data_set_0", "input_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := onnx.ReadTensorFile(filepath.Join(caseDir, "test_data_set_0", "output_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 0, 4*len(in.Data))
	for _, v := range in.Data {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(v)))
	}
	if err := os.WriteFile(filepath.Join(dir, "in.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	prog := `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dense.h"

static void show(const char *kind, const loom_tensor_info *t) {
	printf("%s %s code=%d bits=%d [", kind, t->name, t->dtype.code, t->dtype.bits);
	for (int k = 0; k < t->ndim; k++) printf("%s%s", k ? " " : "", t->dims[k]);
	printf("]\n");
}

int main(void) {
	for (int i = 0; i < dense_num_inputs(); i++) show("input", dense_input(i));
	for (int i = 0; i < dense_num_outputs(); i++) show("output", dense_output(i));
	if (dense_input(-1) || dense_output(dense_num_outputs())) { printf("info out of range\n"); return 1; }
	float x[2 * 8];
	FILE *f = fopen("in.bin", "rb");
	if (!f || fread(x, sizeof x, 1, f) != 1) { printf("no input\n"); return 1; }
	fclose(f);
	int64_t xs[2] = {2, 8}, ys[2];
	loom_tensor in = {x, {1, 0}, 2, {LOOM_DTYPE_FLOAT, 32, 1}, xs, NULL, 0};
	loom_tensor out = {NULL, {1, 0}, 2, {LOOM_DTYPE_FLOAT, 32, 1}, ys, NULL, 0};
	loom_status st;
	if (dense_shapes(&in, 1, &out, 1, &st)) { printf("shapes: %s\n", st.message); return 1; }
	printf("output shape %lld %lld\n", (long long)ys[0], (long long)ys[1]);
	float *y = malloc(sizeof(float) * ys[0] * ys[1]);
	out.data = y;
	if (dense_run(&in, 1, &out, 1, 1, &st)) { printf("run: %s\n", st.message); return 1; }
	for (int i = 0; i < ys[0] * ys[1]; i++) printf("%.9g\n", y[i]);
	/* Bad descriptors. */
	loom_tensor bad = in;
	bad.dtype.bits = 64;
	int32_t rc = dense_run(&bad, 1, &out, 1, 1, &st);
	printf("status %d %s: %s\n", rc, loom_status_string(rc), st.message);
	bad = in;
	bad.ndim = 1;
	printf("status %d: %s\n", dense_run(&bad, 1, &out, 1, 1, &st), st.message);
	bad = in;
	int64_t strides[2] = {1, 2};
	bad.strides = strides;
	printf("status %d: %s\n", dense_run(&bad, 1, &out, 1, 1, &st), st.message);
	bad = in;
	bad.device.device_type = 2;
	printf("status %d: %s\n", dense_run(&bad, 1, &out, 1, 1, &st), st.message);
	printf("status %d: %s\n", dense_run(&in, 2, &out, 1, 1, &st), st.message);
	int64_t wrong[2] = {3, 10};
	out.shape = wrong;
	printf("status %d: %s\n", dense_run(&in, 1, &out, 1, 1, &st), st.message);
	printf("status %d: %s\n", dense_run(NULL, 1, &out, 1, 1, &st), st.message);
	loom_tensor noshape = in;
	noshape.shape = NULL;
	printf("status %d: %s\n", dense_run(&noshape, 1, &out, 1, 1, &st), st.message);
	loom_tensor rank3 = out;
	rank3.ndim = 3;
	printf("status %d: %s\n", dense_shapes(&in, 1, &rank3, 1, &st), st.message);
	/* No rows: N = 0, no data at all. */
	int64_t zs[2] = {0, 8}, zys[2];
	loom_tensor zin = {NULL, {0, 0}, 2, {LOOM_DTYPE_FLOAT, 32, 1}, zs, NULL, 0};
	loom_tensor zout = {NULL, {0, 0}, 2, {LOOM_DTYPE_FLOAT, 32, 1}, zys, NULL, 0};
	if (dense_shapes(&zin, 1, &zout, 1, &st) || dense_run(&zin, 1, &zout, 1, 1, &st)) { printf("empty: %s\n", st.message); return 1; }
	printf("empty ok %lld %lld\n", (long long)zys[0], (long long)zys[1]);
	/* byte_offset: the same input, 3 floats into a larger buffer. */
	float *shifted = malloc(sizeof x + 3 * sizeof(float));
	memcpy(shifted + 3, x, sizeof x);
	float *y2 = malloc(sizeof(float) * ys[0] * ys[1]);
	loom_tensor sin2 = in, sout2 = out;
	sin2.data = shifted;
	sin2.byte_offset = 3 * sizeof(float);
	out.shape = ys;
	sout2.shape = ys;
	sout2.data = y2;
	if (dense_run(&sin2, 1, &sout2, 1, 1, &st)) { printf("offset: %s\n", st.message); return 1; }
	printf("offset %s\n", memcmp(y, y2, sizeof(float) * ys[0] * ys[1]) ? "differs" : "same");
	return 0;
}
`
	got := runC(t, dir, "dense", strings.Replace(prog, `"in.bin"`, strconv.Quote(filepath.Join(dir, "in.bin")), 1))
	checkDescriptorRun(t, got, want.Data)

	// The weights in a file beside the library: loaded before the first
	// call, checked against the library.
	fileDir := t.TempDir()
	lib, err := mod.BuildWith(fileDir, "dense", module.BuildOptions{WeightsFile: true})
	if err != nil {
		t.Fatal(err)
	}
	if lib.Weights == "" {
		t.Fatal("no weights file")
	}
	os.WriteFile(filepath.Join(fileDir, "in.bin"), raw, 0o644)
	os.WriteFile(filepath.Join(fileDir, "bad.weights"), []byte("not these weights"), 0o644)
	load := `	if (dense_run(&in, 1, &out, 1, 1, &st) != LOOM_BAD_ARGUMENT) { printf("ran without weights\n"); return 1; }
	printf("before loading: %s\n", st.message);
	if (dense_load_weights("@BADFILE@", &st) != LOOM_BAD_ARGUMENT) { printf("loaded bad weights\n"); return 1; }
	printf("bad file: %s\n", st.message);
	if (dense_load_weights("@WEIGHTS@", &st)) { printf("load: %s\n", st.message); return 1; }
	if (dense_run(`
	fileProg := strings.NewReplacer(`"in.bin"`, strconv.Quote(filepath.Join(fileDir, "in.bin")),
		"@BADFILE@", filepath.Join(fileDir, "bad.weights"), "@WEIGHTS@", lib.Weights).Replace(strings.Replace(prog, "	if (dense_run(", load, 1))
	got = runC(t, fileDir, "dense", fileProg)
	for _, w := range []string{"before loading: module: graph model: its weights are not loaded", "bad file: module: dense_load_weights: " + filepath.Join(fileDir, "bad.weights") + " is not the weights file"} {
		if !strings.Contains(got, w) {
			t.Errorf("with a weights file, the program printed\n%s\nwithout %q", got, w)
		}
	}
	var rest []string
	for _, l := range strings.Split(got[strings.Index(got, "output shape"):], "\n") {
		if !strings.HasPrefix(l, "before loading:") && !strings.HasPrefix(l, "bad file:") {
			rest = append(rest, l)
		}
	}
	checkDescriptorRun(t, strings.Join(rest, "\n"), want.Data)
}

// checkDescriptorRun checks what the descriptor test program printed from
// its first "output shape" line: the outputs, then the bad calls' statuses.
func checkDescriptorRun(t *testing.T, got string, want []float64) {
	t.Helper()
	if i := strings.Index(got, "output shape"); i >= 0 && !strings.HasPrefix(got, "output shape") {
		head := "input x code=2 bits=32 [N 8]\noutput y code=2 bits=32 [N 10]\n"
		if got[:i] != head {
			t.Fatalf("the library describes itself as\n%s\nwant\n%s", got[:i], head)
		}
		got = got[i:]
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if lines[0] != "output shape 2 10" {
		t.Fatalf("the program printed\n%s", got)
	}
	vals := lines[1 : 1+len(want)]
	for i, s := range vals {
		var v float64
		if _, err := fmt.Sscan(s, &v); err != nil || math.Abs(v-want[i]) > 1e-5+1e-4*math.Abs(want[i]) {
			t.Errorf("y[%d] = %s, ONNX Runtime %v", i, s, want[i])
		}
	}
	for _, w := range []string{
		"status 8 bad argument: module: input 0 (x): dtype code 2, 64 bits",
		"status 8: module: input 0 (x): rank 1; the graph's is 2",
		"status 8: module: input 0 (x): strides are not compact row-major",
		"status 8: module: input 0 (x): device type 2",
		"status 8: module: graph model takes 1 inputs and 1 outputs, not 2 and 1",
		"status 8: module: output y has shape [3 10]; at these inputs it is [2 10]",
		"status 8: module: inputs is NULL",
		"status 8: module: input 0 (x): no shape (NULL)",
		"status 8: module: output 0 (y): ndim 3; the graph's rank is 2",
		"empty ok 0 10",
		"offset same",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("the program printed\n%s\nwithout %q", strings.Join(lines[1+len(want):], "\n"), w)
		}
	}
}
