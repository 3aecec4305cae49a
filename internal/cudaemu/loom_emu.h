// loom_emu.h: runs loom's CUDA kernels on the CPU, for the tests on
// machines without a GPU. Every thread of a block is a fiber of its own
// (a stack and a ucontext), and one OS thread runs a block's fibers in
// turn: each runs until it waits at a barrier (__syncthreads, or a warp's
// exchange) or ends, and a barrier releases its fibers when all of them
// have arrived; a round in which no fiber arrives anywhere or ends is a
// deadlock (a barrier some threads never reach), reported, never waited
// out. Between two barriers the threads of a block run one after another,
// in increasing order in even blocks and decreasing in odd ones, so a
// missing barrier shows as a wrong result whichever way the dependence
// it should have ordered goes. Blocks run one after another, which lets a
// __shared__ array be a static local shared by the block's threads. Warp
// shuffles exchange through a per-warp array between two barriers.
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>
#include <sys/mman.h>
#include <ucontext.h>

using std::isnan;

struct loom_dim3 {
  unsigned x = 1, y = 1, z = 1;
};
// The running fiber's thread and block, set by the scheduler before it
// resumes the fiber.
static loom_dim3 loom_tid, loom_bid;
static int loom_lane_id;
static loom_dim3 loom_bdim, loom_gdim;
#define threadIdx loom_tid
#define blockIdx loom_bid
#define blockDim loom_bdim
#define gridDim loom_gdim

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))

struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned int x, y;
};
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};

// loom_yield returns to the scheduler; the fiber resumes when the
// scheduler comes back to it, with the globals above set to its own.
static void loom_yield();
// loom_progress counts barrier arrivals and ended fibers: the scheduler's
// test of a deadlock.
static unsigned long long loom_progress;

// loom_barrier holds each fiber that arrives until n have arrived.
struct loom_barrier {
  explicit loom_barrier(int n) : n(n) {}
  void arrive_and_wait() {
    unsigned long long g = gen;
    loom_progress++;
    if (++arrived == n) {
      arrived = 0;
      gen++;
      return;
    }
    while (gen == g) loom_yield();
  }
  int n, arrived = 0;
  unsigned long long gen = 0;
};

static loom_barrier* loom_block_barrier;
static inline void __syncthreads() { loom_block_barrier->arrive_and_wait(); }

struct loom_warp {
  explicit loom_warp(int n) : bar(n) {}
  loom_barrier bar;
  unsigned long long slot[32];
  // The fragments of an mma, by lane.
  unsigned mma_a[32][4], mma_b[32][2];
  float mma_c[32][4];
};
static std::vector<std::unique_ptr<loom_warp>> loom_warps;

template <class T>
static T __shfl_xor_sync(unsigned, T v, int lane, int width = 32) {
  loom_warp* w = loom_warps[loom_lane_id / 32].get();
  int me = loom_lane_id % 32;
  std::memcpy(&w->slot[me], &v, sizeof(T));
  w->bar.arrive_and_wait();
  int other = me ^ lane;
  if (other / width != me / width) other = me;
  T out;
  std::memcpy(&out, &w->slot[other], sizeof(T));
  w->bar.arrive_and_wait();
  return out;
}

static inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
static inline int __float_as_int(float x) { int i; std::memcpy(&i, &x, 4); return i; }
static inline double __longlong_as_double(long long x) { double d; std::memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double x) { long long i; std::memcpy(&i, &x, 8); return i; }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// loom_emu_mma_m16n8k16 stands in for mma.sync.aligned.m16n8k16.row.col
// with float32 accumulators and float16 (bf16 = 0) or bfloat16 factors:
// every lane of the warp passes its fragments, each gets its four results
// of D = A · B + C. The tiles are put together from the fragments by the
// PTX ISA's layout, as its formulas give it (groupID = lane >> 2,
// threadID_in_group = lane % 4): A's element ai at row groupID (+ 8 for i
// in 2, 3, 6, 7), column 2 threadID_in_group + (i & 1) (+ 8 for i >= 4);
// B's bi at row 2 threadID_in_group + (i & 1) (+ 8 for i >= 2), column
// groupID; C's ci at row groupID (+ 8 for i >= 2), column
// 2 threadID_in_group + (i & 1). Products are exact in float; the sum runs
// over k in order, in float.
static float loom_emu_half(unsigned short h, int bf16) {
  if (bf16) { unsigned u = (unsigned)h << 16; float f; std::memcpy(&f, &u, 4); return f; }
  unsigned sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0) { float f = (float)m * (1.0f / 16777216.0f); return sign ? -f : f; }
  u = e == 31 ? 0x7f800000u | (m << 13) : ((e + 112u) << 23) | (m << 13);
  u |= sign;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static void loom_emu_mma_m16n8k16(int lane, const unsigned a[4], const unsigned b[2], float c[4], int bf16) {
  loom_warp* w = loom_warps[loom_lane_id / 32].get();
  std::memcpy(w->mma_a[lane], a, sizeof w->mma_a[lane]);
  std::memcpy(w->mma_b[lane], b, sizeof w->mma_b[lane]);
  std::memcpy(w->mma_c[lane], c, sizeof w->mma_c[lane]);
  w->bar.arrive_and_wait();
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    int group = l >> 2, tig = l % 4;
    for (int i = 0; i < 8; ++i) {
      int row = (i < 2 || (4 <= i && i < 6)) ? group : group + 8;
      int col = i < 4 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
      unsigned reg = w->mma_a[l][i / 2];
      A[row][col] = loom_emu_half((unsigned short)(i % 2 ? reg >> 16 : reg), bf16);
    }
    for (int i = 0; i < 4; ++i) {
      int row = i < 2 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
      unsigned reg = w->mma_b[l][i / 2];
      B[row][group] = loom_emu_half((unsigned short)(i % 2 ? reg >> 16 : reg), bf16);
    }
    for (int i = 0; i < 4; ++i) C[i < 2 ? group : group + 8][tig * 2 + (i & 1)] = w->mma_c[l][i];
  }
  int group = lane >> 2, tig = lane % 4;
  for (int i = 0; i < 4; ++i) {
    int row = i < 2 ? group : group + 8, col = tig * 2 + (i & 1);
    float d = C[row][col];
    for (int k = 0; k < 16; ++k) d += A[row][k] * B[k][col];
    c[i] = d;
  }
  w->bar.arrive_and_wait(); // the slots are read before the next mma writes them
}

// loom_emu_mma_m16n8k16_f16acc is loom_emu_mma_m16n8k16 with float16
// factors and float16 accumulators, two to a register (the lower-numbered
// in the low half): the sums in float, rounded to float16 at the end.
static unsigned short loom_emu_to_half(float x) {
  unsigned u;
  std::memcpy(&u, &x, 4);
  unsigned mag = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u, h;
  if (mag > 0x7f800000u) {
    h = 0x7e00u;
  } else if (mag < 0x38800000u) {
    float f, half = 0.5f;
    std::memcpy(&f, &mag, 4);
    f += half;
    std::memcpy(&h, &f, 4);
    h -= 0x3f000000u;
  } else {
    unsigned r = mag + 0xfffu + ((mag >> 13) & 1u);
    h = r >= 0x47800000u ? 0x7c00u : (r >> 13) - ((127u - 15u) << 10);
  }
  return (unsigned short)(h | sign);
}
static void loom_emu_mma_m16n8k16_f16acc(int lane, const unsigned a[4], const unsigned b[2], unsigned c[2]) {
  float f[4];
  for (int i = 0; i < 4; ++i) f[i] = loom_emu_half((unsigned short)(c[i / 2] >> (16 * (i % 2))), 0);
  loom_emu_mma_m16n8k16(lane, a, b, f, 0);
  for (int r = 0; r < 2; ++r) c[r] = (unsigned)loom_emu_to_half(f[2 * r]) | (unsigned)loom_emu_to_half(f[2 * r + 1]) << 16;
}

// loom_emu_ldmatrix stands in for ldmatrix.sync.aligned.m8n8.xNUM.b16
// (.trans when trans): every lane passes the address of a row, lane l
// row l % 8 of matrix l / 8, and gets in register m the two elements of
// matrix m at row lane >> 2, columns 2 (lane & 3) and the next (with
// .trans, at column lane >> 2, rows 2 (lane & 3) and the next), the
// lower-numbered in the low half.
static void loom_emu_ldmatrix(int lane, const unsigned short* row, unsigned* regs, int num, int trans) {
  loom_warp* w = loom_warps[loom_lane_id / 32].get();
  w->slot[lane] = (unsigned long long)row;
  w->bar.arrive_and_wait();
  for (int m = 0; m < num; ++m) {
    unsigned short e[2];
    for (int i = 0; i < 2; ++i) {
      int r = trans ? 2 * (lane & 3) + i : lane >> 2, c = trans ? lane >> 2 : 2 * (lane & 3) + i;
      e[i] = ((const unsigned short*)w->slot[8 * m + r])[c];
    }
    regs[m] = (unsigned)e[0] | (unsigned)e[1] << 16;
  }
  w->bar.arrive_and_wait();
}

