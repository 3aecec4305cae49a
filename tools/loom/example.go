package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// runExample builds the symbolic element-wise/reduce chain with the ast
// builder, prints the lowered function, interprets it at concrete sizes and
// checks the result against plain Go code; then schedules it, compiles it
// with LLVM, runs the kernel and checks it against the interpreter.
func runExample(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("example", "[-S1 N] [-S2 N]", `Builds the symbolic element-wise/reduce chain with the ast builder, prints
the function, interprets it and checks it against plain Go code; then
schedules it, compiles it with LLVM, runs the kernel and checks it against
the interpreter.`, stderr)
	s1 := fs.Int("S1", 2, "value of the symbolic size S1")
	s2 := fs.Int("S2", 3, "value of the symbolic size S2")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the text: the function, the interpreter's results and error against Go, the schedule's trace and function, the compile time and the kernel's difference from the interpreter")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	rep := &exampleReport{S1: *s1, S2: *s2}
	if *asJSON {
		out := stdout
		defer func() { json.NewEncoder(out).Encode(rep) }()
		stdout = io.Discard
	}
	if *s1 < 0 || *s2 < 0 || *s1 > 1<<12 || *s2 > 1<<12 || *s1**s2 > 1<<12 {
		fmt.Fprintln(stderr, "loom example: S1 and S2 must be non-negative with S1*S2 <= 4096")
		return 2
	}
	c := workload.Chain(*s1, *s2, 1024)
	fmt.Fprintln(stdout, "// The chain F = broadcast(sum(X*2 + 1, last axis) * 2) + 1 over X[S1, S2, 1024],")
	fmt.Fprintln(stdout, "// lowered by the ast builder to one loop nest and block per tensor:")
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, ast.Print(c.Func))
	rep.Function = ast.Print(c.Func)

	args2 := c.Args(1)
	want := check.Clone(args2)
	if err := ast.Interpret(c.Func, c.Sizes, args2); err != nil {
		fmt.Fprintln(stderr, ast.Explain(c.Func, err))
		return 1
	}
	c.Ref(want)
	got, ref := args2["F"].([]float32), want["F"].([]float32)
	var sum float64
	maxErr := 0.0
	for i := range got {
		sum += float64(got[i])
		maxErr = math.Max(maxErr, math.Abs(float64(got[i]-ref[i])))
	}
	fmt.Fprintf(stdout, "\n// Interpreted with S1=%d, S2=%d on random X in [-1, 1):\n", *s1, *s2)
	if len(got) > 0 {
		fmt.Fprintf(stdout, "//   F[0, 0, 0:4] = %v\n", got[:4])
	}
	fmt.Fprintf(stdout, "//   sum of F     = %.6g over %d elements\n", sum, len(got))
	fmt.Fprintf(stdout, "//   max |F - Go reference| = %g\n", maxErr)
	rep.Sum, rep.Elements, rep.MaxErrGo = sum, len(got), maxErr
	if len(got) >= 4 {
		rep.First = got[:4]
	}
	if maxErr != 0 {
		fmt.Fprintln(stderr, "loom example: the interpreter disagrees with the Go reference")
		return 1
	}
	return compileExample(c, args2, rep, stdout, stderr)
}

// exampleReport is what example -json prints.
type exampleReport struct {
	S1       int       `json:"S1"`
	S2       int       `json:"S2"`
	Function string    `json:"function"`
	First    []float32 `json:"first,omitempty"` // F[0, 0, 0:4], interpreted
	Sum      float64   `json:"sum"`             // of F, interpreted
	Elements int       `json:"elements"`
	MaxErrGo float64   `json:"max_err_go"` // interpreter against plain Go
	// The hand schedule, the kernel LLVM compiled of it, and its largest
	// relative difference from the interpreter.
	Trace      string  `json:"trace,omitempty"`
	Scheduled  string  `json:"scheduled,omitempty"`
	Arch       string  `json:"arch,omitempty"`
	VectorBits int     `json:"vector_bits,omitempty"`
	CompileMS  float64 `json:"compile_ms,omitempty"`
	Cached     bool    `json:"cached,omitempty"`
	MaxRelErr  float64 `json:"max_rel_err"`
}

// compileExample schedules the chain by hand, compiles it for this CPU,
// runs it on the same inputs and compares it with the interpreter.
func compileExample(c workload.Case, interpreted map[string]any, rep *exampleReport, stdout, stderr io.Writer) int {
	target := llvm.Host()
	s, err := schedule.New(c.Func)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := hand.Chain(s, hand.Config{Threads: 2, VectorBits: target.VectorBits()}); err != nil {
		fmt.Fprintln(stderr, schedule.Explain(err))
		return 1
	}
	fmt.Fprintln(stdout, "\n// Scheduled by hand: 2X+1 inlined into the sum, the sum in vector lanes")
	fmt.Fprintln(stdout, "// (rfactor), each output row computed after its sum, vectorized, rows in")
	fmt.Fprintln(stdout, "// parallel. The trace that does it:")
	fmt.Fprintln(stdout)
	for _, line := range strings.Split(strings.TrimSpace(s.Trace().String()), "\n") {
		fmt.Fprintln(stdout, "//   "+line)
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, ast.Print(s.Func()))
	rep.Trace, rep.Scheduled = s.Trace().String(), ast.Print(s.Func())
	k, err := native.Compile(s.Func(), llvm.Options{Target: target})
	if err != nil {
		fmt.Fprintf(stderr, "loom example: %v\n", err)
		return 1
	}
	got := c.Args(1)
	if err := k.Run(c.Sizes, got); err != nil {
		fmt.Fprintf(stderr, "loom example: %v\n", err)
		return 1
	}
	diff := check.MaxRelErr(got["F"], interpreted["F"])
	fmt.Fprintf(stdout, "\n// Compiled by LLVM for this CPU (%s, %d-bit vectors) in %.0f ms%s;\n",
		target.Arch(), target.VectorBits(), k.Stats.Total().Seconds()*1e3, cachedNote(k.Stats.Cached))
	fmt.Fprintf(stdout, "// run on the same X: max relative difference from the interpreter = %.2g\n", diff)
	rep.Arch, rep.VectorBits, rep.CompileMS, rep.Cached, rep.MaxRelErr = target.Arch(), target.VectorBits(), k.Stats.Total().Seconds()*1e3, k.Stats.Cached, diff
	if diff > check.Tolerance(ast.Float32) {
		fmt.Fprintln(stderr, "loom example: the compiled kernel disagrees with the interpreter")
		return 1
	}
	return 0
}

func cachedNote(cached bool) string {
	if cached {
		return " (from the compile cache)"
	}
	return ""
}
