/*
 * tools/modelbench/clib_time.c: the C library side of make modelbench. It
 * runs a graph library loom built (loom build -onnx M -o DIR -name LIB)
 * through its descriptor interface only: it learns the inputs and outputs
 * from LIB_num_inputs and LIB_input(i) (constant shapes), reads each input
 * from DATA/input_K.bin, times LIB_run the way loomtime times Module.Run
 * (3 warm-up calls, then at least CALLS calls and SECONDS seconds), checks
 * the outputs against loom's Go run (DATA/output_K.bin) and prints one JSON
 * line.
 *
 *   cc -O2 -DLIB=resnet50 -I DIR clib_time.c DIR/libresnet50.a -lm -pthread
 *   ./a.out DATA THREADS [SECONDS [CALLS]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(suffix) CAT(LIB, suffix)
#include STR(LIB.h)

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *readfile(const char *path, size_t want) {
	FILE *f = fopen(path, "rb");
	if (!f) { perror(path); exit(1); }
	void *buf = malloc(want ? want : 1);
	if (fread(buf, 1, want, f) != want) { fprintf(stderr, "%s: shorter than %zu bytes\n", path, want); exit(1); }
	fclose(f);
	return buf;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* describe fills t from info: constant dims only. Returns its bytes. */
static size_t describe(loom_tensor *t, const loom_tensor_info *info) {
	memset(t, 0, sizeof *t);
	t->device.device_type = 1;
	t->ndim = info->ndim;
	t->dtype = info->dtype;
	t->shape = calloc(info->ndim ? info->ndim : 1, sizeof(int64_t));
	size_t n = 1;
	for (int k = 0; k < info->ndim; k++) {
		char *end;
		t->shape[k] = strtoll(info->dims[k], &end, 10);
		if (*end) { fprintf(stderr, "%s: dimension %s is symbolic; clib_time takes constant shapes\n", info->name, info->dims[k]); exit(1); }
		n *= (size_t)t->shape[k];
	}
	return n * (info->dtype.bits / 8);
}

int main(int argc, char **argv) {
	if (argc < 3) { fprintf(stderr, "usage: %s DATA THREADS [SECONDS [CALLS]]\n", argv[0]); return 2; }
	const char *dir = argv[1];
	int threads = atoi(argv[2]);
	double seconds = argc > 3 ? atof(argv[3]) : 2;
	int calls = argc > 4 ? atoi(argv[4]) : 50;
	int ni = FN(_num_inputs)(), no = FN(_num_outputs)();
	loom_tensor *in = calloc(ni, sizeof *in), *out = calloc(no, sizeof *out);
	size_t *outBytes = calloc(no, sizeof *outBytes);
	char path[4096];
	for (int i = 0; i < ni; i++) {
		size_t n = describe(&in[i], FN(_input)(i));
		snprintf(path, sizeof path, "%s/input_%d.bin", dir, i);
		in[i].data = readfile(path, n);
	}
	for (int i = 0; i < no; i++) {
		outBytes[i] = describe(&out[i], FN(_output)(i));
		out[i].data = malloc(outBytes[i] ? outBytes[i] : 1);
	}
	loom_status st;
	for (int i = 0; i < 3; i++)
		if (FN(_run)(in, ni, out, no, threads, &st)) { fprintf(stderr, "%s: %s\n", loom_status_string(st.code), st.message); return 1; }
	/* The outputs against loom's Go run: the largest difference relative
	 * to the largest magnitude (float32 outputs). */
	double maxErr = 0;
	for (int i = 0; i < no; i++) {
		if (out[i].dtype.code != LOOM_DTYPE_FLOAT || out[i].dtype.bits != 32) continue;
		snprintf(path, sizeof path, "%s/output_%d.bin", dir, i);
		float *want = readfile(path, outBytes[i]), *got = out[i].data;
		size_t n = outBytes[i] / 4;
		double scale = 1e-30;
		for (size_t k = 0; k < n; k++) scale = fmax(scale, fabs(want[k]));
		for (size_t k = 0; k < n; k++) {
			double d = fabs((double)got[k] - want[k]) / scale;
			if (!(d <= maxErr)) maxErr = isnan(d) ? INFINITY : d;
		}
		free(want);
	}
	int cap = 1 << 16, n = 0;
	double *times = malloc(cap * sizeof *times), start = now();
	while ((n < calls || now() - start < seconds) && n < cap) {
		double t = now();
		if (FN(_run)(in, ni, out, no, threads, &st)) { fprintf(stderr, "%s\n", st.message); return 1; }
		times[n++] = (now() - t) * 1e3;
	}
	qsort(times, n, sizeof *times, cmp);
#define PCT(p) times[(int)((p) * n) < n ? (int)((p) * n) : n - 1]
	printf("{\"engine\":\"loom-c\",\"graph\":\"%s\",\"threads\":%d,\"calls\":%d,\"median_ms\":%g,\"p10_ms\":%g,\"p90_ms\":%g,\"min_ms\":%g,\"max_rel_err\":%g}\n",
		STR(LIB), threads, n, PCT(0.5), PCT(0.1), PCT(0.9), times[0], maxErr);
	return 0;
}
