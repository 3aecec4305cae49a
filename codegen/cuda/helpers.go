package cuda

import (
	"fmt"
	"slices"
	"strings"
)

// helpers are the device functions generated code may call, by name; the
// module's prelude defines the ones its kernels use, in this order.
var helpers = map[string]string{}

var helperOrder []string

// helperDeps are the helpers each helper calls, which must come before it.
var helperDeps = map[string][]string{}

func helper(name, src string) {
	helpers[name] = src
	helperOrder = append(helperOrder, name)
}

// loom_smem_addr is the 32-bit shared-memory address of a generic pointer
// into shared memory, the operand of ldmatrix and cp.async.
func init() {
	helper("loom_smem_addr", `__device__ __forceinline__ unsigned loom_smem_addr(const void* p) {
#ifdef __CUDA_ARCH__
  unsigned a;
  asm("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(a) : "l"(p));
  return a;
#else
  return 0;
#endif
}`)
}

// loom_clamp_index clamps an index read from a buffer (a gather's) into
// [0, n): a GPU kernel has no status to report one out of range with.
func init() {
	helper("loom_clamp_index", `__device__ __forceinline__ long long loom_clamp_index(long long i, long long n) {
  return i < 0 ? 0 : i >= n ? n - 1 : i;
}`)
}

func init() {
	for _, t := range []struct{ s, c string }{{"i32", "int"}, {"i64", "long long"}} {
		helper("loom_floordiv_"+t.s, fmt.Sprintf(`__device__ __forceinline__ %[2]s loom_floordiv_%[1]s(%[2]s a, %[2]s b) {
  %[2]s q = a / b;
  return (a %% b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}`, t.s, t.c))
		helper("loom_floormod_"+t.s, fmt.Sprintf(`__device__ __forceinline__ %[2]s loom_floormod_%[1]s(%[2]s a, %[2]s b) {
  %[2]s r = a %% b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}`, t.s, t.c))
		helper("loom_min_"+t.s, fmt.Sprintf(`__device__ __forceinline__ %[2]s loom_min_%[1]s(%[2]s a, %[2]s b) { return a < b ? a : b; }`, t.s, t.c))
		helper("loom_max_"+t.s, fmt.Sprintf(`__device__ __forceinline__ %[2]s loom_max_%[1]s(%[2]s a, %[2]s b) { return a > b ? a : b; }`, t.s, t.c))
	}
	// min and max of floats as Go's min and max builtins: NaN when either
	// is, -0 below +0 (fminf and fmaxf drop a NaN).
	for _, t := range []struct{ s, c, bits, isnan string }{{"f32", "float", "__float_as_int", "isnan"}, {"f64", "double", "__double_as_longlong", "isnan"}} {
		helper("loom_min_"+t.s, fmt.Sprintf(`__device__ __forceinline__ %[2]s loom_min_%[1]s(%[2]s a, %[2]s b) {
  if (%[4]s(a) || %[4]s(b)) return a + b;
  if (a == b) return %[3]s(a) < 0 ? a : b;
  return a < b ? a : b;
}`, t.s, t.c, t.bits, t.isnan))
		helper("loom_max_"+t.s, fmt.Sprintf(`__device__ __forceinline__ %[2]s loom_max_%[1]s(%[2]s a, %[2]s b) {
  if (%[4]s(a) || %[4]s(b)) return a + b;
  if (a == b) return %[3]s(a) < 0 ? b : a;
  return a > b ? a : b;
}`, t.s, t.c, t.bits, t.isnan))
		helper("loom_sigmoid_"+t.s, fmt.Sprintf(`__device__ __forceinline__ %[2]s loom_sigmoid_%[1]s(%[2]s x) { return (%[2]s)1 / ((%[2]s)1 + exp(-x)); }`, t.s, t.c))
	}
	// Float to integer conversions saturate and take NaN to 0, as the
	// interpreter's do (C leaves those cases undefined).
	for _, to := range []struct{ s, c, lo, hi string }{{"i32", "int", "(-2147483647 - 1)", "2147483647"}, {"i64", "long long", "(-9223372036854775807LL - 1)", "9223372036854775807LL"}} {
		for _, from := range []struct{ s, c string }{{"f32", "float"}, {"f64", "double"}} {
			helper("loom_to_"+to.s+"_"+from.s, fmt.Sprintf(`__device__ __forceinline__ %[2]s loom_to_%[1]s_%[3]s(%[4]s x) {
  if (isnan(x)) return 0;
  if (x <= (%[4]s)%[5]s) return %[5]s;
  if (x >= (%[4]s)%[6]s) return %[6]s;
  return (%[2]s)x;
}`, to.s, to.c, from.s, from.c, to.lo, to.hi))
		}
	}
}

