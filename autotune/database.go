package autotune

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// Record is one measured candidate: which workload, on which target, the
// trace that schedules it (decisions included), and what running it gave.
type Record struct {
	Workload string `json:"workload"` // structural hash of the unscheduled function (ast.Hash)
	Name     string `json:"name"`     // the task's name, for people
	// Sizes are the values of the function's symbolic sizes it was
	// measured at (a function without any has none: its shape is part of
	// Workload); Shape says the same for people ("512x512x512").
	Sizes   map[string]int64 `json:"sizes,omitempty"`
	Shape   string           `json:"shape,omitempty"`
	Target  string           `json:"target"`            // the target's key (triple, CPU, features, threads)
	Machine string           `json:"machine,omitempty"` // the host name of the machine that measured it
	Trace   *schedule.Trace  `json:"trace"`
	// Seconds are the measured run times; Median and Spread (the
	// interquartile range over the median) summarize them.
	Seconds []float64 `json:"seconds,omitempty"`
	Median  float64   `json:"median,omitempty"`
	Spread  float64   `json:"spread,omitempty"`
	// Error says why a candidate failed (build error, crash, timeout,
	// wrong result); failed records are kept so a run can see them.
	Error   string    `json:"error,omitempty"`
	Version string    `json:"version"`
	Time    time.Time `json:"time"`
	// Run names the tuning run that measured the record (its start time
	// and seed), Trial its place in that run, from 1: a run's records in
	// trial order draw its tuning curve.
	Run   string `json:"run,omitempty"`
	Trial int    `json:"trial,omitempty"`
	// Job, for a record measured through a work queue (package
	// cluster), is the ID of the job that measured it: one record per
	// job, however often the job ran.
	Job string `json:"job,omitempty"`
	// Confirmed, when not 0, is the number of rounds in which the run
	// re-measured this trial's candidate among its leaders, after the
	// search (Options.Confirm): Seconds and Median are its fastest round,
	// or Error says why a round failed. Within its run a confirmed record
	// stands for the trial (see eligible).
	Confirmed int `json:"confirmed,omitempty"`
	// Features are the cost model's features of the measured function
	// at Sizes (see Features), version FeaturesVersion: what TrainModel
	// learns from, without the unscheduled function at hand.
	Features        []float64 `json:"features,omitempty"`
	FeaturesVersion int       `json:"features_version,omitempty"`
	// Bucket, on a record of a bucket's tuning (Task.Bucket), is the range
	// of each symbolic size its schedule was tuned for; Seconds are then
	// the geometric means over the bucket's measured sizes.
	Bucket map[string][2]int64 `json:"bucket,omitempty"`
}

// OK reports whether the record measured a correct kernel (false for
// none).
func (r *Record) OK() bool {
	return r != nil && r.Error == "" && r.Median > 0 && !math.IsInf(r.Median, 0)
}

// Database is an append-only file of records, one JSON object per line.
// Each record is written with a single write to a file opened for
// appending, so records of concurrent tuners interleave whole, and a
// tuner killed mid-write leaves at most a truncated last line, which
// reading skips; so is any other damage (see Damage), whatever follows it
// still read.
type Database struct {
	Path string
	// Warn, when not nil, is told of damage a Load skipped, once per
	// Database: one line saying what was skipped and kept.
	Warn func(msg string)

	mu     sync.Mutex
	warned sync.Once
}

// OpenDatabase returns the database at path, creating the file if
// needed (not its directory). A path that is not a regular file (a
// device, a pipe, a directory) is an error.
func OpenDatabase(path string) (*Database, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("autotune: open database: %w", err)
	}
	f.Close()
	return &Database{Path: path}, nil
}

// checkRegular returns an error when path exists and is not a regular
// file: reading a device (/dev/zero, /dev/urandom) would never end, and
// opening a pipe would wait for its other end.
func checkRegular(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil // not there: created, or the open says why
	}
	what := "not a regular file"
	if fi.IsDir() {
		what = "a directory"
	}
	return fmt.Errorf("autotune: database %s is %s; want a file of records (JSON lines)", path, what)
}

// Append writes r at the end of the database and syncs it to disk.
func (db *Database) Append(r *Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	db.mu.Lock()
	defer db.mu.Unlock()
	f, err := os.OpenFile(db.Path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("autotune: append to database: %w", err)
	}
	// A previous writer killed mid-line leaves no newline at the end:
	// start on a fresh line so this record stays whole.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		if !endsWithNewline(db.Path, fi.Size()) {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("autotune: append to database: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func endsWithNewline(path string, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return true
	}
	return b[0] == '\n'
}

