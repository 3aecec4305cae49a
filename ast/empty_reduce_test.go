package ast_test

import (
	"math"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// emptyReductionFuncs are reductions whose reduce loops run no iteration
// for some output element, each with the outputs the interpreter must give
// at the sizes listed (NaN where nothing writes; Y's inputs are all ones).
var emptyReductionFuncs = []struct {
	name  string
	src   string
	sizes map[string]int64
	want  []float32
}{
	{
		name: "symbolic_axis",
		src: `func rowsum[N: int32, K: int32](X: float32[N, K], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (k, 0, K) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, N), vk = reduce(0, K))
          reads(Y[vi], X[vi, vk])
          writes(Y[vi])
          init {
            Y[vi] = 0.0f
          }
          Y[vi] = Y[vi] + X[vi, vk]
        }
      }
    }
  }
}`,
		sizes: map[string]int64{"N": 3, "K": 0},
		want:  []float32{0, 0, 0},
	},
	{
		name: "reduce_loop_outside",
		src: `func rowsum[N: int32, K: int32](X: float32[N, K], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (k, 0, K) {
      serial for (i, 0, N) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, N), vk = reduce(0, K))
          reads(Y[vi], X[vi, vk])
          writes(Y[vi])
          init {
            Y[vi] = 1.0f
          }
          Y[vi] = Y[vi] + X[vi, vk]
        }
      }
    }
  }
}`,
		sizes: map[string]int64{"N": 3, "K": 0},
		want:  []float32{1, 1, 1},
	},
	{
		name: "split_tail",
		src: `func rowsum[N: int32, K: int32](X: float32[N, K], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (k0, 0, floordiv(K + 7, 8)) {
        serial for (k1, 0, 8) {
          ScheduleBlock(Y) {
            vi, vk = axis.bind(i, k0 * 8 + k1)
            axis.domain(vi = spatial(0, N), vk = reduce(0, K))
            predicate(k0 * 8 + k1 < K)
            reads(Y[vi], X[vi, vk])
            writes(Y[vi])
            init {
              Y[vi] = 0.0f
            }
            Y[vi] = Y[vi] + X[vi, vk]
          }
        }
      }
    }
  }
}`,
		sizes: map[string]int64{"N": 2, "K": 0},
		want:  []float32{0, 0},
	},
	{
		name: "split_tail_some",
		src: `func rowsum[N: int32, K: int32](X: float32[N, K], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (k0, 0, floordiv(K + 7, 8)) {
        serial for (k1, 0, 8) {
          ScheduleBlock(Y) {
            vi, vk = axis.bind(i, k0 * 8 + k1)
            axis.domain(vi = spatial(0, N), vk = reduce(0, K))
            predicate(k0 * 8 + k1 < K)
            reads(Y[vi], X[vi, vk])
            writes(Y[vi])
            init {
              Y[vi] = 0.0f
            }
            Y[vi] = Y[vi] + X[vi, vk]
          }
        }
      }
    }
  }
}`,
		sizes: map[string]int64{"N": 2, "K": 3},
		want:  []float32{3, 3},
	},
	{
		name: "triangle",
		src: `func prefix[N: int32](X: float32[N], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (k, 0, i) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, N), vk = reduce(0, N))
          reads(Y[vi], X[vk])
          writes(Y[vi])
          init {
            Y[vi] = 0.0f
          }
          Y[vi] = Y[vi] + X[vk]
        }
      }
    }
  }
}`,
		sizes: map[string]int64{"N": 4},
		want:  []float32{0, 1, 2, 3},
	},
	{
		name: "triangle_by_predicate",
		src: `func prefix[N: int32](X: float32[N], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (k, 0, N) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, N), vk = reduce(0, N))
          predicate(k < i)
          reads(Y[vi], X[vk])
          writes(Y[vi])
          init {
            Y[vi] = 0.0f
          }
          Y[vi] = Y[vi] + X[vk]
        }
      }
    }
  }
}`,
		sizes: map[string]int64{"N": 4},
		want:  []float32{0, 1, 2, 3},
	},
	{
		name: "spatial_condition_under_reduce_loop",
		src: `func rowsum[N: int32, K: int32](X: float32[N, K], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (k, 0, K) {
      serial for (i, 0, N) {
        if (i < 2) {
          ScheduleBlock(Y) {
            vi, vk = axis.bind(i, k)
            axis.domain(vi = spatial(0, N), vk = reduce(0, K))
            reads(Y[vi], X[vi, vk])
            writes(Y[vi])
            init {
              Y[vi] = 5.0f
            }
            Y[vi] = Y[vi] + X[vi, vk]
          }
        }
      }
    }
  }
}`,
		sizes: map[string]int64{"N": 3, "K": 0},
		want:  []float32{5, 5, float32(math.NaN())},
	},
}

// TestEmptyReductionsInterpreted: an output element whose reduce loops run
// no iteration holds the init's value; one they reach holds the sum.
func TestEmptyReductionsInterpreted(t *testing.T) {
	for _, c := range emptyReductionFuncs {
		t.Run(c.name, func(t *testing.T) {
			f, err := ast.Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			args := map[string]any{}
			for _, b := range f.Params {
				d, err := ast.NewData(b, c.sizes)
				if err != nil {
					t.Fatal(err)
				}
				fill := float32(1)
				if b.Name == "Y" {
					fill = float32(math.NaN())
				}
				for i := range d.([]float32) {
					d.([]float32)[i] = fill
				}
				args[b.Name] = d
			}
			if err := ast.Interpret(f, c.sizes, args); err != nil {
				t.Fatal(err)
			}
			got := args["Y"].([]float32)
			for i, w := range c.want {
				if got[i] != w && !(math.IsNaN(float64(w)) && math.IsNaN(float64(got[i]))) {
					t.Errorf("Y[%d] = %v, want %v (all: %v)", i, got[i], w, got)
				}
			}
			// The rewritten function is well formed, and rewriting it
			// again adds nothing more than another guard.
			g := ast.InitEmptyReductions(f)
			if err := ast.Verify(g); err != nil {
				t.Fatalf("%v\n%s", err, ast.Print(g))
			}
		})
	}
}

// TestInitEmptyReductionsConstantSizes: a reduction whose reduce loops have
// constant positive extents comes back unchanged, and a symbolic one gets
// its init guarded by the sizes alone, outside the row loop's body.
func TestInitEmptyReductionsConstantSizes(t *testing.T) {
	constant := strings.ReplaceAll(emptyReductionFuncs[0].src, "K: int32", "")
	constant = strings.ReplaceAll(constant, "[N, ]", "[N]")
	constant = strings.ReplaceAll(constant, "K", "128")
	constant = strings.ReplaceAll(constant, "rowsum[N: int32, ]", "rowsum[N: int32]")
	f, err := ast.Parse(constant)
	if err != nil {
		t.Fatalf("%v\n%s", err, constant)
	}
	if g := ast.InitEmptyReductions(f); g != f {
		t.Errorf("constant reduce extent: the function changed:\n%s", ast.Print(g))
	}
	f, err = ast.Parse(emptyReductionFuncs[0].src)
	if err != nil {
		t.Fatal(err)
	}
	text := ast.Print(ast.InitEmptyReductions(f))
	if !strings.Contains(text, "if (K <= 0)") || !strings.Contains(text, "ScheduleBlock(Y_empty)") {
		t.Errorf("symbolic reduce extent: want the init under if (K <= 0) in a block Y_empty:\n%s", text)
	}
}
