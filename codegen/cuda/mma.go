package cuda

import (
	"fmt"
	"strconv"
	"strings"
)

// Tensor Core helpers: mma.sync m16n8k16 on tiles in memory.
//
// A warp's 32 lanes compute D[16, 8] = A[16, 16] · B[16, 8] + C together:
// each lane holds its fragments of A (four registers of two 16-bit
// elements, the lower-numbered one in the low half), of B (two) and of C
// (four float32, or two registers of two float16) by the layout of the
// PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type"),
// and the instruction (inline PTX) updates the lane's C fragment. A
// tensorized nest is printed as calls of three kinds of helpers (every
// lane calls them, with the same tiles; row strides in elements):
//
//   - loom_mma_ld_a, loom_mma_ld_b and loom_mma_ld_bt load a lane's
//     fragments of A, of B as a [16, 8] tile, and of B transposed (an
//     [8, 16] tile: attention's keys, weights stored [out, in]), element by
//     element from any memory. Their _shared forms, for tiles in shared
//     memory, load with ldmatrix (the warp's lanes pass the rows'
//     addresses, the instruction hands every lane its fragment) when the
//     rows are 16-byte aligned, and element by element otherwise.
//   - loom_mma_ld_c_ACC and loom_mma_st_c_ACC move a lane's C fragment
//     between a tile in memory and registers (ACC: f32 or f16), so that
//     the accumulators can stay in registers across the loop of k steps.
//   - loom_mma_m16n8k16_IN_ACC runs the instruction on the registers (IN:
//     f16 or bf16 factors).
//
// Without a GPU (the emulation, where __CUDA_ARCH__ is not defined) the
// instructions have stand-ins in loom_emu.h that exchange the lanes'
// values as the instructions do: loom_emu_mma_m16n8k16 gathers every
// lane's fragments and computes the tile from them by the layout, written
// out apart; loom_emu_ldmatrix hands each lane the elements of the rows
// other lanes address.

// mmaIntrinsic is how codegen/cuda emits one intrinsic of package intrin:
// its factors' and accumulators' types and whether B comes transposed.
type mmaIntrinsic struct {
	in, acc string // "f16" or "bf16"; "f32" or "f16"
	bt      bool
}

// mmaIntrinsics are the intrinsics codegen/cuda emits.
var mmaIntrinsics = map[string]mmaIntrinsic{
	"mma_m16n8k16_f16_f32":     {"f16", "f32", false},
	"mma_m16n8k16_bf16_f32":    {"bf16", "f32", false},
	"mma_m16n8k16_f16_f16":     {"f16", "f16", false},
	"mma_m16n8k16_f16_f32_nt":  {"f16", "f32", true},
	"mma_m16n8k16_bf16_f32_nt": {"bf16", "f32", true},
	"mma_m16n8k16_f16_f16_nt":  {"f16", "f16", true},
}

// op is the helper of the instruction.
func (m mmaIntrinsic) op() string { return "loom_mma_m16n8k16_" + m.in + "_" + m.acc }

// loadA and loadB are the fragment loaders for a tile in memory of scope
// shared or not.
func (m mmaIntrinsic) loadA(shared bool) string { return fragLoader("a", shared) }

func (m mmaIntrinsic) loadB(shared bool) string {
	if m.bt {
		return fragLoader("bt", shared)
	}
	return fragLoader("b", shared)
}

func fragLoader(op string, shared bool) string {
	if shared {
		return "loom_mma_ld_" + op + "_shared"
	}
	return "loom_mma_ld_" + op
}

// loadC and storeC move the C fragment.
func (m mmaIntrinsic) loadC() string  { return "loom_mma_ld_c_" + m.acc }
func (m mmaIntrinsic) storeC() string { return "loom_mma_st_c_" + m.acc }

// mmaAcc describes an accumulator type's registers: the element type of
// the tile C, the type and count of a lane's registers, the C of loading
// and storing them from and to the tile (ldc), and the instruction on
// them.
type mmaAcc struct {
	cType, reg  string
	n           int
	load, store string
	asm, emu    string
}

