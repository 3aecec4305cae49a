package ast

import (
	"errors"
	"strings"
	"testing"
)

// TestInterpretLiveLimit checks that the interpreter refuses an Alloc that
// would bring its own buffers past its limit, with a RuntimeError naming
// the buffer, instead of exhausting the machine.
func TestInterpretLiveLimit(t *testing.T) {
	f, err := Parse(`func f[N: int32](A: float32[N]) {
  alloc T: float32[N]
  alloc U: float32[N]
  serial for (i, 0, N) {
    T[i] = 1.0f
    U[i] = T[i]
    A[i] = U[i]
  }
}
`)
	if err != nil {
		t.Fatal(err)
	}
	defer func(old func() int64) { maxLive = old }(maxLive)
	maxLive = func() int64 { return 6000 } // room for T (4000 bytes), not for U too
	a := make([]float32, 1000)
	err = Interpret(f, map[string]int64{"N": 1000}, map[string]any{"A": a})
	if !errors.Is(err, ErrRuntime) || !strings.Contains(err.Error(), "allocating U") {
		t.Fatalf("got %v, want a run-time error about allocating U", err)
	}
	// At a size that fits, the same function runs.
	if err := Interpret(f, map[string]int64{"N": 500}, map[string]any{"A": a[:500]}); err != nil {
		t.Fatal(err)
	}
	if a[0] != 1 {
		t.Errorf("A[0] = %v, want 1", a[0])
	}
}

func TestDataSize(t *testing.T) {
	b := NewBuffer("A", Float32, NewVar("N", Int32), I32(1024))
	if n, err := DataSize(b, map[string]int64{"N": 3}); err != nil || n != 3072 {
		t.Errorf("DataSize at N=3 = %d, %v; want 3072", n, err)
	}
	for _, n := range []int64{-5, 1 << 21} {
		if _, err := DataSize(b, map[string]int64{"N": n}); err == nil {
			t.Errorf("DataSize at N=%d: no error", n)
		}
	}
	if _, err := DataSize(b, nil); err == nil {
		t.Error("DataSize without N: no error")
	}
}

func TestClipWords(t *testing.T) {
	long := strings.Repeat("x", 5<<20)
	got := ClipWords("no block named " + long + " here\nnext line")
	if len(got) > 300 || !strings.Contains(got, "(5242880 bytes)") || !strings.HasSuffix(got, " here\nnext line") {
		t.Errorf("ClipWords kept %d bytes: %.300q", len(got), got)
	}
	if s := "short words stay\n as\tthey are"; ClipWords(s) != s {
		t.Errorf("ClipWords changed %q", s)
	}
}

// TestFloatLiteralOverflow checks that a literal too large for its type is
// an error, not a silent infinity.
func TestFloatLiteralOverflow(t *testing.T) {
	for _, lit := range []string{"1e40f", "-1e40f", "70000.0h", "1e39bf", "1e400"} {
		src := "func f(A: float64[1]) {\n  A[0] = float64(" + lit + ")\n}\n"
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), "2:") || !strings.Contains(err.Error(), "out of the") {
			t.Errorf("%s: got %v, want an out-of-range error at line 2", lit, err)
		}
	}
	for _, lit := range []string{"3.4e38f", "65504.0h", "inff", "1e-50f"} {
		src := "func f(A: float64[1]) {\n  A[0] = float64(" + lit + ")\n}\n"
		if _, err := Parse(src); err != nil {
			t.Errorf("%s: %v", lit, err)
		}
	}
}
