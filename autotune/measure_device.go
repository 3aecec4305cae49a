package autotune

import (
	"encoding/gob"
	"fmt"
	"os"
	"time"

	"github.com/loom-go/loom/ast"
)

// Measuring on a device (a GPU; see Device). The builder lowers each
// candidate to the device's code in the tuning process (for CUDA,
// cudatune.Builder), so that a schedule the code generator refuses fails
// at once with its reason; the runner (a ProcessRunner whose Target names
// the device) sends the function to a worker process, which compiles it
// (NVRTC for CUDA), runs it once on the first device, checks the outputs
// against the reference, and times it between device events, with the
// data kept on the device: no copies in the measured time. A kernel that faults leaves the GPU's
// context unusable, one more reason it runs in a process of its own.
//
// The reference is made on the same GPU, by the simplest kernel of the
// function (referenceKernel), and checked against the interpreter where
// the interpreter can afford it (the runner's interpretLimit): a CPU
// reference would need LLVM's tools on the GPU's machine, and the
// unscheduled function of a 4096³ gemm takes minutes on one core.

// targetCUDA is the worker's target name for the GPU.
const targetCUDA = "cuda"

// CUDATargetKey is the key of the records tuned for the GPU of
// compute capability arch ("sm_90").
func CUDATargetKey(arch string) string { return "cuda/" + arch }

// serveDevice is serve for a device: compile, run once and check, time.
func serveDevice(req *workRequest, f *ast.Func) *workResponse {
	fail := func(err error) *workResponse { return &workResponse{Err: err.Error()} }
	dev, err := openDevice(req.Target)
	if err != nil {
		return fail(err)
	}
	if req.Write {
		if err := writeDeviceReference(dev, req, f); err != nil {
			return fail(fmt.Errorf("the reference kernel: %w", err))
		}
		return &workResponse{}
	}
	k, err := dev.Load(f)
	if err != nil {
		return fail(err)
	}
	defer k.Close()
	args := req.args(f)
	call, err := k.Bind(req.Sizes, args)
	if err != nil {
		return fail(err)
	}
	defer call.Release()
	if err := call.Run(); err != nil {
		return fail(err)
	}
	resp := &workResponse{}
	if resp.MaxRelErr, err = checkOutputs(req, f, args); err != nil {
		return fail(err)
	}
	// The first run warmed the caches and the clocks up; one more says
	// whether the candidate is worth timing.
	first, err := call.Time(1)
	if err != nil {
		return fail(err)
	}
	if req.Cutoff > 0 && first > req.Cutoff {
		resp.Seconds = []float64{first}
		return resp
	}
	// Calibrate: runs per sample so that a sample takes MinSeconds.
	reps := 1
	if first > 0 {
		reps = max(1, min(1<<20, int(req.MinSeconds/first)))
	}
	timed := time.Now()
	for len(resp.Seconds) < req.Repeats && (len(resp.Seconds) == 0 || time.Since(timed) < timeBudget) {
		s, err := call.Time(reps)
		if err != nil {
			return fail(fmt.Errorf("timing: %w", err))
		}
		resp.Seconds = append(resp.Seconds, s)
	}
	return resp
}

// referenceKernel is f with each block's loops bound to blocks and
// threads by AutoBind alone: one thread per element of the spatial loops,
// each reduction run in its thread in the order written. It uses none of
// what the candidates' schedules add (tiles, shared-memory stages, Tensor
// Cores, cross-thread reductions, vector accesses), so it is wrong only
// where the CUDA writer's plainest path is, which the tests check against
// the interpreter.
func referenceKernel(f *ast.Func) (*ast.Func, error) {
	sp := Space{Rules: []Rule{AutoBind{ThreadCounts: []int64{256}}}, Target: CUDATarget()}
	s, err := sp.Decide(f)
	if err != nil {
		return nil, err
	}
	return s.Func(), nil
}

// runPlain runs f's reference kernel once on dev at sizes on args.
func runPlain(dev Device, f *ast.Func, sizes map[string]int64, args map[string]any) error {
	g, err := referenceKernel(f)
	if err != nil {
		return err
	}
	k, err := dev.Load(g)
	if err != nil {
		return err
	}
	defer k.Close()
	call, err := k.Bind(sizes, args)
	if err != nil {
		return err
	}
	defer call.Release()
	return call.Run()
}

// writeDeviceReference writes req's reference file from f's reference
// kernel run on dev. It has no variances of the rounding error: f's error
// twin keeps its terms in scratch cells that every iteration shares, so
// its plain kernel runs on one thread (hours for a 4096³ gemm); the
// outputs are checked in the 2-norm instead (normKey).
func writeDeviceReference(dev Device, req *workRequest, f *ast.Func) error {
	ref := req.args(f)
	if err := runPlain(dev, f, req.Sizes, ref); err != nil {
		return err
	}
	ref[normKey] = []bool{true}
	file, err := os.Create(req.Reference)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(file).Encode(ref); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
