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

// mmaSource is the source of the named helpers and of those they call,
// in the prelude's order.
func mmaSource(names ...string) string {
	need := map[string]bool{}
	var add func(string)
	add = func(n string) {
		if need[n] {
			return
		}
		need[n] = true
		for _, d := range helperDeps[n] {
			add(d)
		}
	}
	for _, n := range names {
		add(n)
	}
	return prelude(need)
}

// mmaLayout places the tiles of an mma test: A's rows lda elements
// apart from element aoff of its array, B's ldb apart from boff; in
// shared memory when shared (copied there by the kernel).
type mmaLayout struct {
	shared               bool
	lda, aoff, ldb, boff int
}

// mmaLayouts: tiles in global memory (fragments loaded element by
// element), in shared memory with rows 16-byte aligned (ldmatrix), and
// in shared memory unaligned (element by element again).
func mmaLayouts(bt bool) map[string]mmaLayout {
	ldb, ldbAligned := 9, 16
	if bt {
		ldb, ldbAligned = 19, 24
	}
	return map[string]mmaLayout{
		"global":           {false, 24, 3, ldb, 1},
		"shared":           {true, 24, 8, ldbAligned, 8},
		"shared-unaligned": {true, 24, 3, ldb, 1},
	}
}

// mmaKernel runs the helpers of factor type in on tiles laid out as lay,
// C's rows 12 apart from element 2.
func mmaKernel(in string, bt bool, lay mmaLayout, kernel string) string {
	mi := mmaIntrinsic{in: in, acc: "f32", bt: bt}
	src := mmaSource(mi.loadA(lay.shared), mi.loadB(lay.shared), mi.op(), mi.loadC(), mi.storeC())
	sizeA, sizeB := 16*lay.lda+lay.aoff, 16*lay.ldb+lay.boff
	body := ""
	a, b := "A", "B"
	if lay.shared {
		body = fmt.Sprintf(`__shared__ __align__(16) unsigned short As[%d], Bs[%d];
  for (int i = threadIdx.x; i < %d; i += 32) As[i] = A[i];
  for (int i = threadIdx.x; i < %d; i += 32) Bs[i] = B[i];
  __syncthreads();
  `, sizeA, sizeB, sizeA, sizeB)
		a, b = "As", "Bs"
	}
	return src + fmt.Sprintf(`extern "C" __global__ void %s(const unsigned short* A, const unsigned short* B, float* C) {
  %sunsigned a[4], b[2];
  float c[4];
  %s(%s + %d, %d, a);
  %s(%s + %d, %d, b);
  %s(C + 2, 12, c);
  %s(a, b, c);
  %s(C + 2, 12, c);
}
`, kernel, body, mi.loadA(lay.shared), a, lay.aoff, lay.lda, mi.loadB(lay.shared), b, lay.boff, lay.ldb, mi.loadC(), mi.op(), mi.storeC())
}

// TestMMAPTX: the mma helpers compile to PTX for sm_80 and sm_90, with the
// Tensor Core instruction in them, and ldmatrix for tiles in shared
// memory (transposing B's for a [16, 8] tile).
func TestMMAPTX(t *testing.T) {
	for _, in := range []string{"f16", "bf16"} {
		for _, arch := range []string{"sm_80", "sm_90"} {
			var src []string
			var kernels []*Kernel
			for _, bt := range []bool{false, true} {
				for name, lay := range mmaLayouts(bt) {
					kernel := fmt.Sprintf("k_%s_%v", strings.ReplaceAll(name, "-", "_"), bt)
					src = append(src, mmaKernel(in, bt, lay, kernel))
					kernels = append(kernels, &Kernel{Name: kernel})
				}
			}
			// Each kernel brings its helpers; keep the first definition.
			m := &Module{Func: &ast.Func{Name: "mma_" + in}, Source: dedupHelpers(strings.Join(src, "\n")), Kernels: kernels, Arch: arch}
			ptx, err := CompilePTX(m)
			if err != nil {
				t.Fatalf("%s %s: %v", in, arch, err)
			}
			for _, want := range []string{"mma.sync.aligned.m16n8k16.row.col.f32." + in + "." + in + ".f32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.shared.b16"} {
				if !strings.Contains(ptx, want) {
					t.Errorf("%s %s: the PTX lacks %s", in, arch, want)
				}
			}
		}
	}
}

