package schedule_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// mmaGemm is C[32, 16] = A[32, 32] · B[32, 16] with the factors in IN
// (products in float32), UPDATE the update's right side.
func mmaGemm(t *testing.T, in, update string) *ast.Func {
	t.Helper()
	src := strings.NewReplacer("@IN", in, "@UPDATE", update).Replace(`func gemm(A: @IN[32, 32], B: @IN[32, 16], C: float32[32, 16]) {
  ScheduleBlock(root) {
    serial for (i, 0, 32) {
      serial for (j, 0, 16) {
        serial for (k, 0, 32) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 32), vj = spatial(0, 16), vk = reduce(0, 32))
            reads(C[vi, vj], A[vi, vk], B[0:+32, 0:+16])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = @UPDATE
          }
        }
      }
    }
  }
}`)
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return f
}

const mmaUpdate = "C[vi, vj] + float32(A[vi, vk]) * float32(B[vk, vj])"

// tileForMMA tiles gemm's loops by tiles (i, j, k), orders them (io, jo,
// ko, then the inner loops in order), decomposes the init out of ko and
// returns the schedule and the inner nest's outer loop.
func tileForMMA(t *testing.T, f *ast.Func, tiles [3]int, order [3]int, decompose bool) (*schedule.Schedule, schedule.Loop) {
	t.Helper()
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.GetBlock("C")
	ls, _ := s.GetLoops(c)
	var outer, inner [3]schedule.Loop
	for d := range 3 {
		parts, err := s.Split(ls[d], -1, tiles[d])
		if err != nil {
			t.Fatal(schedule.Explain(err))
		}
		outer[d], inner[d] = parts[0], parts[1]
	}
	if err := s.Reorder(outer[0], outer[1], outer[2], inner[order[0]], inner[order[1]], inner[order[2]]); err != nil {
		t.Fatal(schedule.Explain(err))
	}
	if decompose {
		if _, err := s.DecomposeReduction(c, outer[2]); err != nil {
			t.Fatal(schedule.Explain(err))
		}
	}
	return s, inner[order[0]]
}

