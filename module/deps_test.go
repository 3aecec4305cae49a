package module_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies: a program that compiles graphs (packages module,
// fusion and onnx) links neither a GPU back end nor the benchmark
// workloads: the tuner reaches a GPU through autotune/cudatune, which
// only a program tuning for a GPU imports, and checks candidates with
// internal/check.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/loom-go/loom/module", "github.com/loom-go/loom/onnx").Output()
	if err != nil {
		t.Skipf("go list: %v", err) // no go command beside the test binary
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/loom-go/loom/codegen/cuda", "github.com/loom-go/loom/autotune/cudatune", "github.com/loom-go/loom/internal/workload", "github.com/loom-go/loom/internal/cudaemu", "github.com/loom-go/loom/tools/"} {
			if pkg == banned || strings.HasPrefix(pkg, banned) && strings.HasSuffix(banned, "/") {
				t.Errorf("module links %s", pkg)
			}
		}
	}
}
