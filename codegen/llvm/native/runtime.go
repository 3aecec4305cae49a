package native

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The runtime (loomrt.c) is compiled into each cache directory that
// kernels are built in (kernels name it as a needed library, with an
// rpath into that directory) and loaded once per process, with its
// symbols global, before any kernel. A kernel built in a second cache
// directory finds the already-loaded runtime by its soname.

//go:embed runtime/loomrt.c
var runtimeSource []byte

// RuntimeSource returns the C source of loom's runtime, to compile into a
// program that links kernels ahead of time.
func RuntimeSource() []byte { return runtimeSource }

// runtimeVersion is what loom_runtime_version returns: 2 since
// loom_parallel_for takes the work of an iteration, 3 since
// loom_run_kernels.
const runtimeVersion = 3

type runtimeLib struct {
	path       string
	handle     uintptr
	setThreads uintptr
	getThreads uintptr
	runKernels uintptr
}

var (
	rtOnce sync.Once
	rt     *runtimeLib
	rtErr  error
	loaded atomic.Pointer[runtimeLib] // rt, once it loaded
)

// loadRuntime builds the runtime library in dir (if it is not there) and
// loads it, once per process. It returns the library in dir, which
// kernels built in dir link against.
func loadRuntime(dir string) (path string, lib *runtimeLib, err error) {
	path, err = buildRuntime(dir)
	if err != nil {
		return "", nil, err
	}
	rtOnce.Do(func() {
		if rt, rtErr = openRuntime(path); rtErr == nil {
			loaded.Store(rt)
		}
	})
	return path, rt, rtErr
}

// buildRuntime compiles the runtime library into dir unless it is already
// there, and returns its path.
func buildRuntime(dir string) (string, error) {
	flags := []string{"-O2", "-fPIC", "-shared", "-pthread", "-Wl,-soname,libloomrt.so"}
	libs := []string{"-Wl,--no-as-needed", "-lm"} // kernels find the C math library through the runtime
	return compileC(dir, "runtime", "libloomrt.so", runtimeSource, flags, libs)
}

// compileC compiles the C program or library src with the C compiler
// into dir/PREFIX-HASH/out unless it is already there (the hash covers
// the source, the flags and the compiler), and returns its path. Two
// processes sharing dir may both build it; each renames its complete
// file into place.
func compileC(dir, prefix, out string, src []byte, flags, libs []string) (string, error) {
	cc, err := lookPath("a C compiler", "gcc (apt-get install gcc)", "cc", "gcc", "clang")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(src)
	fmt.Fprintf(h, "%q%q", flags, libs)
	if fi, err := os.Stat(cc); err == nil {
		fmt.Fprintf(h, "%s:%d:%d", cc, fi.Size(), fi.ModTime().UnixNano())
	}
	sub := filepath.Join(dir, prefix+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	path := filepath.Join(sub, out)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return "", err
	}
	srcPath := filepath.Join(sub, prefix+".c")
	if err := writeAtomic(srcPath, src); err != nil {
		return "", err
	}
	tmp, err := tempName(path)
	if err != nil {
		return "", err
	}
	args := append(append(append([]string(nil), flags...), "-o", tmp, srcPath), libs...)
	cmd := exec.CommandContext(context.Background(), cc, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", &BuildError{Tool: cc, Stderr: string(out)}
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return path, nil
}

// openRuntime loads the runtime library with its symbols global.
func openRuntime(path string) (*runtimeLib, error) {
	handle, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("codegen/llvm/native: loading the runtime %s: %w", path, err)
	}
	lib := &runtimeLib{path: path, handle: handle}
	sym := func(name string) uintptr {
		if err != nil {
			return 0
		}
		var p uintptr
		p, err = purego.Dlsym(handle, name)
		return p
	}
	version := sym("loom_runtime_version")
	lib.setThreads = sym("loom_set_num_threads")
	lib.getThreads = sym("loom_get_num_threads")
	lib.runKernels = sym("loom_run_kernels")
	if err != nil {
		return nil, fmt.Errorf("codegen/llvm/native: runtime %s: %w", path, err)
	}
	if v, _, _ := purego.SyscallN(version); int32(v) != runtimeVersion {
		return nil, fmt.Errorf("codegen/llvm/native: runtime %s has version %d, want %d", path, int32(v), runtimeVersion)
	}
	return lib, nil
}

// SetThreads sets the number of threads parallel loops run on; 0 means
// one per core (or $LOOM_NUM_THREADS). It applies to every kernel of the
// process.
func SetThreads(n int) error {
	c, err := DefaultCache()
	if err != nil {
		return err
	}
	_, lib, err := loadRuntime(c.Dir)
	if err != nil {
		return err
	}
	purego.SyscallN(lib.setThreads, uintptr(max(n, 0)))
	return nil
}

// Threads returns the number of threads parallel loops run on.
func Threads() (int, error) {
	c, err := DefaultCache()
	if err != nil {
		return 0, err
	}
	_, lib, err := loadRuntime(c.Dir)
	if err != nil {
		return 0, err
	}
	n, _, _ := purego.SyscallN(lib.getThreads)
	return int(int32(n)), nil
}

// KernelCall is one call of RunKernels: a kernel's packed entry point and
// its two arguments, the address of an array of its buffers' addresses
// and the address of an array of its sizes (the C ABI of codegen/llvm).
// The arrays must stay where they are during the call (pinned, or not Go
// memory).
type KernelCall struct {
	Entry   uintptr
	Buffers unsafe.Pointer
	Sizes   unsafe.Pointer
}

// RunKernels makes the calls in order, in one call into the runtime, and
// returns the status of the first that fails (0 when none does) and its
// index. Each call from Go into C may return on another thread; a graph's
// kernels called one by one ran on whichever thread and core the
// goroutine came back on, each finding the data its predecessor left in
// another core's caches. It fails when no kernel has loaded the runtime
// yet.
func RunKernels(calls []KernelCall) (status int32, failed int, err error) {
	lib := loaded.Load()
	if lib == nil || lib.runKernels == 0 {
		return 0, 0, fmt.Errorf("codegen/llvm/native: RunKernels before the runtime is loaded")
	}
	if len(calls) == 0 {
		return 0, 0, nil
	}
	var at int64
	r, _, _ := purego.SyscallN(lib.runKernels, uintptr(len(calls)), uintptr(unsafe.Pointer(&calls[0])), uintptr(unsafe.Pointer(&at)))
	return int32(r), int(at), nil
}
