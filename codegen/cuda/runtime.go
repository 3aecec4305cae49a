package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/loom-go/loom/ast"
)

// The launcher: NVRTC compiles a module's source to PTX and the CUDA
// driver API loads and launches it. Both libraries are opened at run time
// (dlopen), so loom builds and runs everywhere; where they are missing,
// Open says so and nothing else changes.

// DriverEnv and NVRTCEnv are environment variables naming the libraries
// to open instead of the CUDA driver's and NVRTC's usual names: a CUDA
// installed off the dynamic loader's path, or the tests' stand-in that
// runs kernels on the CPU (internal/cudaemu). They are read once, on the
// first Open of a process.
const (
	DriverEnv = "LOOM_CUDA_DRIVER"
	NVRTCEnv  = "LOOM_NVRTC"
)

// driver holds the entry points of libcuda and libnvrtc.
type driver struct {
	cuInit, cuDeviceGet, cuDeviceGetAttribute, cuDevicePrimaryCtxRetain, cuCtxSetCurrent uintptr
	cuModuleLoadData, cuModuleGetFunction, cuModuleUnload                                uintptr
	cuMemAlloc, cuMemFree, cuMemcpyHtoD, cuMemcpyDtoH, cuLaunchKernel, cuCtxSynchronize  uintptr
	cuGetErrorString                                                                     uintptr
	cuEventCreate, cuEventRecord, cuEventSynchronize, cuEventElapsedTime, cuEventDestroy uintptr

	nvrtcCreateProgram, nvrtcCompileProgram, nvrtcGetProgramLogSize, nvrtcGetProgramLog uintptr
	nvrtcGetPTXSize, nvrtcGetPTX, nvrtcDestroyProgram                                   uintptr
}

var (
	loadOnce sync.Once
	drv      *driver
	loadErr  error
)

// ErrNoCUDA is returned (wrapped) when the CUDA driver or NVRTC cannot be
// loaded: the machine has no NVIDIA GPU or CUDA installation.
var ErrNoCUDA = errors.New("cuda: CUDA is not available")

func dlopenAny(names ...string) (uintptr, error) {
	var errs []string
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, nil
		}
		errs = append(errs, err.Error())
	}
	return 0, fmt.Errorf("%w: none of %s loads (%s)", ErrNoCUDA, strings.Join(names, ", "), strings.Join(errs, "; "))
}

// libraryNames is the library the environment variable env names, or
// else the usual names.
func libraryNames(env string, usual ...string) []string {
	if path := os.Getenv(env); path != "" {
		return []string{path}
	}
	return usual
}

