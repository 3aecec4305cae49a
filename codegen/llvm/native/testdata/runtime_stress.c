/*
 * The runtime's stress test (TestRuntimeStress builds it with loomrt.c,
 * with and without -fsanitize=thread). It prints "ok" and exits 0, or
 * prints what broke and exits 1. It counts, never times: every iteration
 * of every loop runs exactly once, in chunks that are contiguous ranges
 * inside [0, n); nested loops run serially; concurrent callers are safe;
 * threads never multiply; a loop of little work runs inline; and a worker
 * that stops inside a chunk holds back only that chunk (the caller takes
 * the rest of the worker's share).
 */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void loom_set_num_threads(int32_t n);
void loom_parallel_for(void (*task)(void *, int64_t, int64_t), void *ctx, int64_t n, int64_t work);

static atomic_int failed;

#define CHECK(cond, ...)                                   \
	do {                                                   \
		if (!(cond)) {                                     \
			if (atomic_fetch_add(&failed, 1) < 10) {       \
				printf(__VA_ARGS__);                       \
				printf("\n");                              \
			}                                              \
		}                                                  \
	} while (0)

/* Threads that ran a chunk get a number, once: how many there were. */
static atomic_int nthreads;
static _Thread_local int thread_no;
static int me(void) {
	if (thread_no == 0)
		thread_no = atomic_fetch_add(&nthreads, 1) + 1;
	return thread_no;
}

enum { MAXN = 5000 };

struct loop {
	int64_t n;
	atomic_int count[MAXN];
	atomic_int calls;
	atomic_int bad_range;
	int caller;
	atomic_int on_caller; /* iterations the caller ran */
	/* nested loops: each chunk runs one of inner_n iterations */
	int64_t inner_n;
	atomic_int inner_bad;
};

static void task(void *p, int64_t lo, int64_t hi) {
	struct loop *l = p;
	atomic_fetch_add(&l->calls, 1);
	if (!(0 <= lo && lo < hi && hi <= l->n)) {
		atomic_fetch_add(&l->bad_range, 1);
		return;
	}
	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add(&l->count[i], 1);
	if (me() == l->caller)
		atomic_fetch_add(&l->on_caller, (int)(hi - lo));
}

static void inner_task(void *p, int64_t lo, int64_t hi) {
	int64_t *seen = p; /* [lo, hi, calls, thread] */
	seen[0] = lo;
	seen[1] = hi;
	seen[2]++;
	seen[3] = me();
}

/* nested: each chunk runs a parallel loop of its own, which must run
 * serially, in one call, on the chunk's thread. */
static void nested(void *p, int64_t lo, int64_t hi) {
	struct loop *l = p;
	task(p, lo, hi);
	int64_t seen[4] = {-1, -1, 0, 0};
	loom_parallel_for(inner_task, seen, l->inner_n, 0);
	if (l->inner_n > 0 && (seen[0] != 0 || seen[1] != l->inner_n || seen[2] != 1 || seen[3] != me()))
		atomic_fetch_add(&l->inner_bad, 1);
	if (l->inner_n == 0 && seen[2] != 0)
		atomic_fetch_add(&l->inner_bad, 1);
}

static void reset(struct loop *l, int64_t n) {
	l->n = n;
	for (int64_t i = 0; i < n; i++)
		atomic_store(&l->count[i], 0);
	atomic_store(&l->calls, 0);
	atomic_store(&l->bad_range, 0);
	atomic_store(&l->on_caller, 0);
	atomic_store(&l->inner_bad, 0);
	l->caller = me();
}

static void check(struct loop *l, const char *what, int T, int64_t work) {
	CHECK(atomic_load(&l->bad_range) == 0, "%s: n=%lld T=%d work=%lld: a chunk outside [0, n) or empty", what, (long long)l->n, T, (long long)work);
	for (int64_t i = 0; i < l->n; i++)
		CHECK(atomic_load(&l->count[i]) == 1, "%s: n=%lld T=%d work=%lld: iteration %lld ran %d times", what, (long long)l->n, T,
		      (long long)work, (long long)i, atomic_load(&l->count[i]));
	CHECK(atomic_load(&l->inner_bad) == 0, "%s: n=%lld T=%d: a nested loop did not run serially on its chunk's thread", what, (long long)l->n, T);
}

