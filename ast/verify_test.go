package ast_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// TestVerifyBuiltIR covers mistakes that only IR built in Go can make: the
// parser resolves names itself and cannot produce them.
func TestVerifyBuiltIR(t *testing.T) {
	A := ast.NewBuffer("A", ast.Float32, ast.I32(4))
	i := ast.NewVar("i", ast.Int32)
	loop := func(body ast.Stmt) *ast.Func {
		return &ast.Func{Name: "f", Params: []*ast.Buffer{A}, Body: ast.NewFor(i, ast.I32(0), ast.I32(4), body)}
	}
	other := ast.NewBuffer("A", ast.Float32, ast.I32(4)) // same name, another declaration
	cases := []struct {
		name string
		f    *ast.Func
		msg  string
	}{
		{"nil body", &ast.Func{Name: "f"}, "function f has no body"},
		{"nil loop body", loop(nil), "missing loop body"},
		{"undeclared buffer", loop(ast.NewStore(ast.NewBuffer("Z", ast.Float32, ast.I32(4)), ast.F32(1), i)),
			"buffer Z is not declared here: it is neither a parameter nor allocated in an enclosing statement list"},
		{"another declaration", loop(ast.NewStore(other, ast.F32(1), i)), "buffer A here is not the buffer A declared in scope"},
		{"var type", loop(ast.NewStore(A, ast.F32(1), ast.NewVar("i", ast.Int64))), "variable i is used as int64 but defined as int32"},
		{"float32 not exact", loop(ast.NewStore(A, &ast.Const{DType: ast.Float32, Float: 0.1}, i)), "constant 0.1 is not exactly representable as float32"},
		{"int32 out of range", loop(ast.NewStore(A, ast.F32(1), ast.IntConst(ast.Int32, 1<<40))), "constant 1099511627776 is out of the int32 range"},
		{"bad annotation", &ast.Func{Name: "f", Params: []*ast.Buffer{A}, Body: &ast.For{Var: i, Min: ast.I32(0), Extent: ast.I32(4), Annotations: ast.Annotations{"x": 3}, Body: &ast.Seq{}}},
			`annotation "x": value of type int (want int64, float64, string or bool)`},
		{"nan annotation", &ast.Func{Name: "f", Params: []*ast.Buffer{A}, Body: &ast.For{Var: i, Min: ast.I32(0), Extent: ast.I32(4), Annotations: ast.Annotations{"x": math.NaN()}, Body: &ast.Seq{}}},
			`annotation "x": NaN is not a finite number`},
		{"bad name", &ast.Func{Name: "my func", Body: &ast.Seq{}}, `function name "my func" is not an identifier`},
		{"nil in seq", &ast.Func{Name: "f", Body: &ast.Seq{Stmts: []ast.Stmt{nil}}}, "nil statement in a sequence"},
		{"param named like a size", &ast.Func{Name: "f", Sizes: []*ast.Var{ast.NewVar("A", ast.Int32)}, Params: []*ast.Buffer{A}, Body: &ast.Seq{}},
			"parameter A has the name of a symbolic size (both are arguments of the compiled kernel)"},
		{"nil operand", loop(ast.NewStore(A, ast.Add(ast.F32(1), nil), i)), "missing expression"},
		{"loop var type", &ast.Func{Name: "f", Body: ast.NewFor(ast.NewVar("i", ast.Int64), ast.I32(0), ast.I32(4), &ast.Seq{})},
			"loop variable i has type int64 but its extent has type int32"},
		{"float loop", &ast.Func{Name: "f", Body: ast.NewFor(ast.NewVar("x", ast.Float32), ast.F32(0), ast.F32(4), &ast.Seq{})},
			"loop bounds have types float32 and float32; they must be the same integer type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ast.Verify(c.f)
			if !errors.Is(err, ast.ErrInvalid) {
				t.Fatalf("got %v, want an error wrapping ErrInvalid", err)
			}
			if got := strings.TrimPrefix(err.Error(), "ast: verify: "); got != c.msg {
				t.Errorf("message:\n got %s\nwant %s", got, c.msg)
			}
			// Printing an ill-formed function must not fail either.
			_ = ast.Explain(c.f, err)
		})
	}
}