func loadDriver() (*driver, error) {
	loadOnce.Do(func() {
		cu, err := dlopenAny(libraryNames(DriverEnv, "libcuda.so.1", "libcuda.so")...)
		if err != nil {
			loadErr = err
			return
		}
		nv, err := dlopenAny(libraryNames(NVRTCEnv, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0")...)
		if err != nil {
			loadErr = err
			return
		}
		d := &driver{}
		syms := []struct {
			lib  uintptr
			name string
			p    *uintptr
		}{
			{cu, "cuInit", &d.cuInit}, {cu, "cuDeviceGet", &d.cuDeviceGet}, {cu, "cuDeviceGetAttribute", &d.cuDeviceGetAttribute},
			{cu, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain}, {cu, "cuCtxSetCurrent", &d.cuCtxSetCurrent},
			{cu, "cuModuleLoadData", &d.cuModuleLoadData}, {cu, "cuModuleGetFunction", &d.cuModuleGetFunction}, {cu, "cuModuleUnload", &d.cuModuleUnload},
			{cu, "cuMemAlloc_v2", &d.cuMemAlloc}, {cu, "cuMemFree_v2", &d.cuMemFree}, {cu, "cuMemcpyHtoD_v2", &d.cuMemcpyHtoD},
			{cu, "cuMemcpyDtoH_v2", &d.cuMemcpyDtoH}, {cu, "cuLaunchKernel", &d.cuLaunchKernel}, {cu, "cuCtxSynchronize", &d.cuCtxSynchronize},
			{cu, "cuGetErrorString", &d.cuGetErrorString},
			{cu, "cuEventCreate", &d.cuEventCreate}, {cu, "cuEventRecord", &d.cuEventRecord}, {cu, "cuEventSynchronize", &d.cuEventSynchronize},
			{cu, "cuEventElapsedTime", &d.cuEventElapsedTime}, {cu, "cuEventDestroy_v2", &d.cuEventDestroy},
			{nv, "nvrtcCreateProgram", &d.nvrtcCreateProgram}, {nv, "nvrtcCompileProgram", &d.nvrtcCompileProgram},
			{nv, "nvrtcGetProgramLogSize", &d.nvrtcGetProgramLogSize}, {nv, "nvrtcGetProgramLog", &d.nvrtcGetProgramLog},
			{nv, "nvrtcGetPTXSize", &d.nvrtcGetPTXSize}, {nv, "nvrtcGetPTX", &d.nvrtcGetPTX}, {nv, "nvrtcDestroyProgram", &d.nvrtcDestroyProgram},
		}
		for _, s := range syms {
			p, err := purego.Dlsym(s.lib, s.name)
			if err != nil {
				loadErr = fmt.Errorf("%w: %s: %v", ErrNoCUDA, s.name, err)
				return
			}
			*s.p = p
		}
		drv = d
	})
	return drv, loadErr
}

// check turns a CUresult into an error naming the call.
func (d *driver) check(call string, r uintptr) error {
	if r == 0 {
		return nil
	}
	var msg *byte
	purego.SyscallN(d.cuGetErrorString, r, uintptr(unsafe.Pointer(&msg)))
	return fmt.Errorf("cuda: %s: %s (error %d)", call, goString(msg), r)
}

func goString(p *byte) string {
	if p == nil {
		return "unknown error"
	}
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

func cString(s string) []byte { return append([]byte(s), 0) }

// Device is the first CUDA device, with its primary context.
type Device struct {
	d         *driver
	ctx       uintptr
	Major     int // compute capability
	Minor     int
	deviceNum int32
}

// Open opens the first CUDA device. Without CUDA it returns an error
// wrapping ErrNoCUDA.
func Open() (*Device, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.check("cuInit", call(d.cuInit, 0)); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoCUDA, err)
	}
	defer onStackSignals() // see signals.go: after the context too
	dev := &Device{d: d}
	if err := d.check("cuDeviceGet", call(d.cuDeviceGet, uintptr(unsafe.Pointer(&dev.deviceNum)), 0)); err != nil {
		return nil, err
	}
	var major, minor int32
	const attrMajor, attrMinor = 75, 76
	if err := d.check("cuDeviceGetAttribute", call(d.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&major)), attrMajor, uintptr(dev.deviceNum))); err != nil {
		return nil, err
	}
	if err := d.check("cuDeviceGetAttribute", call(d.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&minor)), attrMinor, uintptr(dev.deviceNum))); err != nil {
		return nil, err
	}
	dev.Major, dev.Minor = int(major), int(minor)
	if err := d.check("cuDevicePrimaryCtxRetain", call(d.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&dev.ctx)), uintptr(dev.deviceNum))); err != nil {
		return nil, err
	}
	return dev, nil
}

// call calls a C function; pointers converted to uintptr in its
// arguments escape to the heap and stay alive through the call.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// Arch is the device's architecture as Options.Arch takes it ("sm_90").
func (dev *Device) Arch() string { return fmt.Sprintf("sm_%d%d", dev.Major, dev.Minor) }

// current makes the device's context current on this OS thread, which
// the caller has locked.
func (dev *Device) current() error {
	return dev.d.check("cuCtxSetCurrent", call(dev.d.cuCtxSetCurrent, dev.ctx))
}

