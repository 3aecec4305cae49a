package autotune

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// RefineOptions say how Refine ranks candidates.
type RefineOptions struct {
	// Candidates is how many mutants of the default Refine scores beside
	// it (0: 32).
	Candidates int
	// Margin is how far above the default's score (a log of speed) a
	// candidate's must be to replace it (0: log 1.25, a predicted 1.25x).
	Margin float64
	// Model scores the candidates; nil: DefaultModel, the model loom
	// ships. ModelFromDatabase trains one on a tuning database.
	Model Model
	// Sizes are the values of f's symbolic sizes the features are taken
	// at; a symbol not given counts as 256.
	Sizes map[string]int64
	// Seed makes the samples; the same seed, the same candidates.
	Seed uint64
}

// Refined is what Refine chose and why.
type Refined struct {
	Schedule *schedule.Schedule
	// Score is the model's score of Schedule, DefaultScore the default's
	// (higher is faster); FromDefault reports that the default won.
	Score, DefaultScore float64
	FromDefault         bool
	// Ranked is how many candidates were scored, the default included
	// (samples the rules refused are not).
	Ranked int
}

// Refine is Default refined by the cost model, still without running
// anything: it scores the default and o.Candidates mutants of it (one
// decision of its trace changed, a tile size, a compute location, an
// unroll limit, as the search mutates) with the model on their features
// at o.Sizes, and keeps the best, but only when the model puts it at
// least o.Margin above the default: a model that ranks schedules of
// one function roughly (a ridge regression on a few features) should
// not trade a good heuristic for a guess. Ties and an empty model keep
// the default. Every candidate comes out of the schedule primitives'
// checks, as legal as the default.
func Refine(f *ast.Func, t Target, o RefineOptions) (*Refined, error) {
	base, err := Default(f, t)
	if err != nil {
		return nil, err
	}
	if o.Candidates <= 0 {
		o.Candidates = 32
	}
	if o.Model == nil {
		o.Model = DefaultModel()
	}
	if o.Margin == 0 {
		o.Margin = math.Log(1.25)
	}
	sizes := maps.Clone(o.Sizes)
	if sizes == nil {
		sizes = map[string]int64{}
	}
	for _, v := range f.Sizes {
		if _, ok := sizes[v.Name]; !ok {
			sizes[v.Name] = 256
		}
	}
	sp := &Space{Rules: DefaultRules(), Target: t}
	if t.GPU != nil {
		sp.Rules = GPURules()
	}
	task := &Task{Name: f.Name, Func: f, Sizes: sizes, Space: sp}
	first := candidate(task, base)
	best := &Refined{Schedule: base, Score: o.Model.Predict(first.Features), FromDefault: true, Ranked: 1}
	best.DefaultScore = best.Score
	seen := map[string]bool{first.Hash: true}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	for range 4 * o.Candidates {
		if best.Ranked > o.Candidates {
			break
		}
		m := mutate(task, first, rng)
		if m.c == nil || seen[m.c.Hash] {
			continue // refused by the primitives, or one already scored
		}
		seen[m.c.Hash] = true
		best.Ranked++
		if sc := o.Model.Predict(m.c.Features); sc > best.Score && sc >= best.DefaultScore+o.Margin {
			best.Schedule, best.Score, best.FromDefault = m.c.Sched, sc, false
		}
	}
	return best, nil
}

// TrainModel fits a RidgeModel to the records that carry features of the
// current FeaturesVersion, and returns it with the number of records it
// learned from. A record's score is its speed relative to the fastest
// record of the same function, shape and target (log(fastest/median)):
// the model learns which schedules of a function are faster than
// others, not which functions are large.
func TrainModel(records []*Record) (*RidgeModel, int) {
	groups := map[string][]*Record{}
	for _, r := range records {
		if r.OK() && r.FeaturesVersion == FeaturesVersion && len(r.Features) == numFeatures {
			k := r.Workload + "|" + r.Shape + "|" + fmt.Sprint(sortedSizes(r.Sizes)) + "|" + r.Target
			groups[k] = append(groups[k], r)
		}
	}
	var xs [][]float64
	var ys []float64
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		if len(g) < 2 {
			continue // nothing to compare it with
		}
		fastest := math.Inf(1)
		for _, r := range g {
			fastest = min(fastest, r.Median)
		}
		for _, r := range g {
			xs = append(xs, r.Features)
			ys = append(ys, math.Log(fastest/r.Median))
		}
	}
	m := NewRidgeModel()
	if len(xs) > 0 {
		m.Update(xs, ys)
	}
	return m, len(xs)
}