var mmaAccs = map[string]mmaAcc{
	"f32": {
		cType: "float", reg: "float", n: 4,
		load:  "for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >> 1)) * ldc + 2 * t + (i & 1)];",
		store: "for (int i = 0; i < 4; ++i) C[(g + 8 * (i >> 1)) * ldc + 2 * t + (i & 1)] = c[i];",
		asm: `asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.@IN.@IN.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));`,
		emu: "loom_emu_mma_m16n8k16(lane, a, b, c, @BF);",
	},
	// Two registers of two float16 each: c0 c1 of row g, c2 c3 of row g+8.
	"f16": {
		cType: "unsigned short", reg: "unsigned", n: 2,
		load:  "for (int r = 0; r < 2; ++r) c[r] = (unsigned)C[(g + 8 * r) * ldc + 2 * t] | (unsigned)C[(g + 8 * r) * ldc + 2 * t + 1] << 16;",
		store: "for (int r = 0; r < 2; ++r) { C[(g + 8 * r) * ldc + 2 * t] = (unsigned short)c[r]; C[(g + 8 * r) * ldc + 2 * t + 1] = (unsigned short)(c[r] >> 16); }",
		asm: `asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
               : "+r"(c[0]), "+r"(c[1])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));`,
		emu: "loom_emu_mma_m16n8k16_f16acc(lane, a, b, c);",
	},
}

// decl declares a lane's accumulators named name.
func (a mmaAcc) decl(name string) string { return a.reg + " " + name + "[" + strconv.Itoa(a.n) + "]" }

// The lane's position in its warp: groupID and threadID_in_group.
const mmaLane = `const int lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31;
  const int g = lane >> 2, t = lane & 3;`

