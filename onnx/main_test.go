package onnx_test

import (
	"os"
	"testing"

	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/testcache"
)

// The tests that compile models (TestCompiledMatchesOnnxRuntime,
// TestPositionsPastTheTable) share one kernel cache (testcache): package
// module keeps one compiled module per graph and cache directory, so a
// model two of them compile is compiled once.
func TestMain(m *testing.M) { os.Exit(testcache.Run(m)) }

// sharedCache opens the shared kernel cache.
func sharedCache(t testing.TB) *native.Cache { return testcache.Open(t) }
