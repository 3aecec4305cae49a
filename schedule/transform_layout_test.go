package schedule

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

const layoutGemm = `func mm[M: int32, N: int32, K: int32](A: float32[M, K], B: float32[K, N], C: float32[M, N]) {
  ScheduleBlock(root) {
    serial for (i, 0, M) {
      serial for (j, 0, N) {
        serial for (k, 0, K) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, M), vj = spatial(0, N), vk = reduce(0, K))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
}`

// layoutChain is NCHW data through an intermediate T: the intermediate
// is what a layout may change.
const layoutChain = `func chain[N: int32, C: int32](X: float32[N, C, 5, 3], Y: float32[N, C, 5, 3]) {
  ScheduleBlock(root) {
    alloc T: float32[N, C, 5, 3]
    serial for (n, 0, N) {
      serial for (c, 0, C) {
        serial for (h, 0, 5) {
          serial for (w, 0, 3) {
            ScheduleBlock(T) {
              vn, vc, vh, vw = axis.bind(n, c, h, w)
              axis.domain(vn = spatial(0, N), vc = spatial(0, C), vh = spatial(0, 5), vw = spatial(0, 3))
              reads(X[vn, vc, vh, vw])
              writes(T[vn, vc, vh, vw])
              T[vn, vc, vh, vw] = X[vn, vc, vh, vw] * 2.0f
            }
          }
        }
      }
    }
    serial for (n2, 0, N) {
      serial for (c2, 0, C) {
        serial for (h2, 0, 5) {
          serial for (w2, 0, 3) {
            ScheduleBlock(Y) {
              vn, vc, vh, vw = axis.bind(n2, c2, h2, w2)
              axis.domain(vn = spatial(0, N), vc = spatial(0, C), vh = spatial(0, 5), vw = spatial(0, 3))
              reads(T[vn, vc, vh, 2 - vw])
              writes(Y[vn, vc, vh, vw])
              Y[vn, vc, vh, vw] = T[vn, vc, vh, 2 - vw] + 1.0f
            }
          }
        }
      }
    }
  }
}`

// TestTransformLayoutPacksACache: a matrix multiply reads B through a
// cache in panels of 16 columns (TVM's packed weights): with the validator
// on, at sizes the panel divides and does not (the padding filled), the
// cache moved next to its use; the results match the interpreter's.
func TestTransformLayoutPacksACache(t *testing.T) {
	f := mustParseFunc(t, layoutGemm)
	for _, padded := range []bool{false, true} {
		s, c, pack := gemmCache(t, f, false)
		var err error
		const layout = "k, j -> floordiv(j, 16), k, floormod(j, 16)"
		if padded {
			err = s.TransformLayoutPadded(pack, "B_global", layout, 0)
		} else {
			err = s.TransformLayout(pack, "B_global", layout)
			if errors.Is(err, ErrIllegal) && strings.Contains(err.Error(), "pads") {
				// N is symbolic: no factor is known to divide it.
				continue
			}
		}
		if err != nil {
			t.Fatalf("padded %v: %s", padded, Explain(err))
		}
		g := s.Func()
		text := ast.Print(g)
		if !strings.Contains(text, "B_global: float32[floordiv(N + 15, 16), K, 16]") {
			t.Errorf("the packed cache's shape is not [ceil(N/16), K, 16]:\n%s", text)
		}
		if !strings.Contains(text, "ScheduleBlock(B_global_pad)") {
			t.Errorf("no block fills the padding:\n%s", text)
		}
		for _, n := range []int64{0, 1, 15, 16, 17, 40} {
			checkSameResults(t, f, g, map[string]int64{"M": 3, "N": n, "K": 5})
		}
		// The packing stage writes through the map, which compute_at does
		// not invert: it refuses with the reason, not an internal error.
		ls, _ := s.GetLoops(c)
		pack, _ = s.GetBlock("B_global")
		if err := s.ComputeAt(pack, ls[1]); err == nil || errors.Is(err, ErrInternal) {
			t.Errorf("compute_at of the packing stage: %v", err)
		}
		// The loops over the output still tile, with the reads of the
		// panels through the map.
		if _, err := s.Split(ls[1], -1, 8); err != nil {
			t.Fatal(Explain(err))
		}
		for _, n := range []int64{1, 17, 40} {
			checkSameResults(t, f, s.Func(), map[string]int64{"M": 2, "N": n, "K": 3})
		}
	}
}

