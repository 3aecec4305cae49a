package native

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The build worker: each kernel's IR goes through opt -O3 and llc -O3,
// and starting those two programs (each loads and relocates libLLVM, 110
// MB) costs about 0.2 s of CPU a kernel, several times what optimizing
// and compiling a kernel costs. So the build keeps worker processes
// (runtime/llvmworker.c, compiled with the C compiler into loom's cache
// directory) that load the libLLVM opt and llc link
// against once and compile request after request through LLVM's C API,
// the same pipeline with the same flags. A worker is a separate process,
// so that an LLVM crash or fatal error fails one build with what LLVM
// printed, never the program; the next build starts a fresh worker.
//
// Where no worker can run (opt linked statically against LLVM, no C
// compiler, a libLLVM without the C API's pass builder) or BuildEnv says
// so, builds run opt and llc as before.

//go:embed runtime/llvmworker.c
var workerSource []byte

// BuildEnv chooses how kernels are compiled: "process" runs opt and llc
// for each kernel; unset or "worker", LLVM build workers compile them
// when they can start (falling back to opt and llc when not).
const BuildEnv = "LOOM_LLVM_BUILD"

const workerHello = "LOOM-LLVM-WORKER 1\n"

// workerPool holds the idle workers of one worker program and libLLVM,
// apart by the options LLVM holds for a whole process (idle[1]: llc's
// loop strength reduction off, idle[0]: on).
type workerPool struct {
	exe, lib, arch string
	version        int // LLVM's release
	idle           [2]chan *llvmWorker

	mu      sync.Mutex
	broken  error // why no worker starts; then builds run opt and llc
	reaper  sync.Once
	idleFor time.Duration // workerIdle, unless a test shortens it
}

// workerIdle is how long an idle worker waits for a build before it is
// stopped: a program that builds kernels now and then keeps no processes
// beside it for long.
const workerIdle = 30 * time.Second

var (
	poolsMu sync.Mutex
	pools   = map[string]*workerPool{} // by cache directory and opt; nil: none runs
)

// workers returns the pool of build workers for tc's LLVM, building the
// worker program into dir on first use, or nil when builds must run opt
// and llc.
func (tc *Toolchain) workers(dir string) *workerPool {
	if os.Getenv(BuildEnv) == "process" {
		return nil
	}
	key := fmt.Sprintf("%s\x00%s\x00%d", dir, tc.Opt, tc.Version)
	poolsMu.Lock()
	p, known := pools[key]
	poolsMu.Unlock()
	if !known {
		p = tc.newWorkerPool(dir)
		poolsMu.Lock()
		if q, ok := pools[key]; ok {
			p = q // another build made it first
		} else {
			pools[key] = p
		}
		poolsMu.Unlock()
	}
	if p == nil || p.failed() != nil {
		return nil
	}
	return p
}

// newWorkerPool finds the libLLVM of tc's opt and builds the worker
// program into dir; it returns nil when either cannot be done.
func (tc *Toolchain) newWorkerPool(dir string) *workerPool {
	arch := map[string]string{"amd64": "X86", "arm64": "AArch64", "riscv64": "RISCV", "ppc64le": "PowerPC", "s390x": "SystemZ"}[runtime.GOARCH]
	if arch == "" {
		return nil
	}
	lib, err := libLLVMOf(tc.Opt)
	if err != nil {
		return nil
	}
	exe, err := buildWorker(dir)
	if err != nil {
		return nil
	}
	return &workerPool{exe: exe, lib: lib, arch: arch, version: tc.Version, idleFor: workerIdle, idle: idleQueues(runtime.GOMAXPROCS(0))}
}

// idleQueues returns a pool's idle queues of n workers each.
func idleQueues(n int) [2]chan *llvmWorker {
	return [2]chan *llvmWorker{make(chan *llvmWorker, n), make(chan *llvmWorker, n)}
}

func (p *workerPool) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken
}

