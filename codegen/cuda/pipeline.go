package cuda

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Software pipelines.
//
// A serial loop annotated PipelineKey = N (N stages, 2 to 8) fetches its
// shared tiles N-1 iterations ahead of the work that reads them, so that
// the copies from global memory overlap the computation (double buffering
// when N is 2). Its body must begin with the fetches: statements whose
// blocks copy global buffers into shared buffers that live for one
// iteration of the loop (cache_read into shared memory, computed at the
// loop), nothing after them writing what they fetch or read. Each fetched
// buffer gets N copies, its stages; iteration i
//
//  1. issues the fetch of iteration i+N-1 into stage (i+N-1) % N (none past
//     the last iteration) and commits it as one group of copies;
//  2. waits until the group of iteration i has landed
//     (cp.async.wait_group N-1) and for the whole block (a barrier);
//  3. runs the rest of the body on stage i % N;
//  4. meets the block at a barrier, so that the next iteration's fetch does
//     not overwrite a stage some thread still reads.
//
// A prologue before the loop fetches the first N-1 iterations. The copies
// are cp.async (sm_80): a vectorized copy of 4, 8 or 16 aligned bytes, or
// a scalar one of 4, lands in shared memory without passing through the
// thread's registers, while the thread goes on. Other copies (a 16-bit
// scalar, one that converts, one not provably aligned) are ordinary loads
// and stores, into the same stage, visible after the same barrier. The
// emulation holds every thread's cp.async copies back until it waits for
// them, so a missing wait shows as a wrong result.
//
// The interpreter ignores the annotation: the pipeline changes when the
// copies happen, never what the loop computes.

// PipelineKey is the loop annotation that asks codegen/cuda for a software
// pipeline of its shared-memory fetches: the number of stages, an integer
// from 2 to 8 (schedule.AnnotateLoop(l, cuda.PipelineKey, 2)).
const PipelineKey = "software_pipeline"

// maxStages bounds the stages of a pipeline.
const maxStages = 8

func init() {
	helper("loom_cp_async", `template <int N>
__device__ __forceinline__ void loom_cp_async(void* dst, const void* src) {
#ifdef __CUDA_ARCH__
  if (N == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(loom_smem_addr(dst)), "l"(src) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(loom_smem_addr(dst)), "l"(src), "n"(N) : "memory");
#else
  loom_emu_cp_async(dst, src, N);
#endif
}`)
	helper("loom_cp_async_commit", `__device__ __forceinline__ void loom_cp_async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;" ::: "memory");
#else
  loom_emu_cp_commit();
#endif
}`)
	helper("loom_cp_async_wait", `template <int N>
__device__ __forceinline__ void loom_cp_async_wait() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
#else
  loom_emu_cp_wait(N);
#endif
}`)
	helperDeps["loom_cp_async"] = []string{"loom_smem_addr"}
}