// TestTransformLayoutIntermediate: an intermediate buffer goes to NCHW4c
// (channels in blocks of 4, padded), to NHWC and back through two steps,
// with the validator on; every result matches the interpreter's, at
// channel counts 0, 1, 3, 4 and 9.
func TestTransformLayoutIntermediate(t *testing.T) {
	f := mustParseFunc(t, layoutChain)
	for _, steps := range [][]string{
		{"n, c, h, w -> n, floordiv(c, 4), h, w, floormod(c, 4)"},
		{"n, c, h, w -> n, h, w, c"},
		{"n, c, h, w -> n, h, w, c", "n, h, w, c -> w, floormod(h, 2), n, c, floordiv(h, 2)"},
		{"n, c, h, w -> floormod(w, 3), floordiv(w, 3), c, h, n"},
	} {
		s, err := New(f, WithValidation(true))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := s.GetBlock("Y")
		for _, layout := range steps {
			if err := s.TransformLayoutPadded(y, "T", layout, -1); err != nil {
				t.Fatalf("%s: %s", layout, Explain(err))
			}
		}
		for _, c := range []int64{0, 1, 3, 4, 9} {
			checkSameResults(t, f, s.Func(), map[string]int64{"N": 2, "C": c})
		}
		// The trace replays to the same function, through JSON and text.
		tr := s.Trace()
		data, err := tr.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseTrace(data)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Replay(f, back, nil)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if ast.Print(r.Func()) != ast.Print(s.Func()) {
			t.Errorf("%v: the replayed function differs", steps)
		}
		fromText, err := ParseTraceText(tr.String())
		if err != nil {
			t.Fatalf("trace text:\n%s\n%v", tr, err)
		}
		if r, err := Replay(f, fromText, nil); err != nil || ast.Print(r.Func()) != ast.Print(s.Func()) {
			t.Errorf("%v: the trace's text does not replay to the same function (%v)", steps, err)
		}
		if goSrc := tr.Go(); !strings.Contains(goSrc, "sch.TransformLayout") {
			t.Errorf("the Go form has no TransformLayout call:\n%s", goSrc)
		}
	}
}

// TestTransformLayoutRefuses: maps that are not one-to-one or onto, that
// name the wrong number of indices or are not maps at all, a parameter,
// and padding without a fill are refused with the reason, and the
// schedule is left as it was.
func TestTransformLayoutRefuses(t *testing.T) {
	f := mustParseFunc(t, layoutChain)
	for _, c := range []struct {
		buf, layout string
		padded      bool
		kind        error
		reason      string
	}{
		{"T", "n, c, h, w -> n, c, h", true, ErrArgument, "w is not in the new layout"},
		{"T", "n, c, h, w -> n, c, h, w, w", true, ErrArgument, "w appears more than once"},
		{"T", "n, c, h, w -> n, c, h, floordiv(w, 2)", true, ErrArgument, "floordiv(w, 2) without floormod"},
		{"T", "n, c, h, w -> n, c, h, floormod(w, 2)", true, ErrArgument, "floormod(w, 2) without floordiv"},
		{"T", "n, c, h, w -> n, c, h, floordiv(w, 2), floormod(w, 4)", true, ErrArgument, "different factors"},
		{"T", "n, c, h, w -> n, c + h, w", true, ErrArgument, "is not an old index"},
		{"T", "n, c, h, w -> n, c, h, floordiv(w, 0), floormod(w, 0)", true, ErrArgument, "is not an old index"},
		{"T", "n, c, h -> n, c, h", true, ErrArgument, "3 old indices for a buffer of 4"},
		{"T", "n, c, h, c -> n, c, h", true, ErrArgument, "named twice"},
		{"T", "n, c, h, w", true, ErrArgument, "want"},
		{"T", "n, c, h, w -> n, c, h, q", true, ErrArgument, "new index 4"},
		{"T", "n, c, h, w -> n, floordiv(c, 4), h, w, floormod(c, 4)", false, ErrIllegal, "give a fill value"},
		{"T", "n, c, h, w -> n, floordiv(h, 2), c, w, floormod(h, 2)", false, ErrIllegal, "pads T"},
		{"X", "n, c, h, w -> n, h, w, c", true, ErrIllegal, "parameter"},
		{"Q", "n, c, h, w -> n, h, w, c", true, ErrArgument, "does not access"},
		{"T", "n, c, h, w -> n, h, w, c", true, ErrArgument, "fill NaN: want a finite number"},
	} {
		s, err := New(f, WithValidation(true))
		if err != nil {
			t.Fatal(err)
		}
		before := ast.Print(s.Func())
		y, _ := s.GetBlock("T")
		if c.buf == "Q" || c.buf == "T" {
			y, _ = s.GetBlock("Y")
		}
		insts := len(s.Trace().Insts)
		if c.padded {
			fill := 0.0
			if strings.Contains(c.reason, "NaN") {
				fill = math.NaN()
			}
			err = s.TransformLayoutPadded(y, c.buf, c.layout, fill)
		} else {
			err = s.TransformLayout(y, c.buf, c.layout)
		}
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.reason) || !strings.Contains(err.Error(), "transform_layout") {
			t.Errorf("%s of %s: got %v, want a %v saying %q", c.layout, c.buf, err, c.kind, c.reason)
		}
		if ast.Print(s.Func()) != before || len(s.Trace().Insts) != insts {
			t.Errorf("%s of %s: the refused step changed the schedule", c.layout, c.buf)
		}
	}
}

