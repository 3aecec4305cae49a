package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// suiteLine is what loom bench -suite prints per case: one JSON line.
type suiteLine struct {
	Case     string    `json:"case"`
	Kernels  int       `json:"kernels"`
	Threads  int       `json:"threads"`
	Trials   int       `json:"trials"` // per kernel
	Failed   int       `json:"failed"` // trials that failed, over the kernels
	Distinct int       `json:"distinct"`
	LoomMs   float64   `json:"loom_ms"` // the sum of the kernels' best medians
	KernelMs []float64 `json:"kernel_ms"`
	// OneDNNMs is the same computation's time with oneDNN, measured in
	// the same run; null until a oneDNN harness is given (-onednn).
	OneDNNMs *float64 `json:"onednn_ms"`
	Ratio    *float64 `json:"ratio"` // onednn_ms / loom_ms: above 1 is faster than oneDNN
	TuneS    float64  `json:"tune_s"`
	Error    string   `json:"error,omitempty"`
}

// runSuite tunes every graph of dir (whose file name matches the cases
// pattern) and prints one JSON line per case.
func runSuite(dir, cases string, threads, trials int, dbPath string, stdout, stderr io.Writer) int {
	re, err := regexp.Compile(cases)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: -cases: %v\n", err)
		return 2
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		fmt.Fprintf(stderr, "loom bench: -suite %s: no graph files (NAME.json) there\n", dir)
		return 1
	}
	sort.Strings(files)
	t, err := newCPUTuner(threads, trials, 1, &dbPath, 6, time.Minute)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	status := 0
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if !re.MatchString(name) {
			continue
		}
		if ctx.Err() != nil {
			return 130
		}
		line := suiteCase(ctx, t, file, name)
		if line.Error != "" {
			status = 1
		}
		data, _ := json.Marshal(line)
		fmt.Fprintln(stdout, string(data))
	}
	return status
}

// suiteCase tunes the kernels of one graph.
func suiteCase(ctx context.Context, t *tuner, file, name string) suiteLine {
	line := suiteLine{Case: name, Threads: t.threads, Trials: t.opts.Trials}
	begin := time.Now()
	defer func() { line.TuneS = time.Since(begin).Seconds() }()
	src := source{graph: file}
	jobs, err := src.jobs()
	if err != nil {
		line.Error = err.Error()
		return line
	}
	line.Kernels = len(jobs)
	for _, j := range jobs {
		sum, _, err := t.tune(ctx, j)
		if err != nil {
			line.Error = fmt.Sprintf("%s: %v", j.Name, err)
			return line
		}
		line.Failed += sum.Failed
		line.Distinct += sum.Distinct
		line.KernelMs = append(line.KernelMs, sum.BestMs)
		line.LoomMs += sum.BestMs
	}
	line.TuneS = time.Since(begin).Seconds()
	return line
}
