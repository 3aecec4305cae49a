package cuda

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The CUDA driver installs signal handlers of its own, without
// SA_ONSTACK, and hands the signals it does not want on to Go's. Go runs
// its handlers on an alternate signal stack and kills the process when
// one arrives without it ("non-Go code set up signal handler without
// SA_ONSTACK flag": autotune's workers on an H200, one candidate in a few
// dozen). After the driver is initialized, and again after each program
// is loaded (the driver may install more on first use), SA_ONSTACK is
// added to every handler that lacks it: the handlers stay the driver's,
// and on the threads Go makes (each has an alternate stack) they run
// there; on the driver's own threads the flag changes nothing.

// sigaction is glibc's struct sigaction on Linux (x86-64 and arm64).
type sigaction struct {
	handler  uintptr
	mask     [16]uint64
	flags    int32
	_        int32
	restorer uintptr
}

const (
	saOnStack = 0x08000000
	sigDfl    = 0
	sigIgn    = 1
	maxSignal = 64
)

// onStackSignals adds SA_ONSTACK to each installed handler that lacks
// it, through the C library's sigaction, and returns the signals it
// changed. Where the C library cannot be opened it does nothing.
func onStackSignals() []int {
	if runtime.GOOS != "linux" {
		return nil
	}
	fn := sigactionFunc()
	if fn == 0 {
		return nil
	}
	var changed []int
	for sig := 1; sig <= maxSignal; sig++ {
		var act sigaction
		if r, _, _ := purego.SyscallN(fn, uintptr(sig), 0, uintptr(unsafe.Pointer(&act))); int32(r) != 0 {
			continue
		}
		if act.handler == sigDfl || act.handler == sigIgn || act.flags&saOnStack != 0 {
			continue
		}
		act.flags |= saOnStack
		if r, _, _ := purego.SyscallN(fn, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0); int32(r) == 0 {
			changed = append(changed, sig)
		}
	}
	return changed
}

// sigactionFunc is the C library's sigaction, looked up once (0 where it
// cannot be).
var sigactionFunc = sync.OnceValue(func() uintptr {
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0
	}
	fn, err := purego.Dlsym(libc, "sigaction")
	if err != nil {
		return 0
	}
	return fn
})
