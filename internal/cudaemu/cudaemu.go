// Package cudaemu runs loom's CUDA kernels on the CPU, for the tests on
// machines without a GPU: every thread of a block is a fiber of its own,
// so that __syncthreads() is a real barrier; between barriers a block's
// threads run one after another, in increasing order in even blocks and
// decreasing in odd ones, so a missing barrier shows as a wrong result,
// and a barrier some threads never reach as a deadlock, reported
// (loom_emu.h). Blocks run one after another.
// It needs g++ with C++20 (make tools provides it). Programs include
// loom_emu.h precompiled, from loom's cache directory (pch.go).
//
// Run compiles a module into a program of its own. BuildDriver builds a
// stand-in for the CUDA driver and NVRTC instead (standin/driver.cpp), which
// loom's launcher loads as it would load CUDA: the launcher's own calls
// (compile, load, allocate, copy, launch, time) then run on the CPU.
package cudaemu

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
)

//go:embed loom_emu.h
var header []byte

//go:embed standin/driver.cpp
var driverSource []byte

// BuildDriver builds the stand-in for the CUDA driver and NVRTC in dir and
// returns the library's path. Set cuda.DriverEnv and cuda.NVRTCEnv to it
// in a process's environment, and cuda.Open there opens a device of
// compute capability 8.0 whose programs g++ builds and whose kernels run
// on the CPU. The modules it builds go in directories under dir.
func BuildDriver(ctx context.Context, dir string) (string, error) {
	if _, err := exec.LookPath("g++"); err != nil {
		return "", fmt.Errorf("cudaemu: g++ not found (make tools installs it): %v", err)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(dir, "'\"\\\n") {
		return "", fmt.Errorf("cudaemu: directory %q: the stand-in driver quotes it in shell commands and C strings", dir)
	}
	for name, data := range map[string][]byte{"loom_emu.h": header, "driver.cpp": driverSource} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	lib := filepath.Join(dir, "libloom-standin-cuda.so")
	build := exec.CommandContext(ctx, "g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-Wall",
		fmt.Sprintf("-DLOOM_EMU_DIR=%q", dir), fmt.Sprintf("-DLOOM_EMU_FLAGS=%q", strings.Join(moduleFlags, " ")),
		"-o", lib, filepath.Join(dir, "driver.cpp"), "-ldl")
	// The driver compiles each module against loom_emu.h, whose parsing
	// is most of a small module's compile: precompiled here, with the
	// modules' flags, while the driver builds. g++ falls back to the
	// header's text where it cannot use it, so a failure only costs time.
	pch := exec.CommandContext(ctx, "g++", append(append([]string{}, moduleFlags...),
		"-x", "c++-header", "-o", filepath.Join(dir, "loom_emu.h.gch"), filepath.Join(dir, "loom_emu.h"))...)
	pchErr := make(chan error, 1)
	go func() { pchErr <- pch.Run() }()
	out, err := build.CombinedOutput()
	if <-pchErr != nil {
		os.Remove(filepath.Join(dir, "loom_emu.h.gch"))
	}
	if err != nil {
		return "", fmt.Errorf("cudaemu: building the stand-in driver: %v\n%s", err, out)
	}
	return lib, nil
}

// moduleFlags are g++'s flags for a module the stand-in driver builds
// (with -shared), and for the header it precompiles for them.
var moduleFlags = []string{"-std=c++20", "-O1", "-pthread", "-w", "-fPIC"}

// Run compiles module m with its header into a program that launches its
// kernels in order on the CPU, runs it at sizes with the parameters in
// args (Go slices, as ast.Interpret takes them), and writes the
// parameters back into args. A deadlock ends when ctx does.
func Run(ctx context.Context, m *cuda.Module, sizes map[string]int64, args map[string]any) error {
	return RunEach(ctx, m, []Binding{{sizes, args}})
}

// Binding is one run of a module: the sizes, and the parameters (read,
// then written back).
type Binding struct {
	Sizes map[string]int64
	Args  map[string]any
}

// RunEach runs m at each binding in turn, as Run does, from one program
// (one compile: the sizes of each binding are constants of its own
// function in it).
func RunEach(ctx context.Context, m *cuda.Module, runs []Binding) error {
	if _, err := exec.LookPath("g++"); err != nil {
		return fmt.Errorf("cudaemu: g++ not found (make tools installs it): %v", err)
	}
	dir, err := os.MkdirTemp("", "loom-cudaemu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var b strings.Builder
	b.WriteString("#include \"loom_emu.h\"\n#include <cstdio>\n\n")
	b.WriteString(m.Source)
	files := map[string][]byte{}
	include := headerDir(ctx)
	if include == "" {
		files["loom_emu.h"] = header
		include = dir
	}
	for i, r := range runs {
		src, err := program(m, i, r.Sizes, r.Args)
		if err != nil {
			return err
		}
		b.WriteString(src)
		for name, data := range r.Args {
			var raw bytes.Buffer
			if err := binary.Write(&raw, binary.LittleEndian, data); err != nil {
				return fmt.Errorf("cudaemu: %s: %v", name, err)
			}
			files[fmt.Sprintf("r%d_%s.in", i, name)] = raw.Bytes()
		}
	}
	b.WriteString("\nint main() try {\n")
	for i := range runs {
		fmt.Fprintf(&b, "  if (int err = run%d()) return err;\n", i)
	}
	b.WriteString("  return 0;\n} catch (const std::exception& e) {\n  std::fprintf(stderr, \"%s\\n\", e.what());\n  return 3;\n}\n")
	files["main.cpp"] = []byte(b.String())
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	compile := func(include string) ([]byte, error) {
		args := append(append([]string{}, programFlags...), "-I", include, "-o", filepath.Join(dir, "kernel"), filepath.Join(dir, "main.cpp"))
		return exec.CommandContext(ctx, "g++", args...).CombinedOutput()
	}
	out, err := compile(include)
	if err != nil && include != dir {
		// A precompiled header g++ cannot read (cut short by a crash,
		// or removed since) is an error, not a fallback: compile
		// again with the header's text beside the program, and drop
		// the precompiled one if that was the trouble.
		if werr := os.WriteFile(filepath.Join(dir, "loom_emu.h"), header, 0o644); werr != nil {
			return werr
		}
		if out, err = compile(dir); err == nil {
			forgetHeader(include)
		}
	}
	if err != nil {
		return fmt.Errorf("cudaemu: g++: %v\n%s\n%s", err, out, b.String())
	}
	run := exec.CommandContext(ctx, filepath.Join(dir, "kernel"))
	run.Dir = dir
	if out, err := run.CombinedOutput(); err != nil {
		return fmt.Errorf("cudaemu: the emulated kernels: %v (a kernel that never ends is stopped at the deadline)\n%s", err, out)
	}
	for i, r := range runs {
		for _, buf := range m.Func.Params {
			raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("r%d_%s.out", i, buf.Name)))
			if err != nil {
				return err
			}
			out := reflect.ValueOf(r.Args[buf.Name])
			if out.Kind() != reflect.Slice {
				return fmt.Errorf("cudaemu: parameter %s: want a slice, got %T", buf.Name, r.Args[buf.Name])
			}
			if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, out.Interface()); err != nil {
				return fmt.Errorf("cudaemu: parameter %s: %v", buf.Name, err)
			}
		}
	}
	return nil
}

