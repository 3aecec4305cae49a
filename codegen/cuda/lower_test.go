package cuda_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// gpuCase is a workload with a GPU schedule.
type gpuCase struct {
	name     string
	c        workload.Case
	schedule func(s *schedule.Schedule) error
	ptx      []string // instructions its PTX must have
}

// gpuCases are the representative kernels the golden and PTX tests pin.
func gpuCases() []gpuCase {
	return []gpuCase{
		{"scale", scaleCase(), scheduleScale, nil},
		{"softmax", workload.Softmax(64, 256), scheduleRows("Y", []string{"S", "E", "M"}), nil},
		{"rmsnorm", workload.RMSNorm(64, 256), scheduleRows("Y", []string{"R", "MS", "MS_sum"}), nil},
		{"gemm", workload.Matmul(128, 128, 128), scheduleGemm, []string{"ld.global.nc.v4.f32", "st.shared.v4.f32", "st.global.v4.f32"}},
		{"gemm_pipelined", workload.Matmul(128, 128, 128), pipelined(scheduleGemm, 2), []string{"cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group 1"}},
		{"gemm_pipelined3", workload.Matmul(96, 64, 80), pipelined(scheduleGemm, 3), []string{"cp.async.cg.shared.global", "cp.async.wait_group 2"}},
		{"slice", sliceCase(), scheduleSlice, []string{"ld.global.v4.f32", "st.global.v4.f32"}},
		{"softmax_rows", workload.Softmax(64, 256), scheduleRowPairs, []string{"bar.sync"}},
		{"chain", workload.Chain(4, 8, 256), scheduleChain, []string{"shfl.sync.bfly.b32"}},
		{"conv2d", workload.Conv2D(1, 8, 10, 10, 16), scheduleConv2D, nil},
	}
}

// scheduleRowPairs runs softmax two rows a block (threadIdx.y), 64
// threads a row (threadIdx.x): each row's reductions span two warps and
// combine through the row's own slots of the scratch array.
func scheduleRowPairs(s *schedule.Schedule) error {
	h := &steps{s: s}
	row := h.loops("Y")
	var rs []schedule.Loop
	h.do(func() (err error) { rs, err = s.Split(row[0], -1, 2); return err })
	for _, p := range []string{"S", "E", "M"} {
		b := h.block(p)
		h.do(func() error { return s.ComputeAt(b, rs[1]) })
	}
	h.do(func() error { return s.Bind(rs[0], "blockIdx.x") })
	h.do(func() error { return s.Bind(rs[1], "threadIdx.y") })
	for _, name := range []string{"Y", "S", "E", "M"} {
		b := s.Func().Block(name)
		h.bindLast(name, 64, b != nil && b.IsReduction())
	}
	return h.err
}

// scheduleChain computes the chain a row of X per block (blockIdx.y, x
// over S1, S2): the element-wise steps inlined, the row's sum a reduction
// across 32 threads, then the row of F 32 threads at a time.
func scheduleChain(s *schedule.Schedule) error {
	h := &steps{s: s}
	for _, name := range []string{"A", "B", "D", "E"} {
		b := h.block(name)
		h.do(func() error { return s.ComputeInline(b) })
	}
	row := h.loops("F") // i, j, k
	c := h.block("C")
	h.do(func() error { return s.ComputeAt(c, row[1]) })
	h.do(func() error { return s.Bind(row[0], "blockIdx.y") })
	h.do(func() error { return s.Bind(row[1], "blockIdx.x") })
	h.bindLast("C", 32, true)
	h.bindLast("F", 32, false)
	return h.err
}

