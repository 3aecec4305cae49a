package onnx_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/loom-go/loom/codegen/llvm/native"
)

// sharedCacheDir is the kernel cache of the tests that compile models
// (TestCompiledMatchesOnnxRuntime, TestPositionsPastTheTable; TestMain
// makes it): package module keeps one compiled module per graph and
// cache directory, so a model two of them compile is compiled once.
var sharedCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loom-onnx-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sharedCache opens the kernel cache of sharedCacheDir.
func sharedCache(t *testing.T) *native.Cache {
	t.Helper()
	cache, err := native.NewCache(sharedCacheDir)
	if err != nil {
		t.Fatal(err)
	}
	return cache
}
