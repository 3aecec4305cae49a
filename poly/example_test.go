package poly_test

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// Sets are written in isl's notation; operations on them are exact over
// the integers. The even points of a triangle, and whether a point with
// i + j = 7 is among them (none: i + j of even i and j is even).
func ExampleParseSet() {
	tri, err := poly.ParseSet("[N] -> { S[i, j] : 0 <= i < N and 0 <= j <= i and exists (q, r : i = 2q and j = 2r) }")
	if err != nil {
		panic(err)
	}
	line, err := poly.ParseSet("[N] -> { S[i, j] : i + j = 7 }")
	if err != nil {
		panic(err)
	}
	fmt.Println("empty:", tri.IsEmpty())
	fmt.Println("meets i + j = 7:", !poly.Intersect(tri, line).IsEmpty())
	// Output:
	// empty: false
	// meets i + j = 7: false
}

// The dependences of a function: each block instance is a point of an
// integer set, and a dependence relates the instances that touch the same
// element in an order that must be kept. In this in-place prefix sum,
// every iteration reads what the one before wrote: the loop (level 0)
// carries a read-after-write dependence, so it may not run in parallel.
func ExampleExtract() {
	f, err := ast.Parse(`func scan(A: float32[16]) {
  serial for (i, 1, 15) {
    ScheduleBlock(S) {
      vi = axis.bind(i)
      axis.domain(vi = spatial(1, 15))
      reads(A[vi - 1], A[vi])
      writes(A[vi])
      A[vi] = A[vi] + A[vi - 1]
    }
  }
}`)
	if err != nil {
		panic(err)
	}
	p, err := poly.Extract(f)
	if err != nil {
		panic(err)
	}
	for _, d := range p.Deps() {
		fmt.Printf("%s on %s, carried by loop level %v\n", d.Kind, d.Buffer.Name, d.Carried)
	}
	// Output:
	// RAW on A, carried by loop level [0]
}
