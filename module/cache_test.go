package module

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
)

const cacheGraph = `{"name": "scaled", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 8]}],
  "constants": [{"name": "W", "dtype": "float32", "shape": [8], "data": [1, 2, 3, 4, 5, 6, 7, 8]}],
  "nodes": [{"op": "mul", "inputs": ["X", "W"], "output": "T"}, {"op": "reduce_sum", "inputs": ["T"], "output": "Y", "attrs": {"axes": [1]}}],
  "outputs": ["Y"]}`

// cacheGraphIn parses cacheGraph and makes an empty kernel cache for it.
func cacheGraphIn(t *testing.T) (*fusion.Graph, *native.Cache) {
	t.Helper()
	g, err := fusion.ParseJSON([]byte(cacheGraph))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return g, cache
}

func forgetModules() {
	memoryCache.Lock()
	defer memoryCache.Unlock()
	clear(memoryCache.m)
}

// TestCompileCache: compiling a graph again returns the module compiled
// before; in a new process (the memory cache emptied) its schedules come
// from disk and none is decided again; a change of the graph's constants
// or of the thread count misses; a damaged file is ignored.
func TestCompileCache(t *testing.T) {
	g, cache := cacheGraphIn(t)
	opts := Options{Cache: cache, Threads: 2}
	compile := func(g *fusion.Graph, opts Options) (*Module, int64) {
		t.Helper()
		before := decided.Load()
		m, err := Compile(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		return m, decided.Load() - before
	}
	m1, n := compile(g, opts)
	if n == 0 {
		t.Fatal("the first compile decided no schedule")
	}
	if m2, n := compile(g, opts); m2.compiled != m1.compiled || n != 0 {
		t.Errorf("a second compile gave another module (%v) or decided %d schedules", m2.compiled != m1.compiled, n)
	}
	// Another process: the memory cache is empty, the disk has them.
	forgetModules()
	m3, n := compile(g, opts)
	if m3.compiled == m1.compiled || n != 0 {
		t.Errorf("after forgetting: same module %v, %d schedules decided (want a new module, none decided)", m3.compiled == m1.compiled, n)
	}
	for i := range m1.kernels {
		if m1.kernels[i].f.String() != m3.kernels[i].f.String() || m1.kernels[i].Schedule != m3.kernels[i].Schedule {
			t.Errorf("kernel %s: the schedule from disk differs", m1.kernels[i].k.Name)
		}
	}
	x := Tensor{Shape: []int64{3, 8}, Data: []float32{1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1}}
	for _, m := range []*Module{m1, m3} {
		y := Tensor{Shape: []int64{3}, Data: make([]float32, 3)}
		if err := m.Run(map[string]Tensor{"X": x}, map[string]Tensor{"Y": y}); err != nil {
			t.Fatal(err)
		}
		if got := y.Data.([]float32); got[0] != 36 || got[1] != 72 || got[2] != 8 {
			t.Errorf("Y = %v, want [36 72 8]", got)
		}
	}
	// Other constants, another thread count: misses.
	g2, err := fusion.ParseJSON([]byte(cacheGraph))
	if err != nil {
		t.Fatal(err)
	}
	g2.Constants[0].Data[7] = 9
	if m, _ := compile(g2, opts); m.compiled == m1.compiled || m.compiled == m3.compiled {
		t.Error("a graph with other constant values hit the cache")
	}
	if m, _ := compile(g, Options{Cache: cache, Threads: 1}); m.compiled == m3.compiled {
		t.Error("another thread count hit the cache")
	}
	// A damaged file is ignored (and rewritten).
	forgetModules()
	files, _ := filepath.Glob(filepath.Join(cache.Dir, "modules", "*.json"))
	if len(files) == 0 {
		t.Fatal("no module file on disk")
	}
	for _, f := range files {
		if err := os.WriteFile(f, []byte(`{"Version": "loom module cache 1", "Kernels": [{"Name": "x"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, n := compile(g, opts); n == 0 {
		t.Error("a damaged cache file was used")
	}
	if _, n := compile(g, Options{Cache: cache, Threads: 2, NoCache: true}); n == 0 {
		t.Error("NoCache looked the module up")
	}
}

// A build of loom's own tree names itself in the cache key, so that a
// module cache written by one build (its schedules) is not read by
// another: this test binary is such a build (named by the commit Go
// stamped into it, else by its file).
func TestLoomVersionNamesTheBuild(t *testing.T) {
	v := loomVersion()
	if v == "" || v == "build " {
		t.Fatalf("loomVersion() = %q for a build of loom's own tree", v)
	}
}
