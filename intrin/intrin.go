package intrin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// AnnotationKey is the loop annotation that marks a nest as computed by an
// intrinsic (schedule.Tensorize puts it on the nest's outer loop): the
// intrinsic's name.
const AnnotationKey = "tensorize"

// Intrinsic is an instruction that computes a tile, with its description.
type Intrinsic struct {
	Name   string
	Target string // the code generator that emits it: "cuda"
	// Arch is the least architecture that has it ("sm_80").
	Arch string
	// Desc computes what the instruction does: a perfect nest of loops of
	// constant extents around one block, on its parameters (the
	// operands, tiles).
	Desc *ast.Func
	// Operands names Desc's parameters by role: "A", "B" (the factors) and
	// "C" (the accumulator) for an mma.
	Operands map[string]string
}

var registry = map[string]*Intrinsic{}

// register adds an intrinsic from its description's text.
func register(name, target, arch string, operands map[string]string, desc string) {
	f, err := ast.Parse(desc)
	if err != nil {
		panic(fmt.Sprintf("intrin: the description of %s: %v", name, err))
	}
	if _, _, err := shape(f); err != nil {
		panic(fmt.Sprintf("intrin: the description of %s: %v", name, err))
	}
	registry[name] = &Intrinsic{Name: name, Target: target, Arch: arch, Desc: f, Operands: operands}
}

// Lookup returns the intrinsic named name.
func Lookup(name string) (*Intrinsic, bool) {
	in, ok := registry[name]
	return in, ok
}

// Names returns the names of the intrinsics, sorted.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// The mma.sync m16n8k16 instructions of sm_80 and later: C[16, 8] +=
// A[16, 16] · B[16, 8], the factors float16 or bfloat16, their products
// exact, the accumulator float32 (or float16, for float16 factors). The
// _nt ones take B transposed, as a [8, 16] tile (B[j, k]: the keys of
// attention scores Q · Kᵀ, a weight stored [out, in]).
func init() {
	mma := func(in, acc, cast string, bt bool) string {
		b, bShape := "B[vk, vj]", "[16, 8]"
		if bt {
			b, bShape = "B[vj, vk]", "[8, 16]"
		}
		prod := "A[vi, vk] * " + b
		if cast != "" {
			prod = fmt.Sprintf("%[1]s(A[vi, vk]) * %[1]s(%[2]s)", cast, b)
		}
		return strings.NewReplacer("@IN", in, "@ACC", acc, "@PROD", prod, "@BSHAPE", bShape, "@B", b).Replace(`func mma(A: @IN[16, 16], B: @IN@BSHAPE, C: @ACC[16, 8]) {
  ScheduleBlock(root) {
    serial for (i, 0, 16) {
      serial for (j, 0, 8) {
        serial for (k, 0, 16) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 16), vj = spatial(0, 8), vk = reduce(0, 16))
            reads(C[vi, vj], A[vi, vk], @B)
            writes(C[vi, vj])
            C[vi, vj] = C[vi, vj] + @PROD
          }
        }
      }
    }
  }
}`)
	}
	ops := map[string]string{"A": "A", "B": "B", "C": "C"}
	for _, bt := range []bool{false, true} {
		suffix := ""
		if bt {
			suffix = "_nt"
		}
		register("mma_m16n8k16_f16_f32"+suffix, "cuda", "sm_80", ops, mma("float16", "float32", "float32", bt))
		register("mma_m16n8k16_bf16_f32"+suffix, "cuda", "sm_80", ops, mma("bfloat16", "float32", "float32", bt))
		register("mma_m16n8k16_f16_f16"+suffix, "cuda", "sm_80", ops, mma("float16", "float16", "", bt))
	}
}