// pipelined prints loop l as a software pipeline when it is annotated for
// one (it reports whether it was: printed, or refused with the reason).
func (k *kernelWriter) pipelined(l *ast.For, blockLevel bool) bool {
	v, ok := l.Annotations[PipelineKey]
	if !ok {
		return false
	}
	fail := func(format string, a ...any) bool {
		k.fail(k.errorAt(l, "loop %s is annotated %s = %v: %s", l.Var.Name, PipelineKey, v, fmt.Sprintf(format, a...)))
		return true
	}
	stages, ok := v.(int64)
	switch {
	case !ok || stages < 2 || stages > maxStages:
		return fail("the stages must be an integer from 2 to %d", maxStages)
	case k.archNumber() < 80:
		return fail("its copies are cp.async, which needs sm_80 or later, not %s", k.m.Arch)
	case l.Kind != ast.Serial:
		return fail("only a serial loop runs as a pipeline, not a %s one", l.Kind)
	case !blockLevel || k.threadDependent(l.Min, l.Extent):
		return fail("every thread of the block must run it alike (it waits at barriers): put it outside the thread loops, or in thread loops as long as the block, under loops that do not depend on the thread")
	}
	body := flatten(l.Body)
	fetched, sources := map[*ast.Buffer]bool{}, map[*ast.Buffer]bool{}
	n := 0
	for ; n < len(body); n++ {
		if !k.fetches(body[n], l, fetched, sources) {
			break
		}
	}
	if n == 0 {
		return fail("its body does not begin with a fetch of a shared tile (blocks that copy global buffers into a shared buffer allocated for one iteration of the loop: cache_read into shared memory computed at the loop)")
	}
	if n == len(body) {
		return fail("nothing after its fetches reads what they fetch")
	}
	rest := body[n:]
	after := accessesOf(&ast.Seq{Stmts: rest})
	for _, buf := range sortedBuffers(fetched) {
		if after.writes[buf] {
			return fail("%s, which the loop fetches, is written after the fetch too: a stage must hold the fetched tile until the iteration ends", buf.Name)
		}
	}
	for _, buf := range sortedBuffers(sources) {
		if after.writes[buf] {
			return fail("the loop writes %s, which its fetches read: a fetch ahead of its iteration would read it too early", buf.Name)
		}
	}
	// The stages of each fetched buffer, and its size.
	type stagedBuf struct {
		buf  *ast.Buffer
		base string
		size int64
	}
	var staged []stagedBuf
	for _, buf := range sortedBuffers(fetched) {
		c := k.plans[buf]
		size := int64(1)
		var shape []string
		for d, dim := range c.Shape {
			e, ok := ast.ConstIntValue(ast.Simplify(dim))
			if !ok {
				return fail("shared buffer %s has the non-constant extent %s: tile the loops around its uses by constants", buf.Name, ast.Print(dim))
			}
			shape = append(shape, fmt.Sprint(e))
			if d == len(c.Shape)-1 {
				e = k.rowExtent(buf, e)
				shape[d] = fmt.Sprint(e)
			}
			size *= e
		}
		base := cname(buf.Name)
		k.shared = append(k.shared, fmt.Sprintf("__shared__ __align__(16) %s %s[%d];", k.memTypeOf(buf.DType), base, stages*size))
		k.nShared += stages * size * int64(buf.DType.Bytes())
		k.bufs[buf] = &bufInfo{name: base, shape: shape}
		staged = append(staged, stagedBuf{buf, base, size})
	}
	if k.nShared > 48*1024 {
		return fail("the kernel's shared buffers take %d bytes with %d stages; a block has 48 KiB of static shared memory", k.nShared, stages)
	}
	for _, h := range []string{"loom_cp_async", "loom_cp_async_commit", "loom_cp_async_wait"} {
		k.use(h)
	}
	// view addresses each fetched buffer in stage (a C expression) at the
	// loop's current iteration; restore takes back the last views.
	restore := func(saved []*bufInfo) {
		for j, s := range staged {
			k.bufs[s.buf] = saved[j]
		}
	}
	current := func() []*bufInfo {
		var out []*bufInfo
		for _, s := range staged {
			out = append(out, k.bufs[s.buf])
		}
		return out
	}
	view := func(stage string) {
		for _, s := range staged {
			var origin []string
			for d, o := range k.plans[s.buf].Origin {
				k.tmp++
				name := fmt.Sprintf("%s_o%d_%d", s.base, d, k.tmp)
				k.line("const long long %s = %s;", name, k.expr(o))
				origin = append(origin, name)
			}
			bi := *k.bufs[s.buf]
			bi.name, bi.origin = fmt.Sprintf("(%s + (%s) * %d)", s.base, stage, s.size), origin
			k.bufs[s.buf] = &bi
		}
	}
	t := k.ctypeOf(l.Var.DType)
	min, ext := k.expr(l.Min), k.expr(l.Extent)
	k.tmp++
	tag := k.tmp
	// fetch prints the fetches of the iteration whose offset from the
	// first is i (a C expression) into its stage.
	fetch := func(i string) {
		saved, views := k.savedNames(), current()
		k.line("{")
		k.indent++
		name := k.declare(l.Var)
		k.line("const %s %s = %s + %s;", t, name, min, i)
		view(fmt.Sprintf("(%s) %% %d", i, stages))
		k.async = fetched
		k.stmts(body[:n], true)
		k.async = nil
		k.indent--
		k.line("}")
		k.restoreNames(saved)
		restore(views)
	}
	k.line("/* %s: a pipeline of %d stages */", l.Var.Name, stages)
	k.line("for (int loom_s%d = 0; loom_s%d < %d; ++loom_s%d) {", tag, tag, stages-1, tag)
	k.indent++
	k.line("if (loom_s%d < %s) {", tag, ext)
	k.indent++
	fetch(fmt.Sprintf("loom_s%d", tag))
	k.indent--
	k.line("}")
	k.line("loom_cp_async_commit();")
	k.indent--
	k.line("}")

	saved, views := k.savedNames(), current()
	defer func() { k.restoreNames(saved); restore(views) }()
	name := k.declare(l.Var)
	if min == "0" || min == "0LL" {
		k.line("for (%s %s = 0; %s < %s; ++%s) {", t, name, name, ext, name)
	} else {
		k.line("for (%s %s = %s; %s < %s + %s; ++%s) {", t, name, min, name, min, ext, name)
	}
	k.indent++
	i := fmt.Sprintf("(%s - %s)", name, min)
	if min == "0" || min == "0LL" {
		i = name
	}
	// The barrier that ended the last iteration (or, in the first, the
	// prologue's writing other stages) keeps this fetch apart.
	k.pending = newAccess()
	k.line("if (%s + %d < %s) {", i, stages-1, ext)
	k.indent++
	fetch(fmt.Sprintf("%s + %d", i, stages-1))
	k.indent--
	k.line("}")
	k.line("loom_cp_async_commit();")
	k.line("loom_cp_async_wait<%d>();", stages-1)
	k.line("__syncthreads();")
	k.pending = newAccess()
	view(fmt.Sprintf("%s %% %d", i, stages))
	k.allocsAtExcept(l, fetched)
	k.stmts(rest, true)
	k.line("__syncthreads();")
	k.pending = newAccess()
	k.indent--
	k.line("}")
	return true
}

