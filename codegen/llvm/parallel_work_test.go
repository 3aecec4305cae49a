package llvm

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// TestInlineWorkAgrees: the compile-time threshold is the runtime's.
func TestInlineWorkAgrees(t *testing.T) {
	src, err := os.ReadFile("native/runtime/loomrt.c")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`LOOM_INLINE_WORK = 1 << (\d+),`).FindSubmatch(src)
	if m == nil {
		t.Fatal("loomrt.c has no LOOM_INLINE_WORK = 1 << N")
	}
	shift, _ := strconv.Atoi(string(m[1]))
	if 1<<shift != inlineWork {
		t.Errorf("loomrt.c's LOOM_INLINE_WORK is %d, inlineWork %d", 1<<shift, inlineWork)
	}
}

// lowerPar lowers src and returns its IR and remarks.
func lowerPar(t *testing.T, src string) (string, string) {
	t.Helper()
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Lower(f, Options{TrustLoopKinds: true}) // the bodies are leaf-less
	if err != nil {
		t.Fatal(err)
	}
	return m.String(), strings.Join(m.Remarks, "\n")
}

// TestParallelWork: the work argument of each kind of parallel loop, and
// the small constant loops that become serial.
func TestParallelWork(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		call      string // a pattern of the runtime call; "" for none
		remark    string
	}{{
		// 8 x 64 x (load, add, store): 1,536 operations.
		name: "small", src: `func f(X: float32[8, 64], Y: float32[8, 64]) {
  parallel for (i, 0, 8) { serial for (j, 0, 64) { Y[i, j] = X[i, j] + 1.0f } }
}`, remark: "parallel loop i runs serially: too little work to share (8 iterations of about 192 operations)",
	}, {
		// Just enough: 64 x 512 x 3 = 98,304.
		name: "constant", src: `func f(X: float32[64, 512], Y: float32[64, 512]) {
  parallel for (i, 0, 64) { serial for (j, 0, 512) { Y[i, j] = X[i, j] + 1.0f } }
}`, call: `i64 64, i64 1536\)`,
	}, {
		// Both branches of an if, a call at callWork, nested loops.
		name: "branches", src: `func f(X: float32[64, 16, 32], Y: float32[64, 16, 32]) {
  parallel for (i, 0, 64) { serial for (j, 0, 16) { serial for (k, 0, 32) {
    if (k < 8) { Y[i, j, k] = exp(X[i, j, k]) } else { Y[i, j, k] = X[i, j, k] * 2.0f }
  } } }
}`, call: `i64 64, i64 11264\)`, // 16*32*(1 compare + (16 + 1 load + 1 store) + (1 load + 1 mul + 1 store))
	}, {
		// A symbolic extent is computed before the call.
		name: "symbolic", src: `func f[N: int32](X: float32[64, N], Y: float32[64, N]) {
  parallel for (i, 0, 64) { serial for (j, 0, N) { Y[i, j] = X[i, j] + 1.0f } }
}`, call: `i64 64, i64 %\d+\)`,
	}, {
		// An extent over the parallel loop's variable: unknown.
		name: "triangular", src: `func f(X: float32[64, 64], Y: float32[64, 64]) {
  parallel for (i, 0, 64) { serial for (j, 0, i + 1) { Y[i, j] = X[i, j] + 1.0f } }
}`, call: `i64 64, i64 0\)`,
	}, {
		// A division by a variable might fault before the loop: unknown.
		name: "division", src: `func f[N: int32, M: int32](X: float32[64, N], Y: float32[64, N]) {
  parallel for (i, 0, 64) { serial for (j, 0, floordiv(N, M)) { Y[i, j] = X[i, j] + 1.0f } }
}`, call: `i64 64, i64 0\)`,
	}, {
		// A symbolic trip count with constant work: decided at run time.
		name: "symbolic trip", src: `func f[N: int32](X: float32[N, 4], Y: float32[N, 4]) {
  parallel for (i, 0, N) { serial for (j, 0, 4) { Y[i, j] = X[i, j] + 1.0f } }
}`, call: `i64 %N, i64 12\)`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ir, remarks := lowerPar(t, tc.src)
			calls := regexp.MustCompile(`call void @loom_parallel_for\([^\n]*`).FindAllString(ir, -1)
			if tc.call == "" {
				if len(calls) != 0 {
					t.Errorf("the runtime is called: %q", calls)
				}
			} else if len(calls) != 1 || !regexp.MustCompile(tc.call).MatchString(calls[0]) {
				t.Errorf("calls %q, want one matching %s", calls, tc.call)
			}
			if tc.remark != "" && !strings.Contains(remarks, tc.remark) {
				t.Errorf("remarks %q, want %q", remarks, tc.remark)
			}
			if tc.remark == "" && strings.Contains(remarks, "too little work") {
				t.Errorf("remarks %q", remarks)
			}
		})
	}
}
