// loom_check.h: the names the CUDA headers declare, defined through
// clang's NVPTX builtins, so that clang compiles loom's kernels to PTX on a
// machine without CUDA (-nocudainc -nocudalib). NVRTC never sees this file.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(n) __attribute__((launch_bounds(n)))
#define __align__(n) __attribute__((aligned(n)))

// The vector types of float32 loads and stores.
struct __attribute__((aligned(8))) float2 {
  float x, y;
};
struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
// Words of 16-bit float lanes.
struct __attribute__((aligned(8))) uint2 {
  unsigned int x, y;
};
struct __attribute__((aligned(16))) uint4 {
  unsigned int x, y, z, w;
};

struct loom_uint3 {
  unsigned int x, y, z;
};
static __device__ __forceinline__ loom_uint3 loom_tid() {
  return {(unsigned)__nvvm_read_ptx_sreg_tid_x(), (unsigned)__nvvm_read_ptx_sreg_tid_y(), (unsigned)__nvvm_read_ptx_sreg_tid_z()};
}
static __device__ __forceinline__ loom_uint3 loom_ctaid() {
  return {(unsigned)__nvvm_read_ptx_sreg_ctaid_x(), (unsigned)__nvvm_read_ptx_sreg_ctaid_y(), (unsigned)__nvvm_read_ptx_sreg_ctaid_z()};
}
static __device__ __forceinline__ loom_uint3 loom_ntid() {
  return {(unsigned)__nvvm_read_ptx_sreg_ntid_x(), (unsigned)__nvvm_read_ptx_sreg_ntid_y(), (unsigned)__nvvm_read_ptx_sreg_ntid_z()};
}
static __device__ __forceinline__ loom_uint3 loom_nctaid() {
  return {(unsigned)__nvvm_read_ptx_sreg_nctaid_x(), (unsigned)__nvvm_read_ptx_sreg_nctaid_y(), (unsigned)__nvvm_read_ptx_sreg_nctaid_z()};
}
#define threadIdx (loom_tid())
#define blockIdx (loom_ctaid())
#define blockDim (loom_ntid())
#define gridDim (loom_nctaid())
#define __syncthreads() __nvvm_bar_sync(0)

static __device__ __forceinline__ float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
static __device__ __forceinline__ int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
static __device__ __forceinline__ double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
static __device__ __forceinline__ long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
static __device__ __forceinline__ bool isnan(float x) { return __builtin_isnan(x); }
static __device__ __forceinline__ bool isnan(double x) { return __builtin_isnan(x); }

// Butterfly shuffles within groups of width lanes.
static __device__ __forceinline__ int __shfl_xor_sync(unsigned mask, int v, int lane, int width = 32) {
  return __nvvm_shfl_sync_bfly_i32(mask, v, lane, ((32 - width) << 8) | 0x1f);
}
static __device__ __forceinline__ float __shfl_xor_sync(unsigned mask, float v, int lane, int width = 32) {
  return __nvvm_shfl_sync_bfly_f32(mask, v, lane, ((32 - width) << 8) | 0x1f);
}
static __device__ __forceinline__ long long __shfl_xor_sync(unsigned mask, long long v, int lane, int width = 32) {
  int lo = __shfl_xor_sync(mask, (int)v, lane, width);
  int hi = __shfl_xor_sync(mask, (int)(v >> 32), lane, width);
  return ((long long)hi << 32) | (unsigned)lo;
}
static __device__ __forceinline__ double __shfl_xor_sync(unsigned mask, double v, int lane, int width = 32) {
  return __longlong_as_double(__shfl_xor_sync(mask, __double_as_longlong(v), lane, width));
}

// The CUDA math library (libdevice): declared only; PTX calls them.
extern "C" {
__device__ float expf(float);
__device__ float exp2f(float);
__device__ float logf(float);
__device__ float log2f(float);
__device__ float sqrtf(float);
__device__ float rsqrtf(float);
__device__ float tanhf(float);
__device__ float erff(float);
__device__ float powf(float, float);
__device__ float fabsf(float);
__device__ float floorf(float);
__device__ float ceilf(float);
__device__ float sinf(float);
__device__ float cosf(float);
__device__ double exp(double);
__device__ double exp2(double);
__device__ double log(double);
__device__ double log2(double);
__device__ double sqrt(double);
__device__ double rsqrt(double);
__device__ double tanh(double);
__device__ double erf(double);
__device__ double pow(double, double);
__device__ double fabs(double);
__device__ double floor(double);
__device__ double ceil(double);
__device__ double sin(double);
__device__ double cos(double);
}
static __device__ __forceinline__ float exp(float x) { return expf(x); }
