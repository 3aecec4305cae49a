// peers.cu: the references tools/gpucheck/run times loom's kernels
// against on an NVIDIA GPU, one JSON line per figure on stdout:
//
//	gemm M N K      cublasSgemm (float32, no TF32) and cublasGemmEx
//	                (float16 factors, float32 sums and output, as loom's
//	                mma_m16n8k16_f16_f32 kernels compute)
//	copy BYTES      a device-to-device copy of BYTES (cudaMemcpyAsync),
//	                its bandwidth counting bytes read and written
//
// Build: nvcc -O3 -arch=native -o peers peers.cu -lcublas. Every figure is
// the median of 21 samples, each a batch of launches between two CUDA
// events after three warm-up batches, with the fastest and slowest
// sample beside it; the inputs are random (never zeros), and each gemm's
// output is checked at 256 places against a float64 sum on the host.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CK(x)                                                                              \
	do {                                                                                   \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(1);                                                                       \
		}                                                                                  \
	} while (0)
#define CB(x)                                                                              \
	do {                                                                                   \
		cublasStatus_t s_ = (x);                                                           \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
			fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, (int)s_); \
			exit(1);                                                                       \
		}                                                                                  \
	} while (0)

// uniform returns a value in [-1, 1) from a hash of i and seed.
__host__ __device__ static float uniform(size_t i, unsigned seed) {
	unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 31;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 29;
	return (float)((x >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

__global__ void fill32(float *p, size_t n, unsigned seed) {
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = uniform(i, seed);
}

__global__ void fill16(__half *p, size_t n, unsigned seed) {
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2half(uniform(i, seed));
}

// timeit runs launch reps times per sample between two events and prints
// the median, fastest and slowest sample per launch, in ms.
template <class F>
static void timeit(const char *json_head, F launch, int reps, double work, const char *rate_unit, double rate_scale) {
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int w = 0; w < 3; w++)
		for (int r = 0; r < reps; r++) launch();
	CK(cudaDeviceSynchronize());
	std::vector<float> ms;
	for (int s = 0; s < 21; s++) {
		CK(cudaEventRecord(a));
		for (int r = 0; r < reps; r++) launch();
		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		CK(cudaGetLastError());
		float t;
		CK(cudaEventElapsedTime(&t, a, b));
		ms.push_back(t / reps);
	}
	std::sort(ms.begin(), ms.end());
	double med = ms[ms.size() / 2];
	printf("{%s, \"ms\": %.6g, \"ms_min\": %.6g, \"ms_max\": %.6g, \"samples\": %zu, \"reps\": %d, \"%s\": %.4g}\n", json_head, med,
	       (double)ms.front(), (double)ms.back(), ms.size(), reps, rate_unit, work / (med * 1e-3) / rate_scale);
	fflush(stdout);
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
}

// checkGemm compares C (row-major M x N, float32 on the device) with a
// float64 sum over the inputs at 256 places; a and b give A[i, k] and
// B[k, j] as the device holds them.
template <class A, class B>
static double checkGemm(const float *dC, int M, int N, int K, A a, B b) {
	std::vector<float> c((size_t)M * N);
	CK(cudaMemcpy(c.data(), dC, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
	double worst = 0;
	for (int t = 0; t < 256; t++) {
		int i = (int)((uniform(t, 7) + 1) / 2 * M) % M, j = (int)((uniform(t, 8) + 1) / 2 * N) % N;
		double want = 0;
		for (int k = 0; k < K; k++) want += (double)a(i, k) * (double)b(k, j);
		double got = c[(size_t)i * N + j];
		double e = fabs(got - want) / std::max(1.0, fabs(want));
		if (!(e <= worst)) worst = e; // NaN counts
	}
	return worst;
}

static void gemm(int M, int N, int K) {
	cublasHandle_t h;
	CB(cublasCreate(&h));
	float *A, *B, *C;
	__half *A16, *B16;
	CK(cudaMalloc(&A, sizeof(float) * M * K));
	CK(cudaMalloc(&B, sizeof(float) * K * N));
	CK(cudaMalloc(&C, sizeof(float) * M * N));
	CK(cudaMalloc(&A16, sizeof(__half) * M * K));
	CK(cudaMalloc(&B16, sizeof(__half) * K * N));
	fill32<<<1024, 256>>>(A, (size_t)M * K, 1);
	fill32<<<1024, 256>>>(B, (size_t)K * N, 2);
	fill16<<<1024, 256>>>(A16, (size_t)M * K, 1);
	fill16<<<1024, 256>>>(B16, (size_t)K * N, 2);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	const float one = 1, zero = 0;
	double flops = 2.0 * M * N * K;
	char head[256];
	// Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first.
	auto sgemm = [&] { CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N)); };
	CK(cudaMemset(C, 0xFF, sizeof(float) * M * N)); // NaN: an unwritten element shows
	sgemm();
	CK(cudaDeviceSynchronize());
	std::vector<float> ha((size_t)M * K), hb((size_t)K * N);
	CK(cudaMemcpy(ha.data(), A, ha.size() * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hb.data(), B, hb.size() * sizeof(float), cudaMemcpyDeviceToHost));
	double err32 = checkGemm(C, M, N, K, [&](int i, int k) { return ha[(size_t)i * K + k]; }, [&](int k, int j) { return hb[(size_t)k * N + j]; });
	snprintf(head, sizeof head, "\"peer\": \"cublasSgemm\", \"kernel\": \"gemm_f32\", \"shape\": \"%dx%dx%d\", \"max_rel_err\": %.3g", M, N, K, err32);
	timeit(head, sgemm, 10, flops, "tflops", 1e12);

	auto hgemm = [&] {
		CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B16, CUDA_R_16F, N, A16, CUDA_R_16F, K, &zero, C, CUDA_R_32F, N,
		                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	};
	CK(cudaMemset(C, 0xFF, sizeof(float) * M * N));
	hgemm();
	CK(cudaDeviceSynchronize());
	std::vector<__half> ha16((size_t)M * K), hb16((size_t)K * N);
	CK(cudaMemcpy(ha16.data(), A16, ha16.size() * sizeof(__half), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hb16.data(), B16, hb16.size() * sizeof(__half), cudaMemcpyDeviceToHost));
	double err16 = checkGemm(C, M, N, K, [&](int i, int k) { return __half2float(ha16[(size_t)i * K + k]); },
	                         [&](int k, int j) { return __half2float(hb16[(size_t)k * N + j]); });
	snprintf(head, sizeof head, "\"peer\": \"cublasGemmEx f16 f32\", \"kernel\": \"gemm_f16_f32\", \"shape\": \"%dx%dx%d\", \"max_rel_err\": %.3g", M, N,
	         K, err16);
	timeit(head, hgemm, 20, flops, "tflops", 1e12);
	CK(cudaFree(A));
	CK(cudaFree(B));
	CK(cudaFree(C));
	CK(cudaFree(A16));
	CK(cudaFree(B16));
	CB(cublasDestroy(h));
}

static void copy(size_t bytes) {
	char *src, *dst;
	CK(cudaMalloc(&src, bytes));
	CK(cudaMalloc(&dst, bytes));
	fill32<<<1024, 256>>>((float *)src, bytes / 4, 3);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	char head[256];
	snprintf(head, sizeof head, "\"peer\": \"cudaMemcpy d2d\", \"kernel\": \"copy\", \"bytes\": %zu", bytes);
	timeit(head, [&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }, 10, 2.0 * bytes, "gbps", 1e9);
	CK(cudaFree(src));
	CK(cudaFree(dst));
}

int main(int argc, char **argv) {
	if (argc == 5 && strcmp(argv[1], "gemm") == 0) {
		gemm(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "copy") == 0) {
		copy((size_t)atoll(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: peers gemm M N K | peers copy BYTES\n");
	return 2;
}
