// loom's LLVM build worker: a process that loads libLLVM once and turns
// LLVM IR into object files, request after request, as `opt -O3 | llc -O3
// -filetype=obj -relocation-model=pic` would, without starting two
// programs (and relocating libLLVM twice) per kernel.
//
// Usage: llvmworker LIBLLVM ARCH, where LIBLLVM is the libLLVM that opt
// and llc link against and ARCH the LLVM name of the host's target (X86,
// AArch64). It needs no LLVM headers: the C API's functions are looked up
// by name with dlsym.
//
// Protocol (stdin to stdout, little-endian u32 lengths): once loaded, the
// worker writes "LOOM-LLVM-WORKER 1\n". Each request is a u32 flags word
// (bit 0: LLVM's loop unrolling on; bit 1: a module without a data layout
// gets the target's before it is optimized, as opt does from LLVM 16 on,
// where opt 14 optimizes it with LLVM's default layout; bit 2: llc's
// -disable-lsr, no loop strength reduction, an option of the whole
// process: the first request sets it, and a later one that asks the
// other way ends the worker, whose parent starts another) and four strings, each a u32 length
// and its bytes: the IR, the triple, the CPU and the features (empty for
// LLVM's defaults, CPU "native" for the host's CPU and features). The
// answer is a status byte (0: the object follows; 1: the IR or the
// optimizer failed, as opt would; 2: code generation failed, as llc
// would), a u32 length and the object file or the message. A fatal error
// inside LLVM ends the process, which its parent reports with what the
// process printed on stderr.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *Ref;
typedef int Bool;

static Ref (*ContextCreate)(void);
static void (*ContextDispose)(Ref);
static Ref (*CreateMemoryBufferWithMemoryRangeCopy)(const char *, size_t, const char *);
static Bool (*ParseIRInContext)(Ref, Ref, Ref *, char **);
static Bool (*VerifyModule)(Ref, int, char **);
static void (*SetTarget)(Ref, const char *);
static const char *(*GetTarget)(Ref);
static char *(*GetDefaultTargetTriple)(void);
static void (*DisposeModule)(Ref);
static Bool (*GetTargetFromTriple)(const char *, Ref *, char **);
static char *(*GetHostCPUName)(void);
static char *(*GetHostCPUFeatures)(void);
static Ref (*CreateTargetMachine)(Ref, const char *, const char *, const char *, int, int, int);
static void (*DisposeTargetMachine)(Ref);
static Ref (*CreatePassBuilderOptions)(void);
static void (*PassBuilderOptionsSetLoopUnrolling)(Ref, Bool);
static void (*DisposePassBuilderOptions)(Ref);
static Ref (*RunPasses)(Ref, const char *, Ref, Ref);
static char *(*GetErrorMessage)(Ref);
static void (*DisposeErrorMessage)(char *);
static Bool (*TargetMachineEmitToMemoryBuffer)(Ref, Ref, int, char **, Ref *);
static const char *(*GetBufferStart)(Ref);
static size_t (*GetBufferSize)(Ref);
static void (*DisposeMemoryBuffer)(Ref);
static void (*DisposeMessage)(char *);
static const char *(*GetDataLayoutStr)(Ref);
static Ref (*CreateTargetDataLayout)(Ref);
static void (*SetModuleDataLayout)(Ref, Ref);
static void (*DisposeTargetData)(Ref);
static void (*ParseCommandLineOptions)(int, const char *const *, const char *);

enum { VerifierReturnStatus = 2, OptAggressive = 3, RelocPIC = 2, CodeModelDefault = 0, ObjectFile = 1 };

static void *lib;

static void *need(const char *name) {
	void *f = dlsym(lib, name);
	if (!f) {
		fprintf(stderr, "llvmworker: %s has no %s\n", "libLLVM", name);
		exit(3);
	}
	return f;
}

#define LOAD(name) *(void **)&name = need("LLVM" #name)

