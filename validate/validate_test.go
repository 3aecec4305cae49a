package validate_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/validate"
)

// The functions below are written by hand the way a broken primitive
// would write them; each names the question that must catch it.

const rowSums = `func rowsum(X: float32[8, 6], Y: float32[8]) {
  ScheduleBlock(root) {
    serial for (i, 0, 8) {
      serial for (k, 0, 6) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, 8), vk = reduce(0, 6))
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
}`

const producerConsumer = `func pc[N: int32](X: float32[N], Z: float32[N]) {
  ScheduleBlock(root) {
    alloc Y: float32[N]
    serial for (i, 0, N) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, N))
        reads(X[vi])
        writes(Y[vi])
        Y[vi] = X[vi] * 2.0f
      }
    }
    serial for (j, 0, N) {
      ScheduleBlock(Z) {
        vj = axis.bind(j)
        axis.domain(vj = spatial(0, N))
        reads(Y[vj])
        writes(Z[vj])
        Z[vj] = Y[vj] + 1.0f
      }
    }
  }
}`

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, before string
		// edit turns the function's text into the step's result.
		edit     func(string) string
		question string // "" when the step is correct
	}{
		{"identity", rowSums, func(s string) string { return s }, ""},
		{"split with tail guarded", producerConsumer, func(s string) string {
			s = strings.Replace(s, "reads(X[vi])", "predicate(io * 4 + ii < N)\n        reads(X[vi])", 1)
			return closeLoop(strings.Replace(s, `serial for (i, 0, N) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)`, `serial for (io, 0, floordiv(N + 3, 4)) { serial for (ii, 0, 4) {
      ScheduleBlock(Y) {
        vi = axis.bind(io * 4 + ii)`, 1), closeY)
		}, ""},
		{"split with the tail dropped", producerConsumer, func(s string) string {
			return closeLoop(strings.Replace(s, `serial for (i, 0, N) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)`, `serial for (io, 0, floordiv(N, 4)) { serial for (ii, 0, 4) {
      ScheduleBlock(Y) {
        vi = axis.bind(io * 4 + ii)`, 1), closeY)
		}, "instances"},
		{"split with the tail unguarded", producerConsumer, func(s string) string {
			return closeLoop(strings.Replace(s, `serial for (j, 0, N) {
      ScheduleBlock(Z) {
        vj = axis.bind(j)
        axis.domain(vj = spatial(0, N))`, `serial for (jo, 0, floordiv(N + 3, 4)) { serial for (ji, 0, 4) {
      ScheduleBlock(Z) {
        vj = axis.bind(jo * 4 + ji)
        axis.domain(vj = spatial(0, N + 3))`, 1), closeZ)
		}, "bounds"},
		{"consumer first", producerConsumer, func(s string) string {
			y := s[strings.Index(s, "    serial for (i"):strings.Index(s, "    serial for (j")]
			return strings.Replace(strings.Replace(s, y, "", 1), "  }\n}", y+"  }\n}", 1)
		}, "order"},
		{"reduction rows in parallel", rowSums, func(s string) string {
			return strings.Replace(s, "serial for (i", "parallel for (i", 1)
		}, ""},
		{"reduction run twice", rowSums, func(s string) string {
			return strings.Replace(s, "serial for (i, 0, 8) {", "serial for (r, 0, 2) { serial for (i, 0, 8) {", 1) + "}"
		}, "instances"},
		{"reduction reversed", rowSums, func(s string) string {
			return strings.Replace(s, "vi, vk = axis.bind(i, k)", "vi, vk = axis.bind(i, 5 - k)", 1)
		}, "order"},
		{"inlined store loses its predicate", triangle, func(s string) string {
			// reverse_compute_inline of the predicated T into the cache
			// of X, as the long run found it: T is written over the whole
			// square.
			return strings.Replace(strings.Replace(s, "          predicate(i + j < N)\n", "", 1), "ScheduleBlock(T)", "ScheduleBlock(X_local)", 1)
		}, "outputs"},
		{"output no longer written", triangle, func(s string) string {
			// Renamed, the block is outside the instances question.
			s = strings.Replace(s, "ScheduleBlock(T)", "ScheduleBlock(T_1)", 1)
			return strings.Replace(s, "predicate(i + j < N)", "predicate(i + j < N - 1)", 1)
		}, "outputs"},
		{"new layout", producerConsumer, func(s string) string {
			return relayout(s, "floordiv(N + 3, 4), 4", "floordiv(%s, 4), floormod(%s, 4)", "floordiv(%s, 4), floormod(%s, 4)")
		}, ""},
		{"new layout read through another map", producerConsumer, func(s string) string {
			return relayout(s, "floordiv(N + 3, 4), 4", "floordiv(%s, 4), floormod(%s, 4)", "floordiv(%s, 4), 3 - floormod(%s, 4)")
		}, "layout"},
		{"new layout that puts cells together", producerConsumer, func(s string) string {
			return relayout(s, "floordiv(N + 1, 2)", "floordiv(%s, 2)", "floordiv(%s, 2)")
		}, "layout"},
		{"copy back over the box from a filled cache", triangle, func(string) string {
			return triangleCacheWrite(`T_shared[v0, v1] = T[v0, v1]`)
		}, ""},
		{"copy back over the box from an unfilled cache", triangle, func(string) string {
			return triangleCacheWrite(`T_shared[v0, v1] = X[v0, v1]`)
		}, "outputs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := parse(t, c.before)
			g := parse(t, c.edit(c.before))
			err := validate.Check(f, g)
			var ve *validate.Error
			switch {
			case c.question == "" && err != nil:
				t.Fatalf("a correct step is rejected: %v", err)
			case c.question != "" && !errors.As(err, &ve):
				t.Fatalf("the step is accepted (%v), want a rejection by the %s question\n%s", err, c.question, ast.Print(g))
			case c.question != "" && ve.Question != c.question:
				t.Fatalf("rejected by the %s question, want %s: %v", ve.Question, c.question, err)
			}
		})
	}
}