// program returns the C++ function runI that reads the buffers of run i
// (rI_NAME.in), launches the module's kernels in order at sizes and
// writes the function's parameters back (rI_NAME.out); it returns 0, or
// 2 when an input cannot be read.
func program(m *cuda.Module, i int, sizes map[string]int64, args map[string]any) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nstatic int run%d() {\n", i)
	var buffers []*ast.Buffer
	buffers = append(buffers, m.Func.Params...)
	buffers = append(buffers, m.Temps...)
	for _, buf := range buffers {
		n := int64(1)
		for _, d := range buf.Shape {
			v, err := evalConst(d, sizes)
			if err != nil {
				return "", err
			}
			n *= v
		}
		ct := map[ast.DType]string{ast.Float32: "float", ast.Float64: "double", ast.Int32: "int", ast.Int64: "long long", ast.Float16: "unsigned short", ast.BFloat16: "unsigned short"}[buf.DType]
		if ct == "" {
			return "", fmt.Errorf("cudaemu: buffer %s: type %s not emulated", buf.Name, buf.DType)
		}
		fmt.Fprintf(&b, "  std::vector<%s> %s(%d);\n", ct, buf.Name, n)
		if _, ok := args[buf.Name]; ok {
			fmt.Fprintf(&b, "  { FILE* f = fopen(\"r%[4]d_%[1]s.in\", \"rb\"); if (!f || fread(%[1]s.data(), sizeof(%[2]s), %[3]d, f) != %[3]d) return 2; fclose(f); }\n", buf.Name, ct, n, i)
		}
	}
	for _, k := range m.Kernels {
		var grid [3]int64
		for a, e := range k.Grid {
			v, err := evalConst(e, sizes)
			if err != nil {
				return "", err
			}
			grid[a] = v
		}
		var call []string
		for _, buf := range k.Buffers {
			call = append(call, buf.Name+".data()")
		}
		for _, v := range k.Sizes {
			call = append(call, fmt.Sprintf("%dLL", sizes[v.Name]))
		}
		fmt.Fprintf(&b, "  loom_launch({%d, %d, %d}, {%d, %d, %d}, [&] { %s(%s); });\n", grid[0], grid[1], grid[2], k.Block[0], k.Block[1], k.Block[2], k.Name, strings.Join(call, ", "))
	}
	for _, buf := range m.Func.Params {
		fmt.Fprintf(&b, "  { FILE* f = fopen(\"r%[2]d_%[1]s.out\", \"wb\"); fwrite(%[1]s.data(), sizeof(%[1]s[0]), %[1]s.size(), f); fclose(f); }\n", buf.Name, i)
	}
	b.WriteString("  return 0;\n}\n")
	return b.String(), nil
}

// evalConst evaluates an extent over the sizes.
func evalConst(e ast.Expr, sizes map[string]int64) (int64, error) {
	for name, v := range sizes {
		e = ast.Substitute(e, map[string]ast.Expr{name: ast.I64(v)})
	}
	v, ok := ast.ConstIntValue(ast.Simplify(e))
	if !ok {
		return 0, fmt.Errorf("cudaemu: extent %s is not constant at sizes %v", ast.Print(e), sizes)
	}
	return v, nil
}