static void load(const char *path, const char *arch) {
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "llvmworker: %s\n", dlerror());
		exit(3);
	}
	LOAD(ContextCreate);
	LOAD(ContextDispose);
	LOAD(CreateMemoryBufferWithMemoryRangeCopy);
	LOAD(ParseIRInContext);
	LOAD(VerifyModule);
	LOAD(SetTarget);
	LOAD(GetTarget);
	LOAD(GetDefaultTargetTriple);
	LOAD(DisposeModule);
	LOAD(GetTargetFromTriple);
	LOAD(GetHostCPUName);
	LOAD(GetHostCPUFeatures);
	LOAD(CreateTargetMachine);
	LOAD(DisposeTargetMachine);
	LOAD(CreatePassBuilderOptions);
	LOAD(PassBuilderOptionsSetLoopUnrolling);
	LOAD(DisposePassBuilderOptions);
	LOAD(RunPasses);
	LOAD(GetErrorMessage);
	LOAD(DisposeErrorMessage);
	LOAD(TargetMachineEmitToMemoryBuffer);
	LOAD(GetBufferStart);
	LOAD(GetBufferSize);
	LOAD(DisposeMemoryBuffer);
	LOAD(DisposeMessage);
	LOAD(GetDataLayoutStr);
	LOAD(CreateTargetDataLayout);
	LOAD(SetModuleDataLayout);
	LOAD(DisposeTargetData);
	LOAD(ParseCommandLineOptions);
	// The native target's initializers are inline functions in LLVM's
	// headers; their parts are exported under the target's name.
	const char *parts[] = {"TargetInfo", "Target", "TargetMC", "AsmPrinter", "AsmParser"};
	for (int i = 0; i < 5; i++) {
		char name[128];
		snprintf(name, sizeof name, "LLVMInitialize%s%s", arch, parts[i]);
		void (*init)(void) = (void (*)(void))dlsym(lib, name);
		if (!init && i < 4) {
			fprintf(stderr, "llvmworker: libLLVM has no %s\n", name);
			exit(3);
		}
		if (init)
			init();
	}
}

static int readFull(void *p, size_t n) {
	char *b = p;
	while (n > 0) {
		size_t got = fread(b, 1, n, stdin);
		if (got == 0)
			return 0;
		b += got;
		n -= got;
	}
	return 1;
}

static int readU32(uint32_t *v) {
	unsigned char b[4];
	if (!readFull(b, 4))
		return 0;
	*v = b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
	return 1;
}

// readString reads a length-prefixed string, NUL-terminated in memory.
static char *readString(size_t *len) {
	uint32_t n;
	if (!readU32(&n))
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s || !readFull(s, n)) {
		free(s);
		return NULL;
	}
	s[n] = 0;
	if (len)
		*len = n;
	return s;
}

static void answer(int status, const char *data, size_t n) {
	unsigned char h[5] = {status, n, n >> 8, n >> 16, n >> 24};
	fwrite(h, 1, 5, stdout);
	fwrite(data, 1, n, stdout);
	fflush(stdout);
}

static void fail(int status, const char *msg) { answer(status, msg, strlen(msg)); }

