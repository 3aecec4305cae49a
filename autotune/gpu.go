package autotune

import "fmt"

// GPU describes a CUDA device for the GPU rules: how many threads a block
// may have and how much shared memory, the warp a block's thread count
// should be a multiple of, and the compute capability (80 for sm_80),
// which says what instructions the kernels may use: Tensor Cores'
// mma.sync m16n8k16 and cp.async from 80 on.
type GPU struct {
	MaxThreadsPerBlock int
	MaxSharedBytes     int
	WarpSize           int
	Arch               int
}

// CUDATarget is the target of the GPU rules on an NVIDIA GPU of compute
// capability 8.0 (sm_80, codegen/cuda's default) or later: 1024 threads
// and 48 KiB of static shared memory per block, warps of 32.
func CUDATarget() Target { return CUDATargetFor("sm_80") }

// CUDATargetFor is CUDATarget for a device of compute capability arch
// ("sm_75", "sm_90"); an arch that does not read as one is taken for
// sm_50, which rules out every instruction of later ones.
func CUDATargetFor(arch string) Target {
	n := 50
	if _, err := fmt.Sscanf(arch, "sm_%d", &n); err != nil || n < 50 {
		n = 50
	}
	return Target{GPU: &GPU{MaxThreadsPerBlock: 1024, MaxSharedBytes: 48 << 10, WarpSize: 32, Arch: n}}
}

// GPURules are the rules for CUDA, in the order they are applied to each
// block (consumers first, as for the CPU rules):
//
//   - auto-inline, as on CPUs;
//   - Tensor Core tiling of contractions of 16-bit float factors whose
//     extents divide by the mma tile (TensorCoreTiling);
//   - multi-level tiling SSSRRSRS of blocks that reuse data (matmul,
//     convolution): the first spatial level bound to blockIdx.x, the second
//     a virtual-thread level, the third to threadIdx.x, a local write cache
//     per thread, and shared-memory caches of the inputs fetched by the
//     whole block together at each step of the outer reduce level;
//   - cross-thread reduction of the other reductions: computed under the
//     consumer's block loop and their reduce loop bound to threadIdx.x;
//   - the compute location of other producers, under the consumer's block
//     loop;
//   - auto-bind of whatever still runs outside the bound loops;
//   - the sampled unroll limit of the loops inside the threads.
func GPURules() []Rule {
	return []Rule{
		AutoInline{},
		TensorCoreTiling{},
		MultiLevelTilingGPU{Structure: "SSSRRSRS", MaxInnermost: 64},
		CrossThreadReduction{ThreadCounts: []int64{32, 64, 128, 256, 512}},
		GPUComputeLocation{},
		AutoBind{ThreadCounts: []int64{32, 64, 128, 256, 512, 1024}},
		ParallelVectorizeUnroll{MaxUnroll: []int64{0, 16, 64, 512}},
	}
}