// scheduleConv2D inlines the padding into the convolution (a bounds test
// at each load instead of a pass over memory) and runs a block per output
// row and four output channels (the batch of one fused in), a thread per
// pixel of the row. Each thread accumulates its four channels in
// registers (a local write cache) over the input channels, the 3x3
// window unrolled.
func scheduleConv2D(s *schedule.Schedule) error {
	h := &steps{s: s}
	p := h.block("P")
	h.do(func() error { return s.ComputeInline(p) })
	ls := h.loops("Y") // n, k, h, w, rc, rh, rw
	var ks []schedule.Loop
	h.do(func() (err error) { ks, err = s.Split(ls[1], -1, 4); return err })
	h.do(func() error { return s.Reorder(ls[0], ks[0], ls[2], ls[3], ls[4], ls[5], ls[6], ks[1]) })
	var nk schedule.Loop
	h.do(func() (err error) { nk, err = s.Fuse(ls[0], ks[0]); return err })
	h.do(func() error { return s.Bind(nk, "blockIdx.y") })
	h.do(func() error { return s.Bind(ls[2], "blockIdx.x") })
	h.do(func() error { return s.Bind(ls[3], "threadIdx.x") })
	y := h.block("Y")
	h.do(func() error {
		wb, err := s.CacheWrite(y, "Y", "local")
		if err != nil {
			return err
		}
		return s.ReverseComputeAt(wb, ls[3])
	})
	for _, l := range []schedule.Loop{ls[5], ls[6], ks[1]} {
		h.do(func() error { return s.Unroll(l) })
	}
	return h.err
}

// scaleCase is Y = 2X + 1 over 1000 elements (a tail after tiling by 256).
func scaleCase() workload.Case {
	b := ast.NewBuilder("scale")
	X := b.Placeholder("X", ast.Float32, ast.Shape(1000)...)
	Y := b.Compute("Y", ast.Shape(1000), func(i []ast.Expr) ast.Expr { return ast.Add(ast.Mul(X.At(i...), ast.F32(2)), ast.F32(1)) })
	f, err := b.Build(Y)
	if err != nil {
		panic(err)
	}
	return workload.Case{Name: "scale", Func: f}
}

// sliceCase is Y = 2X over the first 4 columns of the rows of X, which
// has 6: every other row of X starts off a 16-byte boundary.
func sliceCase() workload.Case {
	b := ast.NewBuilder("slice")
	X := b.Placeholder("X", ast.Float32, ast.Shape(64, 6)...)
	Y := b.Compute("Y", ast.Shape(64, 4), func(i []ast.Expr) ast.Expr { return ast.Mul(X.At(i...), ast.F32(2)) })
	f, err := b.Build(Y)
	if err != nil {
		panic(err)
	}
	return workload.Case{Name: "slice", Func: f}
}

// scheduleSlice runs a row per thread, its 4 columns a vector: stored
// as one float4, loaded as one where the row of X is aligned.
func scheduleSlice(s *schedule.Schedule) error {
	h := &steps{s: s}
	ls := h.loops("Y")
	var parts []schedule.Loop
	h.do(func() (err error) { parts, err = s.Split(ls[0], -1, 32); return err })
	h.do(func() error { return s.Bind(parts[0], "blockIdx.x") })
	h.do(func() error { return s.Bind(parts[1], "threadIdx.x") })
	h.do(func() error { return s.Vectorize(ls[1]) })
	return h.err
}

type steps struct {
	s   *schedule.Schedule
	err error
}

func (h *steps) loops(name string) []schedule.Loop {
	if h.err != nil {
		return nil
	}
	b, err := h.s.GetBlock(name)
	if err != nil {
		h.err = err
		return nil
	}
	ls, err := h.s.GetLoops(b)
	h.err = err
	return ls
}

func (h *steps) block(name string) schedule.Block {
	if h.err != nil {
		return schedule.Block{}
	}
	b, err := h.s.GetBlock(name)
	h.err = err
	return b
}

func (h *steps) do(f func() error) {
	if h.err == nil {
		h.err = f()
	}
}

// bindThreads splits the last loop of block name by n and binds the parts
// to threadIdx.x (inner, so that neighbouring threads touch neighbouring
// elements).
func (h *steps) bindLast(name string, n int, outerFirst bool) {
	ls := h.loops(name)
	if h.err != nil {
		return
	}
	var parts []schedule.Loop
	h.do(func() (err error) {
		if outerFirst {
			parts, err = h.s.Split(ls[len(ls)-1], n, -1)
		} else {
			parts, err = h.s.Split(ls[len(ls)-1], -1, n)
		}
		return err
	})
	h.do(func() error {
		if outerFirst {
			return h.s.Bind(parts[0], "threadIdx.x")
		}
		return h.s.Bind(parts[1], "threadIdx.x")
	})
}

