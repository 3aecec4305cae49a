package cuda_test

import (
	"context"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/cudaemu"
	"github.com/loom-go/loom/internal/workload"
)

// TestEmulate runs every representative kernel on the CPU, each GPU thread
// an OS thread (package cudaemu), and compares what it computes with the
// interpreter: the barriers, the shuffles, the vector accesses and the
// shared-memory indexing checked for real on a machine without a GPU. It
// needs g++ (C++20), which make tools provides.
func TestEmulate(t *testing.T) {
	for _, gc := range gpuCases() {
		t.Run(gc.name, func(t *testing.T) {
			m := lowered(t, gc)
			got, want := gc.c.Args(1), gc.c.Args(1)
			if err := ast.Interpret(gc.c.Func, gc.c.Sizes, want); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := cudaemu.Run(ctx, m, gc.c.Sizes, got); err != nil {
				t.Fatal(err)
			}
			for _, b := range gc.c.Func.Params {
				if e := workload.MaxRelErr(got[b.Name], want[b.Name]); e > 1e-4 {
					t.Errorf("%s differs from the interpreter's by %g", b.Name, e)
				}
			}
		})
	}
}
