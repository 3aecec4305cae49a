package module

import (
	"errors"
	"testing"

	"github.com/loom-go/loom/codegen/llvm/native"
)

// TestClose: two Compiles of one graph are two handles on one compiled
// graph; closing one leaves the other running, closing both unloads the
// kernels and empties the memory cache, a call through a closed handle
// fails with ErrClosed (a C library too), closing twice does nothing, and
// the graph compiles and runs again after.
func TestClose(t *testing.T) {
	g, cache := cacheGraphIn(t)
	opts := Options{Cache: cache, Threads: 1}
	compile := func() *Module {
		t.Helper()
		m, err := Compile(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	x := Tensor{Shape: []int64{3, 8}, Data: []float32{1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1}}
	run := func(m *Module) error {
		y := Tensor{Shape: []int64{3}, Data: make([]float32, 3)}
		err := m.Run(map[string]Tensor{"X": x}, map[string]Tensor{"Y": y})
		if got := y.Data.([]float32); err == nil && (got[0] != 36 || got[1] != 72 || got[2] != 8) {
			t.Errorf("Y = %v, want [36 72 8]", got)
		}
		return err
	}
	a, b := compile(), compile()
	if a == b || a.compiled != b.compiled {
		t.Fatalf("two compiles of one graph: the same handle %v, another compiled graph %v", a == b, a.compiled != b.compiled)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("closing twice: %v", err)
	}
	if err := run(a); !errors.Is(err, ErrClosed) {
		t.Errorf("a call through a closed handle: %v, want ErrClosed", err)
	}
	if _, err := a.Build(t.TempDir(), "scaled"); !errors.Is(err, ErrClosed) {
		t.Errorf("a library of a closed handle: %v, want ErrClosed", err)
	}
	if err := run(b); err != nil {
		t.Fatalf("the other handle after one closed: %v", err)
	}
	var kernels []*native.Kernel
	for _, k := range b.kernels {
		if k.native != nil {
			kernels = append(kernels, k.native)
		}
	}
	if len(kernels) == 0 {
		t.Fatal("no kernel")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if cachedModule(b.key) != nil {
		t.Error("the memory cache keeps a graph whose handles are all closed")
	}
	for _, k := range kernels {
		if err := k.Run(nil, map[string]any{}); !errors.Is(err, native.ErrClosed) {
			t.Errorf("a kernel of a closed module: %v, want native.ErrClosed", err)
		}
	}
	c := compile()
	defer c.Close()
	if c.compiled == b.compiled {
		t.Error("a compile after every handle closed gave the closed graph back")
	}
	if err := run(c); err != nil {
		t.Errorf("compiled again: %v", err)
	}
}
