package native

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/workload"
)

// TestIndex: another process (a new cache on the directory) finds a
// kernel through the index without lowering it, runs it, and lowers it
// when asked; a damaged entry, or one whose object is gone, is ignored and
// the kernel built again.
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	c, err := NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs := workload.Chain(1, 2, 40)
	k1, err := c.Compile(cs.Func, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k1.Stats.Indexed || k1.Module == nil {
		t.Fatalf("a new kernel came from the index: %+v", k1.Stats)
	}
	again := func() *Kernel {
		t.Helper()
		c, err := NewCache(dir)
		if err != nil {
			t.Fatal(err)
		}
		k, err := c.Compile(cs.Func, llvm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Run(cs.Sizes, cs.Args(1)); err != nil {
			t.Fatal(err)
		}
		return k
	}
	k2 := again()
	if !k2.Stats.Indexed || k2.Module != nil || k2.Stats.Lower != 0 || k2.Path != k1.Path {
		t.Errorf("not found through the index: %+v, module %v", k2.Stats, k2.Module != nil)
	}
	m, err := k2.Lowered()
	if err != nil || m.String() != k1.Module.String() {
		t.Errorf("Lowered gave another module (%v)", err)
	}
	file, _ := c.indexFile(cs.Func, llvm.Options{})
	for _, damage := range []func(){
		func() { os.WriteFile(file, []byte("{not json"), 0o644) },
		func() {
			os.WriteFile(file, []byte(`{"object": "`+filepath.Join(dir, "gone.so")+`", "symbol": "x_packed"}`), 0o644)
		},
		func() {
			os.WriteFile(file, []byte(`{"object": "`+k1.Path+`", "symbol": "no_such_packed"}`), 0o644)
		},
	} {
		damage()
		if k := again(); k.Stats.Indexed || k.Module == nil {
			t.Errorf("a damaged entry was used: %+v", k.Stats)
		}
		if k := again(); !k.Stats.Indexed {
			t.Errorf("the entry was not written again: %+v", k.Stats)
		}
	}
}
