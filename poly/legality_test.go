package poly

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

func mustExtract(t *testing.T, src string) *Program {
	t.Helper()
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Extract(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRegion(t *testing.T) {
	p := mustExtract(t, `func f(A: float32[31], C: float32[30]) {
  ScheduleBlock(root) {
    alloc B: float32[31]
    serial for (i, 0, 31) {
      ScheduleBlock(B) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 31))
        reads(A[vi])
        writes(B[vi])
        B[vi] = A[vi] * 2.0f
      }
    }
    serial for (io, 0, 4) {
      serial for (ii, 0, 8) {
        ScheduleBlock(C) {
          vi = axis.bind(io * 8 + ii)
          axis.domain(vi = spatial(0, 30))
          predicate(io * 8 + ii < 30)
          reads(B[vi:+2])
          writes(C[vi])
          C[vi] = B[vi] + B[vi + 1]
        }
      }
    }
  }
}
`)
	loops := loopsByName(p.Func)
	var B *ast.Buffer
	ast.Inspect(p.Func.Body, func(n ast.Node) bool {
		if a, ok := n.(*ast.Alloc); ok {
			B = a.Buffer
		}
		return true
	})
	for _, c := range []struct {
		loop     string
		lo, hi   string
		exactAll bool
	}{
		{"io", "8io", "min(30, 8io + 8)", true},
		{"ii", "8io + ii", "8io + ii + 1", true},
	} {
		r, err := p.Region("C", B, loops[c.loop], false)
		if err != nil {
			t.Fatal(err)
		}
		if got := r[0].Lo.String() + " " + r[0].Hi.String(); got != c.lo+" "+c.hi || r[0].Lo.Exact != c.exactAll || r[0].Hi.Exact != c.exactAll {
			t.Errorf("region of B in C at loop %s: %s (exact %v %v), want %s %s", c.loop, got, r[0].Lo.Exact, r[0].Hi.Exact, c.lo, c.hi)
		}
	}
	if _, err := p.Region("C", B, loops["i"], false); err == nil {
		t.Error("no error for a loop that is not around the block")
	}
	if _, err := p.Region("Z", B, loops["io"], false); err == nil {
		t.Error("no error for an unknown block")
	}
}

const jacobi = `func jacobi1d(A: float32[10], B: float32[10]) {
  ScheduleBlock(root) {
    serial for (t, 0, 3) {
      serial for (i, 1, 8) {
        ScheduleBlock(S) {
          vt, vi = axis.bind(t, i)
          axis.domain(vt = spatial(0, 3), vi = spatial(1, 8))
          reads(A[vi - 1:+3])
          writes(B[vi])
          B[vi] = (A[vi - 1] + A[vi] + A[vi + 1]) / 3.0f
        }
      }
      serial for (j, 1, 8) {
        ScheduleBlock(T) {
          vt, vj = axis.bind(t, j)
          axis.domain(vt = spatial(0, 3), vj = spatial(1, 8))
          reads(B[vj])
          writes(A[vj])
          A[vj] = B[vj]
        }
      }
    }
  }
}
`

func TestViolations(t *testing.T) {
	orig := mustExtract(t, jacobi)
	// Fusing the two inner loops lets T overwrite A[i] before S of the next
	// i reads its old value.
	fused := mustExtract(t, `func jacobi1d(A: float32[10], B: float32[10]) {
  ScheduleBlock(root) {
    serial for (t, 0, 3) {
      serial for (i, 1, 8) {
        ScheduleBlock(S) {
          vt, vi = axis.bind(t, i)
          axis.domain(vt = spatial(0, 3), vi = spatial(1, 8))
          reads(A[vi - 1:+3])
          writes(B[vi])
          B[vi] = (A[vi - 1] + A[vi] + A[vi + 1]) / 3.0f
        }
        ScheduleBlock(T) {
          vt, vj = axis.bind(t, i)
          axis.domain(vt = spatial(0, 3), vj = spatial(1, 8))
          reads(B[vj])
          writes(A[vj])
          A[vj] = B[vj]
        }
      }
    }
  }
}
`)
	vs, err := orig.Violations(fused)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Dep.Kind != WAR || vs[0].Dep.Source.Block.Name != "S" || vs[0].Dep.Sink.Block.Name != "T" {
		t.Fatalf("violations of the fusion: %v", vs)
	}
	// The witness: S at (t, i) reads A[i - 1], which T at (t, i - 1) has
	// overwritten.
	src, snk := vs[0].Source, vs[0].Sink
	if !src[0].Equal(snk[0]) || !src[1].Sub(snk[1]).Equal(IntOf(1)) {
		t.Errorf("witness S%v T%v", src, snk)
	}
	if !strings.Contains(vs[0].String(), "would no longer run before") {
		t.Errorf("message: %s", vs[0])
	}

	// The original against itself, and a split of the first inner loop
	// with a tail predicate, break nothing.
	split := mustExtract(t, `func jacobi1d(A: float32[10], B: float32[10]) {
  ScheduleBlock(root) {
    serial for (t, 0, 3) {
      serial for (io, 0, 2) {
        serial for (ii, 0, 4) {
          ScheduleBlock(S) {
            vt, vi = axis.bind(t, io * 4 + ii + 1)
            axis.domain(vt = spatial(0, 3), vi = spatial(1, 8))
            predicate(io * 4 + ii < 7)
            reads(A[vi - 1:+3])
            writes(B[vi])
            B[vi] = (A[vi - 1] + A[vi] + A[vi + 1]) / 3.0f
          }
        }
      }
      serial for (j, 1, 8) {
        ScheduleBlock(T) {
          vt, vj = axis.bind(t, j)
          axis.domain(vt = spatial(0, 3), vj = spatial(1, 8))
          reads(B[vj])
          writes(A[vj])
          A[vj] = B[vj]
        }
      }
    }
  }
}
`)
	for _, g := range []*Program{orig, split} {
		if vs, err := orig.Violations(g); err != nil || len(vs) != 0 {
			t.Errorf("violations %v, %v", vs, err)
		}
	}
}

func TestViolationsMatmulInterchange(t *testing.T) {
	src := `func matmul(A: float32[6, 5], B: float32[5, 4], C: float32[6, 4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 6) {
      serial for (j, 0, 4) {
        serial for (k, 0, 5) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 6), vj = spatial(0, 4), vk = reduce(0, 5))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
}
`
	orig := mustExtract(t, src)
	// k outermost keeps each C[i, j]'s sum in order: legal.
	kij := strings.NewReplacer("serial for (i, 0, 6)", "serial for (k, 0, 5)", "serial for (k, 0, 5)", "serial for (i, 0, 6)").Replace(src)
	if vs, err := orig.Violations(mustExtract(t, kij)); err != nil || len(vs) != 0 {
		t.Errorf("k, i, j: %v %v", vs, err)
	}
	// Running k backwards (k' = 4 - k) reorders the sum: illegal.
	rev := strings.Replace(src, "vi, vj, vk = axis.bind(i, j, k)", "vi, vj, vk = axis.bind(i, j, 4 - k)", 1)
	vs, err := orig.Violations(mustExtract(t, rev))
	if err != nil || len(vs) != 3 {
		t.Errorf("reversed k: %v %v", vs, err)
	}
	// A function without the block is an error.
	if _, err := orig.Violations(mustExtract(t, "func matmul(A: float32[6, 5], B: float32[5, 4], C: float32[6, 4]) {\n}\n")); err == nil {
		t.Error("no error for a missing block")
	}
}

func TestWidth(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"[io] -> { [x] : 32io <= x <= 32io + 31 and x < 100 and 0 <= io < 4 }", "32"},
		{"[i, N] -> { [x] : x = i and 0 <= i < N }", "1"},
		{"[j] -> { [x] : j <= x <= j + 2 and 0 <= j < 32 }", "3"},
		{"[i, N] -> { [x] : 0 <= x < N and 0 <= i < 4 }", "N"},
		{"[k] -> { [x] : 3k <= x <= 3k + 2 and x <= 7 and 0 <= k < 3 }", "3"},
	} {
		s := MustParseSet(c.src)
		w := s.Width(0, []string{"io", "i", "j", "k"})
		if w.String() != c.want {
			t.Errorf("%s: width %s (exact %v), want %s", c.src, w, w.Exact, c.want)
		}
	}
}