// cp.async: each thread's copies wait in its queue until a
// cp.async.wait_group lets them land (the source is read when the copy
// is issued), so a kernel that reads a tile before it waits for it reads
// what was there before, as it might on the GPU.
struct loom_cp {
  void* dst;
  unsigned char data[16];
  int n;
};
struct loom_cp_queue {
  std::vector<loom_cp> open;
  std::vector<std::vector<loom_cp>> groups;
};
static loom_cp_queue* loom_cp_cur; // the running fiber's
#define loom_cp_open (loom_cp_cur->open)
#define loom_cp_groups (loom_cp_cur->groups)
static void loom_emu_cp_async(void* dst, const void* src, int n) {
  loom_cp c{dst, {}, n};
  std::memcpy(c.data, src, n);
  loom_cp_open.push_back(c);
}
static void loom_emu_cp_commit() {
  loom_cp_groups.push_back(std::move(loom_cp_open));
  loom_cp_open.clear();
}
static void loom_emu_cp_wait(int pending) {
  while ((int)loom_cp_groups.size() > pending) {
    for (auto& c : loom_cp_groups.front()) std::memcpy(c.dst, c.data, c.n);
    loom_cp_groups.erase(loom_cp_groups.begin());
  }
}

// A fiber: one thread of the block being run.
struct loom_fiber {
  ucontext_t ctx;
  loom_dim3 tid;
  int lane = 0;
  bool done = false;
  loom_cp_queue cp;
};
// The fibers' stacks, each under a page that faults on overflow: made
// once for the largest block so far, reused by every block after.
static const size_t loom_stack_bytes = size_t(1) << 20;
static char* loom_stacks;
static int loom_stack_count;
static ucontext_t loom_scheduler;
static loom_fiber* loom_cur;
static void (*loom_body)(void*);
static void* loom_body_arg;

static void loom_yield() {
  swapcontext(&loom_cur->ctx, &loom_scheduler);
  asm volatile("" ::: "memory"); // the scheduler changed the globals
}

static void loom_fiber_main() {
  loom_body(loom_body_arg);
  loom_cur->done = true;
  loom_progress++;
  swapcontext(&loom_cur->ctx, &loom_scheduler); // never resumed
}

static void loom_reserve_stacks(int n) {
  if (n <= loom_stack_count) return;
  if (loom_stacks) munmap(loom_stacks, loom_stack_count * loom_stack_bytes);
  loom_stack_count = 0;
  void* p = mmap(nullptr, n * loom_stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("loom_emu: no memory for the threads' stacks");
  loom_stacks = (char*)p;
  loom_stack_count = n;
  for (int i = 0; i < n; ++i) mprotect(loom_stacks + i * loom_stack_bytes, 4096, PROT_NONE);
}

// loom_run_block runs the n threads of one block to their end, and
// throws where they deadlock.
template <class F>
static void loom_run_block(loom_dim3 block, loom_dim3 bid, bool reverse, F& kernel) {
  int n = block.x * block.y * block.z;
  loom_reserve_stacks(n);
  loom_barrier bar(n);
  loom_block_barrier = &bar;
  std::vector<std::unique_ptr<loom_warp>> warps;
  for (int w = 0; w < n; w += 32) warps.push_back(std::make_unique<loom_warp>(n - w < 32 ? n - w : 32));
  loom_warps.swap(warps);
  std::vector<loom_fiber> fibers(n);
  loom_body = [](void* k) { (*(F*)k)(); };
  loom_body_arg = &kernel;
  for (int t = 0; t < n; ++t) {
    loom_fiber& f = fibers[t];
    f.tid = {unsigned(t) % block.x, unsigned(t) / block.x % block.y, unsigned(t) / (block.x * block.y)};
    f.lane = t;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = loom_stacks + t * loom_stack_bytes + 4096;
    f.ctx.uc_stack.ss_size = loom_stack_bytes - 4096;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, loom_fiber_main, 0);
  }
  loom_bid = bid;
  for (int live = n; live > 0;) {
    unsigned long long before = loom_progress;
    for (int i = 0; i < n; ++i) {
      loom_fiber& f = fibers[reverse ? n - 1 - i : i];
      if (f.done) continue;
      loom_cur = &f;
      loom_tid = f.tid;
      loom_lane_id = f.lane;
      loom_cp_cur = &f.cp;
      swapcontext(&loom_scheduler, &f.ctx);
      if (f.done) live--;
    }
    if (live > 0 && loom_progress == before) {
      loom_warps.clear();
      throw std::runtime_error("loom_emu: deadlock: a barrier some threads of the block never reach");
    }
  }
  loom_warps.clear();
}

// loom_launch runs kernel over a grid of blocks of threads.
template <class F>
static void loom_launch(loom_dim3 grid, loom_dim3 block, F kernel) {
  loom_gdim = grid;
  loom_bdim = block;
  unsigned long long b = 0;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx, ++b) loom_run_block(block, {bx, by, bz}, b % 2 == 1, kernel);
}
