package module_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/module"
)

// TestTune: one call tunes a graph's kernels (the workers are this test
// binary, served by autotune's initialization), and Compile with the
// database runs the records; the tuned module computes what the default
// one does.
func TestTune(t *testing.T) {
	data, err := os.ReadFile("../testdata/fusion/mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := fusion.ParseJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := module.Tune(context.Background(), g, nil, autotune.LocalOptions{Trials: 3}); err == nil || !strings.Contains(err.Error(), "give a size to T") {
		t.Errorf("no sizes: %v", err)
	}
	db := filepath.Join(dir, "tuning.jsonl")
	res, err := module.Tune(context.Background(), g, map[string]int64{"T": 8}, autotune.LocalOptions{Trials: 3, Confirm: -1, DB: db, CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trials != 3 || len(res.Tasks) != 3 {
		t.Fatalf("%d trials over %d tasks, want 3 over the MLP's 3 kernels", res.Trials, len(res.Tasks))
	}
	cache, tuned := compileTuned(t, g, dir, db)
	records := 0
	for _, k := range tuned.Kernels() {
		if strings.HasPrefix(k[1], "record") {
			records++
		}
	}
	if records != 3 {
		t.Errorf("the tuned module runs %d records: %v", records, tuned.Kernels())
	}
	sameAsDefault(t, g, cache, tuned, map[string]int64{"T": 8})
}

// TestTuneRepeatedLayers: two layers whose kernels differ only in their
// names (their weights constants of the graph) are one task of weight 2, and the module built with the database
// runs the one record in both layers, computing what the default
// schedules do.
func TestTuneRepeatedLayers(t *testing.T) {
	constant := func(name string, shape ...int) string {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]string, n)
		for i := range data {
			data[i] = fmt.Sprint(float64((i*7)%11-5) / 8)
		}
		return fmt.Sprintf(`{"name": %q, "dtype": "float32", "shape": %s, "data": [%s]}`, name, strings.ReplaceAll(fmt.Sprint(shape), " ", ", "), strings.Join(data, ", "))
	}
	g, err := fusion.ParseJSON([]byte(`{
  "name": "two_layers",
  "inputs": [{"name": "X", "dtype": "float32", "shape": ["T", 32]}],
  "constants": [` + strings.Join([]string{constant("W0", 32, 32), constant("B0", 32), constant("W1", 32, 32), constant("B1", 32)}, ", ") + `],
  "nodes": [
    {"op": "matmul", "inputs": ["X", "W0"], "output": "layer0_mm"},
    {"op": "add", "inputs": ["layer0_mm", "B0"], "output": "layer0_add"},
    {"op": "relu", "inputs": ["layer0_add"], "output": "layer0_out"},
    {"op": "matmul", "inputs": ["layer0_out", "W1"], "output": "layer1_mm"},
    {"op": "add", "inputs": ["layer1_mm", "B1"], "output": "layer1_add"},
    {"op": "relu", "inputs": ["layer1_add"], "output": "Out"}
  ],
  "outputs": ["Out"]
}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "tuning.jsonl")
	sizes := map[string]int64{"T": 8}
	res, err := module.Tune(context.Background(), g, sizes, autotune.LocalOptions{Trials: 2, Confirm: -1, DB: db, CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].Weight != 2 {
		t.Fatalf("%d tasks (weight %d), want the two layers as one task of weight 2", len(res.Tasks), res.Tasks[0].Weight)
	}
	// The weights (the matrix and the bias) are timed out of the caches,
	// and the records filed apart, where the machine can flush them.
	if task := res.Tasks[0].Task; runtime.GOARCH == "amd64" && (!slices.Equal(task.Cold, []int{1, 2}) || !strings.HasSuffix(task.Target, "/cold-weights")) {
		t.Errorf("the task times %v cold under target %s, want the weights [1 2] under a cold target", task.Cold, task.Target)
	}
	cache, tuned := compileTuned(t, g, dir, db)
	ks := tuned.Kernels()
	if len(ks) != 2 || ks[0][1] != "record" || ks[1][1] != "record" || ks[0][0] == ks[1][0] {
		t.Fatalf("kernels %v, want both layers' kernels from the record", ks)
	}
	sameAsDefault(t, g, cache, tuned, sizes)
}

// sameAsDefault checks that the tuned module of g computes what g's
// module with the default schedules does, at sizes.
func sameAsDefault(t *testing.T, g *fusion.Graph, cache *native.Cache, tuned *module.Module, sizes map[string]int64) {
	t.Helper()
	plain, err := module.Compile(g, module.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := inputsAt(t, g, sizes, 3)
	want, err := plain.NewOutputs(ins)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Run(ins, want); err != nil {
		t.Fatal(err)
	}
	got, err := tuned.NewOutputs(ins)
	if err != nil {
		t.Fatal(err)
	}
	if err := tuned.Run(ins, got); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if e := check.MaxRelErr(got[name].Data, w.Data); e > 1e-5 {
			t.Errorf("output %s: the tuned module differs from the default by %g", name, e)
		}
	}
}

// compileTuned compiles g with the tuning database at db, its kernels
// cached in dir, and returns the cache and the module.
func compileTuned(t *testing.T, g *fusion.Graph, dir, db string) (*native.Cache, *module.Module) {
	t.Helper()
	cache, err := native.NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := autotune.OpenDatabase(db)
	if err != nil {
		t.Fatal(err)
	}
	tuned, err := module.Compile(g, module.Options{Cache: cache, Database: opened})
	if err != nil {
		t.Fatal(err)
	}
	return cache, tuned
}
