package native_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
)

// embedding is an embedding lookup Y[i, k] = E[I[i], k] of n ids into a
// table of 5 rows of 3, its loops of the given kinds; pred, if not empty,
// is the block's predicate.
func embedding(n int, outer, inner, pred string) string {
	if pred != "" {
		pred = "predicate(" + pred + ")\n          "
	}
	return fmt.Sprintf(`func embed(E: float32[5, 3], I: int32[%[1]d], Y: float32[%[1]d, 3]) {
  ScheduleBlock(root) {
    %[2]s for (i, 0, %[1]d) {
      %[3]s for (k, 0, 3) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, %[1]d), vk = spatial(0, 3))
          %[4]sreads(E[0:+5, vk], I[vi])
          writes(Y[vi, vk])
          Y[vi, vk] = E[I[vi], vk]
        }
      }
    }
  }
}`, n, outer, inner, pred)
}

// TestGatherIndexOutOfRange: an embedding lookup with a token id out of
// range (above, below, far above) is an error in the interpreter; the
// compiled kernel returns StatusIndexOutOfRange (ErrIndexOutOfRange from
// Run, naming the kernel) instead of reading a clamped row, whether the
// id is a scalar, uniform over a vectorized loop, or one lane of a
// vector of ids; the rows of good ids are right, the bad ones 0.
func TestGatherIndexOutOfRange(t *testing.T) {
	table := make([]float32, 15)
	for i := range table {
		table[i] = float32(i + 1)
	}
	for _, c := range []struct{ outer, inner string }{
		{"serial", "serial"},
		{"serial", "vectorized"}, // one id per vector of k
		{"vectorized", "serial"}, // ids in lanes: a gather
		{"parallel", "serial"},
	} {
		for _, bad := range []int32{9, -6, 1 << 30} {
			t.Run(fmt.Sprintf("%s %s id %d", c.outer, c.inner, bad), func(t *testing.T) {
				f, err := ast.Parse(embedding(4, c.outer, c.inner, ""))
				if err != nil {
					t.Fatal(err)
				}
				args := func() map[string]any {
					return map[string]any{"E": append([]float32(nil), table...), "I": []int32{2, bad, 0, 4}, "Y": make([]float32, 12)}
				}
				if err := ast.Interpret(f, nil, args()); err == nil {
					t.Errorf("interpreted with id %d of 5 rows: no error", bad)
				}
				k, err := native.Compile(f, llvm.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if (c.outer == "vectorized" || c.inner == "vectorized") && len(k.Module.Remarks) > 0 {
					t.Errorf("not vectorized as asked: %v", k.Module.Remarks)
				}
				a := args()
				err = k.Run(nil, a)
				if !errors.Is(err, native.ErrIndexOutOfRange) || !strings.Contains(err.Error(), "kernel embed") {
					t.Fatalf("compiled with id %d: %v, want ErrIndexOutOfRange naming kernel embed", bad, err)
				}
				// Rows 2, none, 0, 4.
				want := []float32{7, 8, 9, 0, 0, 0, 1, 2, 3, 13, 14, 15}
				for i, v := range a["Y"].([]float32) {
					if v != want[i] {
						t.Fatalf("compiled: Y = %v, want %v", a["Y"], want)
					}
				}
			})
		}
	}
}

// TestGatherChecksActiveLanesOnly: lanes a vectorized loop leaves
// inactive (the tail past the ids, ids a predicate skips) are not
// checked: their ids are never read, or out of range but not used.
func TestGatherChecksActiveLanesOnly(t *testing.T) {
	table := make([]float32, 15)
	for i := range table {
		table[i] = float32(i + 1)
	}
	for _, c := range []struct {
		name string
		src  string
		ids  []int32
		want []float32
	}{
		// 5 ids in 8 lanes: 3 lanes past the end.
		{"tail", embedding(5, "vectorized", "serial", ""), []int32{0, 1, 2, 3, 4}, nil},
		// The predicate skips the last 3 ids, out of range.
		{"predicate", embedding(8, "vectorized", "serial", "i < 5"), []int32{1, 2, 3, 0, 4, 99, -99, 1 << 30}, []float32{4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 2, 3, 13, 14, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ast.Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			k, err := native.Compile(f, llvm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, 3*len(c.ids))
			if err := k.Run(nil, map[string]any{"E": table, "I": c.ids, "Y": y}); err != nil {
				t.Fatalf("compiled: %v", err)
			}
			want := c.want
			if want == nil {
				for _, id := range c.ids {
					want = append(want, table[3*id:3*id+3]...)
				}
			}
			for i, v := range y {
				if v != want[i] {
					t.Fatalf("Y = %v, want %v", y, want)
				}
			}
		})
	}
}

// TestStatusError: a status of several faults names them all, in one
// line, and wraps each.
func TestStatusError(t *testing.T) {
	if err := native.StatusError(llvm.StatusOK); err != nil {
		t.Errorf("StatusOK: %v", err)
	}
	err := native.StatusError(llvm.StatusDivByZero | llvm.StatusIndexOutOfRange | 64)
	if !errors.Is(err, native.ErrDivByZero) || !errors.Is(err, native.ErrIndexOutOfRange) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "0x40") {
		t.Errorf("status 1|4|64: %q", err)
	}
}

// TestGatherTwoIndices: an access whose two indices both load (E[I[i],
// J[i]]) is out of range when either is; serial and in lanes.
func TestGatherTwoIndices(t *testing.T) {
	for _, kind := range []string{"serial", "vectorized"} {
		f, err := ast.Parse(`func pick(E: float32[3, 4], I: int32[5], J: int32[5], Y: float32[5]) {
  ScheduleBlock(root) {
    ` + kind + ` for (i, 0, 5) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 5))
        reads(E[0:+3, 0:+4], I[vi], J[vi])
        writes(Y[vi])
        Y[vi] = E[I[vi], J[vi]]
      }
    }
  }
}`)
		if err != nil {
			t.Fatal(err)
		}
		k, err := native.Compile(f, llvm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
		for _, c := range []struct {
			i, j []int32
			bad  bool
		}{
			{[]int32{0, 1, 2, 2, 0}, []int32{0, 1, 3, 0, 3}, false},
			{[]int32{0, 1, 2, 2, 0}, []int32{0, 1, 4, 0, 3}, true},
			{[]int32{0, 3, 2, 2, 0}, []int32{0, 1, 3, 0, 3}, true},
		} {
			y := make([]float32, 5)
			err := k.Run(nil, map[string]any{"E": e, "I": c.i, "J": c.j, "Y": y})
			if c.bad != errors.Is(err, native.ErrIndexOutOfRange) || !c.bad && err != nil {
				t.Errorf("%s, I %v, J %v: %v", kind, c.i, c.j, err)
			}
			for n := range y {
				if in := c.i[n] < 3 && c.j[n] < 4; in && y[n] != e[4*c.i[n]+c.j[n]] || !in && y[n] != 0 {
					t.Errorf("%s, I %v, J %v: Y = %v", kind, c.i, c.j, y)
					break
				}
			}
		}
	}
}