// TestExtractRefusesUnmodelledAccesses: accesses the model cannot hold
// (they are not in a leaf block's init or body) make Extract fail, so that
// no dependence through them goes missing and no loop is called parallel
// because of it.
func TestExtractRefusesUnmodelledAccesses(t *testing.T) {
	for name, src := range map[string]string{
		"store in an outer block": `func f(A: float32[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      ScheduleBlock(O) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 4))
        reads(A[0])
        writes(A[0])
        A[0] = float32(vi)
        ScheduleBlock(I) {
          reads(A[0])
          writes(A[1])
          A[1] = A[0]
        }
      }
    }
  }
}`,
		"store outside blocks": `func f(A: float32[5]) {
  serial for (i, 0, 4) {
    A[i + 1] = A[i]
  }
}`,
		"load in a predicate": `func f(M: float32[5], B: float32[4]) {
  ScheduleBlock(root) {
    reads(M[0:+5])
    serial for (i, 0, 4) {
      ScheduleBlock(W) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 4))
        writes(M[vi + 1])
        M[vi + 1] = 1.0f
      }
      ScheduleBlock(I) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 4))
        predicate(M[i] > 0.0f)
        writes(B[vi])
        B[vi] = 2.0f
      }
    }
  }
}`,
	} {
		f, err := ast.Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := Extract(f); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: Extract returned %v, want an error wrapping ErrUnsupported", name, err)
		}
	}
}

// TestExtractKeepsAffineConjuncts: a predicate that is not affine in one
// conjunct still bounds the domain by the others (the guard of a fused
// loop over a symbolic size beside a split's tail guard), and so does the
// else branch of an if whose negated condition is a disjunction.
func TestExtractKeepsAffineConjuncts(t *testing.T) {
	f, err := ast.Parse(`func f[N: int32](A: float32[12]) {
  ScheduleBlock(root) {
    serial for (i, 0, 8) {
      serial for (j, 0, 3) {
        ScheduleBlock(S) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 8), vj = spatial(0, 3))
          predicate(i * 3 + j < 3 && N * i < 5)
          writes(A[vi * 3 + vj])
          A[vi * 3 + vj] = 1.0f
        }
        if (i >= 2 || i * N >= 4) {
        } else {
          ScheduleBlock(T) {
            vi, vj = axis.bind(i, j)
            axis.domain(vi = spatial(0, 8), vj = spatial(0, 3))
            writes(A[vi * 3 + vj])
            A[vi * 3 + vj] = 2.0f
          }
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Extract(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, max := range map[string]int64{"S": 2, "T": 5} {
		in := p.Block(name)
		if in.ExactDomain {
			t.Errorf("%s: the domain is called exact, but a conjunct was left out", name)
		}
		_, x, out := in.Writes[0].OutOfBounds(in.Domain)
		if out {
			t.Errorf("%s: a write out of bounds at %v", name, x)
		}
		hull := Apply(in.Domain, in.Writes[0].Map).Hull()
		if hi, ok := hull[0].Hi.Constant(); !ok || hi != IntOf(max) {
			t.Errorf("%s: the written cells reach %v, want %d", name, hull[0].Hi, max)
		}
	}
}