// TestTensorize: a gemm tiled to 16 x 8 x 16 tiles of float16 factors
// with a float32 accumulator matches mma.sync m16n8k16; the loop is
// marked, the function computes the same, and the trace replays (its Go
// calls Tensorize).
func TestTensorize(t *testing.T) {
	f := mmaGemm(t, "float16", mmaUpdate)
	s, l := tileForMMA(t, f, [3]int{16, 8, 16}, [3]int{0, 1, 2}, true)
	if err := s.Tensorize(l, "mma_m16n8k16_f16_f32"); err != nil {
		t.Fatal(schedule.Explain(err))
	}
	if !strings.Contains(ast.Print(s.Func()), `tensorize = "mma_m16n8k16_f16_f32"`) && !strings.Contains(ast.Print(s.Func()), "tensorize") {
		t.Fatalf("no tensorize annotation:\n%s", ast.Print(s.Func()))
	}
	r, err := schedule.Replay(f, s.Trace(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ast.Equal(r.Func(), s.Func()) {
		t.Error("the replayed trace builds another function")
	}
	if !strings.Contains(s.Trace().Go(), `sch.Tensorize(`) {
		t.Errorf("the trace's Go lacks Tensorize:\n%s", s.Trace().Go())
	}
	// bfloat16 factors match the bfloat16 instruction, not the float16 one.
	g := mmaGemm(t, "bfloat16", mmaUpdate)
	s2, l2 := tileForMMA(t, g, [3]int{16, 8, 16}, [3]int{0, 1, 2}, true)
	if err := s2.Tensorize(l2, "mma_m16n8k16_f16_f32"); err == nil {
		t.Error("bfloat16 factors matched the float16 instruction")
	}
	if err := s2.Tensorize(l2, "mma_m16n8k16_bf16_f32"); err != nil {
		t.Error(schedule.Explain(err))
	}
}

// TestTensorizeRefuses: nests that are not the instruction's computation
// are refused, each with the reason, and the schedule is unchanged.
func TestTensorizeRefuses(t *testing.T) {
	for _, c := range []struct {
		name, in, update string
		tiles, order     [3]int
		decompose        bool
		intrinsic        string
		want             string
	}{
		{"tile 16x16x16", "float16", mmaUpdate, [3]int{16, 16, 16}, [3]int{0, 1, 2}, true, "mma_m16n8k16_f16_f32", "runs 16 times, the intrinsic's 8"},
		{"k before j", "float16", mmaUpdate, [3]int{16, 16, 8}, [3]int{0, 2, 1}, true, "mma_m16n8k16_f16_f32", "binds reduce iteration variables"},
		{"init kept", "float16", mmaUpdate, [3]int{16, 8, 16}, [3]int{0, 1, 2}, false, "mma_m16n8k16_f16_f32", "has an init"},
		{"float32 factors", "float32", "C[vi, vj] + A[vi, vk] * B[vk, vj]", [3]int{16, 8, 16}, [3]int{0, 1, 2}, true, "mma_m16n8k16_f16_f32", "is not the intrinsic's float32(A"},
		{"subtracts", "float16", "C[vi, vj] - float32(A[vi, vk]) * float32(B[vk, vj])", [3]int{16, 8, 16}, [3]int{0, 1, 2}, true, "mma_m16n8k16_f16_f32", "is not the intrinsic's"},
		{"max", "float16", "max(C[vi, vj], float32(A[vi, vk]) * float32(B[vk, vj]))", [3]int{16, 8, 16}, [3]int{0, 1, 2}, true, "mma_m16n8k16_f16_f32", "is not the intrinsic's"},
		{"transposed B", "float16", "C[vi, vj] + float32(A[vi, vk]) * float32(B[vj, vk])", [3]int{16, 8, 16}, [3]int{0, 1, 2}, true, "mma_m16n8k16_f16_f32", "moved by an offset"},
		{"A twice", "float16", "C[vi, vj] + float32(A[vi, vk]) * float32(A[vi, vk])", [3]int{16, 8, 16}, [3]int{0, 1, 2}, true, "mma_m16n8k16_f16_f32", "A"},
		{"a term more", "float16", "C[vi, vj] + float32(A[vi, vk]) * float32(B[vk, vj]) + C[vi, 0]", [3]int{16, 8, 16}, [3]int{0, 1, 2}, true, "mma_m16n8k16_f16_f32", "is not a load of a tile"},
		{"another column of C", "float16", "C[vi, 0] + float32(A[vi, vk]) * float32(B[vk, vj])", [3]int{16, 8, 16}, [3]int{0, 1, 2}, true, "mma_m16n8k16_f16_f32", "moved by an offset"},
		{"no such intrinsic", "float16", mmaUpdate, [3]int{16, 8, 16}, [3]int{0, 1, 2}, true, "wmma_fancy", "no intrinsic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := mmaGemm(t, c.in, c.update)
			s, l := tileForMMA(t, f, c.tiles, c.order, c.decompose)
			before := ast.Print(s.Func())
			err := s.Tensorize(l, c.intrinsic)
			var se *schedule.Error
			if !errors.As(err, &se) || se.Primitive != "tensorize" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a tensorize error saying %q", err, c.want)
			}
			if ast.Print(s.Func()) != before {
				t.Error("a refused tensorize changed the function")
			}
		})
	}
}

// TestTensorizeRefusesAliasing: the factor and the accumulator in one
// buffer (float16 accumulation) is refused: the instruction reads its
// factors before it writes.
func TestTensorizeRefusesAliasing(t *testing.T) {
	f, err := ast.Parse(`func g(A: float16[16, 16], C: float16[16, 16]) {
  ScheduleBlock(root) {
    serial for (i, 0, 16) {
      serial for (j, 0, 8) {
        serial for (k, 0, 16) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 16), vj = spatial(0, 8), vk = reduce(0, 16))
            reads(C[0:+16, 0:+16], A[vi, vk])
            writes(C[vi, vj])
            C[vi, vj] = C[vi, vj] + A[vi, vk] * C[vk, vj]
          }
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.GetBlock("C")
	ls, _ := s.GetLoops(c)
	if err := s.Tensorize(ls[0], "mma_m16n8k16_f16_f16"); err == nil || !strings.Contains(err.Error(), "both the accumulator and factor B") {
		t.Fatalf("got %v", err)
	}
}