func init() {
	r := strings.NewReplacer("@LANE", mmaLane)
	// a[r] holds a(2r) and a(2r+1): rows g, g+8, g, g+8; columns 2t, 2t,
	// 2t+8, 2t+8 and the next.
	helper("loom_mma_ld_a", r.Replace(`__device__ __forceinline__ void loom_mma_ld_a(const unsigned short* A, long long lda, unsigned a[4]) {
  @LANE
  for (int r = 0; r < 4; ++r) {
    const long long row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
    a[r] = (unsigned)A[row * lda + col] | (unsigned)A[row * lda + col + 1] << 16;
  }
}`))
	// b[r] holds b(2r) and b(2r+1): rows 2t+8r and the next of B's column
	// g; transposed, two neighbours of B's row g.
	helper("loom_mma_ld_b", r.Replace(`__device__ __forceinline__ void loom_mma_ld_b(const unsigned short* B, long long ldb, unsigned b[2]) {
  @LANE
  for (int r = 0; r < 2; ++r) {
    const long long row = 2 * t + 8 * r;
    b[r] = (unsigned)B[row * ldb + g] | (unsigned)B[(row + 1) * ldb + g] << 16;
  }
}`))
	helper("loom_mma_ld_bt", r.Replace(`__device__ __forceinline__ void loom_mma_ld_bt(const unsigned short* B, long long ldb, unsigned b[2]) {
  @LANE
  for (int r = 0; r < 2; ++r) {
    const long long row = 2 * t + 8 * r;
    b[r] = (unsigned)B[g * ldb + row] | (unsigned)B[g * ldb + row + 1] << 16;
  }
}`))
	// ldmatrix: lane l passes the address of row l % 8 of matrix l / 8;
	// matrix m lands in register m of every lane, the lane's two
	// elements of row (lane >> 2), columns 2 (lane & 3) and the next (with
	// .trans, of column (lane >> 2), rows 2 (lane & 3) and the next): the
	// mma fragments, when A's matrices are its quarters in the order of
	// a[], B's its upper and lower halves.
	for _, l := range []struct {
		op, x string // the loader (a, b, bt) and its tile's name
		n     int    // matrices: registers a lane gets
		trans bool   // B as a [16, 8] tile: its 8 x 8 halves transposed
		row   string // the row lane passes: of matrix lane >> 3, row lane & 7
	}{
		{"a", "A", 4, false, "A + ((lane & 7) + 8 * ((lane >> 3) & 1)) * ld + 8 * (lane >> 4)"},
		{"b", "B", 2, true, "B + (lane & 15) * ld"},
		{"bt", "B", 2, false, "B + (lane & 7) * ld + 8 * ((lane >> 3) & 1)"},
	} {
		name := "loom_mma_ld_" + l.op + "_shared"
		var regs, outs []string
		for i := range l.n {
			regs = append(regs, fmt.Sprintf("%%%d", i))
			outs = append(outs, fmt.Sprintf(`"=r"(f[%d])`, i))
		}
		trans := ""
		if l.trans {
			trans = ".trans"
		}
		helper(name, strings.NewReplacer("@NAME", name, "@X", l.x, "@N", strconv.Itoa(l.n), "@FALLBACK", "loom_mma_ld_"+l.op,
			"@ROW", l.row, "@TRANS", trans, "@REGS", strings.Join(regs, ", "), "@OUTS", strings.Join(outs, ", "), "@ADDR", fmt.Sprintf("%%%d", l.n),
			"@TR", map[bool]string{false: "0", true: "1"}[l.trans]).Replace(`__device__ __forceinline__ void @NAME(const unsigned short* @X, long long ld, unsigned f[@N]) {
  if ((((unsigned long long)@X & 15) | (ld & 7)) != 0) { /* rows not 16-byte aligned */
    @FALLBACK(@X, ld, f);
    return;
  }
  const int lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31;
  const unsigned short* row = @ROW;
#ifdef __CUDA_ARCH__
  asm volatile("ldmatrix.sync.aligned.m8n8.x@N@TRANS.shared.b16 {@REGS}, [@ADDR];"
               : @OUTS : "r"(loom_smem_addr(row)));
#else
  loom_emu_ldmatrix(lane, row, f, @N, @TR);
#endif
}`))
		helperDeps[name] = []string{"loom_mma_ld_" + l.op, "loom_smem_addr"}
	}
	for _, accName := range []string{"f32", "f16"} {
		acc := mmaAccs[accName]
		r := strings.NewReplacer("@ACC", accName, "@CTYPE", acc.cType, "@CDECL", acc.decl("c"), "@LANE", mmaLane, "@LOADC", acc.load, "@STOREC", acc.store)
		helper("loom_mma_ld_c_"+accName, r.Replace(`__device__ __forceinline__ void loom_mma_ld_c_@ACC(const @CTYPE* C, long long ldc, @CDECL) {
  @LANE
  @LOADC
}`))
		helper("loom_mma_st_c_"+accName, r.Replace(`__device__ __forceinline__ void loom_mma_st_c_@ACC(@CTYPE* C, long long ldc, const @CDECL) {
  @LANE
  @STOREC
}`))
	}
	for _, v := range []struct{ in, acc string }{{"f16", "f32"}, {"bf16", "f32"}, {"f16", "f16"}} {
		acc := mmaAccs[v.acc]
		name := mmaIntrinsic{in: v.in, acc: v.acc}.op()
		r := strings.NewReplacer("@NAME", name, "@CDECL", acc.decl("c"), "@ASM", acc.asm, "@EMU", acc.emu)
		types := strings.NewReplacer("@IN", v.in, "@BF", map[string]string{"f16": "0", "bf16": "1"}[v.in])
		helper(name, types.Replace(r.Replace(`__device__ __forceinline__ void @NAME(const unsigned a[4], const unsigned b[2], @CDECL) {
#ifdef __CUDA_ARCH__
  @ASM
#else
  const int lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31;
  @EMU
#endif
}`)))
	}
}