// fetches reports whether statement s is a fetch of a pipeline of loop l:
// it holds blocks, each of which writes one shared buffer that lives for
// one iteration of l and reads global buffers only, and nothing that
// allocates. It adds what s writes to fetched and what it reads to
// sources.
func (k *kernelWriter) fetches(s ast.Stmt, l *ast.For, fetched, sources map[*ast.Buffer]bool) bool {
	blocks, ok := 0, true
	writes, reads := map[*ast.Buffer]bool{}, map[*ast.Buffer]bool{}
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Alloc:
			ok = false
		case *ast.For:
			if _, marked := n.Annotations[PipelineKey]; marked {
				ok = false
			}
		case *ast.ScheduleBlock:
			blocks++
			if len(n.Writes) != 1 || n.Init != nil {
				ok = false
				return false
			}
			w := n.Writes[0].Buffer
			if c := k.plans[w]; w.Scope != ast.Shared || c == nil || c.Loop != l {
				ok = false
			}
			writes[w] = true
			for _, r := range n.Reads {
				if r.Buffer.Scope != ast.Global {
					ok = false
				}
				reads[r.Buffer] = true
			}
		}
		return ok
	})
	if !ok || blocks == 0 {
		return false
	}
	for b := range writes {
		fetched[b] = true
	}
	for b := range reads {
		sources[b] = true
	}
	return true
}

// asyncCopy returns the cp.async of a copy of bytes bytes from src to dst
// (C addresses) when the store of value into buf can be one: buf is
// being fetched by a pipeline, value is a load of the same type from
// global memory, and the size is one cp.async moves.
func (k *kernelWriter) asyncCopy(buf *ast.Buffer, value ast.Expr, bytes int64, dst, src string) (string, bool) {
	ld, ok := value.(*ast.Load)
	if !ok || !k.async[buf] || ld.Buffer.Scope != ast.Global || ld.Buffer.DType != buf.DType {
		return "", false
	}
	if bytes != 4 && bytes != 8 && bytes != 16 {
		return "", false
	}
	return fmt.Sprintf("loom_cp_async<%d>(%s, %s);", bytes, dst, src), true
}

// sortedBuffers returns the buffers of a set by name.
func sortedBuffers(set map[*ast.Buffer]bool) []*ast.Buffer {
	out := make([]*ast.Buffer, 0, len(set))
	for b := range set {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *ast.Buffer) int { return strings.Compare(a.Name, b.Name) })
	return out
}
