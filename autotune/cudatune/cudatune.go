// Package cudatune lets the tuner measure on NVIDIA GPUs. Importing it
// registers CUDA's first GPU as the device of the target "cuda"
// (autotune.RegisterDevice), which a ProcessRunner with Target "cuda"
// measures on; Builder lowers the candidates to CUDA C in the tuning
// process, so that a schedule the CUDA writer refuses fails at once, with
// its reason.
//
// A program that tunes only for its CPU does not import this package, and
// links no GPU back end.
//
// The workers of a ProcessRunner are a program that imports this package
// and serves autotune.ServeWorker after its initialization (`loom
// worker`): a device package registers itself after package autotune is
// initialized, so autotune's own worker start (autotune.WorkerEnv, which
// Local uses) measures on the CPU only.
package cudatune

import (
	"context"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/cuda"
)

// Target is the name of CUDA's target (ProcessRunner.Target).
const Target = "cuda"

func init() {
	autotune.RegisterDevice(Target, func() (autotune.Device, error) {
		dev, err := cuda.Open()
		if err != nil {
			return nil, err
		}
		return device{dev}, nil
	})
}

// Builder lowers candidates to CUDA C for Arch (cuda.Options).
type Builder struct {
	Arch string
}

func (b *Builder) Build(ctx context.Context, task *autotune.Task, cands []*autotune.Candidate) []autotune.BuildResult {
	out := make([]autotune.BuildResult, len(cands))
	for i, c := range cands {
		if ctx.Err() != nil {
			out[i].Err = ctx.Err()
			continue
		}
		m, err := cuda.Lower(c.Func, cuda.Options{Arch: b.Arch})
		out[i] = autotune.BuildResult{Artifact: m, Err: err}
	}
	return out
}

// device is a CUDA device as the tuner's workers use it.
type device struct{ dev *cuda.Device }

func (d device) Load(f *ast.Func) (autotune.DeviceKernel, error) {
	m, err := cuda.Lower(f, cuda.Options{Arch: d.dev.Arch()})
	if err != nil {
		return nil, err
	}
	p, err := d.dev.Compile(m)
	if err != nil {
		return nil, err
	}
	return program{p}, nil
}

type program struct{ p *cuda.Program }

func (p program) Bind(sizes map[string]int64, args map[string]any) (autotune.DeviceCall, error) {
	c, err := p.p.Bind(sizes, args)
	if err != nil {
		return nil, err
	}
	return call{c}, nil
}

func (p program) Close() error { return p.p.Close() }

type call struct{ c *cuda.Call }

func (c call) Run() error {
	if err := c.c.Launch(); err != nil {
		return err
	}
	return c.c.Read()
}

func (c call) Time(reps int) (float64, error) { return c.c.Time(reps) }
func (c call) Release()                       { c.c.Release() }
