package module_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/golden"
	"github.com/loom-go/loom/internal/instances"
	"github.com/loom-go/loom/internal/testcache"
	"github.com/loom-go/loom/module"
)

// goldenGraph is a fusion golden with the sizes it is checked at.
type goldenGraph struct {
	name  string
	g     *fusion.Graph
	sizes []map[string]int64
}

// goldens returns every fusion golden that lists sizes, the graphs of
// testdata/fusion/*.json and testdata/graphs (the transformer layer, the
// ResNet block, attention), each with its sizes and, for a graph with
// symbols, every symbol at 1 and at 13.
func goldens(t *testing.T) []goldenGraph {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../testdata/fusion/*.txtar", "../testdata/fusion/*.json", "../testdata/graphs/*.txtar"} {
		more, err := filepath.Glob(pattern)
		if err != nil || len(more) == 0 {
			t.Fatalf("no graphs %s: %v", pattern, err)
		}
		files = append(files, more...)
	}
	var out []goldenGraph
	for _, file := range files {
		var src, lines string
		if filepath.Ext(file) == ".json" {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			src = string(data)
		} else {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			src, _ = golden.Section(ar, "graph.json")
			var ok bool
			if lines, ok = golden.Section(ar, "sizes"); !ok {
				continue // an error case
			}
		}
		g, err := fusion.ParseJSON([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		gg := goldenGraph{name: filepath.Base(file), g: g}
		bindings, err := golden.Sizes(lines)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, b := range bindings {
			if len(b) > 0 || len(g.Symbols()) == 0 {
				gg.sizes = append(gg.sizes, b)
			}
		}
		if syms := g.Symbols(); len(syms) > 0 {
			for _, v := range []int64{1, 13} {
				m := map[string]int64{}
				for _, s := range syms {
					m[s] = v
				}
				gg.sizes = append(gg.sizes, m)
			}
		}
		out = append(out, gg)
	}
	return out
}

// compiled parses a graph (the name of a JSON file under testdata, or
// the JSON itself) and compiles it (one thread) with the kernel cache the
// tests share (goldenCacheDir): the tests that compile the same graph
// (the MLP, three of them) build its kernels once.
func compiled(t testing.TB, src string) (*fusion.Graph, *module.Module) {
	t.Helper()
	data := []byte(src)
	if strings.HasSuffix(src, ".json") {
		var err error
		if data, err = os.ReadFile(filepath.Join("..", "testdata", src)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := fusion.ParseJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.Compile(g, module.Options{Cache: goldenCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	return g, m
}

// inputsAt returns random inputs of g at sizes, as the module takes them
// and as the plan's interpreter takes them.
func inputsAt(t testing.TB, g *fusion.Graph, sizes map[string]int64, seed uint64) (map[string]module.Tensor, map[string]any) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	ins, raw := map[string]module.Tensor{}, map[string]any{}
	for _, x := range g.Inputs {
		d, err := fusion.NewData(x, sizes)
		if err != nil {
			t.Fatal(err)
		}
		check.FillRandom(d, r)
		if v, ok := d.([]int32); ok { // indices: small, some negative
			for i := range v {
				v[i] = int32(r.IntN(7) - 2)
			}
		}
		shape := make([]int64, len(x.Shape))
		for k, dim := range x.Shape {
			if shape[k], err = dim.Eval(sizes); err != nil {
				t.Fatal(err)
			}
		}
		ins[x.Name], raw[x.Name] = module.Tensor{Shape: shape, Data: d}, d
	}
	return ins, raw
}

// The tests over every golden share one kernel cache (testcache; TestMain
// makes it): a graph is compiled once, by the first of them, and the
// others get the same module from the compile cache.
func TestMain(m *testing.M) { os.Exit(testcache.Run(m)) }

// goldenCache opens the shared kernel cache.
func goldenCache(t testing.TB) *native.Cache { return testcache.Open(t) }

// TestGoldensMatchInterpreter: every fusion golden with sizes, compiled
// as a module, computes what the fused plan's interpreter computes, at
// each of its sizes and with every symbol 1 and 13, the sizes run in
// turn and then the first again (the arena reused, dirty), to 1e-5 of
// each output's largest magnitude (check.MaxScaledErr).
func TestGoldensMatchInterpreter(t *testing.T) {
	cache := goldenCache(t)
	runs := 0
	defer func() { t.Logf("%d runs compared", runs) }()
	for _, gg := range goldens(t) {
		m, err := module.Compile(gg.g, module.Options{Cache: cache, Threads: 2})
		if err != nil {
			t.Fatalf("%s: %v", gg.name, err)
		}
		for i, sizes := range append(gg.sizes, gg.sizes[0]) {
			ins, raw := inputsAt(t, gg.g, sizes, uint64(i))
			want, err := reference(t, cache, gg.g, sizes, raw)
			if err != nil {
				t.Fatalf("%s at %v: %v", gg.name, sizes, err)
			}
			outs, err := poisonedOutputs(m, ins)
			if err != nil {
				t.Fatalf("%s at %v: %v", gg.name, sizes, err)
			}
			if err := m.Run(ins, outs); err != nil {
				t.Fatalf("%s at %v: %v", gg.name, sizes, err)
			}
			runs++
			// Relative to each output's largest magnitude: a block of
			// ResNet sums convolutions of 576 and 256 terms into values
			// up to 358, whose rounding an element near zero carries.
			for name, w := range want {
				if e := check.MaxScaledErr(outs[name].Data, w); e > 1e-5 {
					t.Errorf("%s at %v: output %s differs from the interpreter's by %g of its largest magnitude", gg.name, sizes, name, e)
				}
			}
		}
	}
}

// interpretLimit is the most loop iterations a reference runs in the
// interpreter (10 million: seconds); -interpret-limit=1e12 runs every
// graph's there (the ResNet block takes minutes).
var long = flag.Bool("long", false, "build the C library of every golden graph, the BERT layer's too")

var interpretLimit = flag.Int64("interpret-limit", 10_000_000, "the most loop iterations a graph's reference runs in the interpreter; beyond, the unfused, unscheduled kernels run natively")

// reference computes g's outputs at sizes: the interpreter on the fused
// plan, or, for a graph of more iterations than -interpret-limit (the
// transformer layer at S=16, the ResNet block), the plan of one kernel
// per operator compiled unscheduled: no fusion and no schedule in common
// with the module, each such kernel checked against the interpreter
// elsewhere (and the graph itself at S=1 here).
func reference(t *testing.T, cache *native.Cache, g *fusion.Graph, sizes map[string]int64, inputs map[string]any) (map[string]any, error) {
	fused, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		return nil, err
	}
	if iterations(fused, sizes) <= *interpretLimit {
		return fused.Interpret(sizes, inputs)
	}
	apart, err := fusion.Compile(g, fusion.Options{NoFuse: true})
	if err != nil {
		return nil, err
	}
	return apart.Execute(sizes, inputs, func(f *ast.Func, sizes map[string]int64, args map[string]any) error {
		k, err := cache.Compile(f, llvm.Options{})
		if err != nil {
			return err
		}
		return k.Run(sizes, args)
	})
}

// iterations returns how many block instances p's kernels run at sizes.
func iterations(p *fusion.Plan, sizes map[string]int64) int64 {
	var total int64
	for _, k := range p.Kernels {
		total += instances.Count(k.Func, sizes)
	}
	return total
}

// TestBadInputs: wrong shapes, dtypes, missing or unknown tensors and nil
// data are errors that name the tensor (and the dimension and both
// values); nothing runs.
func TestBadInputs(t *testing.T) {
	_, m := compiled(t, `{"name": "addrow", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 4]}, {"name": "B", "dtype": "float32", "shape": [4]}],
  "nodes": [{"op": "add", "inputs": ["X", "B"], "output": "Y"}], "outputs": ["Y"]}`)
	x := module.Tensor{Shape: []int64{3, 4}, Data: make([]float32, 12)}
	b := module.Tensor{Shape: []int64{4}, Data: make([]float32, 4)}
	y := module.Tensor{Shape: []int64{3, 4}, Data: make([]float32, 12)}
	if err := m.Run(map[string]module.Tensor{"X": x, "B": b}, map[string]module.Tensor{"Y": y}); err != nil {
		t.Fatalf("good inputs: %v", err)
	}
	for _, tc := range []struct {
		name    string
		ins     map[string]module.Tensor
		outs    map[string]module.Tensor
		message []string
	}{
		{"wrong dimension", map[string]module.Tensor{"X": x, "B": {Shape: []int64{5}, Data: make([]float32, 5)}}, nil, []string{"input B", "dimension 0 is 5", "4"}},
		{"wrong rank", map[string]module.Tensor{"X": {Shape: []int64{12}, Data: make([]float32, 12)}, "B": b}, nil, []string{"input X", "1 dimensions"}},
		{"wrong dtype", map[string]module.Tensor{"X": {Shape: []int64{3, 4}, Data: make([]float64, 12)}, "B": b}, nil, []string{"input X", "[]float32", "[]float64"}},
		{"too little data", map[string]module.Tensor{"X": {Shape: []int64{3, 4}, Data: make([]float32, 11)}, "B": b}, nil, []string{"input X", "12 elements", "11"}},
		{"nil data", map[string]module.Tensor{"X": {Shape: []int64{3, 4}}, "B": b}, nil, []string{"input X", "nil"}},
		{"missing input", map[string]module.Tensor{"X": x}, nil, []string{"no input B"}},
		{"unknown input", map[string]module.Tensor{"X": x, "B": b, "Z": b}, nil, []string{"Z is no input"}},
		{"wrong output shape", map[string]module.Tensor{"X": x, "B": b}, map[string]module.Tensor{"Y": {Shape: []int64{4, 4}, Data: make([]float32, 16)}}, []string{"output Y", "[4 4]", "[3 4]"}},
		{"missing output", map[string]module.Tensor{"X": x, "B": b}, map[string]module.Tensor{}, []string{"no output Y"}},
	} {
		outs := tc.outs
		if outs == nil {
			outs = map[string]module.Tensor{"Y": y}
		}
		err := m.Run(tc.ins, outs)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, want := range tc.message {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", tc.name, err, want)
			}
		}
	}
}

// TestConcurrentRuns: goroutines running one module at once, each on its
// own data and sizes, get what the interpreter gets (each call takes its
// own arena).
func TestConcurrentRuns(t *testing.T) {
	var gg goldenGraph
	for _, x := range goldens(t) {
		if x.name == "softmax.txtar" {
			gg = x
		}
	}
	if gg.g == nil {
		t.Fatal("no softmax golden")
	}
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.Compile(gg.g, module.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			sizes := gg.sizes[w%len(gg.sizes)]
			for i := range 20 {
				ins, raw := inputsAt(t, gg.g, sizes, uint64(100*w+i))
				want, err := m.Plan().Interpret(sizes, raw)
				if err != nil {
					errs <- err
					return
				}
				outs, err := poisonedOutputs(m, ins)
				if err == nil {
					err = m.Run(ins, outs)
				}
				if err != nil {
					errs <- err
					return
				}
				for name, w := range want {
					if e := check.MaxRelErr(outs[name].Data, w); e > 1e-4 {
						errs <- fmt.Errorf("at %v: %s differs by %g", sizes, name, e)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestViewsDoNotRun: in the classifier head, the flatten of the
// convolution's output and the reshape of an input are views: no kernel
// runs for them, their memory is their input's (the arena holds R, not F;
// Zf is the caller's Z), and the results match the interpreter (in
// TestGoldensMatchInterpreter and TestCLibraryMatchesInterpreter).
func TestViewsDoNotRun(t *testing.T) {
	var cnn *goldenGraph
	for _, gg := range goldens(t) {
		if gg.name == "cnn_head.txtar" {
			cnn = &gg
		}
	}
	if cnn == nil {
		t.Fatal("no testdata/graphs/cnn_head.txtar")
	}
	// The shared cache and two threads, as TestGoldensMatchInterpreter
	// compiles the head: its kernels are built once.
	m, err := module.Compile(cnn.g, module.Options{Cache: goldenCache(t), Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	var views []string
	for _, k := range m.Kernels() {
		if k[1] == "view" {
			views = append(views, k[0])
		}
	}
	if len(views) != 2 {
		t.Errorf("views %v, want the two reshapes", views)
	}
	ins, _ := inputsAt(t, cnn.g, map[string]int64{"N": 5}, 1)
	peak, naive, err := m.Memory(ins)
	if err != nil {
		t.Fatal(err)
	}
	// Placed: R (5x8x6x6 floats), then L2 and L (5x10 each) in R's
	// shadow or after it; F and Zf take nothing.
	if r := int64(5 * 8 * 6 * 6 * 4); peak < r || naive >= 2*r {
		t.Errorf("peak %d, naive %d bytes: the views seem placed (R alone is %d)", peak, naive, r)
	}
}

// TestRunPointers: raw addresses in, the same results as Run; a wrong
// count, shape or a nil address is an error naming the tensor.
func TestRunPointers(t *testing.T) {
	g, m := compiled(t, "fusion/mlp.json")
	ins, _ := inputsAt(t, g, map[string]int64{"T": 7}, 5)
	want, err := m.NewOutputs(ins)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ins, want); err != nil {
		t.Fatal(err)
	}
	var pins []module.Pointer
	for _, x := range m.Inputs() {
		v := ins[x.Name].Data.([]float32)
		pins = append(pins, module.Pointer{Data: unsafe.Pointer(&v[0]), Shape: ins[x.Name].Shape})
	}
	got, err := m.NewOutputs(ins)
	if err != nil {
		t.Fatal(err)
	}
	var pouts []module.Pointer
	for _, y := range m.Outputs() {
		v := got[y.Name].Data.([]float32)
		pouts = append(pouts, module.Pointer{Data: unsafe.Pointer(&v[0]), Shape: got[y.Name].Shape})
	}
	if err := m.RunPointers(pins, pouts); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if e := check.MaxRelErr(got[name].Data, w.Data); e != 0 {
			t.Errorf("output %s differs from Run's by %g", name, e)
		}
	}
	bad := func(what string, ins, outs []module.Pointer, message string) {
		t.Helper()
		err := m.RunPointers(ins, outs)
		if err == nil || !strings.Contains(err.Error(), message) {
			t.Errorf("%s: got %v, want an error saying %q", what, err, message)
		}
	}
	bad("one input missing", pins[1:], pouts, "6 inputs and 1 outputs given")
	wrong := slices.Clone(pins)
	wrong[1] = module.Pointer{Data: pins[1].Data, Shape: []int64{64, 255}}
	bad("wrong shape", wrong, pouts, "input W1: dimension 1 is 255; the graph's is 256")
	nilIn := slices.Clone(pins)
	nilIn[0].Data = nil
	bad("nil input", nilIn, pouts, "input X has no data (nil)")
	bad("wrong output shape", pins, []module.Pointer{{Data: pouts[0].Data, Shape: []int64{6, 64}}}, "output Out has shape [6 64]; at these inputs it is [7 64]")
}

// poisonedOutputs returns m's outputs for ins filled with NaN (or the
// integers' poison, ast.Poison), so that an element the module leaves
// unwritten shows.
func poisonedOutputs(m *module.Module, ins map[string]module.Tensor) (map[string]module.Tensor, error) {
	outs, err := m.NewOutputs(ins)
	if err != nil {
		return nil, err
	}
	for _, t := range m.Outputs() {
		ast.Poison(t.DType, outs[t.Name].Data)
	}
	return outs, nil
}