// Load reads every record. What is not a record (a truncated last line,
// garbage, a NUL-filled tail a crash left) is skipped, and every record
// before and after it is kept (see Damage; Warn is told); skipped counts
// the lines that are not records. A database whose file is not there
// holds no records; one that is not a regular file is an error.
func (db *Database) Load() (records []*Record, skipped int, err error) {
	if err := checkRegular(db.Path); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(db.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, 0, nil
		}
		return nil, 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("autotune: database %s is not a regular file", db.Path)
	}
	recs, dmg, _, err := readRecords(f)
	if err != nil {
		return nil, 0, fmt.Errorf("autotune: read database %s: %w", db.Path, err)
	}
	if dmg.Damaged() && db.Warn != nil {
		db.warned.Do(func() { db.Warn(fmt.Sprintf("autotune: database %s: %s", db.Path, dmg)) })
	}
	return recs, dmg.Lines, nil
}

// Best returns the fastest correct record of a workload at sizes on a
// target (of those eligible: see eligible), or nil when there is none.
func (db *Database) Best(workload string, sizes map[string]int64, target string) (*Record, error) {
	recs, _, err := db.Load()
	if err != nil {
		return nil, err
	}
	var b *Record
	for _, r := range eligible(recs, workload, target) {
		if r.Bucket == nil && sameSizes(r.Sizes, sizes) && (b == nil || r.Median < b.Median) {
			b = r
		}
	}
	return b, nil
}

// BestFor returns the fastest correct record of f at sizes on a target
// (of those eligible: see eligible) that still replays on f, with the
// function it builds; nil when there is none. Records measured at other
// values of f's symbolic sizes do not count: their times say nothing of
// these sizes (see BestAnySize). A record made by another version of loom
// may not replay (a rule's decisions no longer fit): the next fastest is
// taken, and when none replays the error says why the fastest did not.
func (db *Database) BestFor(f *ast.Func, sizes map[string]int64, target string) (*Record, *ast.Func, error) {
	recs, _, err := db.Load()
	if err != nil {
		return nil, nil, err
	}
	var ok []*Record
	k := formsOf(f)
	for _, r := range k.eligible(recs, target) {
		if r.Bucket == nil && sameSizes(r.Sizes, sizes) {
			ok = append(ok, r)
		}
	}
	slices.SortStableFunc(ok, func(a, b *Record) int { return cmp.Compare(a.Median, b.Median) })
	return firstReplaying(k, ok, false)
}

