package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/internal/npy"
	"github.com/loom-go/loom/onnx"
)

// TestImportONNX: loom import writes a graph and its weights that the
// other commands read; bench runs an ONNX model on .npy inputs and writes
// its outputs, which match ONNX Runtime's.
func TestImportONNX(t *testing.T) {
	model := filepath.Join("..", "..", "testdata", "onnx", "net_dense", "model.onnx")
	dir := t.TempDir()
	code, stdout, stderr := runLoom(t, "import", "-o", dir, "-name", "dense", model)
	if code != 0 || !strings.Contains(stdout, "dense.json: 3 nodes") {
		t.Fatalf("loom import: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, f := range []string{"dense.json", "dense.safetensors"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if code, stdout, stderr = runLoom(t, "fuse", "-check", "off", filepath.Join(dir, "dense.json")); code != 0 || !strings.Contains(stdout, "kernel 0") {
		t.Errorf("loom fuse of the imported graph: exit %d\n%s%s", code, stdout, stderr)
	}
	// The model's input, as numpy would save it.
	in, err := onnx.ReadTensorFile(filepath.Join(filepath.Dir(model), "test_data_set_0", "input_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := onnx.ReadTensorFile(filepath.Join(filepath.Dir(model), "test_data_set_0", "output_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, len(in.Data))
	for i, v := range in.Data {
		x[i] = float32(v)
	}
	f, err := os.Create(filepath.Join(dir, "x.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.Write(f, &npy.Array{DType: in.DType, Shape: in.Shape, Data: x}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	outDir := filepath.Join(dir, "out")
	code, stdout, stderr = runLoom(t, "bench", "-onnx", model, "-threads", "1", "-input", "x="+filepath.Join(dir, "x.npy"), "-outputs", outDir)
	if code != 0 || !strings.Contains(stdout, `"sizes":{"N":2}`) {
		t.Fatalf("loom bench -onnx: exit %d\n%s%s", code, stdout, stderr)
	}
	f, err = os.Open(filepath.Join(outDir, "y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := npy.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	y := got.Data.([]float32)
	for i, w := range want.Data {
		if math.Abs(float64(y[i])-w) > 1e-5+1e-4*math.Abs(w) {
			t.Errorf("y[%d] = %v, ONNX Runtime %v", i, y[i], w)
		}
	}
	// Bad inputs: one line, non-zero exit.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "-onnx", model, "-input", "q=" + filepath.Join(dir, "x.npy")}, `no input "q"`},
		{[]string{"bench", "-onnx", model, "-input", "x=" + model}, "not a .npy file"},
		{[]string{"bench", "-graph", filepath.Join(dir, "dense.json"), "-onnx", model}, "give one of them"},
		{[]string{"import", "-o", dir, filepath.Join(dir, "x.npy")}, "not an ONNX model"},
	} {
		code, _, stderr := runLoom(t, c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("loom %s: exit %d, %q; want one line saying %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
