package poly

import (
	"testing"

	"github.com/loom-go/loom/ast"
)

// tiledMatmul is a 256³ matrix multiply tiled 32x32x32: six loops, three
// iteration variables bound to tile*32 + point.
const tiledMatmul = `func matmul(A: float32[256, 256], B: float32[256, 256], C: float32[256, 256]) {
  ScheduleBlock(root) {
    serial for (i0, 0, 8) {
      serial for (j0, 0, 8) {
        serial for (k0, 0, 8) {
          serial for (i1, 0, 32) {
            serial for (j1, 0, 32) {
              serial for (k1, 0, 32) {
                ScheduleBlock(C) {
                  vi, vj, vk = axis.bind(i0 * 32 + i1, j0 * 32 + j1, k0 * 32 + k1)
                  axis.domain(vi = spatial(0, 256), vj = spatial(0, 256), vk = reduce(0, 256))
                  reads(C[vi, vj], A[vi, vk], B[vk, vj])
                  writes(C[vi, vj])
                  C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
                }
              }
            }
          }
        }
      }
    }
  }
}
`

// BenchmarkLegalityQuery times one typical legality query: whether the
// dependence polyhedron of the tiled matrix multiply (source and sink
// instances, 12 loop variables) has a pair carried by the point loop j1,
// i.e. whether j1 may run in parallel. The target is a median under 50 µs.
func BenchmarkLegalityQuery(b *testing.B) {
	f, err := ast.Parse(tiledMatmul)
	if err != nil {
		b.Fatal(err)
	}
	p, err := Extract(f)
	if err != nil {
		b.Fatal(err)
	}
	c := p.Blocks[0]
	conflict := ApplyRange(c.Writes[0].Map, c.Writes[0].Map.Reverse()) // WAW on C
	at := beforeAt(c, c, 4, 6)                                         // carried by j1
	if !IntersectMap(conflict, at).IsEmpty() {
		b.Fatal("j1 carries a dependence")
	}
	b.ResetTimer()
	for b.Loop() {
		if !IntersectMap(conflict, at).IsEmpty() {
			b.Fatal("j1 carries a dependence")
		}
	}
}

// BenchmarkDependences times the whole analysis of the tiled matrix
// multiply: extraction and every dependence with its levels and distances.
func BenchmarkDependences(b *testing.B) {
	f, err := ast.Parse(tiledMatmul)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		p, err := Extract(f)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Dependences()) != 3 {
			b.Fatal("want three dependences")
		}
	}
}
