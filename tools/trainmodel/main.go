// Command trainmodel fits the cost model autotune ships (DefaultModel,
// autotune/default_model.json) to tuning databases, and says how well it
// ranks schedules it was not fitted on.
//
//	go run ./tools/trainmodel -o autotune/default_model.json DB.jsonl...
//
// A database may be gzipped (DB.jsonl.gz). The shipped model is fitted on
// testdata/model/train.jsonl.gz, the records of tools/trainmodel/gen.sh.
//
// Every record with features (loom tune writes them) counts; records are
// compared within their function, shape and target (autotune.TrainModel).
// The check leaves each such group out in turn, fits the rest, and takes
// the group's record the model scores highest: it prints the median and
// the geometric mean over the groups of that pick's speed against the
// group's fastest, beside what a pick at random gets (the mean over the
// group) and the first trial's of the group.
package main

import (
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/loom-go/loom/autotune"
)

func main() {
	out := flag.String("o", "", "write the model's JSON to this file")
	target := flag.String("target", "", "only the records of this target (a TargetKey; default: all)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: trainmodel [-o MODEL.json] [-target KEY] DB.jsonl...")
		os.Exit(2)
	}
	var records []*autotune.Record
	for _, path := range flag.Args() {
		if strings.HasSuffix(path, ".gz") {
			path = gunzip(path)
			defer os.Remove(path)
		}
		db, err := autotune.OpenDatabase(path)
		if err != nil {
			fail(err)
		}
		rs, _, err := db.Load()
		if err != nil {
			fail(err)
		}
		for _, r := range rs {
			if *target == "" || r.Target == *target {
				records = append(records, r)
			}
		}
	}
	m, n := autotune.TrainModel(records)
	fmt.Printf("fitted on %d records\n", n)
	check(records)
	if *out != "" {
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

// check prints how the model ranks each group fitted without it.
func check(records []*autotune.Record) {
	groups := map[string][]*autotune.Record{}
	for _, r := range records {
		if r.OK() && r.FeaturesVersion == autotune.FeaturesVersion && len(r.Features) > 0 {
			k := fmt.Sprint(r.Workload, r.Shape, r.Sizes, r.Target)
			groups[k] = append(groups[k], r)
		}
	}
	var picked, random, first []float64
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		if len(g) < 4 {
			continue
		}
		var rest []*autotune.Record
		for k2, g2 := range groups {
			if k2 != k {
				rest = append(rest, g2...)
			}
		}
		m, _ := autotune.TrainModel(rest)
		fastest, mean := math.Inf(1), 0.0
		var pick *autotune.Record
		best := math.Inf(-1)
		for _, r := range g {
			fastest = min(fastest, r.Median)
			if s := m.Predict(r.Features); s > best {
				best, pick = s, r
			}
		}
		for _, r := range g {
			mean += fastest / r.Median
		}
		slices.SortFunc(g, func(a, b *autotune.Record) int { return a.Trial - b.Trial })
		picked = append(picked, fastest/pick.Median)
		random = append(random, mean/float64(len(g)))
		first = append(first, fastest/g[0].Median)
		fmt.Printf("  %-24s %-14s %3d records: model's pick %.2f of the fastest, random %.2f, first %.2f\n",
			g[0].Name, g[0].Shape, len(g), fastest/pick.Median, mean/float64(len(g)), fastest/g[0].Median)
	}
	if len(picked) == 0 {
		fmt.Println("no group of 4 or more records with features to check")
		return
	}
	fmt.Printf("left-out groups: %d; the model's pick: median %.2f, geomean %.2f of the fastest; random: %.2f, %.2f; first: %.2f, %.2f\n",
		len(picked), median(picked), geomean(picked), median(random), geomean(random), median(first), geomean(first))
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func geomean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
}

// gunzip writes the gzipped file path out to a temporary file and
// returns its name.
func gunzip(path string) string {
	in, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		fail(fmt.Errorf("%s: %v", path, err))
	}
	out, err := os.CreateTemp("", "trainmodel-*.jsonl")
	if err != nil {
		fail(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, zr); err != nil {
		fail(fmt.Errorf("%s: %v", path, err))
	}
	return out.Name()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "trainmodel:", err)
	os.Exit(1)
}
