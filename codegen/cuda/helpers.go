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

func helper(name, src string) {
	helpers[name] = src
	helperOrder = append(helperOrder, name)
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
