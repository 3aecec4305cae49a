package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
)

// runPlot draws the tuning curves of a function: best-so-far speed
// against trial number, one line per tuning run, as an SVG file.
func runPlot(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plot", "(-workload W [-size N|NAME=VALUE,...] | -graph GRAPH.json -size NAME=VALUE... | -func FILE.loom -size NAME=VALUE...) [-db FILE] [-threads T] [-o FILE.svg]",
		`Draws the tuning curve of every run recorded for the function on this
machine: the best speed found so far against the trial number (GFLOP/s for
workloads that count operations, else GB/s), one line per run, as an SVG
file. It also prints, per run, the trial at which 90% of its final best was
reached.`, stderr)
	var src source
	src.register(fs)
	var rf recordFlags
	rf.register(fs)
	out := fs.String("o", "tuning.svg", "the SVG file to write (with -graph, one per kernel: NAME.svg in the same directory)")
	asJSON := fs.Bool("json", false, "print one JSON object per tuning run: kernel, shape, run, trials, best, unit, confirmed, trial_at_90pct, svg")
	jobs, code, ok := src.parse(fs, args, stderr)
	if !ok {
		return code
	}
	if !rf.check(fs, stderr) {
		return 2
	}
	db, err := rf.open()
	if err != nil {
		fmt.Fprintln(stderr, "loom plot:", err)
		return 1
	}
	recs, _, err := db.Load()
	if err != nil {
		fmt.Fprintln(stderr, "loom plot:", err)
		return 1
	}
	status := 0
	for _, j := range jobs {
		runs := curves(recs, ast.Hash(j.Case.Func).String(), rf.target(), j)
		if len(runs) == 0 {
			fmt.Fprintf(stderr, "loom plot: %s has no records for %s in %s\n", j.Name, rf.target(), db.Path)
			status = 1
			continue
		}
		path := *out
		if len(jobs) > 1 {
			path = filepath.Join(filepath.Dir(path), j.Name+".svg")
		}
		unit := j.unit()
		svg := drawCurves(fmt.Sprintf("%s %s on %s", j.Name, j.Shape, rf.target()), unit, runs)
		if err := os.WriteFile(path, []byte(svg), 0o644); err != nil {
			fmt.Fprintln(stderr, "loom plot:", err)
			return 1
		}
		for _, c := range runs {
			final := c.final()
			at := sort.SearchFloat64s(c.best, 0.9*final) + 1
			how := ""
			if c.confirmed > 0 {
				how = fmt.Sprintf(" (confirmed; the first measurements' best was %.1f)", c.best[len(c.best)-1])
			}
			if *asJSON {
				json.NewEncoder(stdout).Encode(plotted{Kernel: j.Name, Shape: j.Shape, Run: c.name, Trials: len(c.best), Best: final, Unit: unit, Confirmed: c.confirmed > 0, At90: min(at, len(c.best)), SVG: path})
				continue
			}
			fmt.Fprintf(stdout, "%s run %s: %d trials, best %.1f %s%s, 90%% of it at trial %d\n", j.Name, c.name, len(c.best), final, unit, how, min(at, len(c.best)))
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "wrote %s\n", path)
		}
	}
	return status
}

// plotted is loom plot -json's line: one run's curve.
type plotted struct {
	Kernel    string  `json:"kernel"`
	Shape     string  `json:"shape"`
	Run       string  `json:"run"`
	Trials    int     `json:"trials"`
	Best      float64 `json:"best"` // in unit; the confirmed best where the run confirmed
	Unit      string  `json:"unit"`
	Confirmed bool    `json:"confirmed"`
	At90      int     `json:"trial_at_90pct"` // the first trial at 90% of the best
	SVG       string  `json:"svg"`            // the file the curves were drawn in
}

// curve is one run's best-so-far speed after each trial.
type curve struct {
	name string
	best []float64 // non-decreasing
	// confirmed is the speed of the run's best after it measured its
	// leaders again (what loom tune reports and keeps), 0 if it did not.
	confirmed float64
}

