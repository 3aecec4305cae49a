package cudaemu_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/cudaemu"
)

// handModule is a module of one kernel written by hand: a block of 64
// threads over X and Y (float32[64]).
func handModule(t *testing.T, body string) (*cuda.Module, map[string]any) {
	t.Helper()
	f, err := ast.Parse(`func hand(X: float32[64], Y: float32[128]) {
  ScheduleBlock(root) {
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	src := `__global__ void hand_kernel0(float* __restrict__ X, float* __restrict__ Y) {
  __shared__ float tile[64];
  const int t = threadIdx.x;
` + body + "\n}\n"
	m := &cuda.Module{Func: f, Source: src, Kernels: []*cuda.Kernel{{
		Name: "hand_kernel0", Grid: [3]ast.Expr{ast.I64(2), ast.I64(1), ast.I64(1)}, Block: [3]int64{64, 1, 1},
		Buffers: f.Params,
	}}}
	x, y := make([]float32, 64), make([]float32, 128)
	for i := range x {
		x[i] = float32(i)
	}
	return m, map[string]any{"X": x, "Y": y}
}

func run(t *testing.T, m *cuda.Module, args map[string]any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cudaemu.Run(ctx, m, nil, args)
}

// TestBarrierOrders: each thread writes its element of a shared tile,
// waits at __syncthreads and reads its neighbours' on both sides: with
// the barrier every block computes the sums.
func TestBarrierOrders(t *testing.T) {
	m, args := handModule(t, `  tile[t] = X[t] + (float)blockIdx.x;
  __syncthreads();
  Y[blockIdx.x * 64 + t] = tile[(t + 63) % 64] + tile[(t + 1) % 64];`)
	if err := run(t, m, args); err != nil {
		t.Fatal(err)
	}
	y := args["Y"].([]float32)
	for i := range y {
		b, j := i/64, i%64
		if want := float32((j+63)%64 + (j+1)%64 + 2*b); y[i] != want {
			t.Fatalf("Y[%d] = %g, want %g", i, y[i], want)
		}
	}
}

// TestMissingBarrierShows: the same kernel without its barrier, each
// thread reading one neighbour (none at the tile's ends), reads that
// neighbour's element before the neighbour writes it in one block or the
// other, whichever side the neighbour is on: the two blocks run their
// threads in opposite orders.
func TestMissingBarrierShows(t *testing.T) {
	for _, side := range []string{"t - 1", "t + 1"} {
		m, args := handModule(t, `  tile[t] = X[t] + 1000.0f * (float)blockIdx.x;
  const int n = `+side+`;
  Y[blockIdx.x * 64 + t] = n < 0 || n >= 64 ? 0.0f : tile[n];`)
		if err := run(t, m, args); err != nil {
			t.Fatal(err)
		}
		wrong := 0
		y := args["Y"].([]float32)
		for i := range y {
			b, j := i/64, i%64
			n := j - 1
			if side == "t + 1" {
				n = j + 1
			}
			want := float32(0)
			if n >= 0 && n < 64 {
				want = float32(n) + 1000*float32(b)
			}
			if y[i] != want {
				wrong++
			}
		}
		if wrong == 0 {
			t.Errorf("reading tile[%s] with no barrier: every element as if there were one", side)
		}
	}
}

// TestDeadlockReported: a barrier inside a branch that half the threads
// take is a deadlock, reported at once as such.
func TestDeadlockReported(t *testing.T) {
	m, args := handModule(t, `  if (t < 32) {
    __syncthreads();
  }
  Y[t] = X[t];`)
	err := run(t, m, args)
	if err == nil || !strings.Contains(err.Error(), "deadlock") {
		t.Fatalf("got %v, want a deadlock reported", err)
	}
}

// TestUnreadablePrecompiledHeader: a precompiled header cut short (what a
// crash in the middle of writing it leaves) makes g++ fail, not fall back;
// the program is compiled again with the header's text, runs, and the
// cut header is removed so that no later program trips on it.
func TestUnreadablePrecompiledHeader(t *testing.T) {
	t.Setenv("LOOM_CACHE_DIR", t.TempDir())
	cudaemu.ResetHeader()
	t.Cleanup(cudaemu.ResetHeader)
	dir := cudaemu.HeaderDir()
	if dir == "" {
		t.Fatal("no precompiled header built")
	}
	if err := os.Truncate(filepath.Join(dir, "loom_emu.h.gch"), 100_000); err != nil {
		t.Fatal(err)
	}
	m, args := handModule(t, `  Y[blockIdx.x * 64 + t] = X[t] * 2.0f;`)
	if err := run(t, m, args); err != nil {
		t.Fatal(err)
	}
	if y := args["Y"].([]float32); y[65] != 2 {
		t.Errorf("Y[65] = %g, want 2", y[65])
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cut precompiled header is still there (%v)", err)
	}
}
