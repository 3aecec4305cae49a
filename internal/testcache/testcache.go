// Package testcache gives the tests of one test binary a kernel cache
// directory of their own that they share: a graph two tests compile is
// compiled once (package module keeps one compiled module per graph and
// cache directory), and nothing is left behind or taken from the user's
// cache.
//
//	func TestMain(m *testing.M) { os.Exit(testcache.Run(m)) }
//
// and in a test, testcache.Open(t) is the cache.
package testcache

import (
	"fmt"
	"os"
	"testing"

	"github.com/loom-go/loom/codegen/llvm/native"
)

var dir string

// Run makes the shared directory, runs the tests of m and removes the
// directory; it returns m.Run's exit code.
func Run(m *testing.M) int {
	d, err := os.MkdirTemp("", "loom-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir = d
	code := m.Run()
	os.RemoveAll(d)
	return code
}

// Dir is the shared directory (empty outside Run).
func Dir() string { return dir }

// Open opens the kernel cache of the shared directory.
func Open(t testing.TB) *native.Cache {
	t.Helper()
	if dir == "" {
		t.Fatal("testcache.Open outside testcache.Run (TestMain)")
	}
	cache, err := native.NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cache
}