func sortedSizes(sizes map[string]int64) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		out = append(out, fmt.Sprintf("%s=%d", k, sizes[k]))
	}
	return out
}

// minTrained is how many records ModelFromDatabase needs to prefer a
// model of its own to the shipped one.
const minTrained = 64

// ModelFromDatabase returns a model trained on db's records of target
// (a TargetKey; "" for every target), with the number of records it
// learned from, or DefaultModel when db has fewer than 64 records with
// features to learn from (n then says how many it had).
func ModelFromDatabase(db *Database, target string) (m Model, n int, err error) {
	records, _, err := db.Load()
	if err != nil {
		return nil, 0, err
	}
	if target != "" {
		records = slices.DeleteFunc(records, func(r *Record) bool { return r.Target != target })
	}
	trained, n := TrainModel(records)
	if n < minTrained {
		return DefaultModel(), n, nil
	}
	return trained, n, nil
}

// defaultModelJSON is the shipped model: TrainModel on the records of
// tuning runs over the built-in workloads and fusion goldens (see
// tools/trainmodel), as RidgeModel's JSON.
//
//go:embed default_model.json
var defaultModelJSON []byte

// DefaultModel returns the model loom ships (a fresh copy: updating it
// changes no other).
func DefaultModel() *RidgeModel {
	m := NewRidgeModel()
	if err := json.Unmarshal(defaultModelJSON, m); err != nil {
		panic("autotune: the shipped model does not load: " + err.Error())
	}
	return m
}

// ridgeJSON is RidgeModel's JSON form: its fitted state, without the
// records it was fitted on.
type ridgeJSON struct {
	Features []string  `json:"features"` // the names of the features, in order (documentation)
	Version  int       `json:"features_version"`
	Trained  int       `json:"trained"` // records fitted on
	Lambda   float64   `json:"lambda"`
	Mean     []float64 `json:"mean"`
	Scale    []float64 `json:"scale"`
	Weights  []float64 `json:"weights"`
	Bias     float64   `json:"bias"`
}

// MarshalJSON writes the model's fitted state (weights, standardization,
// features version): enough to predict, not to refit with more records.
func (m *RidgeModel) MarshalJSON() ([]byte, error) {
	return json.Marshal(ridgeJSON{
		Features: featureNames[:], Version: FeaturesVersion, Trained: m.trainedOn(),
		Lambda: m.Lambda, Mean: m.mean, Scale: m.scale, Weights: m.w, Bias: m.bias,
	})
}

// UnmarshalJSON reads a model MarshalJSON wrote; a model of another
// features version, or of the wrong length, is an error.
func (m *RidgeModel) UnmarshalJSON(data []byte) error {
	var j ridgeJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	if j.Version != FeaturesVersion {
		return fmt.Errorf("autotune: a model of features version %d (this loom computes version %d)", j.Version, FeaturesVersion)
	}
	if j.Weights != nil && (len(j.Weights) != numFeatures || len(j.Mean) != numFeatures || len(j.Scale) != numFeatures) {
		return fmt.Errorf("autotune: a model of %d weights, %d means, %d scales (want %d each: %s)",
			len(j.Weights), len(j.Mean), len(j.Scale), numFeatures, strings.Join(featureNames[:], ", "))
	}
	*m = RidgeModel{Lambda: j.Lambda, mean: j.Mean, scale: j.Scale, w: j.Weights, bias: j.Bias, trained: j.Trained}
	return nil
}
