package main

import (
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// runExample builds the symbolic element-wise/reduce chain with the ast
// builder, prints the lowered function, interprets it at concrete sizes and
// checks the result against plain Go code.
func runExample(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s1 := fs.Int("S1", 2, "value of the symbolic size S1")
	s2 := fs.Int("S2", 3, "value of the symbolic size S2")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *s1 < 0 || *s2 < 0 || *s1**s2 > 1<<12 {
		fmt.Fprintln(stderr, "loom example: S1 and S2 must be non-negative with S1*S2 <= 4096")
		return 2
	}
	c := workload.Chain(*s1, *s2, 1024)
	fmt.Fprintln(stdout, "// The chain F = broadcast(sum(X*2 + 1, last axis) * 2) + 1 over X[S1, S2, 1024],")
	fmt.Fprintln(stdout, "// lowered by the ast builder to one loop nest and block per tensor:")
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, ast.Print(c.Func))

	args2 := c.Args(1)
	want := workload.Clone(args2)
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
	if maxErr != 0 {
		fmt.Fprintln(stderr, "loom example: the interpreter disagrees with the Go reference")
		return 1
	}
	return 0
}