// The 16-bit float conversions (see halfNames in expr.go): integer
// arithmetic on the bits, rounding to nearest even, as codegen/llvm's.
func init() {
	helper("loom_from_f16", `__device__ __forceinline__ float loom_from_f16(unsigned short h) {
  unsigned u = h, sign = (u & 0x8000u) << 16, e = (u >> 10) & 0x1fu, f = u & 0x3ffu, bits;
  if (e == 0) bits = (unsigned)__float_as_int((float)f * (1.0f / 16777216.0f)); /* subnormal: f * 2^-24 */
  else if (e == 31) bits = 0x7f800000u | (f << 13);
  else bits = ((e + 112u) << 23) | (f << 13);
  return __int_as_float((int)(bits | sign));
}`)
	helper("loom_to_f16", `__device__ __forceinline__ unsigned short loom_to_f16(float x) {
  unsigned u = (unsigned)__float_as_int(x), mag = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u, h;
  if (mag > 0x7f800000u) {
    h = 0x7e00u; /* NaN */
  } else if (mag < 0x38800000u) {
    /* below the least normal float16: adding 0.5 rounds to a multiple of
       2^-24, the subnormal step, and the bits above 0.5's are the encoding */
    h = (unsigned)__float_as_int(__int_as_float((int)mag) + 0.5f) - 0x3f000000u;
  } else {
    unsigned r = mag + 0xfffu + ((mag >> 13) & 1u); /* drop 13 bits, to nearest even */
    h = r >= 0x47800000u ? 0x7c00u : (r >> 13) - ((127u - 15u) << 10);
  }
  return (unsigned short)(h | sign);
}`)
	helper("loom_from_bf16", `__device__ __forceinline__ float loom_from_bf16(unsigned short h) { return __int_as_float((int)((unsigned)h << 16)); }`)
	helper("loom_to_bf16", `__device__ __forceinline__ unsigned short loom_to_bf16(float x) {
  unsigned u = (unsigned)__float_as_int(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u | 0x400000u) >> 16); /* NaN stays NaN */
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}`)
	for _, h := range []string{"f16", "bf16"} {
		helper("loom_round_"+h, fmt.Sprintf(`__device__ __forceinline__ float loom_round_%[1]s(float x) { return loom_from_%[1]s(loom_to_%[1]s(x)); }`, h))
		// From a double (or an integer through one) with one rounding:
		// narrowed to float rounding to odd, so that the second rounding
		// cannot land on a tie the first one made.
		helper("loom_round_"+h+"_f64", fmt.Sprintf(`__device__ __forceinline__ float loom_round_%[1]s_f64(double x) {
  float r = (float)x;
  double back = (double)r;
  if (back != x && back == back && x == x) {
    int bits = __float_as_int(r);
    if ((back < 0 ? -back : back) > (x < 0 ? -x : x)) bits -= 1;
    r = __int_as_float(bits | 1);
  }
  return loom_round_%[1]s(r);
}`, h))
	}
}

// prelude returns the definitions of the helpers in used.
func prelude(used map[string]bool) string {
	var b strings.Builder
	for _, name := range helperOrder {
		if used[name] {
			b.WriteString(helpers[name])
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// usedNames returns the sorted keys of a set, for deterministic output.
func usedNames(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
