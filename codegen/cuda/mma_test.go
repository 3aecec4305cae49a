package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// mmaKernel calls the helper of factor type in on tiles with row strides
// that are not the tiles' widths.
func mmaKernel(t *testing.T, in string, bt bool) string {
	t.Helper()
	h, err := mmaHelper(in, "f32", bt)
	if err != nil {
		t.Fatal(err)
	}
	ldb := "9"
	if bt {
		ldb = "19"
	}
	return h + "\n\nextern \"C\" __global__ void k(const unsigned short* A, const unsigned short* B, float* C) {\n  " + mmaHelperName(in, "f32", bt) + "(A + 3, 24, B + 1, " + ldb + ", C + 2, 12);\n}\n"
}

// TestMMAPTX: the mma helpers compile to PTX for sm_80 and sm_90, with the
// Tensor Core instruction in them.
func TestMMAPTX(t *testing.T) {
	for _, in := range []string{"f16", "bf16"} {
		for _, arch := range []string{"sm_80", "sm_90"} {
			m := &Module{Func: &ast.Func{Name: "mma_" + in}, Source: mmaKernel(t, in, false) + strings.Replace(mmaKernel(t, in, true), "void k(", "void k2(", 1), Kernels: []*Kernel{{Name: "k"}, {Name: "k2"}}, Arch: arch}
			ptx, err := CompilePTX(m)
			if err != nil {
				t.Fatalf("%s %s: %v", in, arch, err)
			}
			if want := "mma.sync.aligned.m16n8k16.row.col.f32." + in + "." + in + ".f32"; !strings.Contains(ptx, want) {
				t.Errorf("%s %s: the PTX lacks %s", in, arch, want)
			}
		}
	}
}

// TestMMAEmulated: a warp of emulated threads runs the helpers on tiles
// at strides and offsets, and gets A · B + C exactly (the factors are
// quarters, their sums exact in float), for both factor types: each
// lane's fragment loads and stores agree with the instruction's layout,
// which the emulation's stand-in for mma.sync follows as the PTX ISA
// writes it.
func TestMMAEmulated(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ (make tools installs it)")
	}
	emu, err := os.ReadFile("../../internal/cudaemu/loom_emu.h")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in string
		bt bool
	}{{"f16", false}, {"bf16", false}, {"f16", true}, {"bf16", true}} {
		in, bt := c.in, c.bt
		t.Run(fmt.Sprintf("%s/bt=%v", in, bt), func(t *testing.T) {
			bits := ast.Float16Bits
			if in == "bf16" {
				bits = ast.BFloat16Bits
			}
			a, b, c := make([]uint16, 16*24+3), make([]uint16, 16*19+1), make([]float32, 16*12+2)
			va := func(i, k int) float64 { return float64((i*7+k*3)%9-4) / 4 }
			vb := func(k, j int) float64 { return float64((k*5+j*11)%7-3) / 4 }
			for i := range 16 {
				for k := range 16 {
					a[3+i*24+k] = bits(va(i, k))
				}
			}
			for k := range 16 {
				for j := range 8 {
					if bt {
						b[1+j*19+k] = bits(vb(k, j))
					} else {
						b[1+k*9+j] = bits(vb(k, j))
					}
				}
			}
			for i := range 16 {
				for j := range 8 {
					c[2+i*12+j] = float32(i - j)
				}
				for j := 8; j < 12; j++ {
					c[2+i*12+j] = float32(i - j)
				}
			}
			list := func(xs any) string { return strings.Trim(strings.ReplaceAll(fmt.Sprint(xs), " ", ", "), "[]") }
			var want []string
			for i := range 16 {
				for j := range 8 {
					d := float64(i - j)
					for k := range 16 {
						d += va(i, k) * vb(k, j)
					}
					want = append(want, fmt.Sprintf("%g", d))
				}
			}
			prog := string(emu) + "\n#include <cstdio>\n" + mmaKernel(t, in, bt) + fmt.Sprintf(`
int main() {
  static unsigned short A[] = {%s};
  static unsigned short B[] = {%s};
  static float C[] = {%s};
  static const double want[] = {%s};
  loom_launch({1, 1, 1}, {32, 1, 1}, [&] { k(A, B, C); });
  int bad = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j)
      if ((double)C[2 + i * 12 + j] != want[i * 8 + j]) {
        if (bad++ < 5) printf("C[%%d][%%d] = %%g, want %%g\n", i, j, C[2 + i * 12 + j], want[i * 8 + j]);
      }
  for (int i = 0; i < 16; ++i)
    for (int j = 8; j < 12; ++j)
      if (C[2 + i * 12 + j] != (float)i - (float)j && ++bad < 5) printf("C[%%d][%%d], outside the tile, changed\n", i, j);
  return bad != 0;
}
`, list(a), list(b), list(c), strings.Join(want, ", "))
			dir := t.TempDir()
			src := filepath.Join(dir, "mma.cpp")
			if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(dir, "mma")
			if out, err := exec.Command(gxx, "-std=c++20", "-O1", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
				t.Fatalf("g++: %v\n%s", err, out)
			}
			if out, err := exec.Command(bin).CombinedOutput(); err != nil || len(out) > 0 {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