// Program is a module compiled and loaded on a device.
type Program struct {
	dev   *Device
	m     *Module
	PTX   string
	mod   uintptr
	funcs []uintptr
}

// Compile compiles m with NVRTC for the device and loads it.
func (dev *Device) Compile(m *Module) (*Program, error) {
	d := dev.d
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := dev.current(); err != nil {
		return nil, err
	}
	text, err := d.compile(m, dev.Arch())
	if err != nil {
		return nil, err
	}
	ptx := cString(text)
	p := &Program{dev: dev, m: m, PTX: text}
	if err := d.check("cuModuleLoadData", call(d.cuModuleLoadData, uintptr(unsafe.Pointer(&p.mod)), uintptr(unsafe.Pointer(&ptx[0])))); err != nil {
		return nil, err
	}
	defer onStackSignals() // see signals.go
	for _, k := range m.Kernels {
		var fn uintptr
		kn := cString(k.Name)
		if err := d.check("cuModuleGetFunction "+k.Name, call(d.cuModuleGetFunction, uintptr(unsafe.Pointer(&fn)), p.mod, uintptr(unsafe.Pointer(&kn[0])))); err != nil {
			call(d.cuModuleUnload, p.mod)
			return nil, err
		}
		p.funcs = append(p.funcs, fn)
	}
	return p, nil
}

// compile compiles m's source with NVRTC to PTX for arch ("sm_90").
func (d *driver) compile(m *Module, arch string) (string, error) {
	var prog uintptr
	src, name := cString(m.Source), cString(m.Func.Name+".cu")
	if r := call(d.nvrtcCreateProgram, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&src[0])), uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); r != 0 {
		return "", fmt.Errorf("cuda: nvrtcCreateProgram: error %d", r)
	}
	defer call(d.nvrtcDestroyProgram, uintptr(unsafe.Pointer(&prog)))
	opts := [][]byte{cString("--gpu-architecture=compute_" + strings.TrimPrefix(arch, "sm_")), cString("-default-device"), cString("--std=c++14")}
	ptrs := make([]uintptr, len(opts))
	for i, o := range opts {
		ptrs[i] = uintptr(unsafe.Pointer(&o[0]))
	}
	if r := call(d.nvrtcCompileProgram, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0]))); r != 0 {
		var n uintptr
		call(d.nvrtcGetProgramLogSize, prog, uintptr(unsafe.Pointer(&n)))
		log := make([]byte, n+1)
		call(d.nvrtcGetProgramLog, prog, uintptr(unsafe.Pointer(&log[0])))
		return "", fmt.Errorf("cuda: NVRTC rejects the source of %s (error %d):\n%s", m.Func.Name, r, strings.TrimRight(string(log), "\x00"))
	}
	runtime.KeepAlive(opts)
	var n uintptr
	call(d.nvrtcGetPTXSize, prog, uintptr(unsafe.Pointer(&n)))
	ptx := make([]byte, n+1)
	call(d.nvrtcGetPTX, prog, uintptr(unsafe.Pointer(&ptx[0])))
	return strings.TrimRight(string(ptx), "\x00"), nil
}

// NVRTCPTX compiles m's source to PTX for m.Arch with NVRTC, without a
// device: CompilePTX's check where clang is missing and CUDA is there.
// Without CUDA it returns an error wrapping ErrNoCUDA.
func NVRTCPTX(m *Module) (string, error) {
	d, err := loadDriver()
	if err != nil {
		return "", err
	}
	return d.compile(m, m.Arch)
}

// Close unloads the program's module from the device.
func (p *Program) Close() error {
	if p.mod == 0 {
		return nil
	}
	d := p.dev.d
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := p.dev.current(); err != nil {
		return err
	}
	err := d.check("cuModuleUnload", call(d.cuModuleUnload, p.mod))
	p.mod, p.funcs = 0, nil
	return err
}

