package llvm

import (
	"regexp"
	"strings"
)

// OpaquePointers rewrites the IR a Module prints, whose pointers are
// typed (float*, <16 x float>*, { i64, float* }*, void (i8*, i64)*), into
// the form of LLVM 15 and later, where every pointer is ptr: each pointer
// type becomes ptr, and the overloaded intrinsics' names mangle a pointer
// as p0 (llvm.masked.load.v16f32.p0v16f32 becomes ...v16f32.p0). What
// the IR computes is unchanged: loads, stores and getelementptr name the
// types they access already. Quoted strings are left alone.
func OpaquePointers(ir string) string {
	parts := strings.Split(ir, `"`)
	for i := 0; i < len(parts); i += 2 { // outside quotes
		parts[i] = opaqueSegment(parts[i])
	}
	return strings.Join(parts, `"`)
}

var (
	// A pointer to a type that holds no other type, or to one whose inner
	// pointers are ptr already: applied until nothing changes, innermost
	// first.
	pointerTypes = []*regexp.Regexp{
		regexp.MustCompile(`(?:\b(?:i\d+|half|bfloat|float|double|x86_fp80|fp128|ptr|void)|%[-\w.$]+)\*`),
		regexp.MustCompile(`<\{[^{}<>]*\}>\*`),                                                                 // packed struct
		regexp.MustCompile(`\{[^{}]*\}\*`),                                                                     // struct
		regexp.MustCompile(`<\d+ x [^<>{}\[\]()]*>\*`),                                                         // vector
		regexp.MustCompile(`\[\d+ x [^\[\]{}()<>]*\]\*`),                                                       // array
		regexp.MustCompile(`(?:\bptr|\bvoid|\bi\d+|\bfloat|\bdouble|\bhalf|\{[^{}]*\}|<[^<>]*>) \([^()]*\)\*`), // function
	}
	addrspacePointer = regexp.MustCompile(`(?:\b(?:i\d+|half|bfloat|float|double|ptr)|\{[^{}]*\}|<[^<>]*>|\[[^\[\]]*\]) addrspace\((\d+)\)\*`)
	intrinsicName    = regexp.MustCompile(`@llvm\.[\w.]+`)
	mangledPointer   = regexp.MustCompile(`p0(?:v\d+)?(?:bf16|f16|f32|f64|i\d+)`)
)

func opaqueSegment(s string) string {
	if !strings.Contains(s, "*") && !strings.Contains(s, "@llvm.") {
		return s
	}
	for {
		before := s
		s = addrspacePointer.ReplaceAllString(s, "ptr addrspace($1)")
		for _, re := range pointerTypes {
			s = re.ReplaceAllString(s, "ptr")
		}
		if s == before {
			break
		}
	}
	return intrinsicName.ReplaceAllStringFunc(s, func(name string) string {
		return mangledPointer.ReplaceAllString(name, "p0")
	})
}
