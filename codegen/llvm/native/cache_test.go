package native

import (
	"debug/elf"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/workload"
)

// TestCache: a kernel is built once; the second time it comes from memory,
// and a new cache on the same directory (another process) finds it on
// disk. Builders racing on one directory all get a working kernel.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	c, err := NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := workload.Chain(1, 2, 40).Func
	k1, err := c.Compile(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k1.Stats.Cached {
		t.Error("the first build came from the cache")
	}
	if k2, err := c.Compile(f, llvm.Options{}); err != nil || k2.obj != k1.obj {
		t.Errorf("the second compile is not the same kernel: %v", err)
	}
	other, err := NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	k3, err := other.Compile(f, llvm.Options{})
	if err != nil || !k3.Stats.Cached || k3.Path != k1.Path {
		t.Errorf("another cache on the directory did not find the kernel on disk: %v %+v", err, k3.Stats)
	}
	if k4, err := other.Compile(f, llvm.Options{NoFMA: true}); err != nil || k4.Path == k1.Path {
		t.Errorf("other options share the kernel: %v", err)
	}

	// Racing builders of a new kernel.
	g := workload.Chain(2, 1, 24).Func
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := NewCache(dir)
			if err == nil {
				var k *Kernel
				if k, err = c.Compile(g, llvm.Options{}); err == nil {
					cs := workload.Chain(2, 1, 24)
					err = k.Run(cs.Sizes, cs.Args(1))
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "kernels", "*", "*.tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestCrossTarget builds objects for machines other than the host.
func TestCrossTarget(t *testing.T) {
	f := workload.Softmax(4, 64).Func
	for _, tc := range []struct {
		target  llvm.Target
		machine elf.Machine
	}{
		{llvm.Target{Triple: "aarch64-unknown-linux-gnu", CPU: "neoverse-n1"}, elf.EM_AARCH64},
		{llvm.Target{Triple: "x86_64-unknown-linux-gnu", CPU: "skylake-avx512"}, elf.EM_X86_64},
		{llvm.Target{Triple: "x86_64-unknown-linux-gnu", CPU: "x86-64", Features: "+sse4.2"}, elf.EM_X86_64},
	} {
		m, err := llvm.Lower(f, llvm.Options{Target: tc.target})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "k.o")
		if err := WriteObject(m, path); err != nil {
			t.Fatalf("%v: %v", tc.target, err)
		}
		obj, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if obj.Machine != tc.machine {
			t.Errorf("%v: object for %v", tc.target, obj.Machine)
		}
		obj.Close()
	}
}

// TestHostCPU: the CPU's name carries its family and model where
// /proc/cpuinfo gives them, so that two generations sold under one brand
// ("AMD EPYC") are told apart.
func TestHostCPU(t *testing.T) {
	info := cpuinfo()
	got := HostCPU()
	if info["model name"] != "" && !strings.HasPrefix(got, info["model name"]) {
		t.Errorf("HostCPU() = %q, want it to start with the model name %q", got, info["model name"])
	}
	if info["cpu family"] != "" && info["model"] != "" && !strings.Contains(got, "family "+info["cpu family"]+" model "+info["model"]) {
		t.Errorf("HostCPU() = %q, want the family %s and model %s", got, info["cpu family"], info["model"])
	}
}