// build answers one request: parse, verify and optimize as opt -O3 does,
// then compile as llc -O3 -filetype=obj -relocation-model=pic does.
static void build(uint32_t flags, const char *ir, size_t irLen, const char *triple, const char *cpu,
                  const char *features) {
	Ref ctx = ContextCreate();
	Ref buf = CreateMemoryBufferWithMemoryRangeCopy(ir, irLen, "<stdin>");
	Ref mod = NULL;
	char *msg = NULL;
	if (ParseIRInContext(ctx, buf, &mod, &msg)) {
		fail(1, msg ? msg : "the IR does not parse");
		if (msg)
			DisposeMessage(msg);
		ContextDispose(ctx);
		return;
	}
	if (triple[0])
		SetTarget(mod, triple);
	if (VerifyModule(mod, VerifierReturnStatus, &msg)) {
		char *text = malloc(strlen(msg) + 64);
		sprintf(text, "<stdin>: error: input module is broken!\n%s", msg);
		fail(1, text);
		free(text);
		DisposeMessage(msg);
		DisposeModule(mod);
		ContextDispose(ctx);
		return;
	}
	if (msg) {
		DisposeMessage(msg);
		msg = NULL;
	}
	const char *modTriple = GetTarget(mod);
	char *defaultTriple = NULL;
	if (!modTriple[0]) {
		defaultTriple = GetDefaultTargetTriple();
		SetTarget(mod, defaultTriple);
		modTriple = GetTarget(mod);
		DisposeMessage(defaultTriple);
	}
	Ref target;
	if (GetTargetFromTriple(modTriple, &target, &msg)) {
		fail(1, msg);
		DisposeMessage(msg);
		DisposeModule(mod);
		ContextDispose(ctx);
		return;
	}
	// -mcpu=native: the host's CPU and features, then -mattr's, as opt
	// and llc read their flags.
	char *hostCPU = NULL, *hostFeatures = NULL, *allFeatures = NULL;
	if (!strcmp(cpu, "native")) {
		hostCPU = GetHostCPUName();
		hostFeatures = GetHostCPUFeatures();
		cpu = hostCPU;
		allFeatures = malloc(strlen(hostFeatures) + strlen(features) + 2);
		strcpy(allFeatures, hostFeatures);
		if (features[0]) {
			if (allFeatures[0])
				strcat(allFeatures, ",");
			strcat(allFeatures, features);
		}
		features = allFeatures;
	}
	Ref tm = CreateTargetMachine(target, modTriple, cpu, features, OptAggressive, RelocPIC, CodeModelDefault);
	if ((flags & 2) && !GetDataLayoutStr(mod)[0]) {
		Ref layout = CreateTargetDataLayout(tm);
		SetModuleDataLayout(mod, layout);
		DisposeTargetData(layout);
	}
	Ref opts = CreatePassBuilderOptions();
	PassBuilderOptionsSetLoopUnrolling(opts, (flags & 1) != 0);
	Ref err = RunPasses(mod, "default<O3>", tm, opts);
	Ref obj = NULL;
	if (err) {
		char *m = GetErrorMessage(err);
		fail(1, m);
		DisposeErrorMessage(m);
	} else if (TargetMachineEmitToMemoryBuffer(tm, mod, ObjectFile, &msg, &obj)) {
		fail(2, msg ? msg : "code generation failed");
		if (msg)
			DisposeMessage(msg);
	} else {
		answer(0, GetBufferStart(obj), GetBufferSize(obj));
		DisposeMemoryBuffer(obj);
	}
	DisposePassBuilderOptions(opts);
	DisposeTargetMachine(tm);
	DisposeModule(mod);
	ContextDispose(ctx);
	if (hostCPU)
		DisposeMessage(hostCPU);
	if (hostFeatures)
		DisposeMessage(hostFeatures);
	free(allFeatures);
}

// setOptions gives LLVM the command-line options of a request's flags,
// once, at the first request. lsrOff is bit 2 as set then (-1: no
// request yet).
static int lsrOff = -1;

static void setOptions(uint32_t flags) {
	int off = (flags & 4) != 0;
	if (lsrOff == off)
		return;
	if (lsrOff >= 0) {
		fprintf(stderr, "llvmworker: a request changes -disable-lsr, which holds for the whole process\n");
		exit(4);
	}
	lsrOff = off;
	if (off) {
		const char *args[] = {"llvmworker", "-disable-lsr"};
		ParseCommandLineOptions(2, args, NULL);
	}
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: llvmworker LIBLLVM ARCH\n");
		return 2;
	}
	load(argv[1], argv[2]);
	fputs("LOOM-LLVM-WORKER 1\n", stdout);
	fflush(stdout);
	for (;;) {
		uint32_t flags;
		if (!readU32(&flags))
			return 0;
		size_t irLen;
		char *ir = readString(&irLen), *triple = readString(NULL), *cpu = readString(NULL),
		     *features = readString(NULL);
		if (!ir || !triple || !cpu || !features) {
			fprintf(stderr, "llvmworker: a request ended early\n");
			return 1;
		}
		setOptions(flags);
		build(flags, ir, irLen, triple, cpu, features);
		free(ir);
		free(triple);
		free(cpu);
		free(features);
	}
}
