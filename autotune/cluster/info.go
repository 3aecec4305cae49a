package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// WorkerInfo is what a worker announces of itself and its machine.
type WorkerInfo struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	Host   string `json:"host"`
	// Arch is Go's name of the architecture, CPU the model as
	// /proc/cpuinfo gives it, Features its feature flags, VectorBits the
	// widest vectors loom uses there.
	Arch       string          `json:"arch"`
	CPU        string          `json:"cpu"`
	Features   string          `json:"features,omitempty"`
	VectorBits int             `json:"vector_bits"`
	Caches     autotune.Caches `json:"caches"`
	// Cores is how many physical cores the machine has (0: unknown),
	// Threads how many hardware threads; Builds how many builds the
	// worker runs at once.
	Cores   int `json:"cores"`
	Threads int `json:"threads"`
	Builds  int `json:"builds"`
	// GPUs are the NVIDIA GPUs the driver lists, by bus ID.
	GPUs    []string  `json:"gpus,omitempty"`
	Version int       `json:"version"`
	Started time.Time `json:"started"`
	Done    int       `json:"done"`
}

func (w *Worker) info() WorkerInfo {
	return WorkerInfo{
		Name: w.Name, Target: w.Target, Host: hostname(), Arch: runtime.GOARCH,
		CPU: native.HostCPU(), Features: native.HostCPUFlags(), VectorBits: llvm.Host().VectorBits(),
		Caches: autotune.HostCaches(), Cores: physicalCores(), Threads: runtime.NumCPU(), Builds: w.Builds,
		GPUs: nvidiaGPUs(), Version: Version, Started: time.Now().UTC(),
	}
}

// physicalCores counts the distinct (physical id, core id) pairs of
// /proc/cpuinfo; 0 where it does not say.
func physicalCores() int {
	data, _ := os.ReadFile("/proc/cpuinfo")
	seen := map[string]bool{}
	phys := ""
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "physical id":
			phys = strings.TrimSpace(v)
		case "core id":
			seen[phys+"/"+strings.TrimSpace(v)] = true
		}
	}
	return len(seen)
}

// nvidiaGPUs lists the GPUs the NVIDIA driver knows (none without it).
func nvidiaGPUs() []string {
	entries, _ := os.ReadDir("/proc/driver/nvidia/gpus")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Workers returns the workers that announced themselves within the last
// half minute, by name.
func Workers(ctx context.Context, js jetstream.JetStream) ([]WorkerInfo, error) {
	kv, err := js.KeyValue(ctx, workerBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []WorkerInfo
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if err != nil {
			continue // expired meanwhile
		}
		var info WorkerInfo
		if json.Unmarshal(e.Value(), &info) == nil {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// WaitForWorker returns the announcement of a worker of target, waiting
// for one while ctx lasts.
func WaitForWorker(ctx context.Context, nc *nats.Conn, target string) (WorkerInfo, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return WorkerInfo{}, err
	}
	for {
		ws, err := Workers(ctx, js)
		if err != nil {
			return WorkerInfo{}, err
		}
		for _, w := range ws {
			if w.Target == target {
				return w, nil
			}
		}
		select {
		case <-ctx.Done():
			return WorkerInfo{}, fmt.Errorf("cluster: no worker of target %s has announced itself", target)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
