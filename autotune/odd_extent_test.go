package autotune

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestPoorlyDivisible: a constant extent whose divisors leave the
// register tile at most half its limit is tiled past its end, by the
// smallest extent above it (within an eighth) that divides well.
func TestPoorlyDivisible(t *testing.T) {
	tg := Target{VectorLanes: 8, Threads: 1}
	for _, c := range []struct {
		ext    int64
		limit  int
		r      tileRole
		poor   bool
		padded int64
	}{
		{197, 8, tileSpatial, true, 198}, // ViT's tokens: 6 rows a tile, where 1 divides
		{196, 8, tileSpatial, false, 196},
		{196, 6, tileSpatial, true, 198},   // 4 divides, 6 allowed: 6 over 198 rows
		{200, 6, tileSpatial, false, 200},  // 5 divides: close enough
		{1504, 6, tileSpatial, true, 1505}, // 5 divides 1505
		{76, 6, tileSpatial, true, 78},
		{77, 8, tileSpatial, false, 77}, // 7 divides
		{1500, 8, tileSpatial, false, 1500},
		{13, 8, tileSpatial, true, 14},
		{7, 8, tileSpatial, false, 7}, // within one tile: the whole extent
		{197, 8, tileReduce, false, 197},
		{197, 0, tileSpatial, false, 197}, // no limit: 197 divides itself
	} {
		if got := poorlyDivisible(c.ext, c.limit, c.r, tg); got != c.poor {
			t.Errorf("poorlyDivisible(%d, %d, %v) = %v", c.ext, c.limit, c.r, got)
		}
		if !c.poor {
			continue
		}
		if got := paddedExtent(c.ext, c.limit, c.r, tg); got != c.padded {
			t.Errorf("paddedExtent(%d, %d) = %d, want %d", c.ext, c.limit, got, c.padded)
		}
	}
}

// TestGPUPoorlyDivisible: on a GPU, rows whose divisors make a block's
// tile of fewer than 16 outputs are tiled past their end.
func TestGPUPoorlyDivisible(t *testing.T) {
	for ext, want := range map[int64]bool{197: true, 77: true, 196: false, 1500: false, 64: false, 61: false, 128: false, 67: true, 68: true, 74: true, 111: true, 80: false} {
		if got := gpuPoorlyDivisible(ext); got != want {
			t.Errorf("gpuPoorlyDivisible(%d) = %v", ext, got)
		}
	}
}

// TestOddExtentsMatchInterpreter: gemms of a prime number of rows (and
// 77) get register tiles that do not divide them, decided and sampled,
// and compute what the interpreter does, their outputs poisoned (NaN)
// before each run so that a row the guarded tail skips would show.
func TestOddExtentsMatchInterpreter(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	tg := Target{VectorLanes: 8, Threads: 2} // any vector width compiles here; 8 fixes the limits the trace shows
	check := func(name string, c workload.Case, s *schedule.Schedule) {
		t.Helper()
		k, err := cache.Compile(s.Func(), llvm.Options{})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, s.Trace())
		}
		poison := map[string]bool{"C": true}
		got, want := c.ArgsPoisoning(1, poison), c.ArgsPoisoning(1, poison)
		if err := ast.Interpret(c.Func, nil, want); err != nil {
			t.Fatal(err)
		}
		if err := k.Run(nil, got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e := check.MaxRelErr(got["C"], want["C"]); e > 1e-4 {
			t.Fatalf("%s: C differs from the interpreter by %g\n%s", name, e, s.Trace())
		}
	}
	guarded := 0
	for _, m := range []int{37, 77, 197} {
		c := workload.Matmul(m, 48, 16)
		s, err := Default(c.Func, tg)
		if err != nil {
			t.Fatal(err)
		}
		check("default", c, s)
		if m == 197 && !strings.Contains(s.Trace().String(), "sample_categorical([6], [1.0])") {
			t.Errorf("197 rows: no guarded tile of 6 rows in the default:\n%s", s.Trace())
		}
		for seed := range uint64(3) {
			s, err := (&Space{Rules: DefaultRules(), Target: tg}).Sample(c.Func, seed)
			if err != nil {
				t.Fatal(err)
			}
			check("sample", c, s)
			if strings.Contains(s.Trace().String(), "split(l5, [-1") {
				guarded++
			}
		}
	}
	if guarded == 0 {
		t.Errorf("no sample tiled the rows past their end")
	}
}