// BestAnySize is BestFor for when no record at these sizes will do: it
// also takes records of f at other sizes, and records of the task called
// name (another shape of the same computation, a different function),
// those at the sizes asked first, then by speed, and returns the first
// whose trace replays on f. The record's times were measured at its own
// sizes (Record.Sizes, Record.Shape): time the function again.
func (db *Database) BestAnySize(f *ast.Func, name string, sizes map[string]int64, target string) (*Record, *ast.Func, error) {
	recs, _, err := db.Load()
	if err != nil {
		return nil, nil, err
	}
	k := formsOf(f)
	ok := k.eligible(recs, target)
	workloads := map[string]bool{}
	for _, r := range recs {
		if r.Name == name && !k.is(r.Workload) && r.Target == target {
			workloads[r.Workload] = true
		}
	}
	for w := range workloads {
		ok = append(ok, eligible(recs, w, target)...)
	}
	// A bucket's times are means over its sizes: not comparable.
	ok = slices.DeleteFunc(ok, func(r *Record) bool { return r.Bucket != nil })
	exact := func(r *Record) int {
		if k.is(r.Workload) && sameSizes(r.Sizes, sizes) {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(ok, func(a, b *Record) int {
		return cmp.Or(cmp.Compare(exact(a), exact(b)), cmp.Compare(a.Median, b.Median))
	})
	return firstReplaying(k, ok, true)
}

// BucketChoice is the schedule a bucket's tuning found best: the
// record and the function it builds.
type BucketChoice struct {
	Bucket map[string][2]int64
	Record *Record
	Func   *ast.Func
}

// Buckets returns, for each bucket f was tuned for on target (records of
// Task.Bucket), its fastest record that replays on f, neighbours whose
// schedules agree merged into one (mergeBuckets), the narrower buckets
// first (see compareBuckets). Buckets that overlap are all
// returned; a dispatcher takes the first that holds the sizes: the most
// specific. A bucket none of whose records replays on f (made by another
// version of loom) is left out: its sizes get the fallback.
func (db *Database) Buckets(f *ast.Func, target string) ([]BucketChoice, error) {
	recs, _, err := db.Load()
	if err != nil {
		return nil, err
	}
	groups := map[string][]*Record{}
	k := formsOf(f)
	for _, r := range k.eligible(recs, target) {
		if r.Bucket != nil {
			b := bucketKey(r.Bucket)
			groups[b] = append(groups[b], r)
		}
	}
	var out []BucketChoice
	for _, b := range slices.Sorted(maps.Keys(groups)) {
		g := groups[b]
		slices.SortStableFunc(g, func(a, b *Record) int { return cmp.Compare(a.Median, b.Median) })
		r, fn, err := firstReplaying(k, g, false)
		if err != nil || r == nil {
			continue // no record of it replays (another loom's): the bucket's sizes take the default
		}
		out = append(out, BucketChoice{Bucket: r.Bucket, Record: r, Func: fn})
	}
	out = mergeBuckets(out)
	slices.SortStableFunc(out, func(a, b BucketChoice) int { return compareBuckets(a.Bucket, b.Bucket) })
	return out, nil
}

// mergeBuckets merges neighbouring buckets of one size whose best
// schedules build the same function (a boundary the tuning found no use
// for): one bucket, one compiled kernel, the faster record's.
func mergeBuckets(in []BucketChoice) []BucketChoice {
	byLo := slices.Clone(in)
	slices.SortStableFunc(byLo, func(a, b BucketChoice) int {
		return cmp.Or(cmp.Compare(bucketKeyWithout(a.Bucket), bucketKeyWithout(b.Bucket)), compareLo(a.Bucket, b.Bucket))
	})
	var out []BucketChoice
	for _, c := range byLo {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if name, ok := adjacent(last.Bucket, c.Bucket); ok && ast.Hash(last.Func) == ast.Hash(c.Func) {
				merged := maps.Clone(last.Bucket)
				merged[name] = [2]int64{last.Bucket[name][0], c.Bucket[name][1]}
				rec := last.Record
				if c.Record.Median < rec.Median {
					rec = c.Record
				}
				*last = BucketChoice{Bucket: merged, Record: rec, Func: last.Func}
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// adjacent reports whether bucket b starts where a ends along one size,
// the size they both range over alone, and names it.
func adjacent(a, b map[string][2]int64) (string, bool) {
	if len(a) != 1 || len(b) != 1 {
		return "", false
	}
	for name, ra := range a {
		rb, ok := b[name]
		return name, ok && rb[0] == ra[1]+1
	}
	return "", false
}

// bucketKeyWithout names the sizes a bucket ranges over (not the ranges):
// buckets of the same sizes sort together.
func bucketKeyWithout(b map[string][2]int64) string {
	return strings.Join(slices.Sorted(maps.Keys(b)), ",")
}

// compareLo orders buckets by their ranges' lower bounds.
func compareLo(a, b map[string][2]int64) int {
	for _, name := range slices.Sorted(maps.Keys(a)) {
		if c := cmp.Compare(a[name][0], b[name][0]); c != 0 {
			return c
		}
	}
	return 0
}

// bucketKey names a bucket: its ranges in name order.
func bucketKey(b map[string][2]int64) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(b)) {
		parts = append(parts, fmt.Sprintf("%s=%d..%d", name, b[name][0], b[name][1]))
	}
	return strings.Join(parts, ",")
}

// compareBuckets orders buckets the narrower first (the sum of their
// ranges' widths), so that a dispatcher taking the first bucket that
// holds the sizes takes the most specific (a specialization for one size
// before the bucket around it); then by their ranges' bounds, the sizes
// in name order.
func compareBuckets(a, b map[string][2]int64) int {
	width := func(m map[string][2]int64) (w int64) {
		for _, r := range m {
			w += r[1] - r[0]
		}
		return w
	}
	if c := cmp.Compare(width(a), width(b)); c != 0 {
		return c
	}
	for _, name := range slices.Sorted(maps.Keys(a)) {
		if c := cmp.Or(cmp.Compare(a[name][0], b[name][0]), cmp.Compare(a[name][1], b[name][1])); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// InBucket reports whether every size the bucket ranges over is within
// its range (a size the bucket does not name may be anything).
func InBucket(b map[string][2]int64, sizes map[string]int64) bool {
	for name, r := range b {
		v, ok := sizes[name]
		if !ok || v < r[0] || v > r[1] {
			return false
		}
	}
	return true
}

// firstReplaying returns the first of recs (sorted fastest first) whose
// trace replays on its form of a function (see forms.apply); with
// anyWorkload, a record of another function replays its trace as it is.
func firstReplaying(k *forms, recs []*Record, anyWorkload bool) (*Record, *ast.Func, error) {
	var first error
	for _, r := range recs {
		// Recorded at other sizes (anyWorkload): its tilings are fitted
		// to these.
		g, err := k.apply(r, anyWorkload)
		if err == nil {
			return r, g, nil
		}
		if first == nil {
			first = fmt.Errorf("the fastest record (trial %d of run %q, loom %s) does not replay: %w", r.Trial, r.Run, r.Version, err)
		}
	}
	return nil, nil, first
}

// best returns the fastest eligible record of a workload on a target in
// recs, nil when there is none.
func best(recs []*Record, workload, target string) *Record {
	var b *Record
	for _, r := range eligible(recs, workload, target) {
		if b == nil || r.Median < b.Median {
			b = r
		}
	}
	return b
}

// sameSizes reports whether two sets of size values are the same (no
// sizes and an empty map are the same).
func sameSizes(a, b map[string]int64) bool {
	return maps.Equal(a, b) || len(a) == 0 && len(b) == 0
}

// Holdings describes what the database holds for the task called name:
// one line per shape (or sizes) and target, with the number of correct
// records and the best time. A user asking for a record that is not there
// learns what is.
func (db *Database) Holdings(name string) ([]string, error) {
	recs, _, err := db.Load()
	if err != nil {
		return nil, err
	}
	type key struct{ shape, target string }
	count := map[key]int{}
	fastest := map[key]float64{}
	for _, r := range recs {
		if r.Name != name || !r.OK() {
			continue
		}
		shape := r.Shape
		if shape == "" {
			shape = formatSizes(r.Sizes)
		}
		if shape == "" {
			shape = "workload " + r.Workload[:min(len(r.Workload), 12)]
		}
		k := key{shape, r.Target}
		if count[k] == 0 || r.Median < fastest[k] {
			fastest[k] = r.Median
		}
		count[k]++
	}
	var lines []string
	for k, n := range count {
		lines = append(lines, fmt.Sprintf("%s on %s: %d records, best %.3f ms", k.shape, k.target, n, fastest[k]*1e3))
	}
	sort.Strings(lines)
	return lines, nil
}

// formatSizes prints sizes as "S=16,T=8", by name.
func formatSizes(sizes map[string]int64) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(sizes)) {
		parts = append(parts, fmt.Sprintf("%s=%d", name, sizes[name]))
	}
	return strings.Join(parts, ",")
}

// eligible returns the correct records of a workload on a target that
// can be its best. A run that confirmed its leaders (Options.Confirm)
// speaks through its confirmed records alone: its first measurements of
// them may have been lucky, and a leader that failed when measured again
// is out, even where its first measurement succeeded.
func eligible(recs []*Record, workload, target string) []*Record {
	type trial struct {
		run string
		n   int
	}
	confirmed := map[string]bool{} // runs with a correct confirmed record
	failed := map[trial]bool{}     // trials that failed confirmation
	for _, r := range recs {
		if r.Workload != workload || r.Target != target || r.Confirmed == 0 {
			continue
		}
		if r.OK() {
			confirmed[r.Run] = true
		} else {
			failed[trial{r.Run, r.Trial}] = true
		}
	}
	var out []*Record
	for _, r := range recs {
		if r.Workload == workload && r.Target == target && r.OK() && !failed[trial{r.Run, r.Trial}] && (r.Confirmed > 0 || !confirmed[r.Run]) {
			out = append(out, r)
		}
	}
	return out
}

// Apply returns the function the record built: Schedule's.
func (r *Record) Apply(f *ast.Func) (*ast.Func, error) {
	return funcOf(r.Schedule(f))
}

// Schedule replays the record's trace on f, the unscheduled function it
// was tuned for, and returns the schedule: its function is the one the
// record built and measured, its trace the record's. A record of a
// function's canonical form (a model's tuning makes those: see
// DistinctTasks) schedules every function of that structure, under the
// function's own names (its trace renamed: schedule.Trace.Renamed). The
// trace is replayed up to its post-processing and finished anew (see
// Finish and Replay), which is the same for a record of this loom and
// completes the record of a loom that did not record the steps that
// follow the rules. opts are the replay's.
func (r *Record) Schedule(f *ast.Func, opts ...schedule.Option) (*schedule.Schedule, error) {
	return formsOf(f).schedule(r, false, opts...)
}

// Adapt is Schedule for a record made at other sizes of f, or for
// another function of the same computation (BestAnySize finds those): its
// decisions are fitted to f's sizes (schedule.AdaptDecisions). The
// record's times were measured at its own sizes.
func (r *Record) Adapt(f *ast.Func, opts ...schedule.Option) (*schedule.Schedule, error) {
	return formsOf(f).schedule(r, true, opts...)
}

// Replay replays trace t on f up to its post-processing (see
// schedule.Trace.WithoutPostproc) and finishes the schedule (Finish):
// for a trace of a candidate, the schedule the search built, with the
// same trace; for a trace edited by hand (another decision) or made by a
// loom that did not record the steps after the rules, the schedule the
// search would build of it.
func Replay(f *ast.Func, t *schedule.Trace, opts ...schedule.Option) (*schedule.Schedule, error) {
	s, err := schedule.Replay(f, t.WithoutPostproc(), nil, opts...)
	if err != nil {
		return nil, err
	}
	if err := Finish(s); err != nil {
		return nil, fmt.Errorf("autotune: finish: %w", err)
	}
	return s, nil
}
