package cuda_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/workload"
)

// TestEmulate runs every representative kernel on the CPU, each GPU thread
// an OS thread (testdata/emu/loom_emu.h), and compares what it computes
// with the interpreter: the barriers, the shuffles and the shared-memory
// indexing checked for real on a machine without a GPU. It needs g++
// (C++20), which make tools provides.
func TestEmulate(t *testing.T) {
	if _, err := exec.LookPath("g++"); err != nil {
		t.Fatalf("g++ not found (make tools installs it): %v", err)
	}
	emu, err := filepath.Abs("testdata/emu")
	if err != nil {
		t.Fatal(err)
	}
	for _, gc := range gpuCases() {
		t.Run(gc.name, func(t *testing.T) {
			m := lowered(t, gc)
			dir := t.TempDir()
			got, want := gc.c.Args(1), gc.c.Args(1)
			if err := ast.Interpret(gc.c.Func, gc.c.Sizes, want); err != nil {
				t.Fatal(err)
			}
			src, err := emulatorMain(m, gc.c.Sizes, got)
			if err != nil {
				t.Fatal(err)
			}
			for name, data := range got {
				var b bytes.Buffer
				if err := binary.Write(&b, binary.LittleEndian, data); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name+".in"), b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "main.cpp"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			build := exec.CommandContext(ctx, "g++", "-std=c++20", "-O1", "-pthread", "-w", "-I", emu, "-o", filepath.Join(dir, "kernel"), filepath.Join(dir, "main.cpp"))
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("g++: %v\n%s\n%s", err, out, src)
			}
			run := exec.CommandContext(ctx, filepath.Join(dir, "kernel"))
			run.Dir = dir
			if out, err := run.CombinedOutput(); err != nil {
				t.Fatalf("emulated kernel: %v (a deadlock ends at the timeout: a barrier some threads never reach)\n%s", err, out)
			}
			for _, b := range gc.c.Func.Params {
				raw, err := os.ReadFile(filepath.Join(dir, b.Name+".out"))
				if err != nil {
					t.Fatal(err)
				}
				out := reflect.New(reflect.TypeOf(got[b.Name])).Elem()
				out.Set(reflect.MakeSlice(out.Type(), reflect.ValueOf(got[b.Name]).Len(), reflect.ValueOf(got[b.Name]).Len()))
				if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, out.Interface()); err != nil {
					t.Fatal(err)
				}
				if e := workload.MaxRelErr(out.Interface(), want[b.Name]); e > 1e-4 {
					t.Errorf("%s differs from the interpreter's by %g", b.Name, e)
				}
			}
		})
	}
}

// emulatorMain returns a C++ program that reads the buffers (NAME.in),
// launches the module's kernels in order and writes the function's
// parameters back (NAME.out).
func emulatorMain(m *cuda.Module, sizes map[string]int64, args map[string]any) (string, error) {
	var b strings.Builder
	b.WriteString("#include \"loom_emu.h\"\n#include <cstdio>\n\n")
	b.WriteString(m.Source)
	b.WriteString("\nint main() {\n")
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
		ct := map[ast.DType]string{ast.Float32: "float", ast.Float64: "double", ast.Int32: "int", ast.Int64: "long long"}[buf.DType]
		if ct == "" {
			return "", fmt.Errorf("buffer %s: type %s not emulated", buf.Name, buf.DType)
		}
		fmt.Fprintf(&b, "  std::vector<%s> %s(%d);\n", ct, buf.Name, n)
		if _, ok := args[buf.Name]; ok {
			fmt.Fprintf(&b, "  { FILE* f = fopen(\"%[1]s.in\", \"rb\"); if (!f || fread(%[1]s.data(), sizeof(%[2]s), %[3]d, f) != %[3]d) return 2; fclose(f); }\n", buf.Name, ct, n)
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
		fmt.Fprintf(&b, "  { FILE* f = fopen(\"%[1]s.out\", \"wb\"); fwrite(%[1]s.data(), sizeof(%[1]s[0]), %[1]s.size(), f); fclose(f); }\n", buf.Name)
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
		return 0, fmt.Errorf("extent %s is not constant at sizes %v", ast.Print(e), sizes)
	}
	return v, nil
}
