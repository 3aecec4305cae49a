/*
 * loomrt: the runtime that loom's CPU kernels call. Public domain.
 *
 * One function matters: loom_parallel_for(task, ctx, n, work) runs
 * task(ctx, lo, hi) over [0, n) in contiguous chunks [lo, hi) that cover
 * every iteration exactly once, on a pool of worker threads that lives as
 * long as the process, and returns when every chunk is done. work is an
 * estimate of one iteration's cost (about one scalar operation a unit; 0
 * when unknown); a loop whose n * work is under LOOM_INLINE_WORK runs
 * inline on the calling thread, since waking a thread would cost more
 * than it saves.
 *
 * Threads never multiply: a call made from inside a chunk (a nested
 * parallel loop), or while another thread's loop holds the pool, runs
 * serially on the calling thread. (On a busy machine that is better than
 * waiting for the pool: the caller has a core now, and the loop that holds
 * the pool loses nothing, since its chunks go to whichever of its threads
 * runs.)
 *
 * Built to hold up on a busy machine, where any thread may lose its core
 * for milliseconds:
 *   - the loop is split into up to CHUNKS_PER_THREAD chunks a thread (no
 *     chunk under CHUNK_WORK when work is known); each thread starts on
 *     its own contiguous run of chunks (so that loop after loop it touches
 *     the same data) and then takes what is left of the others'. Chunks
 *     are claimed one at a time with an atomic compare-and-swap, so a
 *     thread that is not running holds back at most the one chunk it is
 *     in, and a worker that wakes late finds the work done;
 *   - the caller takes chunks like any worker, and never needs a worker to
 *     show up: it waits only for chunks already claimed (so a loop of
 *     modest work, under WAKE_WORK, leaves sleeping workers asleep and
 *     goes to those awake);
 *   - waiting threads (workers waiting for a loop, the caller waiting for
 *     the last claimed chunks) spin for a fraction of a millisecond and
 *     then sleep on a futex (a condition variable off Linux), so that a
 *     waiting thread leaves its core to the thread it waits for.
 *
 * Build: cc -O2 -fPIC -shared -pthread loomrt.c -o libloomrt.so -lm
 * With -DLOOM_RT_GOMP the same interface runs on GCC's OpenMP runtime
 * instead (for comparison; link with -lgomp).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

typedef void (*loom_task)(void *ctx, int64_t lo, int64_t hi);

enum {
	/* A loop with less work than this runs inline (n * work, in the
	 * units of loom_parallel_for's work). codegen/llvm decides the same
	 * at compile time for loops of constant size (its inlineWork). */
	LOOM_INLINE_WORK = 1 << 15,
	/* A loop with less work than this is shared only with the workers
	 * that are awake (spinning): it does not pay for a wake-up, which
	 * costs the caller a system call and the worker tens of
	 * microseconds (and, beside a busy process, often more). */
	WAKE_WORK = 1 << 18,
	/* The least work of a chunk, when work is known. */
	CHUNK_WORK = 1 << 13,
	/* The most chunks a thread of a loop gets: a thread that loses its
	 * core in a chunk holds back 1/(8T) of the loop (one iteration when
	 * the loop has fewer than 8T). */
	CHUNKS_PER_THREAD = 8,
};

static atomic_int setting; /* threads to use; 0 means one per core */

static int cores(void) {
	static atomic_int n;
	int v = atomic_load_explicit(&n, memory_order_relaxed);
	if (v == 0) {
		const char *env = getenv("LOOM_NUM_THREADS");
		v = env ? atoi(env) : 0;
		if (v <= 0)
			v = (int)sysconf(_SC_NPROCESSORS_ONLN);
		if (v <= 0)
			v = 1;
		atomic_store_explicit(&n, v, memory_order_relaxed);
	}
	return v;
}

void loom_set_num_threads(int32_t n) { atomic_store(&setting, n < 0 ? 0 : n); }

int32_t loom_get_num_threads(void) {
	int n = atomic_load(&setting);
	return n > 0 ? n : cores();
}

