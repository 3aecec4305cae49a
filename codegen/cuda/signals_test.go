package cuda

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// TestOnStackSignals: a handler installed without SA_ONSTACK, as the CUDA
// driver installs its own, gets it from onStackSignals, and keeps its
// function; handlers that have it are left alone.
func TestOnStackSignals(t *testing.T) {
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Skipf("no C library to install a handler with: %v", err)
	}
	fn, err := purego.Dlsym(libc, "sigaction")
	if err != nil {
		t.Fatal(err)
	}
	// A C function stands in for the driver's handler; the signal is
	// never raised.
	stand, err := purego.Dlsym(libc, "getpid")
	if err != nil {
		t.Fatal(err)
	}
	const sig = 31 // SIGSYS on x86-64 and arm64; Go's own handler is put back after
	get := func() sigaction {
		var a sigaction
		if r, _, _ := purego.SyscallN(fn, sig, 0, uintptr(unsafe.Pointer(&a))); r != 0 {
			t.Fatalf("sigaction(%d) = %d", sig, r)
		}
		return a
	}
	old := get()
	defer purego.SyscallN(fn, sig, uintptr(unsafe.Pointer(&old)), 0)
	act := sigaction{handler: stand}
	if r, _, _ := purego.SyscallN(fn, sig, uintptr(unsafe.Pointer(&act)), 0); r != 0 {
		t.Fatalf("installing the handler: %d", r)
	}
	changed := onStackSignals()
	if !slices.Contains(changed, sig) {
		t.Errorf("changed %v, want %d among them", changed, sig)
	}
	if a := get(); a.handler != stand || a.flags&saOnStack == 0 {
		t.Errorf("after: handler %#x flags %#x, want %#x with SA_ONSTACK", a.handler, a.flags, stand)
	}
	if again := onStackSignals(); len(again) != 0 {
		t.Errorf("a second pass changed %v", again)
	}
}