// TestTransformLayoutPadsThePadding: the nests that fill the padding
// write every cell of the new layout that holds no cell of the old one,
// and no other, at extents the factors divide and do not, with one, two
// and three split dimensions (run alone, on a buffer of NaN).
func TestTransformLayoutPadsThePadding(t *testing.T) {
	old := ast.NewBuffer("T", ast.Float32, ast.NewVar("A", ast.Int32), ast.NewVar("B", ast.Int32), ast.I32(5))
	for _, layout := range []string{
		"a, b, c -> floordiv(a, 4), b, c, floormod(a, 4)",
		"a, b, c -> floormod(b, 3), floordiv(a, 2), floordiv(b, 3), c, floormod(a, 2)",
		"a, b, c -> floordiv(c, 2), floordiv(a, 3), floordiv(b, 2), floormod(b, 2), floormod(c, 2), floormod(a, 3)",
	} {
		m, err := parseLayout(layout, old)
		if err != nil {
			t.Fatal(err)
		}
		shape, _ := m.shape(old)
		nb := &ast.Buffer{Name: "T", DType: ast.Float32, Shape: shape}
		f := &ast.Func{Name: "pad", Sizes: []*ast.Var{old.Shape[0].(*ast.Var), old.Shape[1].(*ast.Var)}, Params: []*ast.Buffer{nb}}
		f.Body = &ast.ScheduleBlock{Name: "root", Body: &ast.Seq{Stmts: padBlocks(f, nb, old, m, 7)}}
		if err := ast.Verify(f); err != nil {
			t.Fatalf("%s: %v\n%s", layout, err, ast.Print(f))
		}
		for _, a := range []int64{1, 4, 6} {
			for _, b := range []int64{2, 3, 7} {
				sizes := map[string]int64{"A": a, "B": b}
				data, err := ast.NewData(nb, sizes)
				if err != nil {
					t.Fatal(err)
				}
				cells := data.([]float32)
				for i := range cells {
					cells[i] = float32(math.NaN())
				}
				if err := ast.Interpret(f, sizes, map[string]any{"T": cells}); err != nil {
					t.Fatalf("%s at %v: %v", layout, sizes, err)
				}
				// Walk the new layout's cells in row-major order and
				// take each back to its old indices.
				ext := make([]int64, len(shape))
				for k, e := range shape {
					v, _ := ast.ConstIntValue(ast.Simplify(ast.Substitute(e, map[string]ast.Expr{"A": ast.I32(int32(a)), "B": ast.I32(int32(b))})))
					ext[k] = v
				}
				oldExt := []int64{a, b, 5}
				idx := make([]int64, len(ext))
				for i := range cells {
					x := make([]int64, 3)
					for k, d := range m.dims {
						switch {
						case d.factor == 0:
							x[d.src] += idx[k]
						case d.inner:
							x[d.src] += idx[k]
						default:
							x[d.src] += idx[k] * d.factor
						}
					}
					padding := x[0] >= oldExt[0] || x[1] >= oldExt[1] || x[2] >= oldExt[2]
					if written := cells[i] == 7; written != padding {
						t.Fatalf("%s at %v: cell %v (old %v) padding %v, written %v", layout, sizes, idx, x, padding, written)
					}
					for k := len(idx) - 1; k >= 0; k-- {
						if idx[k]++; idx[k] < ext[k] {
							break
						}
						idx[k] = 0
					}
				}
			}
		}
	}
}

