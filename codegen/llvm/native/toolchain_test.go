package native

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestToolchainVersion: the toolchain found is one LLVM release from 14
// to 19, the one LOOM_LLVM names when it names one.
func TestToolchainVersion(t *testing.T) {
	tc, err := FindToolchain()
	if err != nil {
		t.Skipf("no LLVM toolchain to build with: %v", err)
	}
	if tc.Version < MinLLVM || tc.Version > MaxLLVM {
		t.Errorf("LLVM %d found", tc.Version)
	}
	if n, err := strconv.Atoi(os.Getenv(LLVMEnv)); err == nil && tc.Version != n {
		t.Errorf("%s=%d, but the toolchain is LLVM %d (%s)", LLVMEnv, n, tc.Version, tc.Opt)
	}
}

// TestToolchainRefusals: a directory without opt, an LLVM outside 14 to
// 19 and opt and llc of two releases are refused, each saying what it
// found; opt and llc of one supported release in a directory are taken.
func TestToolchainRefusals(t *testing.T) {
	fake := func(dir, tool, version string) {
		t.Helper()
		script := "#!/bin/sh\necho 'LLVM (http://llvm.org/):'\necho '  LLVM version " + version + "'\n"
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	if _, _, err := findLLVM(empty); !errors.Is(err, ErrToolMissing) || !strings.Contains(err.Error(), LLVMEnv+"="+empty) {
		t.Errorf("a directory without opt: %v", err)
	}
	for _, c := range []struct{ opt, llc, want string }{
		{"12.0.1", "12.0.1", "is LLVM 12; loom builds with LLVM 14 to 19"},
		{"20.1.0", "20.1.0", "is LLVM 20; loom builds with LLVM 14 to 19"},
		{"19.1.7", "14.0.6", "is LLVM 19 but"},
		{"16.0.6", "16.0.6", ""},
	} {
		dir := t.TempDir()
		fake(dir, "opt", c.opt)
		fake(dir, "llc", c.llc)
		opt, llc, err := findLLVM(dir)
		if err != nil {
			t.Fatal(err)
		}
		v, err := llvmVersion(opt, llc)
		switch {
		case c.want == "" && (err != nil || v != 16):
			t.Errorf("opt %s, llc %s: %d, %v; want LLVM 16", c.opt, c.llc, v, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("opt %s, llc %s: %d, %v; want an error saying %q", c.opt, c.llc, v, err, c.want)
		}
	}
}

// newestLLVMTests are the tests TestNewestLLVM runs again (every one with
// -long): those that build the IR's every kind of statement, access and
// intrinsic (the corpora of functions, schedules and fused kernels,
// vector widths, masked and strided loads, gathers, math, the C ABI, an
// error's IR line), not those of the cache, the runtime's threads or
// poly's work on many-piece accesses, which do not depend on LLVM. The
// rerun is short (-test.short, but not with -long): the tests whose cases
// repeat one kind of IR at every vector width, option or type run each
// case once, at one width, option or type in turn (see rerunSubset), so
// that every kind of IR is still built by LLVM 19 and checked against the
// interpreter, in a third of the kernels.
const newestLLVMTests = "^(TestCABI|TestWorkloads|TestASTGoldens|TestScheduleGoldens|TestFusionGoldens|TestHandSchedules|TestRandomSchedules|TestVectorWidths|TestNestedParallel|TestCastOfIndexProductWraps|TestVectorDivModOfRamps|TestMergeHeadsLoadsRows|TestLLVMErrorShowsIRLine|TestFusedLoopAccesses|TestGatherTwoIndices|TestGuardedLoads|TestMathIntrinsics|TestMinMax|TestBlockAroundNest|TestStridedLoads|TestToolchainVersion|TestWorkerMatchesOptAndLLC|TestWorkerErrors)$"

// rerunSubset reports whether a test that checks each of its cases at
// every vector width (or option, or type) checks each case at only one
// of them, the i-th case at choices[i%len(choices)]: in a -test.short
// run, which is what TestNewestLLVM's rerun under LLVM 19 is, so that
// every case and every width is still built, in fewer kernels.
func rerunSubset() bool { return testing.Short() && !*long }

// pick returns choices, or under rerunSubset only the i-th case's one.
func pick[T any](i int, choices []T) []T {
	if !rerunSubset() {
		return choices
	}
	return choices[i%len(choices) : i%len(choices)+1]
}

var long = flag.Bool("long", false, "TestNewestLLVM runs every test of the package again, not newestLLVMTests")

// TestNewestLLVM runs this package's tests that build IR (newestLLVMTests;
// all of them with -long) again with the newest LLVM loom supports
// (LOOM_LLVM=19), when it is installed and this run builds with another:
// the IR must stay good for LLVM 14 to 19 (opaque pointers from 15 on).
// It runs inside go test's own run, beside the other packages, rather
// than after them. The child runs with -test.short (rerunSubset) unless
// this run has -long, which reruns every test in full.
func TestNewestLLVM(t *testing.T) {
	if os.Getenv(LLVMEnv) != "" {
		t.Skipf("%s chooses the LLVM of this run", LLVMEnv)
	}
	tc, err := FindToolchain()
	if err != nil {
		t.Skipf("no LLVM toolchain to build with: %v", err)
	}
	if tc.Version == MaxLLVM {
		t.Skipf("this run builds with LLVM %d", MaxLLVM)
	}
	if _, _, err := findLLVM(strconv.Itoa(MaxLLVM)); err != nil {
		t.Skipf("LLVM %d is not installed (make tools installs it): %v", MaxLLVM, err)
	}
	args := []string{"-test.count=1", "-test.skip=^TestNewestLLVM$", "-test.run=" + newestLLVMTests, "-test.short"}
	if *long {
		args = []string{"-test.count=1", "-test.skip=^TestNewestLLVM$", "-test.run=."}
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), LLVMEnv+"="+strconv.Itoa(MaxLLVM), "LOOM_CACHE_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the tests with %s=%d: %v\n%s", LLVMEnv, MaxLLVM, err, out)
	}
}
