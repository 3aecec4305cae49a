// Package gputest runs a CUDA module for a test: on this machine's GPU
// when it has one, else on the CPU in package cudaemu's emulation. The
// tests of codegen/cuda and autotune check their kernels against the
// interpreter through it, so the same tests that run everywhere on the
// emulation run on the hardware on a machine with an NVIDIA GPU
// (tools/gpucheck runs them there).
//
// A process whose environment names a stand-in driver (cuda.DriverEnv)
// is a test of the launcher on the stand-in, not a GPU: it runs
// everything on the emulation, as a machine without a GPU does.
package gputest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/cudaemu"
)

// Device returns this machine's GPU, or an error when it has none (or
// when the driver is the stand-in), once per process.
var Device = sync.OnceValues(func() (*cuda.Device, error) {
	if os.Getenv(cuda.DriverEnv) != "" {
		return nil, errors.New("gputest: the driver is the stand-in of $" + cuda.DriverEnv)
	}
	return cuda.Open()
})

// OnGPU says whether Run and RunEach run on a GPU.
func OnGPU() bool {
	_, err := Device()
	return err == nil
}

// Run runs m once at sizes on args (read, then written back), as
// cudaemu.Run does.
func Run(ctx context.Context, m *cuda.Module, sizes map[string]int64, args map[string]any) error {
	return RunEach(ctx, m, []cudaemu.Binding{{Sizes: sizes, Args: args}})
}

// RunEach runs m at each binding in turn, as cudaemu.RunEach does: on
// the GPU, from one compile, each binding's parameters copied to the
// device, the kernels launched, and the parameters copied back.
func RunEach(ctx context.Context, m *cuda.Module, runs []cudaemu.Binding) error {
	dev, err := Device()
	if err != nil {
		return cudaemu.RunEach(ctx, m, runs)
	}
	p, err := dev.Compile(m)
	if err != nil {
		return fmt.Errorf("on the GPU (%s): %w", dev.Arch(), err)
	}
	defer p.Close()
	for _, r := range runs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.Run(r.Sizes, r.Args); err != nil {
			return fmt.Errorf("on the GPU (%s): %w", dev.Arch(), err)
		}
	}
	return nil
}
