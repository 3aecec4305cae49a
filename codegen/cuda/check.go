package cuda

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Checking without a GPU: clang compiles CUDA device code to PTX with no
// CUDA installation (-nocudainc -nocudalib) when the few names the CUDA
// headers would declare are declared some other way. CheckHeader does
// that through clang's NVPTX builtins; NVRTC, which declares them itself,
// never sees it.
//
//go:embed check.h
var CheckHeader string

// Clang is the compiler the PTX checks use, up to sm_86; ClangHopper
// compiles for sm_90 (Hopper) and later, which clang-14 does not know.
const (
	Clang       = "clang-14"
	ClangHopper = "clang-16"
)

// clangFor returns the clang the PTX check of arch uses and the PTX
// version it asks for.
func clangFor(arch string) (clang, ptx string) {
	var n int
	if _, err := fmt.Sscanf(arch, "sm_%d", &n); err == nil && n >= 90 {
		return ClangHopper, "+ptx78"
	}
	return Clang, "+ptx70"
}

// CompilePTX compiles m's source to PTX with clang (the checks without a
// GPU): the source must compile for m.Arch, its kernels must be there. It
// returns the PTX. Where clang is missing and CUDA is there (a GPU's
// machine), NVRTC compiles it instead.
func CompilePTX(m *Module) (string, error) {
	name, ptxVersion := clangFor(m.Arch)
	clang, err := exec.LookPath(name)
	if err != nil {
		// A GPU's machine has CUDA's own compiler instead (not the
		// stand-in of the tests, whose "PTX" is none).
		if os.Getenv(DriverEnv) == "" && os.Getenv(NVRTCEnv) == "" {
			if ptx, nerr := NVRTCPTX(m); !errors.Is(nerr, ErrNoCUDA) {
				if nerr != nil {
					return "", nerr
				}
				return ptx, hasEntries(m, ptx)
			}
		}
		return "", fmt.Errorf("cuda: %s not found (make tools installs it): %v", name, err)
	}
	dir, err := os.MkdirTemp("", "loom-ptx")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	header := filepath.Join(dir, "loom_check.h")
	src := filepath.Join(dir, m.Func.Name+".cu")
	out := filepath.Join(dir, m.Func.Name+".ptx")
	if err := os.WriteFile(header, []byte(CheckHeader), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(src, []byte(m.Source), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command(clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch="+m.Arch, "-nocudainc", "-nocudalib",
		"-Xclang", "-target-feature", "-Xclang", ptxVersion, "-O2", "-Wall", "-Werror", "-Wno-unknown-cuda-version", "-Wno-unused-variable",
		"-include", header, "-S", "-o", out, src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cuda: %s rejects the source of %s: %v\n%s", name, m.Func.Name, err, msg)
	}
	ptx, err := os.ReadFile(out)
	if err != nil {
		return "", err
	}
	return string(ptx), hasEntries(m, string(ptx))
}

// hasEntries says which of m's kernels ptx lacks an entry for, if any.
func hasEntries(m *Module, ptx string) error {
	for _, k := range m.Kernels {
		if !strings.Contains(ptx, ".entry "+k.Name) {
			return fmt.Errorf("cuda: the PTX of %s has no entry %s", m.Func.Name, k.Name)
		}
	}
	return nil
}
