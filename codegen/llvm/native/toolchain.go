package native

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loom-go/loom/codegen/llvm"
)

// Toolchain is the set of programs that turn LLVM IR into a shared
// object: LLVM's optimizer and static compiler, and a linker.
type Toolchain struct {
	Opt, LLC string // paths of opt and llc, of one LLVM release from 14 to 19
	Version  int    // their LLVM release (major version)
	Linker   string // path of ld, or of the C compiler when LinkWithCC
	// LinkWithCC links through the system C compiler ("cc -shared")
	// instead of calling ld directly; it costs about 30 ms a kernel.
	LinkWithCC bool
	// Timeout bounds each build; 0 means two minutes.
	Timeout time.Duration
}

// ErrToolMissing is wrapped by the error for a program the build needs
// that is not installed.
var ErrToolMissing = errors.New("build tool not found")

// The LLVM releases loom's IR is built and tested with.
const (
	MinLLVM = 14
	MaxLLVM = 19
)

// LLVMEnv names the LLVM loom builds with: a release number (19: opt-19
// and llc-19 on PATH, or in /usr/lib/llvm-19/bin) or the directory that
// holds opt and llc.
const LLVMEnv = "LOOM_LLVM"

var (
	findOnce   sync.Once
	found      *Toolchain
	findFailed error
)

// FindToolchain locates opt and llc of one LLVM release and a linker on
// PATH: the LLVM LLVMEnv names, else LLVM 14 (opt-14 and llc-14), else
// opt and llc, else the newest of opt-19 to opt-15. A release outside 14
// to 19, or opt and llc of different releases, is an error that says
// what was found; a missing program's error names the package that
// provides it.
func FindToolchain() (*Toolchain, error) {
	findOnce.Do(func() {
		tc := &Toolchain{}
		var err error
		if tc.Opt, tc.LLC, err = findLLVM(os.Getenv(LLVMEnv)); err != nil {
			findFailed = err
			return
		}
		if tc.Version, err = knownLLVMVersion(tc.Opt, tc.LLC); err != nil {
			findFailed = err
			return
		}
		if tc.Linker, err = lookPath("ld", "binutils (apt-get install binutils)", "ld"); err != nil {
			if tc.Linker, err = lookPath("cc", "gcc (apt-get install gcc)", "cc", "gcc"); err != nil {
				findFailed = err
				return
			}
			tc.LinkWithCC = true
		}
		found = tc
	})
	if findFailed != nil {
		return nil, findFailed
	}
	c := *found
	return &c, nil
}

// findLLVM returns the paths of opt and llc: those choice names (see
// LLVMEnv), or the first pair found on PATH.
func findLLVM(choice string) (opt, llc string, err error) {
	if choice != "" {
		var opts, llcs []string
		if n, err := strconv.Atoi(choice); err == nil {
			dir := fmt.Sprintf("/usr/lib/llvm-%d/bin/", n)
			opts = []string{fmt.Sprintf("opt-%d", n), dir + "opt"}
			llcs = []string{fmt.Sprintf("llc-%d", n), dir + "llc"}
		} else {
			opts = []string{filepath.Join(choice, "opt")}
			llcs = []string{filepath.Join(choice, "llc")}
		}
		pkg := fmt.Sprintf("the LLVM %s=%s names", LLVMEnv, choice)
		if opt, err = lookPath("opt", pkg, opts...); err != nil {
			return "", "", err
		}
		if llc, err = lookPath("llc", pkg, llcs...); err != nil {
			return "", "", err
		}
		return opt, llc, nil
	}
	names := []string{fmt.Sprint(MinLLVM), ""}
	for v := MaxLLVM; v > MinLLVM; v-- {
		names = append(names, fmt.Sprint(v))
	}
	for _, v := range names {
		suffix := ""
		if v != "" {
			suffix = "-" + v
		}
		o, errO := exec.LookPath("opt" + suffix)
		l, errL := exec.LookPath("llc" + suffix)
		if errO == nil && errL == nil {
			return o, l, nil
		}
	}
	return "", "", fmt.Errorf("%w: opt and llc of LLVM %d to %d are not on PATH; they come with llvm-%d (apt-get install llvm-%d), or set %s", ErrToolMissing, MinLLVM, MaxLLVM, MinLLVM, MinLLVM, LLVMEnv)
}

var versionLine = regexp.MustCompile(`LLVM version (\d+)\.`)

// llvmVersion returns the LLVM release of opt and llc, which must be one
// and the same, from 14 to 19.
func llvmVersion(opt, llc string) (int, error) {
	version := func(tool string) (int, error) {
		out, err := exec.Command(tool, "--version").Output()
		if err != nil {
			return 0, fmt.Errorf("codegen/llvm/native: %s --version: %w", tool, err)
		}
		m := versionLine.FindSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("codegen/llvm/native: %s --version names no LLVM version: %.200q", tool, out)
		}
		v, _ := strconv.Atoi(string(m[1]))
		if v < MinLLVM || v > MaxLLVM {
			return 0, fmt.Errorf("codegen/llvm/native: %s is LLVM %d; loom builds with LLVM %d to %d (set %s to one, e.g. %s=%d)", tool, v, MinLLVM, MaxLLVM, LLVMEnv, LLVMEnv, MinLLVM)
		}
		return v, nil
	}
	vo, err := version(opt)
	if err != nil {
		return 0, err
	}
	vl, err := version(llc)
	if err != nil {
		return 0, err
	}
	if vo != vl {
		return 0, fmt.Errorf("codegen/llvm/native: %s is LLVM %d but %s is LLVM %d; set %s to one release", opt, vo, llc, vl, LLVMEnv)
	}
	return vo, nil
}

