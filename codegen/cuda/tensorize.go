package cuda

import (
	"fmt"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/intrin"
)

// Tensorized nests.
//
// A loop nest that schedule.Tensorize marked (intrin.AnnotationKey) is one
// call of its intrinsic's helper (mma.go) instead of its loops: the 32
// lanes of a warp compute the tile together. So the warp must be the
// threads that run the nest alike: the block is 32 threads along x, the
// nest is under no loop bound to threadIdx.x, and each of the y and z
// axes the block has is bound by a loop around it (a warp a tile). The
// operands are global or shared buffers (a thread's local copy holds no
// other lane's results), addressed at the tiles' offsets with their rows'
// strides (the last dimension's extent).

// mmaHelpers are the helpers of the intrinsics codegen/cuda emits.
var mmaHelpers = map[string]string{
	"mma_m16n8k16_f16_f32":     mmaHelperName("f16", "f32", false),
	"mma_m16n8k16_bf16_f32":    mmaHelperName("bf16", "f32", false),
	"mma_m16n8k16_f16_f16":     mmaHelperName("f16", "f16", false),
	"mma_m16n8k16_f16_f32_nt":  mmaHelperName("f16", "f32", true),
	"mma_m16n8k16_bf16_f32_nt": mmaHelperName("bf16", "f32", true),
	"mma_m16n8k16_f16_f16_nt":  mmaHelperName("f16", "f16", true),
}

// tensorized prints the nest at l, marked with intrinsic name, as a call
// of the intrinsic's helper.
func (k *kernelWriter) tensorized(l *ast.For, name string) {
	in, ok := intrin.Lookup(name)
	helperName := mmaHelpers[name]
	if !ok || in.Target != "cuda" || helperName == "" {
		k.fail(k.errorAt(l, "loop %s is marked for intrinsic %q, which codegen/cuda does not emit (it emits %s)", l.Var.Name, name, strings.Join(mmaNames(), ", ")))
		return
	}
	m, err := in.Match(l)
	if err != nil {
		k.fail(k.errorAt(l, "loop %s: %v", l.Var.Name, err))
		return
	}
	if k.block[0] != 32 {
		k.fail(k.errorAt(l, "the nest at loop %s runs on a warp's 32 lanes together (%s), so the block must be 32 threads along x, not %d", l.Var.Name, name, k.block[0]))
		return
	}
	bound := map[ast.ForKind]bool{}
	for _, t := range k.threads {
		bound[t.Kind] = true
	}
	if bound[ast.GPUThreadX] {
		k.fail(k.errorAt(l, "the nest at loop %s is under a loop bound to threadIdx.x: the warp's lanes compute it together, each must run it alike", l.Var.Name))
		return
	}
	for axis, kind := range map[int]ast.ForKind{1: ast.GPUThreadY, 2: ast.GPUThreadZ} {
		if k.block[axis] > 1 && !bound[kind] {
			k.fail(k.errorAt(l, "the nest at loop %s is under no loop bound to %s, so the block's %d warps along it would all update the same tile", l.Var.Name, kind, k.block[axis]))
			return
		}
	}
	var args []string
	for _, op := range []string{"A", "B", "C"} {
		buf := m.Buffers[in.Operands[op]]
		if buf.Scope != ast.Global && buf.Scope != ast.Shared {
			k.fail(k.errorAt(l, "operand %s of the nest at loop %s is %s buffer %s: the lanes share it, so it must be global or shared memory", op, l.Var.Name, buf.Scope, buf.Name))
			return
		}
		bi := k.buffer(buf)
		// The tile's rows are along the buffer's next-to-last dimension.
		args = append(args, "&"+k.access(buf, m.Offsets[in.Operands[op]]), "(long long)("+bi.shape[len(bi.shape)-1]+")")
	}
	for _, part := range []string{"_load", "_store", "_frag", ""} {
		k.use(helperName + part)
	}
	if reg, ok := k.accumulators[l]; ok {
		// The lanes' accumulators are in registers across the loop around
		// (hoistAccumulators): only A and B are loaded.
		k.line("%s_frag(%s, %s); /* %s: loop %s */", helperName, strings.Join(args[:4], ", "), reg, name, l.Var.Name)
		return
	}
	k.line("%s(%s); /* %s: loop %s */", helperName, strings.Join(args, ", "), name, l.Var.Name)
}

// hoistAccumulators prints serial loop l, whose body holds one tensorized
// nest whose accumulator tile does not move with l (the k steps of a
// gemm) and nothing else that touches the accumulators' buffer, with the lanes' accumulators loaded into registers before it and
// stored after it, the nest only loading its factors; it reports whether
// l is such a loop (else it prints nothing).
func (k *kernelWriter) hoistAccumulators(l *ast.For, blockLevel bool) bool {
	if l.Kind != ast.Serial || k.hoisted[l] {
		return false
	}
	// One tensorized nest among the statements of l's body (the others:
	// the fetches of its factors' tiles, say).
	var nest *ast.For
	for _, st := range flatten(l.Body) {
		if f, ok := st.(*ast.For); ok {
			if _, ok := f.Annotations[intrin.AnnotationKey].(string); ok {
				if nest != nil {
					return false
				}
				nest = f
			}
		}
	}
	if nest == nil {
		return false
	}
	name, ok := nest.Annotations[intrin.AnnotationKey].(string)
	helperName := mmaHelpers[name]
	if !ok || helperName == "" {
		return false
	}
	in, _ := intrin.Lookup(name)
	m, err := in.Match(nest)
	if err != nil {
		return false // tensorized says why
	}
	c := in.Operands["C"]
	for _, off := range m.Offsets[c] {
		if ast.Mentions(off, l.Var.Name) {
			return false
		}
	}
	buf := m.Buffers[c]
	if buf.Scope != ast.Global && buf.Scope != ast.Shared {
		return false // tensorized says why
	}
	for _, st := range flatten(l.Body) {
		if st != ast.Stmt(nest) && touches(st, buf) {
			return false // the tile in memory must be current for it
		}
	}
	bi := k.buffer(buf)
	cPtr, ldc := "&"+k.access(buf, m.Offsets[c]), "(long long)("+bi.shape[len(bi.shape)-1]+")"
	k.tmp++
	reg := fmt.Sprintf("loom_acc%d", k.tmp)
	acc := mmaAccs["f32"]
	if buf.DType == ast.Float16 {
		acc = mmaAccs["f16"]
	}
	k.line("{")
	k.indent++
	k.line("%s;", strings.ReplaceAll(acc.decl, "@R", reg))
	k.line("%s_load(%s, %s, %s);", helperName, cPtr, ldc, reg)
	k.hoisted[l], k.accumulators[nest] = true, reg
	k.loop(l, blockLevel)
	delete(k.hoisted, l)
	delete(k.accumulators, nest)
	k.line("%s_store(%s, %s, %s);", helperName, cPtr, ldc, reg)
	k.indent--
	k.line("}")
	return true
}

func mmaNames() []string {
	var out []string
	for _, n := range intrin.Names() {
		if mmaHelpers[n] != "" {
			out = append(out, n)
		}
	}
	return out
}

// touches reports whether s loads or stores buf.
func touches(s ast.Stmt, buf *ast.Buffer) bool {
	found := false
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Load:
			found = found || n.Buffer.Name == buf.Name
		case *ast.Store:
			found = found || n.Buffer.Name == buf.Name
		}
		return !found
	})
	return found
}
