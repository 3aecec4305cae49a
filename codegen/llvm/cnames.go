package llvm

import (
	"regexp"
	"strings"

	"github.com/loom-go/loom/ast"
)

// C names. A kernel's symbol is a C function a program links beside its
// own code, the C library and loom's runtime, and declares through a
// header it includes after its own; the names in that header meet the
// macros and types of every header before it. IsReservedC says which
// names must not be such a symbol; a header's parameter names avoid them
// too (CParamNames).

// IsReservedC reports whether name is one that C, its library or loom's
// runtime already gives a meaning, so that a symbol of that name would
// not compile or would not link, or would replace a function the program
// calls: a keyword of C or C++ (a header is included from both); an
// identifier reserved to the implementation (_X..., __x...); a type,
// macro or function of the C standard library headers loom's files
// include and of libm, which the kernels call (float forms included:
// sqrtf); the POSIX functions loom's runtime calls (pthread_*, ...); main;
// or a name of loom's runtime and its headers (loom_parallel_for,
// loom_status, LOOM_OK, ...).
func IsReservedC(name string) bool {
	if cReserved[name] || cReservedForm.MatchString(name) {
		return true
	}
	for _, p := range cReservedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

var cReserved = map[string]bool{}

func init() {
	for _, list := range []string{cKeywords, cppKeywords, cLibrary, cPOSIX, loomNames} {
		for _, w := range strings.Fields(list) {
			cReserved[w] = true
		}
	}
	for _, f := range strings.Fields(cMath) { // each in its double, float and long double forms
		cReserved[f], cReserved[f+"f"], cReserved[f+"l"] = true, true, true
	}
}

// cReservedForm matches the names of whole families: the identifiers C
// reserves to the implementation, and <stdint.h>'s types and macros.
var cReservedForm = regexp.MustCompile(`^(_[A-Z_].*|u?int(_least|_fast)?(8|16|32|64)_t|u?int(max|ptr)_t|U?INT(_LEAST|_FAST)?(8|16|32|64)_(MIN|MAX)|U?INT(8|16|32|64|MAX)_C|U?INT(MAX|PTR)_(MIN|MAX))$`)

// cReservedPrefixes are prefixes of POSIX's thread and scheduling names.
var cReservedPrefixes = []string{"pthread_", "PTHREAD_", "sched_", "SCHED_"}

const cKeywords = `auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex
_Generic _Imaginary _Noreturn _Static_assert _Thread_local
bool true false alignas alignof static_assert thread_local nullptr typeof typeof_unqual
constexpr _BitInt _Decimal32 _Decimal64 _Decimal128`

const cppKeywords = `asm catch class const_cast delete dynamic_cast explicit export friend
mutable namespace new noexcept operator private protected public reinterpret_cast static_cast
template this throw try typeid typename using virtual wchar_t char8_t char16_t char32_t
concept requires consteval constinit co_await co_return co_yield decltype
and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq`

// cLibrary: the C standard library's names in the headers loom's
// headers and sources include (stdbool, stddef, stdint, stdio, stdlib,
// string, stdarg, limits, errno, assert, time) and main.
const cLibrary = `main NULL EOF BUFSIZ FILENAME_MAX FOPEN_MAX TMP_MAX L_tmpnam SEEK_SET SEEK_CUR SEEK_END
EXIT_SUCCESS EXIT_FAILURE RAND_MAX MB_CUR_MAX SIZE_MAX PTRDIFF_MIN PTRDIFF_MAX SIG_ATOMIC_MIN
SIG_ATOMIC_MAX WCHAR_MIN WCHAR_MAX WINT_MIN WINT_MAX CHAR_BIT CHAR_MIN CHAR_MAX SCHAR_MIN SCHAR_MAX
UCHAR_MAX SHRT_MIN SHRT_MAX USHRT_MAX INT_MIN INT_MAX UINT_MAX LONG_MIN LONG_MAX ULONG_MAX
LLONG_MIN LLONG_MAX ULLONG_MAX MB_LEN_MAX CLOCKS_PER_SEC errno EDOM ERANGE EILSEQ assert
offsetof size_t ptrdiff_t max_align_t wint_t FILE fpos_t div_t ldiv_t lldiv_t clock_t time_t
va_list va_start va_arg va_end va_copy stdin stdout stderr
abort abs atexit at_quick_exit atof atoi atol atoll bsearch calloc div exit _Exit free getenv
labs ldiv llabs lldiv malloc aligned_alloc mblen mbstowcs mbtowc qsort quick_exit rand realloc
srand strtod strtof strtold strtol strtoll strtoul strtoull system wcstombs wctomb
memchr memcmp memcpy memmove memset strcat strchr strcmp strcoll strcpy strcspn strerror strlen
strncat strncmp strncpy strpbrk strrchr strspn strstr strtok strxfrm strdup strndup
clearerr fclose feof ferror fflush fgetc fgetpos fgets fopen fprintf fputc fputs fread freopen
fscanf fseek fsetpos ftell fwrite getc getchar gets perror printf putc putchar puts remove
rename rewind scanf setbuf setvbuf snprintf sprintf sscanf tmpfile tmpnam ungetc vfprintf
vfscanf vprintf vscanf vsnprintf vsprintf vsscanf
asctime clock ctime difftime gmtime localtime mktime strftime time timespec timespec_get`

// cMath: <math.h>'s functions, which the kernels call (each also with f
// and l after it), and its macros.
const cMath = `acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1
frexp ldexp log log10 log1p log2 logb ilogb modf scalbn scalbln cbrt fabs hypot pow sqrt
erf erfc lgamma tgamma ceil floor nearbyint rint lrint llrint round lround llround trunc fmod
remainder remquo copysign nan nextafter nexttoward fdim fmax fmin fma
isnan isinf isfinite isnormal signbit fpclassify isgreater isless HUGE_VAL INFINITY NAN
FP_NAN FP_INFINITE FP_ZERO FP_SUBNORMAL FP_NORMAL M_PI M_E`

// cPOSIX: the POSIX and Linux names loom's runtime calls, and the macros
// GNU C predefines (unix, linux) outside its strict modes.
const cPOSIX = `sysconf syscall nanosleep clock_gettime usleep sleep read write open close getpid
futex linux unix i386`

// loomNames: loom's runtime (loomrt.c, the OpenMP entry points it can
// use) and the names its headers define.
const loomNames = `loom_set_num_threads loom_get_num_threads loom_parallel_for loom_runtime_version loom_run_kernels loom_kernel loom_kernel_call
loom_task GOMP_parallel omp_get_thread_num omp_get_num_threads omp_get_max_threads
loom_status LOOM_STATUS_DEFINED LOOM_STATUS_CODES_DEFINED LOOM_OK LOOM_BAD_ARGUMENT LOOM_NO_MEMORY
LOOM_DIVISION_BY_ZERO LOOM_INDEX_OUT_OF_RANGE LOOM_RESTRICT loom_status_string LOOM_STATUS_STRING_DEFINED`

// SafeCName returns name when IsReservedC does not refuse it, else a
// name it does not: name with "_" after it (int_, free_) or, where that is
// reserved too (_X_), with "x_" before it.
func SafeCName(name string) string {
	switch {
	case !IsReservedC(name):
		return name
	case !IsReservedC(name + "_"):
		return name + "_"
	}
	return "x_" + name
}

// CParamNames returns the C names Module.Header gives the sizes and then
// the buffer parameters of f, the kernel symbol: each one's own made safe
// (SafeCName), with "_" appended while one before it, the symbol, or the
// packed entry point's buffers and sizes (the locals of a C wrapper that
// calls it) has it.
func CParamNames(symbol string, f *ast.Func) []string {
	var names []string
	for _, s := range f.Sizes {
		names = append(names, s.Name)
	}
	for _, p := range f.Params {
		names = append(names, p.Name)
	}
	taken := map[string]bool{symbol: true, symbol + "_packed": true, "buffers": true, "sizes": true}
	for i, n := range names {
		n = SafeCName(n)
		for taken[n] || IsReservedC(n) {
			n += "_"
		}
		taken[n] = true
		names[i] = n
	}
	return names
}
