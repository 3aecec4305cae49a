package cuda

import (
	"fmt"
	"strings"
)

// Tensor Core helpers: mma.sync m16n8k16 on tiles in memory.
//
// A helper computes C[16, 8] += A[16, 16] · B[16, 8] with the 32 lanes of
// a warp together (every lane must call it, with the same tiles): each
// lane loads its fragments of A, B and C from the tiles (row strides lda,
// ldb, ldc, in elements) by the layout of the PTX ISA ("Matrix Fragments
// for mma.m16n8k16 with floating point type"), the Tensor Core multiplies
// (inline PTX), and each lane stores its four results. A fragment
// register holds two 16-bit elements, the lower-numbered one in the low
// half. Without a GPU (the emulation, where __CUDA_ARCH__ is not defined)
// loom_emu_mma_m16n8k16 stands in for the instruction: it gathers every
// lane's fragments and computes the tile from them by the same layout,
// written out apart (loom_emu.h).

// mmaHelperName returns the helper of an mma intrinsic with factors of
// type in ("f16" or "bf16") and accumulators of type acc ("f32", or "f16"
// for float16 factors), B as a [16, 8] tile or (bt) transposed, [8, 16].
func mmaHelperName(in, acc string, bt bool) string {
	name := "loom_mma_m16n8k16_" + in + "_" + acc
	if bt {
		name += "_nt"
	}
	return name
}

// mmaAcc describes an accumulator type's registers: the declaration of
// a lane's accumulators (name @R), and the C of loading and storing them
// from and to the tile C (ldc) and of the instruction on them.
type mmaAcc struct {
	cType, decl, load, store, asm, emu string
}

var mmaAccs = map[string]mmaAcc{
	"f32": {
		cType: "float",
		decl:  "float @R[4]",
		load:  "for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >> 1)) * ldc + 2 * t + (i & 1)];",
		store: "for (int i = 0; i < 4; ++i) C[(g + 8 * (i >> 1)) * ldc + 2 * t + (i & 1)] = c[i];",
		asm: `asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.@IN.@IN.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));`,
		emu: "loom_emu_mma_m16n8k16(lane, a, b, c, @BF);",
	},
	// Two registers of two float16 each: c0 c1 of row g, c2 c3 of row g+8.
	"f16": {
		cType: "unsigned short",
		decl:  "unsigned @R[2]",
		load:  "for (int r = 0; r < 2; ++r) c[r] = (unsigned)C[(g + 8 * r) * ldc + 2 * t] | (unsigned)C[(g + 8 * r) * ldc + 2 * t + 1] << 16;",
		store: "for (int r = 0; r < 2; ++r) { C[(g + 8 * r) * ldc + 2 * t] = (unsigned short)c[r]; C[(g + 8 * r) * ldc + 2 * t + 1] = (unsigned short)(c[r] >> 16); }",
		asm: `asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
               : "+r"(c[0]), "+r"(c[1])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));`,
		emu: "loom_emu_mma_m16n8k16_f16acc(lane, a, b, c);",
	},
}

// Each mma helper NAME comes in four: NAME_load and NAME_store move a
// lane's accumulators between the tile C and registers, NAME_frag loads
// the lane's fragments of A and B and runs the instruction on the
// registers, and NAME does all three (a nest whose accumulators are not
// kept in registers across the loop around it).
func init() {
	const lane = `const int lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31;
  const int g = lane >> 2, t = lane & 3;`
	for _, v := range []struct{ in, acc string }{{"f16", "f32"}, {"bf16", "f32"}, {"f16", "f16"}} {
		acc := mmaAccs[v.acc]
		for _, bt := range []bool{false, true} {
			// b[r] holds b(2r) and b(2r+1): rows 2t+8r and the next of
			// B's column g; transposed, two neighbours of B's row g.
			loadB := "b[r] = (unsigned)B[row * ldb + g] | (unsigned)B[(row + 1) * ldb + g] << 16;"
			if bt {
				loadB = "b[r] = (unsigned)B[g * ldb + row] | (unsigned)B[g * ldb + row + 1] << 16;"
			}
			name := mmaHelperName(v.in, v.acc, bt)
			r := strings.NewReplacer("@NAME", name, "@CTYPE", acc.cType, "@CDECL", strings.ReplaceAll(acc.decl, "@R", "c"),
				"@LANE", lane, "@LOADC", acc.load, "@STOREC", acc.store, "@LOADB", loadB, "@ASM", acc.asm, "@EMU", acc.emu)
			helper(name+"_load", r.Replace(`__device__ __forceinline__ void @NAME_load(const @CTYPE* C, long long ldc, @CDECL) {
  @LANE
  @LOADC
}`))
			helper(name+"_store", r.Replace(`__device__ __forceinline__ void @NAME_store(@CTYPE* C, long long ldc, const @CDECL) {
  @LANE
  @STOREC
}`))
			helper(name+"_frag", r.Replace(`__device__ __forceinline__ void @NAME_frag(const unsigned short* A, long long lda, const unsigned short* B, long long ldb, @CDECL) {
  @LANE
  unsigned a[4], b[2];
  for (int r = 0; r < 4; ++r) { /* a[r] holds a(2r) and a(2r+1): rows g, g+8, g, g+8; columns 2t, 2t, 2t+8, 2t+8 and one more */
    const long long row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
    a[r] = (unsigned)A[row * lda + col] | (unsigned)A[row * lda + col + 1] << 16;
  }
  for (int r = 0; r < 2; ++r) {
    const long long row = 2 * t + 8 * r;
    @LOADB
  }
#ifdef __CUDA_ARCH__
  @ASM
#else
  @EMU
#endif
}`))
			helper(name, r.Replace(`__device__ __forceinline__ void @NAME(const unsigned short* A, long long lda, const unsigned short* B, long long ldb, @CTYPE* C, long long ldc) {
  @CDECL;
  @NAME_load(C, ldc, c);
  @NAME_frag(A, lda, B, ldb, c);
  @NAME_store(C, ldc, c);
}`))
			for _, part := range []string{name + "_load", name + "_store", name + "_frag", name} {
				helpers[part] = strings.NewReplacer("@IN", v.in, "@BF", map[string]string{"f16": "0", "bf16": "1"}[v.in]).Replace(helpers[part])
			}
		}
	}
}

// mmaHelper returns the source of an mma helper and its parts, for tests.
func mmaHelper(in, acc string, bt bool) (string, error) {
	name := mmaHelperName(in, acc, bt)
	var srcs []string
	for _, part := range []string{name + "_load", name + "_store", name + "_frag", name} {
		src, ok := helpers[part]
		if !ok {
			return "", fmt.Errorf("cuda: no mma helper %s", part)
		}
		srcs = append(srcs, src)
	}
	return strings.Join(srcs, "\n\n"), nil
}