// knownLLVMVersion is llvmVersion remembered on disk, under
// llvm-version/ in DefaultCacheDir, by the path, size and modification
// time of opt and llc. Asking each program for its version loads LLVM's
// libraries twice, about 0.2 s of CPU, and every process that builds or
// measures a kernel finds the toolchain: loom tune's measuring processes,
// one a candidate, paid that for a lookup. Errors are not remembered, and
// a file that cannot be written only costs the next process the asking.
func knownLLVMVersion(opt, llc string) (int, error) {
	key := statKey(opt, llc)
	var file string
	if !strings.Contains(key, ":?;") {
		sum := sha256.Sum256([]byte(key))
		file = filepath.Join(DefaultCacheDir(), "llvm-version", hex.EncodeToString(sum[:12]))
		if b, err := os.ReadFile(file); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v >= MinLLVM && v <= MaxLLVM {
				return v, nil
			}
		}
	}
	v, err := llvmVersion(opt, llc)
	if err != nil || file == "" {
		return v, err
	}
	if os.MkdirAll(filepath.Dir(file), 0o755) == nil {
		// Written aside and renamed: a process never reads half a file.
		if tmp, err := os.CreateTemp(filepath.Dir(file), ".version-*"); err == nil {
			_, werr := fmt.Fprintf(tmp, "%d\n", v)
			if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
				os.Remove(tmp.Name())
			}
		}
	}
	return v, nil
}

// statKey identifies programs by the path, size and modification time of
// each (":?;" for one that cannot be read).
func statKey(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&b, "%s:?;", p)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

func lookPath(what, pkg string, names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not on PATH; it comes with %s", ErrToolMissing, what, pkg)
}

// fingerprint identifies the toolchain for the compile cache: the path,
// size and modification time of each program (cheaper than asking each
// for its version).
func (tc *Toolchain) fingerprint() string {
	return statKey(tc.Opt, tc.LLC, tc.Linker) + fmt.Sprintf("cc=%v", tc.LinkWithCC)
}

// BuildError is a failure of one of the build programs: which one, what
// it printed, and for an error in the IR, the line it points at.
type BuildError struct {
	Tool   string // "opt", "llc" or the linker
	Stderr string
	Line   int    // line of the IR the error is on, 0 if none
	IRLine string // that line's text
}

func (e *BuildError) Error() string {
	msg := fmt.Sprintf("codegen/llvm/native: %s failed: %s", e.Tool, strings.TrimSpace(e.Stderr))
	if e.Line > 0 {
		msg += fmt.Sprintf("\nIR line %d: %s", e.Line, strings.TrimSpace(e.IRLine))
	}
	return msg
}

var stdinPos = regexp.MustCompile(`<stdin>:(\d+):(\d+)`)

// forLLVM returns the IR a Module prints (typed pointers) in the form the
// toolchain's LLVM reads: as it is for LLVM 14, with opaque pointers for
// LLVM 15 and later, whose parsers take typed pointers only for a time.
func (tc *Toolchain) forLLVM(ir string) string {
	if tc.Version >= 15 {
		return llvm.OpaquePointers(ir)
	}
	return ir
}

// build compiles ir into an object file: through a build worker of dir
// when one runs, else with opt and llc.
func (tc *Toolchain) build(ctx context.Context, dir, ir string, t targetArgs, obj string) error {
	if p := tc.workers(dir); p != nil {
		if err := p.compile(ctx, tc.forLLVM(ir), t, obj); err != errNoWorker {
			return err
		}
	}
	return tc.compile(ctx, ir, t, obj)
}

// compile runs opt -O3 and llc -O3 on ir, piped, writing an object file.
func (tc *Toolchain) compile(ctx context.Context, ir string, t targetArgs, obj string) error {
	ir = tc.forLLVM(ir)
	optArgs := append([]string{"-O3"}, t.OptFlags...)
	optArgs = append(optArgs, t.args()...)
	optArgs = append(optArgs, "-", "-o", "-")
	llcArgs := append([]string{"-O3", "-filetype=obj", "-relocation-model=pic"}, t.args()...)
	llcArgs = append(llcArgs, t.LLCFlags...)
	llcArgs = append(llcArgs, "-", "-o", obj)
	opt := exec.CommandContext(ctx, tc.Opt, optArgs...)
	llc := exec.CommandContext(ctx, tc.LLC, llcArgs...)
	opt.Stdin = strings.NewReader(ir)
	var optErr, llcErr bytes.Buffer
	opt.Stderr, llc.Stderr = &optErr, &llcErr
	pipe, err := opt.StdoutPipe()
	if err != nil {
		return err
	}
	llc.Stdin = pipe
	if err := opt.Start(); err != nil {
		return fmt.Errorf("codegen/llvm/native: starting opt: %w", err)
	}
	if err := llc.Start(); err != nil {
		opt.Process.Kill()
		opt.Wait()
		return fmt.Errorf("codegen/llvm/native: starting llc: %w", err)
	}
	optRes := opt.Wait()
	llcRes := llc.Wait()
	if optRes != nil {
		return irError("opt", optRes, optErr.String(), ir)
	}
	if llcRes != nil {
		return irError("llc", llcRes, llcErr.String(), ir)
	}
	return nil
}