func scheduleScale(s *schedule.Schedule) error {
	h := &steps{s: s}
	ls := h.loops("Y")
	var parts []schedule.Loop
	h.do(func() (err error) { parts, err = s.Split(ls[0], -1, 256); return err })
	h.do(func() error { return s.Bind(parts[0], "blockIdx.x") })
	h.do(func() error { return s.Bind(parts[1], "threadIdx.x") })
	return h.err
}

// scheduleRows runs a row per block: the producers under the row loop,
// each block's last loop over 32 threads (a reduce loop so becomes a
// cross-thread reduction, each thread folding a contiguous chunk first).
func scheduleRows(out string, producers []string) func(s *schedule.Schedule) error {
	return func(s *schedule.Schedule) error {
		h := &steps{s: s}
		row := h.loops(out)
		for _, p := range producers {
			h.do(func() error {
				b, err := s.GetBlock(p)
				if err != nil {
					return err
				}
				return s.ComputeAt(b, row[0])
			})
		}
		h.do(func() error { return s.Bind(row[0], "blockIdx.x") })
		for _, name := range append([]string{out}, producers...) {
			if len(h.loops(name)) < 2 {
				continue // computed once per row
			}
			b := s.Func().Block(name)
			if b != nil && b.IsReduction() {
				h.bindLast(name, 32, true)
			} else {
				h.bindLast(name, 32, false)
			}
		}
		return h.err
	}
}

// scheduleGemm tiles C = A·B by 64 x 64 per block of 16 x 16 threads,
// each thread a 4 x 4 tile accumulated in registers (a local write
// cache), k by 16: in each step of k the block's threads fetch the 64 x 16
// tile of A and the 16 x 64 tile of B into shared memory together, four
// consecutive elements each (a float4 when aligned); each thread stores its
// tile's rows a float4 at a time.
func scheduleGemm(s *schedule.Schedule) error {
	h := &steps{s: s}
	ls := h.loops("C") // i, j, k
	var is, js, ks []schedule.Loop
	h.do(func() (err error) { is, err = s.Split(ls[0], -1, 16, 4); return err })
	h.do(func() (err error) { js, err = s.Split(ls[1], -1, 16, 4); return err })
	h.do(func() (err error) { ks, err = s.Split(ls[2], -1, 16); return err })
	h.do(func() error { return s.Reorder(is[0], js[0], is[1], js[1], ks[0], ks[1], is[2], js[2]) })
	h.do(func() error { return s.Bind(is[0], "blockIdx.y") })
	h.do(func() error { return s.Bind(js[0], "blockIdx.x") })
	h.do(func() error { return s.Bind(is[1], "threadIdx.y") })
	h.do(func() error { return s.Bind(js[1], "threadIdx.x") })
	c := h.block("C")
	h.do(func() error {
		wb, err := s.CacheWrite(c, "C", "local")
		if err != nil {
			return err
		}
		if err := s.ReverseComputeAt(wb, js[1]); err != nil {
			return err
		}
		wls, err := s.GetLoops(wb)
		if err != nil {
			return err
		}
		return s.Vectorize(wls[len(wls)-1])
	})
	for _, buf := range []string{"A", "B"} {
		var fetch schedule.Block
		h.do(func() (err error) { fetch, err = s.CacheRead(c, buf, "shared"); return err })
		h.do(func() error { return s.ComputeAt(fetch, ks[0]) })
		h.do(func() error {
			fls, err := s.GetLoops(fetch)
			if err != nil {
				return err
			}
			cols, err := s.Split(fls[len(fls)-1], -1, 4)
			if err != nil {
				return err
			}
			fused, err := s.Fuse(fls[len(fls)-2], cols[0])
			if err != nil {
				return err
			}
			parts, err := s.Split(fused, -1, 16, 16)
			if err != nil {
				return err
			}
			if err := s.Bind(parts[1], "threadIdx.y"); err != nil {
				return err
			}
			if err := s.Bind(parts[2], "threadIdx.x"); err != nil {
				return err
			}
			return s.Vectorize(cols[1])
		})
	}
	return h.err
}

