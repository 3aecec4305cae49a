package autotune

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

func rec(workload string, median float64) *Record {
	return &Record{Workload: workload, Target: "t", Trace: &schedule.Trace{Insts: []schedule.Inst{{Kind: "get_block", Args: []schedule.Arg{schedule.Str("C")}, Outputs: []string{"b0"}}}}, Median: median, Version: "test"}
}

// TestDatabaseTruncated: a tuner killed in the middle of writing a record
// leaves a truncated last line; every earlier record loads, and the next
// append starts on a fresh line.
func TestDatabaseTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.jsonl")
	db, err := OpenDatabase(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := db.Append(rec("w", float64(5-i))); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(path)
	full := len(data)
	// Cut the file at every offset inside the last record.
	lastStart := full - 1
	for lastStart > 0 && data[lastStart-1] != '\n' {
		lastStart--
	}
	for cut := lastStart + 1; cut < full-1; cut += 7 {
		if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		recs, skipped, err := db.Load()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 4 || skipped != 1 {
			t.Fatalf("cut at %d: %d records, %d skipped; want 4 and 1", cut, len(recs), skipped)
		}
		if err := db.Append(rec("w", 0.5)); err != nil {
			t.Fatal(err)
		}
		recs, _, _ = db.Load()
		if len(recs) != 5 || recs[4].Median != 0.5 {
			t.Fatalf("cut at %d: the append after a truncated line was lost (%d records)", cut, len(recs))
		}
	}
	b, err := db.Best("w", nil, "t")
	if err != nil || b == nil || b.Median != 0.5 {
		t.Fatalf("best = %+v, %v", b, err)
	}
	if b, _ := db.Best("w", nil, "other target"); b != nil {
		t.Error("best found a record of another target")
	}
}