// triangle writes T, an argument, on the triangle i + j < N only: the
// rest of T keeps what the caller put there.
const triangle = `func tri[N: int32](X: float32[N, N], T: float32[N, N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (j, 0, N) {
        ScheduleBlock(T) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = spatial(0, N))
          predicate(i + j < N)
          reads(X[vi, vj])
          writes(T[vi, vj])
          T[vi, vj] = X[vi, vj] * 3.0f
        }
      }
    }
  }
}`

// triangleCacheWrite is cache_write(T, "T", "shared") of triangle: the
// cache starts as fill says, T's block writes its triangle of the cache,
// and the copy back writes the whole square of T.
func triangleCacheWrite(fill string) string {
	return `func tri[N: int32](X: float32[N, N], T: float32[N, N]) {
  ScheduleBlock(root) {
    alloc T_shared: float32[N, N] in shared
    serial for (a0, 0, N) {
      serial for (a1, 0, N) {
        ScheduleBlock(T_shared_fill) {
          v0, v1 = axis.bind(a0, a1)
          axis.domain(v0 = spatial(0, N), v1 = spatial(0, N))
          reads(T[v0, v1], X[v0, v1])
          writes(T_shared[v0, v1])
          ` + fill + `
        }
      }
    }
    serial for (i, 0, N) {
      serial for (j, 0, N) {
        ScheduleBlock(T) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = spatial(0, N))
          predicate(i + j < N)
          reads(X[vi, vj])
          writes(T_shared[vi, vj])
          T_shared[vi, vj] = X[vi, vj] * 3.0f
        }
      }
    }
    serial for (b0, 0, N) {
      serial for (b1, 0, N) {
        ScheduleBlock(T_shared_1) {
          v0, v1 = axis.bind(b0, b1)
          axis.domain(v0 = spatial(0, N), v1 = spatial(0, N))
          reads(T_shared[v0, v1])
          writes(T[v0, v1])
          T[v0, v1] = T_shared[v0, v1]
        }
      }
    }
  }
}`
}

// closeY and closeZ end the nests of Y and Z in producerConsumer; a split
// adds a loop, and closeLoop its brace.
const (
	closeY = "    }\n    serial for (j"
	closeZ = "    }\n  }\n}"
)

func closeLoop(s, end string) string {
	i := strings.LastIndex(s, end)
	return s[:i] + "    }" + s[i:]
}