/* Every n, thread count and work estimate, flat and nested. */
static void sweep(void) {
	static struct loop l;
	/* unknown, inline (n * work under 2^15), shared with the awake
	 * workers only (under 2^18), shared with all, bad */
	const int64_t works[] = {0, 1, 64, 1000, 1 << 20, -5};
	for (int T = 1; T <= 8; T++) {
		loom_set_num_threads(T);
		for (int64_t n = 0; n <= 300; n += (n < 70 ? 1 : 23)) {
			for (int w = 0; w < 6; w++) {
				reset(&l, n);
				loom_parallel_for(task, &l, n, works[w]);
				check(&l, "flat", T, works[w]);
				if (n == 0)
					CHECK(atomic_load(&l.calls) == 0, "n=0 T=%d: %d calls", T, atomic_load(&l.calls));
				reset(&l, n);
				l.inner_n = n % 7;
				loom_parallel_for(nested, &l, n, works[w]);
				check(&l, "nested", T, works[w]);
			}
		}
		reset(&l, MAXN);
		loom_parallel_for(task, &l, MAXN, 0);
		check(&l, "large", T, 0);
		if (T > 1)
			CHECK(atomic_load(&l.calls) > T, "T=%d, n=%d, work unknown: %d chunks, want more than threads", T, MAXN, atomic_load(&l.calls));
		/* Little work: one call, on the caller. */
		reset(&l, 100);
		loom_parallel_for(task, &l, 100, 1);
		check(&l, "small", T, 1);
		CHECK(atomic_load(&l.calls) == 1 && atomic_load(&l.on_caller) == 100, "T=%d: a loop of 100 iterations of work 1 ran in %d chunks, %d iterations on the caller",
		      T, atomic_load(&l.calls), atomic_load(&l.on_caller));
	}
}

/* Several threads calling at once, each with loops of its own. */
static void *caller(void *arg) {
	struct loop *l = malloc(sizeof *l);
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int r = 0; r < 3000; r++) {
		seed = seed * 1103515245 + 12345;
		int64_t n = (seed >> 8) % 400;
		reset(l, n);
		l->inner_n = (seed >> 4) % 3;
		loom_parallel_for(r % 2 ? nested : task, l, n, (seed >> 20) % 2 ? 0 : 4096);
		check(l, "concurrent", 4, 0);
	}
	free(l);
	return NULL;
}

static void concurrent(void) {
	loom_set_num_threads(4);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, caller, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
}

/* A worker that stops inside its first chunk (as a descheduled one
 * would): it waits there until every other iteration is done, which
 * the caller must do, its share and the worker's, or no one would. */
static struct {
	int64_t n;
	int caller;
	atomic_int count[1024];
	atomic_int started; /* the worker is in its chunk */
	atomic_int stalled; /* a worker has stopped in this loop */
	atomic_int ran;     /* iterations finished */
	atomic_int stall_size, timed_out;
} st;

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void stall_task(void *p, int64_t lo, int64_t hi) {
	(void)p;
	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add(&st.count[i], 1);
	if (me() == st.caller) {
		/* Wait (up to 10 s) for the worker to be in a chunk, so
		 * that it has one to stop in. */
		double end = now() + 10;
		while (!atomic_load(&st.started) && now() < end)
			usleep(50);
	} else if (!atomic_exchange(&st.stalled, 1)) {
		atomic_store(&st.started, 1);
		atomic_store(&st.stall_size, (int)(hi - lo));
		double end = now() + 10;
		while (atomic_load(&st.ran) != st.n - (hi - lo)) {
			if (now() > end) {
				atomic_store(&st.timed_out, 1);
				break;
			}
			usleep(50);
		}
	}
	atomic_fetch_add(&st.ran, (int)(hi - lo));
}

static void stall(void) {
	loom_set_num_threads(2);
	int stalls = 0;
	for (int r = 0; r < 20; r++) {
		st.n = 1024;
		st.caller = me();
		for (int i = 0; i < 1024; i++)
			atomic_store(&st.count[i], 0);
		atomic_store(&st.started, 0);
		atomic_store(&st.stalled, 0);
		atomic_store(&st.ran, 0);
		atomic_store(&st.timed_out, 0);
		loom_parallel_for(stall_task, NULL, st.n, 0);
		for (int i = 0; i < 1024; i++)
			CHECK(atomic_load(&st.count[i]) == 1, "stall: iteration %d ran %d times", i, atomic_load(&st.count[i]));
		CHECK(!atomic_load(&st.timed_out), "stall: the worker's share was left to it while it was stopped (10 s)");
		if (atomic_load(&st.stalled)) {
			stalls++;
			CHECK(atomic_load(&st.stall_size) < st.n / 2, "stall: the stopped worker held %d of %lld iterations", atomic_load(&st.stall_size),
			      (long long)st.n);
		}
	}
	CHECK(stalls > 0, "stall: no worker ever took part in 20 loops");
}

int main(void) {
	me();
	sweep();
	stall();
	concurrent();
	int limit = 8 + 4; /* the pool's threads at most, and the concurrent callers */
	CHECK(atomic_load(&nthreads) <= limit, "%d threads ran chunks, want at most %d", atomic_load(&nthreads), limit);
	if (atomic_load(&failed)) {
		printf("%d checks failed\n", atomic_load(&failed));
		return 1;
	}
	printf("ok\n");
	return 0;
}
