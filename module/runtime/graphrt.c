/*
 * The runtime of a graph library that loom writes (loom build -graph): the
 * status of a call, the arithmetic of symbolic dimensions, the arena
 * planner and a pool of arenas. It is pasted into each generated graph
 * file, where everything here is static: two graph libraries linked into
 * one program do not clash.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lg_fail records code and a message in st (which may be NULL) and
 * returns code. */
static int32_t lg_fail(loom_status *st, int32_t code, const char *fmt, ...) {
	if (st) {
		va_list ap;
		st->code = code;
		va_start(ap, fmt);
		vsnprintf(st->message, sizeof st->message, fmt, ap);
		va_end(ap);
	}
	return code;
}

static int32_t lg_ok(loom_status *st) {
	if (st) {
		st->code = LOOM_OK;
		st->message[0] = 0;
	}
	return LOOM_OK;
}

/* lg_eval evaluates a dimension encoded as {number of terms, then per
 * term: coefficient, number of symbols, their indexes in sz}. It returns
 * 0 when the value leaves int64. */
static int lg_eval(const int64_t *d, const int64_t *sz, int64_t *out) {
	int64_t terms = *d++, sum = 0;
	for (int64_t i = 0; i < terms; i++) {
		int64_t p = *d++, syms = *d++;
		for (int64_t j = 0; j < syms; j++)
			if (__builtin_mul_overflow(p, sz[*d++], &p))
				return 0;
		if (__builtin_add_overflow(sum, p, &sum))
			return 0;
	}
	*out = sum;
	return 1;
}

/* lg_shape prints a shape as [a, b, c] into buf. */
static const char *lg_shape(char *buf, size_t n, const int64_t *shape, int rank) {
	size_t at = 0;
	at += (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < rank && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, i ? " %lld" : "%lld", (long long)shape[i]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
	return buf;
}

/* An intermediate buffer of the arena: its bytes at this call, its live
 * range in kernel steps, and the offset the planner gives it. */
typedef struct {
	int64_t size, offset;
	int32_t first, last;
} lg_buf;

enum { LG_ALIGN = 64 };

static int64_t lg_round(int64_t n) { return (n + LG_ALIGN - 1) & ~(int64_t)(LG_ALIGN - 1); }

/* lg_place places the n buffers (package memplan's algorithm, so that
 * both APIs plan alike): largest first (then earliest, then first
 * listed), each at the lowest aligned offset where it overlaps no placed
 * buffer live at a common step. order and live are scratch of n entries.
 * It returns the arena's size. */
static int64_t lg_place(lg_buf *b, int n, int *order, int *live) {
	int64_t peak = 0;
	int placed = 0;
	for (int i = 0; i < n; i++) {
		int j = i;
		while (j > 0) { /* insertion sort: n is small */
			lg_buf *p = &b[order[j - 1]], *q = &b[i];
			if (p->size > q->size || (p->size == q->size && p->first <= q->first))
				break;
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (int i = 0; i < n; i++) {
		lg_buf *q = &b[order[i]];
		q->offset = 0;
		if (q->size == 0)
			continue;
		int nl = 0;
		for (int k = 0; k < placed; k++) {
			lg_buf *c = &b[order[k]];
			if (c->size == 0 || c->first > q->last || q->first > c->last)
				continue;
			int j = nl++;
			while (j > 0 && b[live[j - 1]].offset > c->offset) {
				live[j] = live[j - 1];
				j--;
			}
			live[j] = order[k];
		}
		int64_t off = 0;
		for (int k = 0; k < nl; k++) {
			lg_buf *c = &b[live[k]];
			if (off + q->size <= c->offset)
				break;
			int64_t end = c->offset + lg_round(c->size);
			if (end > off)
				off = end;
		}
		q->offset = off;
		placed = i + 1;
		if (off + lg_round(q->size) > peak)
			peak = off + lg_round(q->size);
	}
	return peak;
}

/* Arenas that finished calls gave back, for the next calls. */
enum { LG_POOL = 8 };
static pthread_mutex_t lg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	int64_t n;
} lg_free[LG_POOL];
static int lg_nfree;

/* lg_take returns an arena of at least n bytes, 64-byte aligned, and its
 * capacity in *cap; NULL when memory runs out. */
static void *lg_take(int64_t n, int64_t *cap) {
	pthread_mutex_lock(&lg_mu);
	for (int i = 0; i < lg_nfree; i++) {
		if (lg_free[i].n >= n) {
			void *p = lg_free[i].p;
			*cap = lg_free[i].n;
			lg_free[i] = lg_free[--lg_nfree];
			pthread_mutex_unlock(&lg_mu);
			return p;
		}
	}
	pthread_mutex_unlock(&lg_mu);
	*cap = lg_round(n);
	return aligned_alloc(LG_ALIGN, (size_t)*cap);
}

static void lg_give(void *p, int64_t cap) {
	if (!p)
		return;
	pthread_mutex_lock(&lg_mu);
	if (lg_nfree < LG_POOL) {
		lg_free[lg_nfree].p = p;
		lg_free[lg_nfree].n = cap;
		lg_nfree++;
		p = NULL;
	}
	pthread_mutex_unlock(&lg_mu);
	free(p); /* the pool is full */
}

/* lg_kernel_failed reports a kernel's non-zero return code, the faults it
 * met summed (LOOM_DIVISION_BY_ZERO, LOOM_NO_MEMORY,
 * LOOM_INDEX_OUT_OF_RANGE): the graph's status is the same code. gathers
 * names the kernel's gather nodes, as " (gather Y)", or is "". */
static int32_t lg_kernel_failed(loom_status *st, const char *kernel, const char *gathers, int32_t rc) {
	if (rc & ~(LOOM_DIVISION_BY_ZERO | LOOM_NO_MEMORY | LOOM_INDEX_OUT_OF_RANGE))
		return lg_fail(st, rc, "module: kernel %s failed with code %d", kernel, (int)rc);
	if (rc & LOOM_NO_MEMORY)
		return lg_fail(st, rc, "module: kernel %s: a temporary buffer could not be allocated", kernel);
	if (rc & LOOM_INDEX_OUT_OF_RANGE)
		return lg_fail(st, rc, "module: kernel %s%s: a gather's index is out of range", kernel, gathers);
	return lg_fail(st, rc, "module: kernel %s: integer division by zero", kernel);
}