func TestUnsupported(t *testing.T) {
	f := parse(t, rowSums)
	// A load in a loop bound is outside the model.
	g := parse(t, strings.Replace(rowSums, "func rowsum(X: float32[8, 6], Y: float32[8])", "func rowsum(X: float32[8, 6], Y: float32[8], E: int32[1])", 1))
	g = parse(t, strings.Replace(strings.Replace(ast.Print(g), "serial for (k, 0, 6)", "serial for (k, 0, min(E[0], 6))", 1), "ScheduleBlock(root) {", "ScheduleBlock(root) {\n reads(E[0])", 1))
	if err := validate.Check(f, g); !errors.Is(err, validate.ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
}

func parse(t *testing.T, src string) *ast.Func {
	t.Helper()
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return f
}

// A step that runs the consumer before its producer is rejected, with the
// pair of instances that witnesses it.
func Example() {
	before, _ := ast.Parse(producerConsumer)
	// Swap the two nests.
	after, _ := ast.Parse(`func pc[N: int32](X: float32[N], Z: float32[N]) {
  ScheduleBlock(root) {
    alloc Y: float32[N]
    serial for (j, 0, N) {
      ScheduleBlock(Z) {
        vj = axis.bind(j)
        axis.domain(vj = spatial(0, N))
        reads(Y[vj])
        writes(Z[vj])
        Z[vj] = Y[vj] + 1.0f
      }
    }
    serial for (i, 0, N) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, N))
        reads(X[vi])
        writes(Y[vi])
        Y[vi] = X[vi] * 2.0f
      }
    }
  }
}`)
	fmt.Println(validate.Check(before, after))
	// Output:
	// validate: order of block Z: block Z(vj=0) reads what block Y(vi=0) writes in buffer Y, but no longer runs after it (RAW)
}

// haloBefore and haloTiled are a producer recomputed per tile with a halo
// the tile does not compute: tile o computes Y[2o .. 2o+2] and reads
// Y[2o-1 .. 2o+1], whose first element only tile o-1 writes. Run in
// order, every read finds a write before it; with the tiles in parallel,
// the read of Y[2o-1] races with tile o-1.
const haloBefore = `func halo(X: float32[8], Z: float32[7]) {
  ScheduleBlock(root) {
    alloc Y: float32[8]
    serial for (i, 0, 8) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 8))
        reads(X[vi])
        writes(Y[vi])
        Y[vi] = X[vi] * 2.0f
      }
    }
    serial for (j, 0, 7) {
      ScheduleBlock(Z) {
        vj = axis.bind(j)
        axis.domain(vj = spatial(0, 7))
        reads(Y[vj], Y[vj + 1])
        writes(Z[vj])
        Z[vj] = Y[vj] + Y[vj + 1]
      }
    }
  }
}`

const haloTiled = `func halo(X: float32[8], Z: float32[7]) {
  ScheduleBlock(root) {
    alloc Y: float32[8]
    serial for (o, 0, 4) {
      serial for (a, 0, 3) {
        ScheduleBlock(Y) {
          vi = axis.bind(o * 2 + a)
          axis.domain(vi = spatial(0, 8))
          predicate(o * 2 + a < 8)
          reads(X[vi])
          writes(Y[vi])
          Y[vi] = X[vi] * 2.0f
        }
      }
      serial for (b, 0, 2) {
        ScheduleBlock(Z) {
          vj = axis.bind(o * 2 + b - 1)
          axis.domain(vj = spatial(0, 7))
          predicate(o * 2 + b - 1 >= 0 && o * 2 + b - 1 < 7)
          reads(Y[vj], Y[vj + 1])
          writes(Z[vj])
          Z[vj] = Y[vj] + Y[vj + 1]
        }
      }
    }
  }
}`

// TestRecomputedHaloInParallel checks the order question on a recomputed
// producer whose reads are served by an earlier iteration of a loop
// around both: right when that loop runs in order, a race when it runs in
// parallel (from the unscheduled function, and from the tiled one, a step
// that changes only the loop's kind).
func TestRecomputedHaloInParallel(t *testing.T) {
	f, tiled := parse(t, haloBefore), parse(t, haloTiled)
	if err := validate.Check(f, tiled); err != nil {
		t.Fatalf("the tiles in order are rejected: %v", err)
	}
	par := parse(t, strings.Replace(haloTiled, "serial for (o", "parallel for (o", 1))
	for _, from := range []*ast.Func{f, tiled} {
		var ve *validate.Error
		if err := validate.Check(from, par); !errors.As(err, &ve) || ve.Question != "order" {
			t.Errorf("from %s: the tiles in parallel: got %v, want a rejection by the order question", from.Name, err)
		}
	}
}

// TestMovedStore: reverse_compute_inline moved a consumer's store into its
// producer, which the step left before the fill of a cache_write; the fill
// then overwrote the moved values (the long run's chain_sym, seed 145).
// The removed block's dependences on the buffer it wrote pass to the host
// of its store, so the order question sees the fill run after it.
func TestMovedStore(t *testing.T) {
	read := func(name string) *ast.Func {
		src, err := os.ReadFile("../testdata/validate/" + name + ".loom")
		if err != nil {
			t.Fatal(err)
		}
		return parse(t, string(src))
	}
	before := read("inline_after_fill")
	err := validate.Check(before, read("inline_after_fill_wrong"))
	var ve *validate.Error
	if !errors.As(err, &ve) || ve.Question != "order" || !strings.Contains(ve.Reason, "removed by the step") {
		t.Fatalf("the store moved before the fill is accepted or rejected for another reason: %v", err)
	}
	t.Log(err)
	if err := validate.Check(before, read("inline_after_fill_right")); err != nil {
		t.Fatalf("the store moved after the fill is rejected: %v", err)
	}
}

// relayout gives producerConsumer's Y the shape shape, written at the
// indices write and read at the indices read (formats of the iteration
// variable).
func relayout(s, shape, write, read string) string {
	at := func(format, v string) string { return strings.ReplaceAll(format, "%s", v) }
	s = strings.Replace(s, "alloc Y: float32[N]", "alloc Y: float32["+shape+"]", 1)
	s = strings.ReplaceAll(s, "Y[vi]", "Y["+at(write, "vi")+"]")
	return strings.ReplaceAll(s, "Y[vj]", "Y["+at(read, "vj")+"]")
}