func TestVerifyCorpus(t *testing.T) {
	for _, c := range workload.All() {
		if err := ast.Verify(c.Func); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
}

func TestVerifyCrossThreadReduction(t *testing.T) {
	// A reduce variable bound to threadIdx is a cross-thread reduction, which
	// the GPU code generator implements; it is well formed.
	_, err := ast.Parse(`func f(A: float32[32], C: float32[1]) {
  ScheduleBlock(root) {
    bind(threadIdx.x) for (t, 0, 32) {
      ScheduleBlock(C) {
        v, vk = axis.bind(0, t)
        axis.domain(v = spatial(0, 1), vk = reduce(0, 32))
        reads(C[v], A[vk])
        writes(C[v])
        init {
          C[v] = 0.0f
        }
        C[v] = C[v] + A[vk]
      }
    }
  }
}
`)
	if err != nil {
		t.Fatal(err)
	}
}

func TestBuilderErrors(t *testing.T) {
	b := ast.NewBuilder("f")
	A := b.Placeholder("A", ast.Float32, ast.I32(4))
	b.Placeholder("A", ast.Float32, ast.I32(4))
	if _, err := b.Build(A); err == nil || !strings.Contains(err.Error(), "name A is used twice") {
		t.Errorf("got %v", err)
	}

	b = ast.NewBuilder("f")
	X := b.Placeholder("X", ast.Int32, ast.I32(4))
	k := b.ReduceAxis("k", ast.I32(4))
	m := b.Mean("M", nil, []*ast.Var{k}, func([]ast.Expr) ast.Expr { return X.At(k) })
	if _, err := b.Build(m); err == nil || !strings.Contains(err.Error(), "a mean needs floating-point values") {
		t.Errorf("got %v", err)
	}

	// A type error in a body is reported by Build with the IR marked.
	b = ast.NewBuilder("f")
	X = b.Placeholder("X", ast.Float32, ast.I32(4))
	Y := b.Compute("Y", ast.Shape(4), func(i []ast.Expr) ast.Expr { return ast.Add(X.At(i...), i[0]) })
	_, err := b.Build(Y)
	if !errors.Is(err, ast.ErrInvalid) || !strings.Contains(err.Error(), "operands of + have types float32 and int32") || !strings.Contains(err.Error(), "^") {
		t.Errorf("got %v", err)
	}
}

// TestVerifyNestedBindingLoads: a load in a nested block's binding runs in
// the enclosing block, so the enclosing block must declare it, as the
// interpreter checks.
func TestVerifyNestedBindingLoads(t *testing.T) {
	_, err := ast.Parse(`func gather(Idx: int32[4], A: float32[8], B: float32[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      ScheduleBlock(B) {
        vi, vj = axis.bind(i, Idx[i])
        axis.domain(vi = spatial(0, 4), vj = spatial(0, 8))
        reads(A[vj])
        writes(B[vi])
        B[vi] = A[vj]
      }
    }
  }
}
`)
	if err == nil || err.Error() != "5:31: block root reads Idx, but Idx is not in its reads" {
		t.Errorf("got %v", err)
	}
}

func TestBuilderArity(t *testing.T) {
	b := ast.NewBuilder("f")
	A := b.Placeholder("A", ast.Float32, ast.I32(4), ast.I32(4))
	C := b.Compute("C", ast.Shape(4), func(i []ast.Expr) ast.Expr { return A.At(i[0]) })
	_, err := b.Build(C)
	if err == nil || err.Error() != "ast: build f: compute C: A has 2 dimensions but is indexed with 1 index" {
		t.Errorf("got %v", err)
	}
}

func TestParseExprNilScope(t *testing.T) {
	if _, err := ast.ParseExpr("1", (*ast.Var)(nil)); err == nil {
		t.Error("no error for a nil variable in the scope")
	}
}

// TestParseDeepChain: nested parenthesized chains build a tree far deeper
// than their parenthesis nesting; the parser refuses it quickly instead of
// handing later passes a tree they would take quadratic time over.
func TestParseDeepChain(t *testing.T) {
	var b strings.Builder
	for k := 0; k < 400; k++ {
		b.WriteString("(")
	}
	b.WriteString("i")
	for k := 0; k < 400; k++ {
		b.WriteString(strings.Repeat(" + i", 500) + ")")
	}
	_, err := ast.ParseExpr(b.String(), ast.NewVar("i", ast.Int32))
	if err == nil || !strings.Contains(err.Error(), "expression nested deeper than 1000 levels") {
		t.Errorf("got %v", err)
	}
}

// TestVerifyParallelOwnsRows: a reduce variable bound through a parallel
// loop x is no race when the block's row, x·4 plus a loop inside x, stays
// within x's step (the inner loop of extent 4: each x its own rows); with
// an inner loop of extent 5 two iterations of x share row 4x+4 and the
// verifier says so.
func TestVerifyParallelOwnsRows(t *testing.T) {
	src := `func f(A: float32[16, 16], C: float32[16]) {
  ScheduleBlock(root) {
    parallel for (x, 0, 3) {
      serial for (y, 0, EXT) {
        serial for (k, 0, 2) {
          ScheduleBlock(C) {
            vi, vk = axis.bind(x * 4 + y, k * 4 + x)
            axis.domain(vi = spatial(0, 16), vk = reduce(0, 16))
            reads(C[vi], A[vi, vk])
            writes(C[vi])
            init {
              C[vi] = 0.0f
            }
            C[vi] = C[vi] + A[vi, vk]
          }
        }
      }
    }
  }
}
`
	if _, err := ast.Parse(strings.ReplaceAll(src, "EXT", "4")); err != nil {
		t.Errorf("rows within the parallel loop's step: %v", err)
	}
	if _, err := ast.Parse(strings.ReplaceAll(src, "EXT", "5")); err == nil || !strings.Contains(err.Error(), "would race on the reduction") {
		t.Errorf("rows shared by two iterations of the parallel loop: %v, want a race", err)
	}
	// Symbolic: row x·4E + y·4 + z with y < E, z < 4 stays within x's
	// step (E = floordiv(N + 3, 4)); with y < E + 1 it does not.
	sym := `func f[N: int32](A: float32[N, 16], C: float32[N]) {
  ScheduleBlock(root) {
    parallel for (x, 0, 2) {
      serial for (y, 0, EXT) {
        serial for (z, 0, 4) {
          serial for (k, 0, 2) {
            ScheduleBlock(C) {
              vi, vk = axis.bind(floordiv(N + 3, 4) * x * 4 + y * 4 + z, k * 4 + x)
              axis.domain(vi = spatial(0, N), vk = reduce(0, 16))
              predicate(floordiv(N + 3, 4) * x * 4 + y * 4 + z < N)
              reads(C[vi], A[vi, vk])
              writes(C[vi])
              init {
                C[vi] = 0.0f
              }
              C[vi] = C[vi] + A[vi, vk]
            }
          }
        }
      }
    }
  }
}
`
	if _, err := ast.Parse(strings.ReplaceAll(sym, "EXT", "floordiv(N + 3, 4)")); err != nil {
		t.Errorf("symbolic rows within the parallel loop's step: %v", err)
	}
	if _, err := ast.Parse(strings.ReplaceAll(sym, "EXT", "floordiv(N + 3, 4) + 1")); err == nil || !strings.Contains(err.Error(), "would race on the reduction") {
		t.Errorf("symbolic rows shared by two iterations: %v, want a race", err)
	}
}
