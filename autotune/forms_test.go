package autotune

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// layerNamed returns f with every identifier but its symbolic sizes and
// root block renamed by prefix: the same kernel in another layer of a
// network, as an ONNX model's lowering names it.
func layerNamed(t *testing.T, f *ast.Func, prefix string) *ast.Func {
	t.Helper()
	canon, back := ast.Canonical(f)
	r := &ast.Renaming{Func: prefix + back.Func, Buffers: map[string]string{}, Vars: map[string]string{}, Blocks: map[string]string{}}
	for _, m := range [][2]map[string]string{{back.Buffers, r.Buffers}, {back.Vars, r.Vars}, {back.Blocks, r.Blocks}} {
		for c, name := range m[0] {
			m[1][c] = prefix + name
		}
	}
	g, err := ast.Rename(canon, r)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCanonicalRecordsServeEveryLayer: two layers' kernels that differ
// only in their names are one task of a model, whose function is their
// canonical form; a record tuned on it is found for either layer by
// BestFor, BestAnySize, Buckets and Record.Apply, and builds the layer's
// kernel under the layer's names (the interpreter runs it on the layer's
// buffers and gets the unscheduled layer's outputs). A kernel of another
// structure gets none of it.
func TestCanonicalRecordsServeEveryLayer(t *testing.T) {
	f := workload.MatmulBiasReLU(16, 24, 32).Func
	layers := []*ast.Func{layerNamed(t, f, "layers_0_"), layerNamed(t, f, "layers_1_")}
	if ast.Hash(layers[0]) == ast.Hash(layers[1]) {
		t.Fatal("the layers' kernels hash alike: the test needs two names")
	}
	tg := Target{VectorLanes: 8, Threads: 1}
	task := func(g *ast.Func) *Task { return &Task{Name: g.Name, Func: g, Target: "t"} }
	tasks := DistinctTasks([]*Task{task(layers[0]), task(layers[1]), task(workload.MatmulBiasReLU(16, 24, 16).Func)})
	if len(tasks) != 2 || tasks[0].Weight != 2 || tasks[0].Task.Name != layers[0].Name || tasks[1].Weight != 1 {
		t.Fatalf("DistinctTasks: %d tasks (%+v), want the two layers as one of weight 2, then the other size", len(tasks), tasks)
	}
	canon := tasks[0].Task.Func
	if c, _ := ast.Canonical(f); !ast.Equal(canon, c) {
		t.Fatalf("the merged task's function is not the canonical form:\n%s", ast.Print(canon))
	}
	if !slices.Equal(tasks[0].Members, []int{0, 1}) || !slices.Equal(tasks[1].Members, []int{2}) {
		t.Errorf("members %v and %v, want [0 1] and [2]", tasks[0].Members, tasks[1].Members)
	}
	s, err := Default(canon, tg)
	if err != nil {
		t.Fatal(err)
	}
	r := rec(ast.Hash(canon).String(), 0.001)
	r.Name, r.Trace = tasks[0].Task.Name, s.Trace()
	bucket := rec(r.Workload, 0.002)
	bucket.Trace, bucket.Bucket = s.Trace(), map[string][2]int64{"S": {1, 8}}
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Record{r, bucket} {
		if err := db.Append(x); err != nil {
			t.Fatal(err)
		}
	}
	for _, layer := range layers {
		got := map[string]*ast.Func{}
		if _, g, err := db.BestFor(layer, nil, "t"); err != nil || g == nil {
			t.Fatalf("%s: BestFor: %v, %v", layer.Name, g, err)
		} else {
			got["BestFor"] = g
		}
		if _, g, err := db.BestAnySize(layer, "another name", nil, "t"); err != nil || g == nil {
			t.Fatalf("%s: BestAnySize: %v, %v", layer.Name, g, err)
		} else {
			got["BestAnySize"] = g
		}
		if bs, err := db.Buckets(layer, "t"); err != nil || len(bs) != 1 {
			t.Fatalf("%s: Buckets: %v, %v", layer.Name, bs, err)
		} else {
			got["Buckets"] = bs[0].Func
		}
		if g, err := r.Apply(layer); err != nil {
			t.Fatalf("%s: Apply: %v", layer.Name, err)
		} else {
			got["Apply"] = g
		}
		want := map[string]any{}
		for _, p := range layer.Params {
			d, err := ast.NewData(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			vals := ast.Float64s(p.DType, d)
			for i := range vals {
				vals[i] = float64((i*7)%13) - 6
			}
			want[p.Name] = ast.DataOf(p.DType, vals)
		}
		inputs := map[string]any{}
		for k, v := range want {
			inputs[k] = ast.DataOf(ast.Float32, ast.Float64s(ast.Float32, v))
		}
		if err := ast.Interpret(layer, nil, want); err != nil {
			t.Fatal(err)
		}
		for how, g := range got {
			if err := ast.Verify(g); err != nil {
				t.Fatalf("%s: %s: %v", layer.Name, how, err)
			}
			if gc, _ := ast.Canonical(g); !ast.Equal(gc, mustCanonical(s.Func())) {
				t.Errorf("%s: %s built another schedule:\n%s", layer.Name, how, ast.Print(g))
			}
			bufs := map[string]any{}
			for k, v := range inputs {
				bufs[k] = ast.DataOf(ast.Float32, ast.Float64s(ast.Float32, v))
			}
			out := layer.Params[len(layer.Params)-1].Name
			ast.Poison(ast.Float32, bufs[out])
			if err := ast.Interpret(g, nil, bufs); err != nil {
				t.Fatalf("%s: %s: the kernel does not run on the layer's buffers: %v", layer.Name, how, err)
			}
			w, o := ast.Float64s(ast.Float32, want[out]), ast.Float64s(ast.Float32, bufs[out])
			for i := range w {
				if w[i] != o[i] {
					t.Fatalf("%s: %s: %s[%d] = %v, want %v", layer.Name, how, out, i, o[i], w[i])
				}
			}
		}
	}
	other := workload.MatmulBiasReLU(16, 24, 16).Func
	if r, _, err := db.BestFor(other, nil, "t"); r != nil || err != nil {
		t.Errorf("another structure got a record: %v, %v", r, err)
	}
	if _, err := r.Apply(other); err == nil {
		t.Error("the record applied to another structure")
	}
}

func mustCanonical(f *ast.Func) *ast.Func {
	c, _ := ast.Canonical(f)
	return c
}

// TestCanonicalRecordWhereADerivedNameIsTaken: a record of the canonical
// form whose trace takes a block by a name a primitive derived (the cache
// of A, A_local under the kernel's names) does not serve a kernel that
// already has a block of that name: renamed, the trace would take that
// block instead, so the lookup refuses it rather than build another
// schedule than the record's.
func TestCanonicalRecordWhereADerivedNameIsTaken(t *testing.T) {
	f, err := ast.Parse(`func k(A: float32[4, 8], B: float32[4], D: float32[4, 8]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      serial for (j, 0, 8) {
        ScheduleBlock(B) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 4), vj = reduce(0, 8))
          reads(B[vi], A[vi, vj])
          writes(B[vi])
          init {
            B[vi] = 0.0f
          }
          B[vi] = B[vi] + A[vi, vj]
        }
      }
    }
    serial for (x, 0, 4) {
      serial for (y, 0, 8) {
        ScheduleBlock(A_local) {
          vx, vy = axis.bind(x, y)
          axis.domain(vx = spatial(0, 4), vy = spatial(0, 8))
          reads(A[vx, vy])
          writes(D[vx, vy])
          D[vx, vy] = A[vx, vy] * 2.0f
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	canon, back := ast.Canonical(f)
	canonName := func(m map[string]string, own string) string {
		for c, name := range m {
			if name == own {
				return c
			}
		}
		t.Fatalf("no canonical name for %s", own)
		return ""
	}
	s, err := schedule.New(canon)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.GetBlock(canonName(back.Blocks, "B"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CacheRead(b, canonName(back.Buffers, "A"), "local"); err != nil {
		t.Fatal(err)
	}
	cache, err := s.GetBlock(canonName(back.Buffers, "A") + "_local")
	if err != nil {
		t.Fatal(err)
	}
	loops, err := s.GetLoops(cache)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Vectorize(loops[len(loops)-1]); err != nil {
		t.Fatal(err)
	}
	r := &Record{Workload: CanonicalWorkload(f), Trace: s.Trace()}
	if g, err := r.Apply(f); err == nil || !strings.Contains(err.Error(), "builds another function") {
		t.Fatalf("the record built a function for a kernel whose name A_local is taken (%v):\n%s", err, ast.Print(g))
	}
	// The same record serves the kernel under names that leave A_local
	// free.
	free, err := ast.Rename(f, &ast.Renaming{Blocks: map[string]string{"A_local": "scale"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(free); err != nil {
		t.Errorf("with A_local free: %v", err)
	}
}
