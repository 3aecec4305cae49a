// Command standin builds the CPU stand-in for the CUDA driver and NVRTC
// (package cudaemu) in a directory and prints the library's path, for
// tools/gpucheck/run on a machine without a GPU:
//
//	lib=$(go run ./tools/gpucheck/standin DIR)
//	LOOM_CUDA_DRIVER=$lib LOOM_NVRTC=$lib loom tune -target cuda ...
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/loom-go/loom/internal/cudaemu"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: standin DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(os.Args[1], 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
	lib, err := cudaemu.BuildDriver(context.Background(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
	fmt.Println(lib)
}