// FuzzTransformLayout: any layout text, padded or not, on the cache of a
// matrix multiply and on the intermediate of layoutChain, is taken (and
// keeps the interpreter's results) or refused with a typed error that
// names transform_layout and leaves the schedule as it was; never a
// panic, never an internal error.
func FuzzTransformLayout(f *testing.F) {
	for _, s := range []string{
		"k, j -> floordiv(j, 16), k, floormod(j, 16)",
		"n, c, h, w -> n, floordiv(c, 4), h, w, floormod(c, 4)",
		"n, c, h, w -> w, h, c, n",
		"a, b -> floormod(a, 0), floordiv(a, 0), b",
		"a, b -> floordiv(a, -2), floormod(a, -2), b",
		"a, b -> floordiv(floordiv(a, 2), 2), floormod(a, 4), b",
		"a, b -> a + b, b", "a, b -> ", "-> a", "a -> a -> a", "a, b -> (a, b",
		"a, b -> floordiv(a, 9223372036854775807), floormod(a, 9223372036854775807), b",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	gemm := mustParseFunc(f, layoutGemm)
	chain := mustParseFunc(f, layoutChain)
	f.Fuzz(func(t *testing.T, layout string, padded bool) {
		for _, c := range []struct {
			f          *ast.Func
			block, buf string
			cache      bool
			sizes      map[string]int64
		}{
			{gemm, "C", "B", true, map[string]int64{"M": 2, "N": 3, "K": 2}},
			{chain, "Y", "T", false, map[string]int64{"N": 1, "C": 3}},
		} {
			s, err := New(c.f, WithValidation(true))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := s.GetBlock(c.block)
			buf := c.buf
			if c.cache {
				if b, err = s.CacheRead(b, c.buf, "global"); err != nil {
					t.Fatal(err)
				}
				buf = c.buf + "_global"
			}
			before := ast.Print(s.Func())
			if padded {
				err = s.TransformLayoutPadded(b, buf, layout, 0)
			} else {
				err = s.TransformLayout(b, buf, layout)
			}
			if err != nil {
				if errors.Is(err, ErrInternal) || !strings.Contains(err.Error(), "transform_layout") || ast.Print(s.Func()) != before {
					t.Fatalf("%q: %v", layout, err)
				}
				continue
			}
			checkSameResults(t, c.f, s.Func(), c.sizes)
		}
	})
}

// TestTransformLayoutFillsOfOtherTypes: an int32 intermediate is padded
// with a whole number and keeps its results; a fill it cannot hold is
// refused.
func TestTransformLayoutFillsOfOtherTypes(t *testing.T) {
	src := strings.NewReplacer("float32", "int32", "2.0f", "2", "1.0f", "1").Replace(layoutChain)
	f := mustParseFunc(t, src)
	const layout = "n, c, h, w -> n, floordiv(c, 4), h, w, floormod(c, 4)"
	for _, c := range []struct {
		fill float64
		ok   bool
	}{{7, true}, {-3, true}, {2.5, false}, {1 << 40, false}} {
		s, err := New(f, WithValidation(true))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := s.GetBlock("Y")
		err = s.TransformLayoutPadded(y, "T", layout, c.fill)
		switch {
		case c.ok && err != nil:
			t.Fatalf("fill %g: %s", c.fill, Explain(err))
		case !c.ok && !errors.Is(err, ErrArgument):
			t.Errorf("fill %g: got %v, want a refusal", c.fill, err)
		case c.ok:
			for _, n := range []int64{1, 5} {
				checkSameResults(t, f, s.Func(), map[string]int64{"N": 2, "C": n})
			}
		}
	}
}

// TestTransformLayoutOfAWriteCache: a matrix multiply accumulates in a
// write cache stored in panels of 8 columns (padded), copied back to C
// in its own layout; the results match the interpreter's where the panel
// divides the columns and where it does not. The copy back reads through
// the map, which reverse_compute_at does not invert: it refuses with the
// reason, and the row loop still splits.
func TestTransformLayoutOfAWriteCache(t *testing.T) {
	f := mustParseFunc(t, layoutGemm)
	s, c, back := gemmCache(t, f, true)
	if err := s.TransformLayoutPadded(c, "C_global", "i, j -> floordiv(j, 8), i, floormod(j, 8)", 0); err != nil {
		t.Fatal(Explain(err))
	}
	for _, n := range []int64{0, 1, 8, 13} {
		checkSameResults(t, f, s.Func(), map[string]int64{"M": 3, "N": n, "K": 4})
	}
	ls, _ := s.GetLoops(c)
	if err := s.ReverseComputeAt(back, ls[0]); err == nil || errors.Is(err, ErrInternal) {
		t.Errorf("reverse_compute_at of the copy back: %v", err)
	}
	if _, err := s.Split(ls[0], -1, 2); err != nil {
		t.Fatal(Explain(err))
	}
	for _, n := range []int64{1, 13} {
		checkSameResults(t, f, s.Func(), map[string]int64{"M": 2, "N": n, "K": 3})
	}
}

// gemmCache returns a validated schedule of matrix multiply f with B read
// through a global cache (write: C written through one), block C and the
// cache's copy block.
func gemmCache(t *testing.T, f *ast.Func, write bool) (*Schedule, Block, Block) {
	t.Helper()
	s, err := New(f, WithValidation(true))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.GetBlock("C")
	var copyBlock Block
	if write {
		copyBlock, err = s.CacheWrite(c, "C", "global")
	} else {
		copyBlock, err = s.CacheRead(c, "B", "global")
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, c, copyBlock
}
