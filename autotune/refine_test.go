package autotune

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/schedule"
)

// laneLover scores a schedule by its vector lanes feature alone: a model
// whose preference is known.
type laneLover struct{}

func (laneLover) Predict(x []float64) float64   { return x[3] }
func (laneLover) Update([][]float64, []float64) {}

// TestRefine: Refine keeps the candidate the model scores highest (at
// least the default's score), ties going to the default, so that an
// empty model returns the default itself; the refined schedule of each
// case computes what the interpreter does.
func TestRefine(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	tg := Target{VectorLanes: llvm.Host().VectorBits() / 32, Threads: 2}
	n := 0
	for _, c := range defaultCases(t) {
		// Every eighth case, every fourth with -long (the default of
		// each is checked by TestDefaultMatchesInterpreter).
		if n++; !*long && n%8 != 0 || n%4 != 0 {
			continue
		}
		r, err := Refine(c.f, tg, RefineOptions{Candidates: 6, Model: laneLover{}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Score < r.DefaultScore || r.Ranked < 1 || r.Ranked > 7 {
			t.Fatalf("%s: score %g below the default's %g, or %d ranked", c.name, r.Score, r.DefaultScore, r.Ranked)
		}
		matchesInterpreter(t, cache, c.name+" (refined)", c.f, r.Schedule, c.sizes, c.args)
		if n == 8 {
			empty, err := Refine(c.f, tg, RefineOptions{Candidates: 4, Model: NewRidgeModel()})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			d, _ := Default(c.f, tg)
			if !empty.FromDefault || empty.Schedule.Trace().String() != d.Trace().String() {
				t.Fatalf("%s: a model that scores everything 0 did not keep the default", c.name)
			}
		}
	}
}

// TestModelJSON: a fitted model written as JSON predicts the same once
// read back; a model of another features version or of the wrong
// length is refused; the shipped model loads.
func TestModelJSON(t *testing.T) {
	m := NewRidgeModel()
	var xs [][]float64
	var ys []float64
	for i := range 20 {
		x := make([]float64, numFeatures)
		for k := range x {
			x[k] = math.Sin(float64(i*numFeatures + k))
		}
		xs = append(xs, x)
		ys = append(ys, 2*x[1]-x[5])
	}
	m.Update(xs, ys)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back RidgeModel
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		if a, b := m.Predict(x), back.Predict(x); a != b {
			t.Fatalf("prediction %g after the round trip, %g before", b, a)
		}
	}
	for _, bad := range []string{
		`{"features_version": 99, "lambda": 1}`,
		`{"features_version": 1, "weights": [1, 2], "mean": [0, 0], "scale": [1, 1]}`,
		`{"features_version": "x"}`,
	} {
		if err := json.Unmarshal([]byte(bad), new(RidgeModel)); err == nil {
			t.Errorf("%s: read without an error", bad)
		}
	}
	if DefaultModel() == nil {
		t.Fatal("no shipped model")
	}
}

// TestTrainModel: records are scored against the fastest of their own
// function, shape and target, so that a feature that marks the faster
// schedule of every function, however large the functions, gets a
// positive weight; records without features, or of another features
// version, or failed, are left out. ModelFromDatabase falls back to the
// shipped model below 64 records.
func TestTrainModel(t *testing.T) {
	var records []*Record
	for w := range 10 {
		for i := range 8 {
			f := make([]float64, numFeatures)
			f[3] = float64(i % 2)   // vectorized or not
			f[1] = float64(w*3 + i) // noise: a size
			median := math.Pow(10, float64(w)) * (1 + float64(1-i%2))
			records = append(records, &Record{Workload: string(rune('a' + w)), Target: "t", Median: median, Features: f, FeaturesVersion: FeaturesVersion, Trace: &schedule.Trace{}})
		}
	}
	records = append(records,
		&Record{Workload: "z", Target: "t", Median: 1, Features: make([]float64, numFeatures)},                                                   // no version
		&Record{Workload: "z", Target: "t", Median: 1, FeaturesVersion: FeaturesVersion},                                                         // no features
		&Record{Workload: "z", Target: "t", Median: 1, Error: "crash", Features: make([]float64, numFeatures), FeaturesVersion: FeaturesVersion}) // failed
	m, n := TrainModel(records)
	if n != 80 {
		t.Fatalf("learned from %d records, want 80", n)
	}
	fast, slow := make([]float64, numFeatures), make([]float64, numFeatures)
	fast[3] = 1
	if m.Predict(fast) <= m.Predict(slow) {
		t.Errorf("the model does not prefer the vectorized schedule: %g vs %g", m.Predict(fast), m.Predict(slow))
	}
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records[:40] {
		db.Append(r)
	}
	got, n, err := ModelFromDatabase(db, "t")
	if err != nil || n != 40 {
		t.Fatalf("ModelFromDatabase: %d records, %v", n, err)
	}
	if a, _ := json.Marshal(got); !strings.Contains(string(a), `"features_version":1`) || string(a) != mustJSON(t, DefaultModel()) {
		t.Errorf("below 64 records the model is not the shipped one")
	}
	for _, r := range records[40:80] {
		db.Append(r)
	}
	if _, n, err := ModelFromDatabase(db, "t"); err != nil || n != 80 {
		t.Errorf("ModelFromDatabase: %d records, %v", n, err)
	}
	if _, n, _ := ModelFromDatabase(db, "another"); n != 0 {
		t.Errorf("another target's model learned from %d records", n)
	}
}

func mustJSON(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// FuzzModelJSON: a model file is user data: whatever it holds, reading it
// gives a model that predicts, or an error, never a panic.
func FuzzModelJSON(f *testing.F) {
	f.Add(string(defaultModelJSON))
	f.Add(`{"features_version": 1, "lambda": 1}`)
	f.Add(`{"features_version": 1, "weights": [1], "mean": [], "scale": null}`)
	f.Fuzz(func(t *testing.T, data string) {
		var m RidgeModel
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			return
		}
		m.Predict(make([]float64, numFeatures))
		if _, err := json.Marshal(&m); err != nil {
			t.Errorf("a model read from %q does not write back: %v", data, err)
		}
	})
}

// TestModelWarmStart: a model read from JSON learns on from its fit: two
// new records (too few for a fit of their own) leave its ranking of other
// points as it was, and many records of another law move it to theirs.
func TestModelWarmStart(t *testing.T) {
	point := func(i int) []float64 {
		x := make([]float64, numFeatures)
		for k := range x {
			x[k] = math.Sin(float64(i*numFeatures + k))
		}
		return x
	}
	fit := func(law func([]float64) float64, from, n int) ([][]float64, []float64) {
		var xs [][]float64
		var ys []float64
		for i := from; i < from+n; i++ {
			xs = append(xs, point(i))
			ys = append(ys, law(point(i)))
		}
		return xs, ys
	}
	old := func(x []float64) float64 { return 2*x[1] - x[5] }
	m := NewRidgeModel()
	m.Update(fit(old, 0, 40))
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// Ranks: the share of pairs of test points a model orders as law does.
	agree := func(m *RidgeModel, law func([]float64) float64) float64 {
		same, all := 0, 0
		for i := 100; i < 130; i++ {
			for j := i + 1; j < 130; j++ {
				all++
				if (m.Predict(point(i)) < m.Predict(point(j))) == (law(point(i)) < law(point(j))) {
					same++
				}
			}
		}
		return float64(same) / float64(all)
	}
	warm := NewRidgeModel()
	if err := json.Unmarshal(data, warm); err != nil {
		t.Fatal(err)
	}
	warm.Update(fit(old, 40, 6))
	if a := agree(warm, old); a < 0.9 {
		t.Errorf("after six records the warm model orders %.0f%% of pairs as its fit did, want 90%%", 100*a)
	}
	newLaw := func(x []float64) float64 { return -3*x[2] + x[7] }
	warm.Update(fit(newLaw, 200, 400))
	if a := agree(warm, newLaw); a < 0.9 {
		t.Errorf("after 400 records of another law the warm model orders %.0f%% of pairs as they do, want 90%%", 100*a)
	}
	var back struct{ Trained int }
	data, _ = json.Marshal(warm)
	json.Unmarshal(data, &back)
	if back.Trained != 40+6+400 {
		t.Errorf("the warm model says it was trained on %d records, want 446", back.Trained)
	}
}

// TestRidgeSolve: the solution satisfies its normal equations, toward
// zero and toward a prior; a singular system without λ is refused.
func TestRidgeSolve(t *testing.T) {
	var rows [][]float64
	var y []float64
	for i := range 50 {
		r := make([]float64, 6)
		for k := range r {
			r[k] = math.Sin(float64(7*i + 3*k + 1))
		}
		rows = append(rows, r)
		y = append(y, math.Cos(float64(i)))
	}
	for _, w0 := range [][]float64{nil, {1, -2, 3, 0.5, 0, 4}} {
		const lambda = 0.7
		w, ok := ridgeSolve(rows, y, lambda, w0)
		if !ok {
			t.Fatal("no solution")
		}
		for k := range w {
			// Row k of (XᵀX + λI) w - Xᵀy - λ w0.
			g := lambda * w[k]
			if w0 != nil {
				g -= lambda * w0[k]
			}
			for i, r := range rows {
				dot := 0.0
				for l := range r {
					dot += r[l] * w[l]
				}
				g += r[k] * (dot - y[i])
			}
			if math.Abs(g) > 1e-9 {
				t.Errorf("prior %v: residual %g in row %d", w0, g, k)
			}
		}
	}
	same := [][]float64{{1, 1}, {2, 2}, {3, 3}}
	if _, ok := ridgeSolve(same, []float64{1, 2, 3}, 0, nil); ok {
		t.Error("dependent columns without λ: solved")
	}
}
