/*
 * loomrt: the runtime that loom's CPU kernels call. Public domain.
 *
 * One function matters: loom_parallel_for(task, ctx, n) runs task(ctx, lo,
 * hi) over [0, n) split into one contiguous chunk per thread, on a pool of
 * worker threads that lives as long as the process, and returns when every
 * chunk is done. The calling thread runs the first chunk itself.
 *
 * Threads never multiply: a call made from inside a chunk (a nested parallel
 * loop), or while another thread holds the pool, runs serially on the
 * calling thread.
 *
 * Workers wait for work by spinning for a short while (so that back-to-back
 * parallel loops start fast) and then sleep on a condition variable.
 *
 * Build: cc -O2 -fPIC -shared -pthread loomrt.c -o libloomrt.so -lm
 * With -DLOOM_RT_GOMP the same interface runs on GCC's OpenMP runtime
 * instead (for comparison; link with -lgomp).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

typedef void (*loom_task)(void *ctx, int64_t lo, int64_t hi);

static atomic_int setting; /* threads to use; 0 means one per core */

static int cores(void) {
	static int n;
	if (n == 0) {
		const char *env = getenv("LOOM_NUM_THREADS");
		int v = env ? atoi(env) : 0;
		if (v <= 0)
			v = (int)sysconf(_SC_NPROCESSORS_ONLN);
		n = v > 0 ? v : 1;
	}
	return n;
}

void loom_set_num_threads(int32_t n) { atomic_store(&setting, n < 0 ? 0 : n); }

int32_t loom_get_num_threads(void) {
	int n = atomic_load(&setting);
	return n > 0 ? n : cores();
}

/* chunk t of T of [0, n): sizes differ by at most one. */
static void chunk(int64_t n, int t, int T, int64_t *lo, int64_t *hi) {
	int64_t q = n / T, r = n % T;
	*lo = q * t + (t < r ? t : r);
	*hi = *lo + q + (t < r ? 1 : 0);
}

#ifdef LOOM_RT_GOMP

void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
int omp_get_thread_num(void);
int omp_get_num_threads(void);

struct gomp_job {
	loom_task fn;
	void *ctx;
	int64_t n;
};

static void gomp_body(void *p) {
	struct gomp_job *j = p;
	int64_t lo, hi;
	chunk(j->n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
	if (lo < hi)
		j->fn(j->ctx, lo, hi);
}

void loom_parallel_for(loom_task fn, void *ctx, int64_t n) {
	int T = loom_get_num_threads();
	if (T > n)
		T = (int)n;
	if (T <= 1) {
		if (n > 0)
			fn(ctx, 0, n);
		return;
	}
	struct gomp_job j = {fn, ctx, n};
	GOMP_parallel(gomp_body, &j, (unsigned)T, 0);
}

#else

#include <pthread.h>

enum { MAX_WORKERS = 255, SPIN = 1 << 16 };

static _Thread_local int in_chunk; /* this thread is running a chunk */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER; /* one region at a time */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;

/* Each worker waits on its own slot, on its own cache line: the caller
 * writes the region's generation into the slots of the workers it wants. */
static struct {
	atomic_uint gen;
	char pad[64 - sizeof(atomic_uint)];
} slots[MAX_WORKERS + 1];

static int workers;            /* started; guarded by pool_lock */
static unsigned generation;    /* of the last region; guarded by pool_lock */
static atomic_int pending;     /* workers of this region still running */
static atomic_int sleepers;    /* workers waiting on wake */
static loom_task job_fn;       /* the region, published by the slots */
static void *job_ctx;
static int64_t job_n;
static int job_threads;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static void *worker(void *arg) {
	int id = (int)(intptr_t)arg; /* 1..MAX_WORKERS; the caller is 0 */
	unsigned seen = 0;
	in_chunk = 1;
	for (;;) {
		unsigned g;
		int spins = 0;
		while ((g = atomic_load_explicit(&slots[id].gen, memory_order_acquire)) == seen) {
			if (++spins < SPIN) {
				cpu_relax();
				continue;
			}
			pthread_mutex_lock(&sleep_lock);
			atomic_fetch_add(&sleepers, 1);
			while ((g = atomic_load(&slots[id].gen)) == seen)
				pthread_cond_wait(&wake, &sleep_lock);
			atomic_fetch_sub(&sleepers, 1);
			pthread_mutex_unlock(&sleep_lock);
			break;
		}
		seen = g;
		int64_t lo, hi;
		chunk(job_n, id, job_threads, &lo, &hi);
		if (lo < hi)
			job_fn(job_ctx, lo, hi);
		atomic_fetch_sub_explicit(&pending, 1, memory_order_release);
	}
	return NULL;
}

void loom_parallel_for(loom_task fn, void *ctx, int64_t n) {
	int T = loom_get_num_threads();
	if (T > n)
		T = (int)n;
	if (T > MAX_WORKERS + 1)
		T = MAX_WORKERS + 1;
	if (T <= 1 || in_chunk || pthread_mutex_trylock(&pool_lock) != 0) {
		if (n > 0)
			fn(ctx, 0, n);
		return;
	}
	while (workers < T - 1) {
		pthread_t th;
		if (pthread_create(&th, NULL, worker, (void *)(intptr_t)(workers + 1)) != 0)
			break;
		pthread_detach(th);
		workers++;
	}
	if (T > workers + 1)
		T = workers + 1;
	job_fn = fn;
	job_ctx = ctx;
	job_n = n;
	job_threads = T;
	atomic_store(&pending, T - 1);
	generation++;
	for (int id = 1; id < T; id++)
		atomic_store(&slots[id].gen, generation); /* publishes the job */
	if (atomic_load(&sleepers) > 0) {
		pthread_mutex_lock(&sleep_lock);
		pthread_cond_broadcast(&wake);
		pthread_mutex_unlock(&sleep_lock);
	}
	int64_t lo, hi;
	chunk(n, 0, T, &lo, &hi);
	in_chunk = 1;
	if (lo < hi)
		fn(ctx, lo, hi);
	in_chunk = 0;
	while (atomic_load_explicit(&pending, memory_order_acquire) != 0)
		cpu_relax();
	pthread_mutex_unlock(&pool_lock);
}

#endif

/* The version of the interface above; loom checks it when it loads the
 * runtime. */
int32_t loom_runtime_version(void) { return 1; }