func irError(tool string, err error, stderr, ir string) error {
	be := &BuildError{Tool: tool, Stderr: stderr}
	if stderr == "" {
		be.Stderr = err.Error()
	}
	if m := stdinPos.FindStringSubmatch(stderr); m != nil {
		n, _ := strconv.Atoi(m[1])
		lines := strings.Split(ir, "\n")
		if n >= 1 && n <= len(lines) {
			be.Line, be.IRLine = n, lines[n-1]
		}
	}
	return be
}

// link makes a shared object of obj that needs the runtime library rt.
func (tc *Toolchain) link(ctx context.Context, obj, rt, out string) error {
	// -Bsymbolic: the kernel's own calls (the packed entry calling the
	// kernel) stay inside it, even when a library loaded earlier defines
	// a function of the same name (a kernel named div, say).
	var args []string
	if tc.LinkWithCC {
		args = []string{"-shared", "-Wl,-Bsymbolic", "-o", out, obj, rt, "-Wl,-rpath," + dirOf(rt), "-lm"}
	} else {
		args = []string{"-shared", "-Bsymbolic", "-o", out, obj, rt, "-rpath", dirOf(rt)}
	}
	cmd := exec.CommandContext(ctx, tc.Linker, args...)
	var stderr bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, io.Discard
	if err := cmd.Run(); err != nil {
		msg := stderr.String()
		if msg == "" {
			msg = err.Error()
		}
		return &BuildError{Tool: tc.Linker, Stderr: msg}
	}
	return nil
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

// targetArgs are the target options opt and llc share, and each one's
// extra flags.
type targetArgs struct {
	Triple, CPU, Features string
	OptFlags              []string
	LLCFlags              []string
}

// buildArgs returns the target and optimizer flags for module m.
//
// LLVM's own loop unrolling is off unless the options ask for it: the
// schedule says what to unroll (and unrolling a vectorized micro-kernel
// once more mostly costs compile time: three times opt's time on gemm).
// llc's loop strength reduction is off where the schedule says so
// (llvm.NoLSRKey).
func buildArgs(m *llvm.Module) targetArgs {
	t := m.Options.Target
	a := targetArgs{Triple: t.Triple, CPU: t.CPU, Features: t.Features}
	if m.DisableLSR {
		a.LLCFlags = []string{"-disable-lsr"} // see llvm.NoLSRKey
	}
	if !m.Options.LLVMUnroll {
		a.OptFlags = append(a.OptFlags, "-disable-loop-unrolling")
	}
	return a
}

func (t targetArgs) args() []string {
	var a []string
	if t.Triple != "" {
		a = append(a, "-mtriple="+t.Triple)
	}
	if t.CPU != "" {
		a = append(a, "-mcpu="+t.CPU)
	}
	if t.Features != "" {
		a = append(a, "-mattr="+t.Features)
	}
	return a
}

// Emit returns what the build makes of a module at one stage, as text:
// "opt" is the LLVM IR after opt -O3, "asm" the assembly llc writes from
// it, with the flags of the real build (the target, and loop unrolling
// left to loom unless the module asks LLVM for it). It is for reading
// the code, as Halide's HL_DEBUG_CODEGEN or a compiler's -S.
func Emit(m *llvm.Module, stage string) (string, error) {
	if stage != "opt" && stage != "asm" {
		return "", fmt.Errorf("codegen/llvm/native: no stage %q to emit (have opt, asm)", stage)
	}
	tc, err := FindToolchain()
	if err != nil {
		return "", err
	}
	timeout := tc.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t := buildArgs(m)
	ir := tc.forLLVM(m.String())
	run := func(tool, path string, args []string, in string) (string, error) {
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stdin = strings.NewReader(in)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return "", irError(tool, err, stderr.String(), ir)
		}
		return out.String(), nil
	}
	optArgs := append(append(append([]string{"-O3", "-S"}, t.OptFlags...), t.args()...), "-", "-o", "-")
	optimized, err := run("opt", tc.Opt, optArgs, ir)
	if err != nil || stage == "opt" {
		return optimized, err
	}
	llcArgs := append(append(append([]string{"-O3", "-relocation-model=pic"}, t.args()...), t.LLCFlags...), "-", "-o", "-")
	return run("llc", tc.LLC, llcArgs, optimized)
}