// pipelined is schedule with the loop of k steps (the first loop that
// the fetches are computed at) run as a software pipeline of stages.
func pipelined(sched func(s *schedule.Schedule) error, stages int) func(s *schedule.Schedule) error {
	return func(s *schedule.Schedule) error {
		if err := sched(s); err != nil {
			return err
		}
		h := &steps{s: s}
		for _, l := range h.loops("A_shared") {
			if l.Name() == "k_0" {
				h.do(func() error { return s.AnnotateLoop(l, cuda.PipelineKey, stages) })
			}
		}
		return h.err
	}
}

func lowered(t *testing.T, gc gpuCase) *cuda.Module {
	t.Helper()
	s, err := schedule.New(gc.c.Func)
	if err != nil {
		t.Fatal(err)
	}
	if err := gc.schedule(s); err != nil {
		t.Fatalf("%s: schedule: %s", gc.name, schedule.Explain(err))
	}
	m, err := cuda.Lower(s.Func(), cuda.Options{})
	if err != nil {
		t.Fatalf("%s: %v\n%s", gc.name, err, ast.Print(s.Func()))
	}
	return m
}

// TestPTX compiles every representative kernel to PTX with clang (no GPU
// needed) for sm_80 (clang-14) and sm_90 (clang-16), which make tools
// installs: without them it fails, except on a machine with CUDA, where
// NVRTC compiles instead (CompilePTX) and instruction spellings only
// clang's PTX has are logged (ptxMissing).
func TestPTX(t *testing.T) {
	for _, gc := range gpuCases() {
		t.Run(gc.name, func(t *testing.T) {
			m := lowered(t, gc)
			for _, arch := range []string{"sm_80", "sm_90"} {
				m.Arch = arch // the source is the same (Options.Arch names it in a comment)
				ptx, err := cuda.CompilePTX(m)
				if err != nil {
					t.Fatalf("%s: %v\n%s", arch, err, m.Source)
				}
				if !strings.Contains(ptx, ".target "+arch) {
					t.Errorf("PTX for another target than %s:\n%.300s", arch, ptx)
				}
				for _, inst := range gc.ptx {
					if !strings.Contains(ptx, inst) {
						ptxMissing(t, arch, "%s: the PTX has no %s", arch, inst)
					}
				}
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden CUDA sources")

// TestGolden pins the CUDA source of every representative kernel:
// testdata/NAME.cu (go test ./codegen/cuda -run Golden -update rewrites
// them).
func TestGolden(t *testing.T) {
	for _, gc := range gpuCases() {
		t.Run(gc.name, func(t *testing.T) {
			m := lowered(t, gc)
			path := filepath.Join("testdata", gc.name+".cu")
			if *update {
				if err := os.WriteFile(path, []byte(m.Source), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if string(want) != m.Source {
				t.Errorf("%s differs from the source lowered now (-update rewrites it):\n%s", path, m.Source)
			}
		})
	}
}

// ptxMissing reports an instruction the PTX lacks: a failure where clang
// compiled it, a log line where NVRTC did (a GPU's machine without clang,
// see CompilePTX), whose optimizer spells some of the same accesses
// otherwise (ld.global.nc for a read-only buffer's loads, seen on an
// H200); the kernels themselves then run on the GPU.
func ptxMissing(t *testing.T, arch, format string, args ...any) {
	t.Helper()
	clang := cuda.Clang
	if arch >= "sm_90" {
		clang = cuda.ClangHopper
	}
	if _, err := exec.LookPath(clang); err != nil {
		t.Logf("NVRTC's PTX: "+format, args...)
		return
	}
	t.Errorf(format, args...)
}