// libLLVMOf returns the path of the shared libLLVM the program opt is
// linked against, looked up as the dynamic loader would (the program's
// run paths, then the system's directories), or an error when opt does
// not link one.
func libLLVMOf(opt string) (string, error) {
	real, err := filepath.EvalSymlinks(opt)
	if err != nil {
		return "", err
	}
	f, err := elf.Open(real)
	if err != nil {
		return "", err
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return "", err
	}
	name := ""
	for _, l := range libs {
		if strings.HasPrefix(l, "libLLVM") {
			name = l
			break
		}
	}
	if name == "" {
		return "", fmt.Errorf("%s links no shared libLLVM", opt)
	}
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		paths, _ := f.DynString(tag)
		for _, p := range paths {
			for _, d := range filepath.SplitList(p) {
				dirs = append(dirs, strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN"), "$ORIGIN", filepath.Dir(real)))
			}
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, name); fileExists(p) {
			return p, nil
		}
	}
	return name, nil // the worker's dlopen searches the system's directories
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// buildWorker compiles the worker program unless it is there: into loom's
// default cache directory, where every cache and process finds it (a
// program or test that makes caches in fresh directories compiles it
// once), else into dir.
func buildWorker(dir string) (string, error) {
	compile := func(dir string) (string, error) {
		return compileC(dir, "llvmworker", "llvmworker", workerSource, []string{"-O2"}, []string{"-ldl"})
	}
	if exe, err := compile(DefaultCacheDir()); err == nil {
		return exe, nil
	}
	return compile(dir)
}

// llvmWorker is one running worker process.
type llvmWorker struct {
	noLSR     int // its idle queue: 1 once it built without loop strength reduction
	idleSince time.Time
	cmd       *exec.Cmd
	in        io.WriteCloser
	out       *bufio.Reader
	stderr    *syncBuffer
}

// start runs a new worker and waits for its greeting.
func (p *workerPool) start() (*llvmWorker, error) {
	cmd := exec.Command(p.exe, p.lib, p.arch)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &llvmWorker{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16), stderr: &syncBuffer{}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	hello, err := w.out.ReadString('\n')
	if err != nil || hello != workerHello {
		w.kill()
		return nil, fmt.Errorf("the LLVM build worker %s did not start with %s: %s", p.exe, p.lib, strings.TrimSpace(w.stderr.String()))
	}
	return w, nil
}

func (w *llvmWorker) kill() {
	w.in.Close()
	w.cmd.Process.Kill()
	w.cmd.Wait()
}

// errNoWorker says that the build runs opt and llc instead.
var errNoWorker = errors.New("no LLVM build worker")

// compile builds ir into the object file obj, as Toolchain.compile does
// with opt and llc. It returns errNoWorker when the request is one the
// worker does not take or no worker starts.
func (p *workerPool) compile(ctx context.Context, ir string, t targetArgs, obj string) error {
	flags := uint32(1) // LLVM's loop unrolling on, as opt -O3
	for _, f := range t.OptFlags {
		if f != "-disable-loop-unrolling" {
			return errNoWorker // a flag of opt's own that the C API has no word for
		}
		flags &^= 1
	}
	if p.version >= 16 {
		flags |= 2 // opt infers the data layout from the triple
	}
	noLSR := 0
	for _, f := range t.LLCFlags {
		if f != "-disable-lsr" {
			return errNoWorker
		}
		flags |= 4 // for the whole process: a worker of its own (idle[1])
		noLSR = 1
	}
	if len(ir) >= 1<<31 {
		return errNoWorker // the protocol's lengths are 32 bits
	}
	if err := ctx.Err(); err != nil {
		return &BuildError{Tool: "LLVM build worker", Stderr: fmt.Sprintf("stopped: %v", err)}
	}
	var status byte
	var data []byte
	for attempt := 0; ; attempt++ {
		var w *llvmWorker
		reused := false
		select {
		case w = <-p.idle[noLSR]:
			reused = true
		default:
			var err error
			if w, err = p.start(); err != nil {
				p.mu.Lock()
				p.broken = err
				p.mu.Unlock()
				return errNoWorker
			}
			w.noLSR = noLSR
		}
		w.stderr.Reset()
		stop := context.AfterFunc(ctx, func() { w.cmd.Process.Kill() })
		var err error
		status, data, err = w.request(flags, ir, t)
		if stopped := stop(); err == nil && stopped {
			p.put(w)
		} else {
			w.kill() // failed, or the deadline struck as the answer came
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return &BuildError{Tool: "LLVM build worker", Stderr: fmt.Sprintf("stopped: %v", ctx.Err())}
		}
		if reused && attempt == 0 {
			continue // an idle worker that died meanwhile: once more, with a fresh one
		}
		msg := strings.TrimSpace(w.stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return irError("LLVM build worker", err, msg, ir)
	}
	switch status {
	case 0:
		return writeAtomic(obj, data)
	case 1:
		return irError("opt", errors.New(string(data)), string(data), ir)
	default:
		return irError("llc", errors.New(string(data)), string(data), ir)
	}
}

// put keeps w for the next build, or stops it when enough are idle.
func (p *workerPool) put(w *llvmWorker) {
	w.idleSince = time.Now()
	p.keep(w)
	p.reaper.Do(func() { go p.reap() })
}

func (p *workerPool) keep(w *llvmWorker) {
	select {
	case p.idle[w.noLSR] <- w:
	default:
		w.kill()
	}
}

// reap stops the workers idle for longer than p.idleFor.
func (p *workerPool) reap() {
	for range time.Tick(p.idleFor / 3) {
		for _, idle := range p.idle {
			for range len(idle) {
				select {
				case w := <-idle:
					if time.Since(w.idleSince) > p.idleFor {
						w.kill()
					} else {
						p.keep(w)
					}
				default:
				}
			}
		}
	}
}

// request sends one build and reads its answer.
func (w *llvmWorker) request(flags uint32, ir string, t targetArgs) (status byte, data []byte, err error) {
	var req bytes.Buffer
	req.Grow(len(ir) + 64)
	binary.Write(&req, binary.LittleEndian, flags)
	for _, s := range []string{ir, t.Triple, t.CPU, t.Features} {
		binary.Write(&req, binary.LittleEndian, uint32(len(s)))
		req.WriteString(s)
	}
	if _, err := w.in.Write(req.Bytes()); err != nil {
		return 0, nil, err
	}
	var head [5]byte
	if _, err := io.ReadFull(w.out, head[:]); err != nil {
		return 0, nil, err
	}
	data = make([]byte, binary.LittleEndian.Uint32(head[1:]))
	if _, err := io.ReadFull(w.out, data); err != nil {
		return 0, nil, err
	}
	return head[0], data, nil
}

// syncBuffer is a bytes.Buffer safe for the process's stderr copier and
// its reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		b.buf.Reset()
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
