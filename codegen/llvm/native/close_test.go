package native

import (
	"errors"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
)

// TestClose: each Compile is a handle of its own on one loaded object;
// closing one leaves the other running; once both are closed the object
// leaves the cache's memory and the process, and a call through a closed
// handle (or a Call bound before the close) fails with ErrClosed. The
// file stays on disk: compiling again loads it without a build.
func TestClose(t *testing.T) {
	c, err := NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := workload.Chain(1, 2, 40)
	compile := func() *Kernel {
		t.Helper()
		k, err := c.Compile(cs.Func, llvm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a, b := compile(), compile()
	if a == b || a.obj != b.obj || a.obj.refs != 2 {
		t.Fatalf("two compiles: the same handle %v, other objects %v, %d handles counted", a == b, a.obj != b.obj, a.obj.refs)
	}
	bound, err := a.Bind(cs.Sizes, cs.Args(1))
	if err != nil {
		t.Fatal(err)
	}
	defer bound.Release()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("closing twice: %v", err)
	}
	if err := a.Run(cs.Sizes, cs.Args(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("a closed handle's call: %v, want ErrClosed", err)
	}
	if err := bound.Run(); !errors.Is(err, ErrClosed) {
		t.Errorf("a call bound before the close: %v, want ErrClosed", err)
	}
	args := cs.Args(1)
	if err := b.Run(cs.Sizes, args); err != nil {
		t.Fatalf("the other handle after one closed: %v", err)
	}
	want := cs.Args(1)
	cs.Ref(want)
	for name, w := range want {
		if e := check.MaxRelErr(args[name], w); e > 1e-4 {
			t.Errorf("%s: off by %g", name, e)
		}
	}
	obj := b.obj
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if obj.handle != 0 || len(c.mem) != 0 {
		t.Errorf("after the last close: the object is loaded %v, the cache's memory holds %d kernels", obj.handle != 0, len(c.mem))
	}
	again := compile()
	defer again.Close()
	if again.obj == obj || !again.Stats.Cached {
		t.Errorf("compiled again: the closed object %v, from disk %v", again.obj == obj, again.Stats.Cached)
	}
	if err := again.Run(cs.Sizes, cs.Args(1)); err != nil {
		t.Error(err)
	}
}
