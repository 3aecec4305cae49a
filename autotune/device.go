package autotune

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/loom-go/loom/ast"
)

// A Device is an accelerator a worker measures candidates on (a GPU),
// as the package that generates its code opens it. The tuner itself knows
// only this interface, so a program that tunes for the CPU links no GPU
// back end: package autotune/cudatune registers CUDA's devices under the
// target "cuda" (RegisterDevice), and a program that tunes for a GPU
// imports it.
type Device interface {
	// Load compiles the scheduled function f for the device.
	Load(f *ast.Func) (DeviceKernel, error)
}

// A DeviceKernel is a function compiled for a Device.
type DeviceKernel interface {
	// Bind copies args (data as ast.Interpret takes it) to the device
	// for runs at sizes.
	Bind(sizes map[string]int64, args map[string]any) (DeviceCall, error)
	Close() error
}

// A DeviceCall is a kernel bound to its data on the device.
type DeviceCall interface {
	// Run runs the kernel once and copies its outputs back into the
	// slices Bind was given.
	Run() error
	// Time runs the kernel reps times, the data kept on the device, and
	// returns the seconds of one run, timed on the device.
	Time(reps int) (float64, error)
	Release()
}

var devices struct {
	sync.Mutex
	open map[string]func() (Device, error)
}

// RegisterDevice makes open the way a worker of this program opens the
// device of target (ProcessRunner.Target): the first device of its kind
// on the machine, or an error saying why there is none. A target
// registered twice is a programming error.
func RegisterDevice(target string, open func() (Device, error)) {
	devices.Lock()
	defer devices.Unlock()
	if devices.open == nil {
		devices.open = map[string]func() (Device, error){}
	}
	if _, dup := devices.open[target]; dup || target == "" {
		panic(fmt.Sprintf("autotune.RegisterDevice: target %q registered twice or empty", target))
	}
	devices.open[target] = open
}

// openDevice opens target's device, or says which package registers it.
func openDevice(target string) (Device, error) {
	devices.Lock()
	open := devices.open[target]
	var have []string
	for t := range devices.open {
		have = append(have, t)
	}
	devices.Unlock()
	if open == nil {
		slices.Sort(have)
		hint := ""
		if target == targetCUDA {
			hint = " (import github.com/loom-go/loom/autotune/cudatune)"
		}
		return nil, fmt.Errorf("no device of target %q is linked into this program%s; it has %s", target, hint, orNone(have))
	}
	return open()
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