/* chunk t of T of [0, n): sizes differ by at most one. */
static void chunk(int64_t n, int64_t t, int64_t T, int64_t *lo, int64_t *hi) {
	int64_t q = n / T, r = n % T;
	*lo = q * t + (t < r ? t : r);
	*hi = *lo + q + (t < r ? 1 : 0);
}

/* small reports whether n iterations of work each are too little to
 * share out. */
static int small(int64_t n, int64_t work) {
	return work > 0 && n < LOOM_INLINE_WORK && work < LOOM_INLINE_WORK && n * work < LOOM_INLINE_WORK;
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

void loom_parallel_for(loom_task fn, void *ctx, int64_t n, int64_t work) {
	if (n <= 0)
		return;
	int T = loom_get_num_threads();
	if (T > n)
		T = (int)n;
	if (T <= 1 || small(n, work)) {
		fn(ctx, 0, n);
		return;
	}
	struct gomp_job j = {fn, ctx, n};
	GOMP_parallel(gomp_body, &j, (unsigned)T, 0);
}

#else

#include <limits.h>
#include <pthread.h>
#include <time.h>

enum {
	MAX_THREADS = 256, /* the caller and 255 workers */
	/* How long a waiting thread spins before it sleeps, in nanoseconds.
	 * It never yields while it spins: beside a busy process, sched_yield
	 * hands the core to that process for a whole time slice
	 * (milliseconds), while a sleeping thread that is woken gets it
	 * back at once. A worker spins long enough to span the gap between
	 * two kernels of a module and the imbalance of a kernel's chunks: a
	 * worker asleep misses every loop under WAKE_WORK until a larger
	 * one wakes it. ResNet-50 at two threads (Ice Lake Xeon, six rounds
	 * alternating in one run, median ms): 50 and 20 microseconds 49.9-
	 * 63.4, 500 and 200 46.0-55.7 (ONNX Runtime 41.1-58.8). */
	WORKER_SPIN_NS = 500000,
	CALLER_SPIN_NS = 200000,
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* park sleeps while *w holds v (it may return early); unpark wakes every
 * thread parked on w. */
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>

static void park(atomic_uint *w, unsigned v) { syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0); }
static void unpark(atomic_uint *w) { syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); }
#else
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;