// Run copies the parameters in args (Go slices, as ast.Interpret takes
// them) to the device, launches every kernel in order, waits, and copies
// every parameter back.
func (p *Program) Run(sizes map[string]int64, args map[string]any) error {
	c, err := p.Bind(sizes, args)
	if err != nil {
		return err
	}
	defer c.Release()
	if err := c.Launch(); err != nil {
		return err
	}
	return c.Read()
}

// Call is a program bound to its arguments on the device: the parameters
// copied there, the temporaries allocated. It launches as often as asked
// without copying anything (Launch, Time), and copies the parameters back
// on Read.
type Call struct {
	p     *Program
	sizes map[string]int64
	args  map[string]any
	dptr  map[*ast.Buffer]uint64
	grids [][3]uintptr // per kernel; a zero means no blocks at these sizes
}

// Bind allocates the device memory of a run at sizes and copies the
// parameters in args there. Release frees it.
func (p *Program) Bind(sizes map[string]int64, args map[string]any) (*Call, error) {
	d, m := p.dev.d, p.m
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := p.dev.current(); err != nil {
		return nil, err
	}
	c := &Call{p: p, sizes: sizes, args: args, dptr: map[*ast.Buffer]uint64{}}
	alloc := func(b *ast.Buffer, host any) error {
		if host == nil {
			data, err := ast.NewData(b, sizes)
			if err != nil {
				return err
			}
			host = data
		}
		n, ok := ast.DataLen(b.DType, host)
		if !ok {
			return fmt.Errorf("cuda: buffer %s: want a slice of %s, got %T", b.Name, ast.GoType(b.DType), host)
		}
		bytes := uintptr(max(n, 1) * b.DType.Bytes())
		var ptr uint64
		if err := d.check("cuMemAlloc "+b.Name, call(d.cuMemAlloc, uintptr(unsafe.Pointer(&ptr)), bytes)); err != nil {
			return err
		}
		c.dptr[b] = ptr
		if n > 0 {
			return d.check("cuMemcpyHtoD "+b.Name, call(d.cuMemcpyHtoD, uintptr(ptr), dataPointer(host), bytes))
		}
		return nil
	}
	for _, b := range m.Func.Params {
		host, ok := args[b.Name]
		if !ok {
			c.release()
			return nil, fmt.Errorf("cuda: no data for parameter %s", b.Name)
		}
		if err := alloc(b, host); err != nil {
			c.release()
			return nil, err
		}
	}
	for _, b := range m.Temps {
		if err := alloc(b, nil); err != nil {
			c.release()
			return nil, err
		}
	}
	for _, k := range m.Kernels {
		var grid [3]uintptr
		for a, e := range k.Grid {
			n, err := evalSize(e, sizes)
			if err != nil {
				c.release()
				return nil, fmt.Errorf("cuda: kernel %s: grid: %v", k.Name, err)
			}
			grid[a] = uintptr(max(n, 0))
		}
		c.grids = append(c.grids, grid)
	}
	return c, nil
}

// Launch runs every kernel once, in order, and waits for them.
func (c *Call) Launch() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.p.dev.current(); err != nil {
		return err
	}
	if err := c.launch(); err != nil {
		return err
	}
	d := c.p.dev.d
	return d.check("cuCtxSynchronize", call(d.cuCtxSynchronize))
}

// launch queues every kernel once; the caller holds the OS thread with
// the context current.
func (c *Call) launch() error {
	d := c.p.dev.d
	if c.p.mod == 0 {
		return fmt.Errorf("cuda: %s: the program is closed", c.p.m.Func.Name)
	}
	for i, k := range c.p.m.Kernels {
		grid := c.grids[i]
		if grid[0] == 0 || grid[1] == 0 || grid[2] == 0 {
			continue // no blocks at these sizes
		}
		vals := make([]uint64, 0, len(k.Buffers)+len(k.Sizes))
		for _, b := range k.Buffers {
			vals = append(vals, c.dptr[b])
		}
		for _, v := range k.Sizes {
			vals = append(vals, uint64(c.sizes[v.Name]))
		}
		params := make([]uintptr, len(vals))
		for j := range vals {
			params[j] = uintptr(unsafe.Pointer(&vals[j]))
		}
		var pp uintptr
		if len(params) > 0 {
			pp = uintptr(unsafe.Pointer(&params[0]))
		}
		r := call(d.cuLaunchKernel, c.p.funcs[i], grid[0], grid[1], grid[2], uintptr(k.Block[0]), uintptr(k.Block[1]), uintptr(k.Block[2]), 0, 0, pp, 0)
		runtime.KeepAlive(vals)
		runtime.KeepAlive(params) // pp points into it, and a uintptr keeps nothing alive
		if err := d.check("cuLaunchKernel "+k.Name, r); err != nil {
			return err
		}
	}
	return nil
}

