package llvm_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/workload"
)

// TestOpaquePointers: every kind of pointer type becomes ptr, innermost
// first; intrinsics mangle pointers as p0; quoted strings stay.
func TestOpaquePointers(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"load float, float* %p", "load float, ptr %p"},
		{"%b = load i8*, i8** %a", "%b = load ptr, ptr %a"},
		{"store <16 x float> %v, <16 x float>* %p", "store <16 x float> %v, ptr %p"},
		{"%g = call <8 x float> @llvm.masked.gather.v8f32.v8p0f32(<8 x float*> %q, i32 4, <8 x i1> %m, <8 x float> %d)",
			"%g = call <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr> %q, i32 4, <8 x i1> %m, <8 x float> %d)"},
		{"declare <16 x float> @llvm.masked.load.v16f32.p0v16f32(<16 x float>*, i32, <16 x i1>, <16 x float>)",
			"declare <16 x float> @llvm.masked.load.v16f32.p0(ptr, i32, <16 x i1>, <16 x float>)"},
		{"%ctx = alloca { i64, i32*, float* }", "%ctx = alloca { i64, ptr, ptr }"},
		{"%c = bitcast i8* %x to { i64, i32*, float* }*", "%c = bitcast ptr %x to ptr"},
		{"declare void @loom_parallel_for(void (i8*, i64, i64)* %0, i8* %1)", "declare void @loom_parallel_for(ptr %0, ptr %1)"},
		{"%a = getelementptr [4 x float], [4 x float]* %t, i64 0, i64 %i", "%a = getelementptr [4 x float], ptr %t, i64 0, i64 %i"},
		{"%s = load %struct.ctx*, %struct.ctx** %p", "%s = load ptr, ptr %p"},
		{"store float 0.0, float addrspace(1)* %p", "store float 0.0, ptr addrspace(1) %p"},
		{`@msg = constant [5 x i8] c"a*b\00"`, `@msg = constant [5 x i8] c"a*b\00"`},
		{"%p = call i8* @llvm.stacksave()", "%p = call ptr @llvm.stacksave()"},
	} {
		if got := llvm.OpaquePointers(c.in); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// TestOpaquePointersCorpus: the IR of every workload keeps no typed
// pointer once rewritten.
func TestOpaquePointersCorpus(t *testing.T) {
	for _, c := range workload.All() {
		m, err := llvm.Lower(c.Func, llvm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ir := llvm.OpaquePointers(m.String())
		for i, part := range strings.Split(ir, `"`) {
			if i%2 == 0 && strings.Contains(part, "*") {
				line := part[strings.LastIndex(part[:strings.Index(part, "*")], "\n")+1:]
				t.Errorf("%s: a typed pointer is left: %.120s", c.Name, line)
				break
			}
		}
	}
}
