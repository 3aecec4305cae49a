package llvm

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/llir/llvm/ir"
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/partition"
)

// Options control how a function is lowered.
type Options struct {
	// Target is the machine the kernel is for; the zero value is the host.
	Target Target
	// FastMath lets LLVM reassociate floating-point arithmetic and assume
	// that no value is NaN or infinite, as C's -ffast-math does. Results
	// then differ from the interpreter's by more than rounding. Off by
	// default.
	FastMath bool
	// NoFMA forbids fusing a multiply and an add into one fused
	// multiply-add. By default they may fuse (as C compilers do), which
	// rounds once where the interpreter rounds twice.
	NoFMA bool
	// VectorBits overrides the SIMD width that vectorized loops use (128,
	// 256 or 512); 0 takes it from the target.
	VectorBits int
	// LLVMUnroll lets LLVM unroll loops on its own heuristics, on top of
	// what the schedule unrolls. Off by default: it triples the build time
	// of a tiled kernel and rarely helps one whose schedule unrolls.
	LLVMUnroll bool
	// Symbol is the C name of the kernel; empty means the function's
	// name, made safe when C reserves it (SafeCName: double_). A reserved
	// Symbol (IsReservedC: main, free, int64_t) is an error.
	Symbol string
	// TrustLoopKinds skips the proof that parallel and vectorized loops
	// carry no dependence. Without it a function whose parallel or
	// vectorized loop cannot be proved independent is refused.
	TrustLoopKinds bool
}

// Module is a function lowered to LLVM IR: the kernel, its packed entry
// point, and the helpers they call.
type Module struct {
	Func    *ast.Func
	Options Options // as given, with the target filled in
	Symbol  string  // C name of the kernel; Symbol+"_packed" is the packed entry
	IR      *ir.Module
	// Remarks say where lowering did less than the schedule asked, for
	// example a vectorized loop emitted as a scalar loop and why.
	Remarks []string
	// DisableLSR compiles the kernel without llc's loop strength
	// reduction: a loop of Func carries NoLSRKey.
	DisableLSR bool
}

// String returns the module in LLVM's text form.
func (m *Module) String() string { return m.IR.String() }

// PackedSymbol is the C name of the packed entry point.
func (m *Module) PackedSymbol() string { return m.Symbol + "_packed" }

// CheckSymbol returns an error unless sym can name a kernel in C: an
// identifier that C, its library and loom's runtime do not use already.
func CheckSymbol(sym string) error {
	if !cIdentRE.MatchString(sym) {
		return &Error{Reason: fmt.Sprintf("kernel symbol %q is not a C identifier", sym)}
	}
	if IsReservedC(sym) {
		return &Error{Reason: fmt.Sprintf("kernel symbol %q is a name C, its library or loom's runtime already uses; give the kernel another one (Options.Symbol, loom build -name)", sym)}
	}
	return nil
}

// Status codes: a kernel returns StatusOK or the sum of the faults it met
// among the first three; a graph library (package module) returns the
// same codes and adds StatusBadArgument. StatusCodesC declares them in C.
const (
	StatusOK          = 0 // the kernel ran to the end
	StatusDivByZero   = 1 // an integer division or remainder by zero
	StatusOutOfMemory = 2 // a temporary buffer could not be allocated
	// StatusIndexOutOfRange: an index loaded from a buffer (a gather's)
	// was outside its dimension; the access did not happen.
	StatusIndexOutOfRange = 4
	// StatusBadArgument: a caller's argument was wrong (a shape, a NULL
	// pointer); nothing ran. Kernels do not return it.
	StatusBadArgument = 8
)

// StatusCodesC is the C declaration of the status codes, shared by the
// kernel headers (Module.Header) and the graph libraries' headers, each
// guarded so that a program may include several.
const StatusCodesC = `#ifndef LOOM_STATUS_CODES_DEFINED
#define LOOM_STATUS_CODES_DEFINED
/* loom's status codes: LOOM_OK (0), or the sum of the faults met. A
 * kernel returns the first three; a graph library adds LOOM_BAD_ARGUMENT.
 * Any fault but LOOM_BAD_ARGUMENT may come after outputs were partly
 * written: they are then not valid. */
enum {
	LOOM_OK = 0,
	LOOM_DIVISION_BY_ZERO = 1,   /* an integer division or remainder by zero (it gave 0) */
	LOOM_NO_MEMORY = 2,          /* a temporary buffer could not be allocated */
	LOOM_INDEX_OUT_OF_RANGE = 4, /* an index read from a buffer (a gather's) was outside its dimension */
	LOOM_BAD_ARGUMENT = 8        /* a shape, a NULL pointer, a dtype: nothing ran */
};
#endif

`

// ErrUnsupported is wrapped by errors for functions the code generator
// cannot lower.
var ErrUnsupported = errors.New("not supported by the LLVM code generator")

// Error is an error lowering a function: what went wrong and, when it is
// about a statement or an expression, the function printed with that spot
// marked.
type Error struct {
	Func   *ast.Func
	Node   ast.Node
	Reason string
	Err    error // the wrapped cause, if any
}

func (e *Error) Error() string {
	msg := "codegen/llvm: " + e.Reason
	if e.Func != nil && e.Node != nil {
		msg += "\n" + ast.Mark(e.Func, e.Node)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Lower translates f into LLVM IR for the target in opts.
//
// The kernel is one C function (see the package documentation for its
// ABI): the symbolic sizes as int64_t, then one pointer per buffer
// parameter. It returns a status: [StatusOK], or the faults the
// interpreter would have reported as an error and the kernel could only
// detect ([StatusDivByZero], [StatusOutOfMemory],
// [StatusIndexOutOfRange]), or-ed together.
func Lower(f *ast.Func, opts Options) (*Module, error) {
	if err := ast.Verify(f); err != nil {
		return nil, err
	}
	opts.Target = opts.Target.orHost()
	if opts.VectorBits == 0 {
		opts.VectorBits = opts.Target.VectorBits()
	}
	switch opts.VectorBits {
	case 128, 256, 512:
	default:
		return nil, &Error{Reason: fmt.Sprintf("vector width %d bits: want 128, 256 or 512", opts.VectorBits)}
	}
	sym := opts.Symbol
	if sym == "" {
		sym = SafeCName(cIdent(f.Name)) // double_ for func double
	}
	if err := CheckSymbol(sym); err != nil {
		return nil, err
	}
	if !opts.TrustLoopKinds {
		if err := checkLoopKinds(f); err != nil {
			return nil, err
		}
	}
	// An output element of a reduction whose reduce loops run no
	// iteration gets its init before them, as the interpreter gives it.
	f = ast.InitEmptyReductions(f)
	// Loops guarded by a tail predicate run their full iterations without
	// it (package partition): a predicate in the innermost loops keeps a
	// matrix multiply's accumulators in memory.
	f = partition.Func(f)
	// Loops over a padded border run their interior without the tests
	// of the border (a convolution reading its input as if padded).
	f = partition.Borders(f)
	m := &Module{Func: f, Options: opts, Symbol: sym, IR: ir.NewModule(), DisableLSR: disablesLSR(f)}
	m.IR.TargetTriple = opts.Target.Triple
	m.IR.SourceFilename = f.Name
	e := newEmitter(m, planCompactions(f))
	if err := e.kernel(); err != nil {
		return nil, err
	}
	e.packedEntry()
	return m, nil
}

var cIdentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cIdent turns a function name into a C identifier.
func cIdent(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "kernel"
	}
	return b.String()
}