static void park(atomic_uint *w, unsigned v) {
	pthread_mutex_lock(&park_lock);
	if (atomic_load(w) == v)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

static void unpark(atomic_uint *w) {
	(void)w;
	pthread_mutex_lock(&park_lock);
	pthread_cond_broadcast(&park_cond);
	pthread_mutex_unlock(&park_lock);
}
#endif

/* A waiter's flag and the word it waits on share the protocol: the waiter
 * sets its flag, then reads the word, and parks only if the word is as it
 * was; the waker writes the word, then reads the flag, and unparks only if
 * it is set. Both sequentially consistent, so one of them sees the other. */

/* spin waits until *w differs from v, for at most ns nanoseconds. It
 * returns the new value, or v when the time ran out. */
static unsigned spin(atomic_uint *w, unsigned v, int64_t ns) {
	int64_t start = 0;
	for (unsigned i = 1;; i++) {
		unsigned now = atomic_load_explicit(w, memory_order_acquire);
		if (now != v)
			return now;
		if (i % 16 != 0) {
			cpu_relax();
			continue;
		}
		int64_t t = now_ns();
		if (start == 0)
			start = t;
		else if (t - start > ns)
			return v;
	}
}

static _Thread_local int in_chunk; /* this thread is running a chunk */

static atomic_int pool_busy; /* a loop holds the pool: one at a time */
static int workers;          /* started; only the pool's holder reads or writes it */
static unsigned generation;  /* of the last loop; likewise */

/* Each worker waits on its own slot, on its own cache line: the caller
 * writes the loop's generation into the slots of the workers it wants. */
static struct {
	_Alignas(64) atomic_uint gen;
	atomic_uint sleeping;
} slots[MAX_THREADS];

/* The loop being run. Its fields are atomics (read relaxed) because a
 * worker that wakes late may read them while the next loop writes them;
 * such a worker finds no chunk to claim (the generation in the home words
 * has moved on), so it never uses what it read. */
static _Atomic(loom_task) job_fn;
static _Atomic(void *) job_ctx;
static _Atomic int64_t job_n;
static atomic_int job_chunks, job_threads;

/* Thread t's home run of chunks, [next, end), with the loop's generation:
 * generation << 32 | next << 16 | end. Chunks number under 2^16
 * (MAX_THREADS * CHUNKS_PER_THREAD). */
static struct {
	_Alignas(64) _Atomic uint64_t w;
} home[MAX_THREADS];

static _Alignas(64) atomic_uint done; /* chunks of the loop finished */
static atomic_uint caller_sleeping;

static uint64_t home_word(unsigned gen, int64_t next, int64_t end) {
	return (uint64_t)gen << 32 | (uint64_t)next << 16 | (uint64_t)end;
}

/* claim takes the next chunk of home run k of loop gen, or returns -1 when
 * that run is used up or belongs to another loop. */
static int64_t claim(int k, unsigned gen) {
	uint64_t w = atomic_load_explicit(&home[k].w, memory_order_relaxed);
	for (;;) {
		if ((unsigned)(w >> 32) != gen)
			return -1;
		int64_t next = (int64_t)(w >> 16 & 0xffff), end = (int64_t)(w & 0xffff);
		if (next >= end)
			return -1;
		if (atomic_compare_exchange_weak_explicit(&home[k].w, &w, w + (1u << 16), memory_order_relaxed, memory_order_relaxed))
			return next;
	}
}

/* work_on runs chunks of loop gen as thread self: its home run first,
 * then what is left of the others', until none is left to claim. */
static void work_on(int self, unsigned gen) {
	loom_task fn = atomic_load_explicit(&job_fn, memory_order_relaxed);
	void *ctx = atomic_load_explicit(&job_ctx, memory_order_relaxed);
	int64_t n = atomic_load_explicit(&job_n, memory_order_relaxed);
	int C = atomic_load_explicit(&job_chunks, memory_order_relaxed);
	int T = atomic_load_explicit(&job_threads, memory_order_relaxed);
	if (T < 1 || T > MAX_THREADS || C < 1)
		return; /* a late worker's read of a loop being set up */
	for (int i = 0; i < T; i++) {
		int k = (self + i) % T;
		int64_t c;
		while ((c = claim(k, gen)) >= 0) {
			/* The claim succeeded, so loop gen is still running
			 * and fn, ctx, n and C are its own. */
			int64_t lo, hi;
			chunk(n, c, C, &lo, &hi);
			fn(ctx, lo, hi);
			if (atomic_fetch_add(&done, 1) + 1 == (unsigned)C && atomic_load(&caller_sleeping))
				unpark(&done);
		}
	}
}

static void *worker(void *arg) {
	int id = (int)(intptr_t)arg; /* 1..MAX_THREADS-1; the caller is 0 */
	unsigned seen = 0;
	in_chunk = 1;
	for (;;) {
		unsigned g = spin(&slots[id].gen, seen, WORKER_SPIN_NS);
		if (g == seen) {
			atomic_store(&slots[id].sleeping, 1);
			while ((g = atomic_load(&slots[id].gen)) == seen)
				park(&slots[id].gen, seen);
			atomic_store(&slots[id].sleeping, 0);
		}
		seen = g;
		work_on(id, g);
	}
	return NULL;
}

/* wait_done returns when all C chunks of the loop are done. */
static void wait_done(unsigned C) {
	int64_t start = now_ns();
	unsigned v;
	while ((v = atomic_load(&done)) != C) {
		int64_t left = CALLER_SPIN_NS - (now_ns() - start);
		if (left <= 0)
			break;
		spin(&done, v, left);
	}
	if (atomic_load(&done) == C)
		return;
	atomic_store(&caller_sleeping, 1);
	while ((v = atomic_load(&done)) != C)
		park(&done, v);
	atomic_store(&caller_sleeping, 0);
}

/* chunks returns how many chunks to split n iterations of work each into,
 * on T threads: CHUNKS_PER_THREAD a thread, fewer when that would leave a
 * chunk under CHUNK_WORK, at most n. */
static int chunks(int64_t n, int64_t work, int T) {
	int64_t c = (int64_t)T * CHUNKS_PER_THREAD;
	if (work > 0) {
		int64_t fit = work > INT64_MAX / n ? INT64_MAX : n * work / CHUNK_WORK;
		if (fit < c)
			c = fit;
	}
	if (c > n)
		c = n;
	return c < 1 ? 1 : (int)c;
}

void loom_parallel_for(loom_task fn, void *ctx, int64_t n, int64_t work) {
	if (n <= 0)
		return;
	int T = loom_get_num_threads();
	if (T > MAX_THREADS)
		T = MAX_THREADS;
	int C = chunks(n, work, T);
	if (T > C)
		T = C;
	int idle = 0;
	if (T <= 1 || in_chunk || small(n, work) ||
	    !atomic_compare_exchange_strong_explicit(&pool_busy, &idle, 1, memory_order_acquire, memory_order_relaxed)) {
		int was = in_chunk;
		in_chunk = 1; /* a loop inside runs serially too */
		fn(ctx, 0, n);
		in_chunk = was;
		return;
	}
	while (workers < T - 1) {
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		int err = pthread_create(&th, &attr, worker, (void *)(intptr_t)(workers + 1));
		pthread_attr_destroy(&attr);
		if (err != 0)
			break;
		workers++;
	}
	if (T > workers + 1) {
		T = workers + 1;
		C = chunks(n, work, T);
	}
	unsigned gen = ++generation;
	atomic_store_explicit(&job_fn, fn, memory_order_relaxed);
	atomic_store_explicit(&job_ctx, ctx, memory_order_relaxed);
	atomic_store_explicit(&job_n, n, memory_order_relaxed);
	atomic_store_explicit(&job_chunks, C, memory_order_relaxed);
	atomic_store_explicit(&job_threads, T, memory_order_relaxed);
	atomic_store(&done, 0);
	atomic_store(&caller_sleeping, 0);
	for (int t = 0; t < T; t++) {
		int64_t lo, hi;
		chunk(C, t, T, &lo, &hi);
		atomic_store_explicit(&home[t].w, home_word(gen, lo, hi), memory_order_relaxed);
	}
	int wake = !(work > 0 && n < WAKE_WORK && work < WAKE_WORK && n * work < WAKE_WORK);
	for (int id = 1; id < T; id++) { /* publishes the loop */
		atomic_store(&slots[id].gen, gen);
		if (wake && atomic_load(&slots[id].sleeping))
			unpark(&slots[id].gen);
	}
	in_chunk = 1;
	work_on(0, gen);
	in_chunk = 0;
	wait_done((unsigned)C);
	atomic_store_explicit(&pool_busy, 0, memory_order_release);
}

#endif

/* loom_kernel_call is one call of loom_run_kernels: a kernel's packed
 * entry point (the C ABI of codegen/llvm) and its two arguments, the
 * addresses of its buffers and its sizes. */
typedef int32_t (*loom_kernel)(void **buffers, int64_t *sizes);

typedef struct {
	loom_kernel fn;
	void **buffers;
	int64_t *sizes;
} loom_kernel_call;

/* loom_run_kernels makes the n calls in order and returns 0, or the
 * status of the first that fails, with its index in *failed. A host for
 * which every call into C costs (Go's, where the goroutine may come back
 * on another thread, on another core, its caches cold) runs a whole
 * graph's kernels in one call. */
int32_t loom_run_kernels(int64_t n, const loom_kernel_call *calls, int64_t *failed) {
	for (int64_t i = 0; i < n; i++) {
		int32_t r = calls[i].fn(calls[i].buffers, calls[i].sizes);
		if (r != 0) {
			*failed = i;
			return r;
		}
	}
	return 0;
}

/* The version of the interface above; loom checks it when it loads the
 * runtime. 2: loom_parallel_for takes work; 3: loom_run_kernels. */
int32_t loom_runtime_version(void) { return 3; }