// dedupHelpers drops the second definition of a helper from src, whose
// helpers are blocks separated by blank lines.
func dedupHelpers(src string) string {
	seen := map[string]bool{}
	var out []string
	for _, part := range strings.Split(src, "\n\n") {
		if strings.HasPrefix(part, "__device__") {
			if seen[part] {
				continue
			}
			seen[part] = true
		}
		out = append(out, part)
	}
	return strings.Join(out, "\n\n")
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
	type mmaCase struct {
		in, layout string
		bt         bool
	}
	var cases []mmaCase
	for _, in := range []string{"f16", "bf16"} {
		for _, bt := range []bool{false, true} {
			for _, layout := range []string{"global", "shared", "shared-unaligned"} {
				cases = append(cases, mmaCase{in, layout, bt})
			}
		}
	}
	// One program checks every case (one compile: most of the test's
	// time is g++'s), each case's kernel and check a function of its own.
	var kernels []string
	var checks, calls strings.Builder
	for n, c := range cases {
		in, bt, lay := c.in, c.bt, mmaLayouts(c.bt)[c.layout]
		name := fmt.Sprintf("%s/bt=%v/%s", in, bt, c.layout)
		bits := ast.Float16Bits
		if in == "bf16" {
			bits = ast.BFloat16Bits
		}
		a, b, cc := make([]uint16, 16*lay.lda+lay.aoff), make([]uint16, 16*lay.ldb+lay.boff), make([]float32, 16*12+2)
		va := func(i, k int) float64 { return float64((i*7+k*3)%9-4) / 4 }
		vb := func(k, j int) float64 { return float64((k*5+j*11)%7-3) / 4 }
		for i := range 16 {
			for k := range 16 {
				a[lay.aoff+i*lay.lda+k] = bits(va(i, k))
			}
		}
		for k := range 16 {
			for j := range 8 {
				if bt {
					b[lay.boff+j*lay.ldb+k] = bits(vb(k, j))
				} else {
					b[lay.boff+k*lay.ldb+j] = bits(vb(k, j))
				}
			}
		}
		for i := range 16 {
			for j := range 12 {
				cc[2+i*12+j] = float32(i - j)
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
		kernel := fmt.Sprintf("k%d", n)
		kernels = append(kernels, mmaKernel(in, bt, lay, kernel))
		checks.WriteString(fmt.Sprintf(`
static int check%[1]d() {
  static unsigned short A[] = {%[2]s};
  static unsigned short B[] = {%[3]s};
  static float C[] = {%[4]s};
  static const double want[] = {%[5]s};
  const char* name = "%[6]s";
  loom_launch({1, 1, 1}, {32, 1, 1}, [&] { %[7]s(A, B, C); });
  int bad = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j)
      if ((double)C[2 + i * 12 + j] != want[i * 8 + j]) {
        if (bad++ < 5) printf("%%s: C[%%d][%%d] = %%g, want %%g\n", name, i, j, C[2 + i * 12 + j], want[i * 8 + j]);
      }
  for (int i = 0; i < 16; ++i)
    for (int j = 8; j < 12; ++j)
      if (C[2 + i * 12 + j] != (float)i - (float)j && ++bad < 5) printf("%%s: C[%%d][%%d], outside the tile, changed\n", name, i, j);
  return bad != 0;
}
`, n, list(a), list(b), list(cc), strings.Join(want, ", "), name, kernel))
		fmt.Fprintf(&calls, "  bad |= check%d();\n", n)
	}
	prog := string(emu) + "\n#include <cstdio>\n" + dedupHelpers(strings.Join(kernels, "\n")) + checks.String() +
		"\nint main() {\n  int bad = 0;\n" + calls.String() + "  return bad;\n}\n"
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
}

// TestCpAsyncEmulated: in the emulation a cp.async copy lands only when a
// cp.async.wait_group lets its group land, so a kernel that reads a
// fetched tile before it waits reads what was there before (as it may on
// the GPU) and a missing wait shows as a wrong result; wait_group N
// leaves the N newest groups pending. The helpers compile to PTX with
// the instructions.
func TestCpAsyncEmulated(t *testing.T) {
	src := mmaSource("loom_cp_async", "loom_cp_async_commit", "loom_cp_async_wait") + `
extern "C" __global__ void k(const float* G, float* out) {
  __shared__ __align__(16) float s[64];
  const int i = threadIdx.x;
  s[i] = -1.0f;
  s[32 + i] = -1.0f;
  __syncthreads();
  loom_cp_async<4>(&s[i], &G[i]);
  loom_cp_async_commit();
  loom_cp_async<4>(&s[32 + i], &G[32 + i]);
  loom_cp_async_commit();
  out[i] = s[i];             /* before any wait: -1 */
  loom_cp_async_wait<1>();   /* the first group landed, not the second */
  out[32 + i] = s[i];
  out[64 + i] = s[32 + i];
  loom_cp_async_wait<0>();
  out[96 + i] = s[32 + i];
}
`
	for _, arch := range []string{"sm_80", "sm_90"} {
		ptx, err := CompilePTX(&Module{Func: &ast.Func{Name: "cp"}, Source: src, Kernels: []*Kernel{{Name: "k"}}, Arch: arch})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"cp.async.ca.shared.global", "cp.async.commit_group", "cp.async.wait_group 1", "cp.async.wait_group 0"} {
			if !strings.Contains(ptx, want) {
				t.Errorf("%s: the PTX lacks %s", arch, want)
			}
		}
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ (make tools installs it)")
	}
	emu, err := os.ReadFile("../../internal/cudaemu/loom_emu.h")
	if err != nil {
		t.Fatal(err)
	}
	prog := string(emu) + "\n#include <cstdio>\n" + src + `
int main() {
  static float G[64], out[128];
  for (int i = 0; i < 64; ++i) G[i] = (float)i;
  loom_launch({1, 1, 1}, {32, 1, 1}, [&] { k(G, out); });
  int bad = 0;
  for (int i = 0; i < 32; ++i) {
    const float want[4] = {-1.0f, (float)i, -1.0f, (float)(32 + i)};
    for (int r = 0; r < 4; ++r)
      if (out[32 * r + i] != want[r] && bad++ < 5) printf("out[%d][%d] = %g, want %g\n", r, i, out[32 * r + i], want[r]);
  }
  return bad != 0;
}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "cp.cpp")
	if err := os.WriteFile(file, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cp")
	if out, err := exec.Command(gxx, "-std=c++20", "-O1", "-pthread", "-o", bin, file).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("%v\n%s", err, out)
	}
}