// final is the run's result: the confirmed best where there is one.
func (c curve) final() float64 {
	if c.confirmed > 0 {
		return c.confirmed
	}
	return c.best[len(c.best)-1]
}

// curves groups the records of a workload on a target by run, in trial
// order, and turns them into best-so-far speeds.
func curves(recs []*autotune.Record, workload, target string, j *job) []curve {
	byRun := map[string][]*autotune.Record{}
	confirmed := map[string]float64{}
	var names []string
	for _, r := range recs {
		if r.Workload != workload || r.Target != target || !sameRecordSizes(r, j) {
			continue
		}
		if r.Confirmed > 0 {
			// A confirmation re-measures a trial: not a trial of its
			// own, but the figure the run's result stands on.
			if r.OK() {
				confirmed[r.Run] = math.Max(confirmed[r.Run], j.rate(r.Median))
			}
			continue
		}
		name := r.Run
		if name == "" {
			name = "(unnamed)"
		}
		if _, ok := byRun[name]; !ok {
			names = append(names, name)
		}
		byRun[name] = append(byRun[name], r)
	}
	var out []curve
	for _, name := range names {
		rs := byRun[name]
		sort.SliceStable(rs, func(a, b int) bool { return rs[a].Trial < rs[b].Trial })
		c := curve{name: name, confirmed: confirmed[name]}
		best := 0.0
		for _, r := range rs {
			if r.OK() {
				best = math.Max(best, j.rate(r.Median))
			}
			c.best = append(c.best, best)
		}
		out = append(out, c)
	}
	return out
}

// drawCurves writes the SVG: axes with ticks, one polyline per run, and a
// legend.
func drawCurves(title, unit string, runs []curve) string {
	const w, h, left, right, top, bottom = 720.0, 420.0, 70.0, 20.0, 40.0, 50.0
	maxX, maxY := 1, 0.0
	for _, c := range runs {
		maxX = max(maxX, len(c.best))
		maxY = math.Max(maxY, math.Max(c.best[len(c.best)-1], c.confirmed))
	}
	if maxY <= 0 {
		maxY = 1
	}
	yStep := niceStep(maxY / 5)
	maxY = math.Ceil(maxY/yStep) * yStep
	x := func(t float64) float64 { return left + (w-left-right)*(t-1)/math.Max(float64(maxX-1), 1) }
	y := func(v float64) float64 { return h - bottom - (h-top-bottom)*v/maxY }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%g" y="22" font-size="14">%s</text>`+"\n", left, html.EscapeString(title))
	// Axes and grid.
	fmt.Fprintf(&b, `<path d="M%g %gV%gH%g" stroke="black" fill="none"/>`+"\n", left, top, h-bottom, w-right)
	for v := 0.0; v <= maxY+yStep/2; v += yStep {
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%g</text>`+"\n", left, y(v), w-right, y(v), left-6, y(v)+4, v)
	}
	xStep := int(niceStep(float64(maxX) / 8))
	for t := max(xStep, 1); t <= maxX; t += max(xStep, 1) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%d</text>`+"\n", x(float64(t)), h-bottom+18, t)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">trial</text>`+"\n", (left+w-right)/2, h-12)
	fmt.Fprintf(&b, `<text transform="translate(16 %g) rotate(-90)" text-anchor="middle">best so far, %s</text>`+"\n", (top+h-bottom)/2, unit)
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}
	for i, c := range runs {
		var pts []string
		for t, v := range c.best {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(t+1)), y(v)))
		}
		color := colors[i%len(colors)]
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		label := c.name
		if c.confirmed > 0 {
			// The leaders measured again: where the run ends.
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>`+"\n", x(float64(len(c.best))), y(c.confirmed), color)
			label += fmt.Sprintf(" (dot: confirmed best, %.1f %s)", c.confirmed, unit)
		}
		fmt.Fprintf(&b, `<text x="%g" y="%g" fill="%s">%s</text>`+"\n", left+10, top+16+16*float64(i), color, html.EscapeString(label))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