// TestDatabaseConcurrent: appends from many goroutines (and, through
// O_APPEND, processes) interleave whole.
func TestDatabaseConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.jsonl")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := OpenDatabase(path) // one handle each, as separate tuners would
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 25 {
				if err := db.Append(rec(fmt.Sprintf("w%d", g), float64(i+1))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	db, _ := OpenDatabase(path)
	recs, skipped, err := db.Load()
	if err != nil || skipped != 0 || len(recs) != 200 {
		t.Fatalf("%d records, %d skipped, %v; want 200 whole records", len(recs), skipped, err)
	}
}

// TestFailedRecordsNeverWin: a failed candidate is kept but is never the
// best.
func TestFailedRecordsNeverWin(t *testing.T) {
	bad := rec("w", 0.001)
	bad.Error = "wrong result: max relative error 1"
	if b := best([]*Record{bad, rec("w", 2)}, "w", "t"); b == nil || b.Median != 2 {
		t.Fatalf("best = %+v", b)
	}
}

// TestBestForSkipsRecordsThatNoLongerReplay: the fastest record names a
// block the function does not have (as a record of another loom version
// may); BestFor takes the next one, and says why when none replays.
func TestBestForSkipsRecordsThatNoLongerReplay(t *testing.T) {
	f := workload.Matmul(8, 8, 8).Func
	h := ast.Hash(f).String()
	stale := rec(h, 0.001)
	stale.Trace = &schedule.Trace{Insts: []schedule.Inst{{Kind: "get_block", Args: []schedule.Arg{schedule.Str("gone")}, Outputs: []string{"b0"}}}}
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Append(stale); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.BestFor(f, nil, "t"); err == nil || !strings.Contains(err.Error(), "does not replay") {
		t.Fatalf("only a stale record: err %v, want one saying it does not replay", err)
	}
	if err := db.Append(rec(h, 0.002)); err != nil {
		t.Fatal(err)
	}
	r, g, err := db.BestFor(f, nil, "t")
	if err != nil || r == nil || r.Median != 0.002 || g == nil {
		t.Fatalf("BestFor = %v, %v, %v; want the record of 0.002 s", r, g, err)
	}
}

// TestBestAcrossRuns: a run that confirmed its leaders speaks through its
// confirmed records alone (its first, lucky measurements and the leaders
// that failed when measured again are out); runs compare by median.
func TestBestAcrossRuns(t *testing.T) {
	rec := func(run string, trial, confirmed int, ms float64, failure string) *Record {
		r := &Record{Workload: "w", Target: "t", Trace: &schedule.Trace{}, Run: run, Trial: trial, Confirmed: confirmed, Error: failure}
		if failure == "" {
			r.Median = ms / 1e3
		}
		return r
	}
	recs := []*Record{
		rec("A", 1, 0, 1.0, ""), // lucky first measurement
		rec("A", 2, 0, 1.5, ""),
		rec("A", 1, 2, 2.0, ""),
		rec("B", 1, 0, 1.9, ""), // a run without confirmation
	}
	if b := best(recs, "w", "t"); b == nil || b.Run != "B" {
		t.Errorf("best %+v, want run B's 1.9 ms over run A's confirmed 2.0 ms and its unconfirmed ones", b)
	}
	recs = append(recs,
		rec("C", 1, 0, 0.5, ""),
		rec("C", 1, 2, 0, "confirm: differs from the reference"),
		rec("C", 2, 0, 1.7, ""),
	)
	if b := best(recs, "w", "t"); b == nil || b.Run != "C" || b.Trial != 2 {
		t.Errorf("best %+v, want run C's trial 2: its trial 1 failed confirmation, and no record of C was confirmed correct", b)
	}
}

// TestRecordsKeepTheirSizes: records of a function with symbolic sizes
// carry the sizes they were measured at; BestFor matches them exactly (a
// record at S=16 is not the best at S=128), BestAnySize takes one of
// another size only when asked, the sizes asked first, and Holdings
// lists what the database has.
func TestRecordsKeepTheirSizes(t *testing.T) {
	f := workload.Chain(2, 3, 16).Func
	h := ast.Hash(f).String()
	at := func(s1 int64, seconds float64) *Record {
		r := rec(h, seconds)
		r.Name, r.Sizes, r.Shape = "chain", map[string]int64{"S1": s1, "S2": 3}, fmt.Sprintf("%dx3x16", s1)
		return r
	}
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Record{at(16, 0.001), at(128, 0.05)} {
		if err := db.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	r, _, err := db.BestFor(f, map[string]int64{"S1": 128, "S2": 3}, "t")
	if err != nil || r == nil || r.Median != 0.05 {
		t.Fatalf("BestFor at S1=128 = %+v, %v; want the record measured at S1=128", r, err)
	}
	if r, _, err := db.BestFor(f, map[string]int64{"S1": 64, "S2": 3}, "t"); r != nil || err != nil {
		t.Fatalf("BestFor at S1=64 = %+v, %v; want none", r, err)
	}
	r, _, err = db.BestAnySize(f, "chain", map[string]int64{"S1": 64, "S2": 3}, "t")
	if err != nil || r == nil || r.Median != 0.001 {
		t.Fatalf("BestAnySize at S1=64 = %+v, %v; want the fastest of another size", r, err)
	}
	r, _, err = db.BestAnySize(f, "chain", map[string]int64{"S1": 128, "S2": 3}, "t")
	if err != nil || r == nil || r.Median != 0.05 {
		t.Fatalf("BestAnySize at S1=128 = %+v, %v; want the record at these sizes first", r, err)
	}
	have, err := db.Holdings("chain")
	if err != nil || len(have) != 2 || !strings.HasPrefix(have[0], "128x3x16 on t: 1 records") || !strings.HasPrefix(have[1], "16x3x16 on t") {
		t.Fatalf("Holdings = %q, %v", have, err)
	}
	// A record of the old format (no sizes) of a symbolic function is not
	// taken for any sizes.
	old := rec(h, 0.0001)
	if err := db.Append(old); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := db.BestFor(f, map[string]int64{"S1": 128, "S2": 3}, "t"); r == nil || r.Median != 0.05 {
		t.Fatalf("a record without sizes was taken: %+v", r)
	}
}
