package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/autotune"
)

// TestTuneModelKilled: loom tune -model on the MLP, killed with SIGKILL
// after its first round (the default schedule of its first kernel), then
// run again with the same command: the
// second run continues the first (its trials count toward the same
// limit), the database holds every record of both, and no schedule is
// measured twice.
func TestTuneModelKilled(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db.jsonl")
	args := []string{"tune", "-graph", "../../testdata/fusion/mlp.json", "-size", "T=8", "-model", "-trials", "6", "-threads", "1", "-confirm", "0", "-db", db, "-q", "-json"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], args...)
	child.Env = append(os.Environ(), asLoomEnv+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	rounds := 0
	for lines.Scan() {
		var r modelRound
		if json.Unmarshal(lines.Bytes(), &r) == nil && r.Kind == "round" {
			rounds++
			break
		}
	}
	child.Process.Kill()
	child.Wait()
	if rounds == 0 {
		t.Fatal("the first run reported no round before it was killed")
	}
	first := loadRecords(t, db)
	if len(first) < 1 {
		t.Fatalf("after a round the database holds %d records", len(first))
	}
	code, stdout, stderr := runLoom(t, args...)
	if code != 0 {
		t.Fatalf("the second run: exit %d: %s\n%s", code, stderr, stdout)
	}
	all := loadRecords(t, db)
	if len(all) != 6 {
		t.Errorf("the database holds %d records after both runs, want the limit, 6 (%d from the first)", len(all), len(first))
	}
	measured := map[string]int{}
	for _, r := range all {
		k := r.Workload + " " + r.Trace.String()
		if measured[k]++; measured[k] == 2 {
			t.Errorf("%s: a schedule measured twice (trial %d of run %s):\n%s", r.Name, r.Trial, r.Run, r.Trace)
		}
	}
	// The records (filed under the cold-weights target where this
	// machine flushes the weights) serve the other commands.
	code, stdout2, stderr2 := runLoom(t, "lower", "-graph", "../../testdata/fusion/mlp.json", "-size", "T=8", "-threads", "1", "-db", db, "-json")
	if code != 0 || strings.Count(stdout2, `"schedule":`) != 3 {
		t.Errorf("lower -db on the tuned MLP: exit %d, want its three kernels: %s\n%s", code, stderr2, stdout2)
	}
	last := stdout[strings.LastIndex(strings.TrimSpace(stdout), "\n")+1:]
	var model modelRound
	if err := json.Unmarshal([]byte(last), &model); err != nil || model.Kind != "model" || len(model.Kernels) != 3 || model.EstimateMs <= 0 {
		t.Errorf("the last line is not the model's summary with its three kernels: %s (%v)", last, err)
	}
}

func loadRecords(t *testing.T, path string) []*autotune.Record {
	t.Helper()
	db, err := autotune.OpenDatabase(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := db.Load()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestTuneModelFlags: -budget and -model refuse buckets, and a negative
// budget is a usage error.
func TestTuneModelFlags(t *testing.T) {
	graph := "../../testdata/fusion/mlp.json"
	if code, _, errs := runLoom(t, "tune", "-graph", graph, "-size", "T=8", "-budget", "-1s"); code != 2 || !strings.Contains(errs, "-budget") {
		t.Errorf("-budget -1s: exit %d, %s", code, errs)
	}
	if code, _, errs := runLoom(t, "tune", "-graph", graph, "-size", "T=8", "-model", "-buckets", "T=1,8,32", "-db", filepath.Join(t.TempDir(), "db")); code != 1 || !strings.Contains(errs, "tune buckets without them") {
		t.Errorf("-model with -buckets: exit %d, %s", code, errs)
	}
}
