//go:build loomcapi

package native

// The in-process build: LLVM's C API (libLLVM-14, through cgo) parses,
// optimizes and compiles the IR in this process instead of running opt and
// llc. It saves two program starts a kernel; it needs cgo and LLVM 14's
// headers (apt-get install llvm-14-dev), so it is opt-in: built with -tags
// loomcapi, every build in the process goes through it (but a kernel
// without llc's loop strength reduction, llvm.NoLSRKey: an option LLVM
// holds for the whole process, and the build workers, which are processes
// of their own, take it). On the 1024^3 gemm
// kernel here it builds in a median of 42 ms against 105 ms (BenchmarkBuild
// with and without the tag).

/*
#cgo CFLAGS: -I/usr/lib/llvm-14/include
#cgo LDFLAGS: -L/usr/lib/llvm-14/lib -lLLVM-14
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

static void loom_init_llvm(void) {
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
}

// loom_compile parses ir, runs the default<O3> pipeline (without loop
// unrolling unless unroll) and emits an object file into *obj. It returns
// an error message (to free) or NULL.
static char *loom_compile(const char *ir, size_t len, const char *triple, const char *cpu,
                          const char *features, int unroll, LLVMMemoryBufferRef *obj) {
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, len, "kernel");
	LLVMModuleRef mod;
	char *msg = NULL;
	if (LLVMParseIRInContext(ctx, buf, &mod, &msg)) {
		LLVMContextDispose(ctx);
		return msg;
	}
	LLVMTargetRef target;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		LLVMDisposeModule(mod);
		LLVMContextDispose(ctx);
		return msg;
	}
	char *hostCPU = NULL, *hostFeatures = NULL;
	if (cpu[0] == 0 || !strcmp(cpu, "native")) {
		hostCPU = LLVMGetHostCPUName();
		hostFeatures = LLVMGetHostCPUFeatures();
		cpu = hostCPU;
		if (features[0] == 0)
			features = hostFeatures;
	}
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, features,
		LLVMCodeGenLevelAggressive, LLVMRelocPIC, LLVMCodeModelDefault);
	LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
	LLVMPassBuilderOptionsSetLoopUnrolling(opts, unroll);
	LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, opts);
	if (err) {
		msg = LLVMGetErrorMessage(err);
	} else if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, obj)) {
		// msg set
	} else {
		msg = NULL;
	}
	LLVMDisposePassBuilderOptions(opts);
	LLVMDisposeTargetMachine(tm);
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	if (hostCPU) LLVMDisposeMessage(hostCPU);
	if (hostFeatures) LLVMDisposeMessage(hostFeatures);
	return msg;
}
*/
import "C"

import (
	"errors"
	"os"
	"sync"
	"unsafe"

	"github.com/loom-go/loom/codegen/llvm"
)

var initOnce sync.Once

func init() { inProcess = InProcessObject }

// InProcessObject compiles m with LLVM's C API in this process and writes
// the object file to path: the same pipeline as opt -O3 | llc -O3.
func InProcessObject(m *llvm.Module, path string) error {
	initOnce.Do(func() { C.loom_init_llvm() })
	ir := m.String()
	cir := C.CString(ir)
	defer C.free(unsafe.Pointer(cir))
	t := m.Options.Target
	triple, cpu, feats := C.CString(t.Triple), C.CString(t.CPU), C.CString(t.Features)
	defer C.free(unsafe.Pointer(triple))
	defer C.free(unsafe.Pointer(cpu))
	defer C.free(unsafe.Pointer(feats))
	unroll := C.int(0)
	if m.Options.LLVMUnroll {
		unroll = 1
	}
	var obj C.LLVMMemoryBufferRef
	if msg := C.loom_compile(cir, C.size_t(len(ir)), triple, cpu, feats, unroll, &obj); msg != nil {
		defer C.LLVMDisposeMessage(msg)
		return errors.New("codegen/llvm/native: LLVM: " + C.GoString(msg))
	}
	defer C.LLVMDisposeMemoryBuffer(obj)
	data := C.GoBytes(unsafe.Pointer(C.LLVMGetBufferStart(obj)), C.int(C.LLVMGetBufferSize(obj)))
	return os.WriteFile(path, data, 0o644)
}