// Time runs the kernels reps times back to back and returns the seconds
// one run takes, measured on the device between two events (no copies,
// no host-side waiting in between).
func (c *Call) Time(reps int) (float64, error) {
	d := c.p.dev.d
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.p.dev.current(); err != nil {
		return 0, err
	}
	var start, end uintptr
	if err := d.check("cuEventCreate", call(d.cuEventCreate, uintptr(unsafe.Pointer(&start)), 0)); err != nil {
		return 0, err
	}
	defer call(d.cuEventDestroy, start)
	if err := d.check("cuEventCreate", call(d.cuEventCreate, uintptr(unsafe.Pointer(&end)), 0)); err != nil {
		return 0, err
	}
	defer call(d.cuEventDestroy, end)
	if err := d.check("cuEventRecord", call(d.cuEventRecord, start, 0)); err != nil {
		return 0, err
	}
	for range max(reps, 1) {
		if err := c.launch(); err != nil {
			return 0, err
		}
	}
	if err := d.check("cuEventRecord", call(d.cuEventRecord, end, 0)); err != nil {
		return 0, err
	}
	if err := d.check("cuEventSynchronize", call(d.cuEventSynchronize, end)); err != nil {
		return 0, err
	}
	var ms float32
	if err := d.check("cuEventElapsedTime", call(d.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start, end)); err != nil {
		return 0, err
	}
	return float64(ms) / 1e3 / float64(max(reps, 1)), nil
}

// Read copies every parameter back into its Go slice.
func (c *Call) Read() error {
	d := c.p.dev.d
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.p.dev.current(); err != nil {
		return err
	}
	for _, b := range c.p.m.Func.Params {
		host := c.args[b.Name]
		n, _ := ast.DataLen(b.DType, host)
		if n == 0 {
			continue
		}
		if err := d.check("cuMemcpyDtoH "+b.Name, call(d.cuMemcpyDtoH, dataPointer(host), uintptr(c.dptr[b]), uintptr(n*b.DType.Bytes()))); err != nil {
			return err
		}
	}
	return nil
}

// Release frees the call's device memory.
func (c *Call) Release() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if c.p.dev.current() == nil {
		c.release()
	}
}

func (c *Call) release() {
	for b, ptr := range c.dptr {
		call(c.p.dev.d.cuMemFree, uintptr(ptr))
		delete(c.dptr, b)
	}
}

// evalSize evaluates an expression over the sizes.
func evalSize(e ast.Expr, sizes map[string]int64) (int64, error) {
	m := map[string]ast.Expr{}
	for k, v := range sizes {
		m[k] = ast.I64(v)
	}
	v, ok := ast.ConstIntValue(ast.Simplify(ast.Substitute(ast.NewCast(ast.Int64, e), m)))
	if !ok {
		return 0, fmt.Errorf("%s does not evaluate at sizes %v", ast.Print(e), sizes)
	}
	return v, nil
}

// dataPointer returns the address of a slice's first element.
func dataPointer(data any) uintptr {
	switch s := data.(type) {
	case []float32:
		return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	case []float64:
		return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	case []int32:
		return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	case []int64:
		return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	case []bool:
		return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	case []uint16: // float16 and bfloat16 encodings
		return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	}
	return 0
}
