package autotune

import (
	"testing"
	"time"

	"github.com/loom-go/loom/internal/workload"
)

func TestZZProf(t *testing.T) {
	tg := Target{VectorLanes: 16, Threads: 2}
	for _, c := range []workload.Case{workload.Matmul(512, 512, 512), workload.Conv2D(1, 64, 56, 56, 64), workload.Softmax(1024, 1024)} {
		t0 := time.Now()
		for i := 0; i < 3; i++ {
			if _, err := Default(c.Func, tg); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: %v per Default", c.Name, time.Since(t0)/3)
	}
}
