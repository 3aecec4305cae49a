package cuda_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
)

// TestLowerRefuses: functions no kernel can be made of are refused with
// an error that names the loop and the reason, never lowered wrong.
func TestLowerRefuses(t *testing.T) {
	const scale = `func f(A: float32[8, 2048]) {
  ScheduleBlock(root) {
    LOOPS
        ScheduleBlock(S) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 8), vj = spatial(0, 2048))
          reads(A[vi, vj])
          writes(A[vi, vj])
          A[vi, vj] = A[vi, vj] * 2.0f
        }
      }
    }
  }
}`
	// Two column sums that share their loops: threads over the shared
	// reduce loop would race on both sums (each thread's own value is
	// written, not combined).
	const sums = `func f(X: float32[64, 8], S: float32[8], Q: float32[8]) {
  ScheduleBlock(root) {
    LOOPS
        ScheduleBlock(S) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 8), vj = reduce(0, 64))
          reads(S[vi], X[vj, vi])
          writes(S[vi])
          init {
            S[vi] = 0.0f
          }
          S[vi] = S[vi] + X[vj, vi]
        }
        ScheduleBlock(Q) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 8), vj = reduce(0, 64))
          reads(Q[vi], X[vj, vi])
          writes(Q[vi])
          init {
            Q[vi] = 0.0f
          }
          Q[vi] = Q[vi] + X[vj, vi] * X[vj, vi]
        }
      }
    }
  }
}`
	for _, tc := range []struct {
		name, src, loops, want string
	}{
		{"serial root loop", scale, `serial for (i, 0, 8) {
      serial for (j, 0, i + 1) {`, "outside every kernel"},
		{"thread count depends on a block loop", scale, `bind(blockIdx.x) for (i, 0, 8) {
      bind(threadIdx.x) for (j, 0, i + 1) {`, "non-constant extent i + 1"},
		{"grid depends on a block loop", scale, `bind(blockIdx.y) for (i, 0, 8) {
      bind(blockIdx.x) for (j, 0, i + 1) {`, "depend on loop i"},
		{"too many threads", scale, `bind(blockIdx.x) for (i, 0, 8) {
      bind(threadIdx.x) for (j, 0, 2048) {`, "CUDA allows 1024"},
		{"reductions sharing a thread loop", sums, `bind(blockIdx.x) for (i, 0, 8) {
      bind(threadIdx.x) for (j, 0, 64) {`, "no cross-thread reduction"},
	} {
		f, err := ast.Parse(strings.Replace(tc.src, "LOOPS", tc.loops, 1))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, err = cuda.Lower(f, cuda.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestLowerRefusesDataCondition: a condition on buffer data around kernels
// cannot be tested by the host, and is refused with the condition shown.
func TestLowerRefusesDataCondition(t *testing.T) {
	f, err := ast.Parse(`func f(A: float32[8]) {
  ScheduleBlock(root) {
    reads(A[0])
    if (A[0] > 0.0f) {
      bind(blockIdx.x) for (i, 0, 8) {
        ScheduleBlock(S) {
          vi = axis.bind(i)
          axis.domain(vi = spatial(0, 8))
          reads(A[vi])
          writes(A[vi])
          A[vi] = A[vi] * 2.0f
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cuda.Lower(f, cuda.Options{})
	if err == nil || !strings.Contains(err.Error(), "condition on buffer data") || !strings.Contains(err.Error(), "A[0] > 0.0f") {
		t.Fatalf("got %v, want a refusal naming the condition on data", err)
	}
}
