// Command oddrows measures what an odd row count costs a matrix product:
// ViT-B/16's QKV projection ([R, 768] x [768, 2304] + bias) and its MLP's
// first layer ([R, 768] x [768, 3072] + bias + GELU), with constant
// weights as a model has them (packed into panels when the module is
// built), at a row count real models use (197 tokens, 77, 1500) and at a
// round neighbour (196, 80, 1504). For each pair it builds both modules
// on default schedules (or on a tuning database's records, -db), calls
// them alternately in rounds, and prints one JSON line: each one's
// median and p10 time per call, and the ratio of their times per row,
// odd over round (1.0: the odd count costs nothing extra; issue 47 asks
// for at most 1.1).
//
//	go run ./tools/oddrows -threads 1
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

func main() {
	threads := flag.Int("threads", 1, "threads of the modules")
	rounds := flag.Int("rounds", 30, "rounds; each calls every module once per 2 ms of its first call's time, at least once")
	dbPath := flag.String("db", "", "a tuning database whose records the modules use (loom tune -graph), default schedules where it has none")
	write := flag.String("write", "", "write the graphs to this directory (NAME.json, its weights beside it) for loom tune -graph, and stop")
	flag.Parse()
	if *write != "" {
		if err := writeGraphs(*write); err != nil {
			fail(err)
		}
		return
	}
	var db *autotune.Database
	if *dbPath != "" {
		var err error
		if db, err = autotune.OpenDatabase(*dbPath); err != nil {
			fail(err)
		}
	}
	for _, gelu := range []bool{false, true} {
		for _, p := range pairs {
			var ms [2][]float64
			var mods [2]*module.Module
			var ins [2]map[string]module.Tensor
			var outs [2]map[string]module.Tensor
			for k, rows := range p {
				g, err := projection(rows, gelu)
				if err != nil {
					fail(err)
				}
				m, err := module.Compile(g, module.Options{Threads: *threads, Database: db})
				if err != nil {
					fail(err)
				}
				x := make([]float32, rows*768)
				for i := range x {
					x[i] = float32(rand.NormFloat64())
				}
				mods[k], ins[k] = m, map[string]module.Tensor{"X": {Shape: []int64{rows, 768}, Data: x}}
				if outs[k], err = m.NewOutputs(ins[k]); err != nil {
					fail(err)
				}
			}
			for r := 0; r < *rounds+1; r++ {
				for k := range mods {
					t0 := time.Now()
					if err := mods[k].Run(ins[k], outs[k]); err != nil {
						fail(err)
					}
					if r > 0 { // the first round warms up
						ms[k] = append(ms[k], float64(time.Since(t0).Nanoseconds())/1e6)
					}
				}
			}
			name := "qkv_768x2304_bias"
			if gelu {
				name = "mlp_768x3072_bias_gelu"
			}
			odd, round := stats(ms[0]), stats(ms[1])
			line := map[string]any{
				"case": name, "threads": *threads, "schedules": schedules(mods[0]),
				"odd_rows": p[0], "round_rows": p[1],
				"odd_median_ms": odd[0], "odd_p10_ms": odd[1], "odd_p90_ms": odd[2],
				"round_median_ms": round[0], "round_p10_ms": round[1], "round_p90_ms": round[2],
				"per_row_ratio_median": (odd[0] / float64(p[0])) / (round[0] / float64(p[1])),
				"per_row_ratio_p10":    (odd[1] / float64(p[0])) / (round[1] / float64(p[1])),
			}
			b, _ := json.Marshal(line)
			fmt.Println(string(b))
		}
	}
}

// pairs are the odd row counts and their round neighbours.
var pairs = [][2]int64{{197, 196}, {77, 80}, {1500, 1504}}

// writeGraphs writes every graph the benchmark builds to dir.
func writeGraphs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, gelu := range []bool{false, true} {
		for _, p := range pairs {
			for _, rows := range p {
				g, err := projection(rows, gelu)
				if err != nil {
					return err
				}
				name := g.Name
				if err := fusion.WriteJSONFile(filepath.Join(dir, name+".json"), g, name+".safetensors"); err != nil {
					return err
				}
				fmt.Println(filepath.Join(dir, name+".json"))
			}
		}
	}
	return nil
}

// projection is X [rows, 768] times a constant weight, plus a constant
// bias, then GELU when gelu.
func projection(rows int64, gelu bool) (*fusion.Graph, error) {
	n := int64(2304)
	if gelu {
		n = 3072
	}
	r := rand.New(rand.NewPCG(1, uint64(n)))
	w, bias := make([]float64, 768*n), make([]float64, n)
	for i := range w {
		w[i] = r.NormFloat64() / 32
	}
	for i := range bias {
		bias[i] = r.NormFloat64()
	}
	name := fmt.Sprintf("qkv%d", rows)
	if gelu {
		name = fmt.Sprintf("mlp%d", rows)
	}
	b := fusion.NewBuilder(name)
	x, err := b.Input("X", ast.Float32, fusion.Const(rows), fusion.Const(768))
	if err != nil {
		return nil, err
	}
	wt, err := b.Constant("W", ast.Float32, []int64{768, n}, w)
	if err != nil {
		return nil, err
	}
	bt, err := b.Constant("B", ast.Float32, []int64{n}, bias)
	if err != nil {
		return nil, err
	}
	y, err := b.Node("Y", "matmul", fusion.Attrs{}, x, wt)
	if err != nil {
		return nil, err
	}
	if y, err = b.Node("Z", "add", fusion.Attrs{}, y, bt); err != nil {
		return nil, err
	}
	if gelu {
		if y, err = b.Node("G", "gelu", fusion.Attrs{}, y); err != nil {
			return nil, err
		}
	}
	return b.Graph(y)
}

// stats is the median, p10 and p90 of ms.
func stats(ms []float64) [3]float64 {
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(q float64) float64 { return s[int(q*float64(len(s)-1))] }
	return [3]float64{at(0.5), at(0.1), at(0.9)}
}

// schedules says where the module's kernels' schedules came from.
func schedules(m *module.Module) []string {
	var out []string
	for _, k := range m.Kernels() {
		out = append(out, k[0]+": "+k[1])
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "oddrows:", err)
	os.Exit(1)
}
