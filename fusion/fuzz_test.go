package fusion_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/golden"
)

// FuzzGraph feeds arbitrary bytes to the JSON reader and compiles what it
// accepts: no input may panic.
//
//	go test ./fusion -run '^$' -fuzz FuzzGraph -fuzztime 1m
func FuzzGraph(f *testing.F) {
	files, _ := filepath.Glob("../testdata/fusion/*.txtar")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if src, ok := golden.Section(txtar.Parse(data), "graph.json"); ok {
			f.Add([]byte(src))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := fusion.ParseJSON(data)
		if err != nil {
			return
		}
		var buf writerCounter
		if err := fusion.WriteJSON(&buf, g); err != nil {
			t.Fatalf("write: %v", err)
		}
		p, err := fusion.Compile(g, fusion.Options{})
		if err != nil {
			return
		}
		sizes := map[string]int64{}
		for _, s := range g.Symbols() {
			sizes[s] = 2
		}
		if mem, err := p.Memory(sizes); err == nil {
			if err := mem.Check(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

type writerCounter int

func (w *writerCounter) Write(p []byte) (int, error) { *w += writerCounter(len(p)); return len(p), nil }

// FuzzShapes builds one-node graphs of the shape-heavy operators
// (convolutions of every rank and grouping, pooling, pad, gather) from
// fuzzed shapes and attributes. Shape inference must accept or refuse
// with an error, never panic; what it accepts must lower, and run, to an
// output of exactly the inferred shape.
//
//	go test ./fusion -run '^$' -fuzz FuzzShapes -fuzztime 1m
func FuzzShapes(f *testing.F) {
	f.Add(uint8(0), uint8(1), uint8(3), uint8(7), uint8(7), uint8(6), uint8(3), uint8(1), uint8(1), uint8(0))
	f.Add(uint8(1), uint8(2), uint8(4), uint8(9), uint8(5), uint8(4), uint8(3), uint8(2), uint8(1), uint8(4))
	f.Add(uint8(2), uint8(1), uint8(2), uint8(5), uint8(4), uint8(3), uint8(2), uint8(1), uint8(2), uint8(1))
	f.Add(uint8(3), uint8(1), uint8(3), uint8(8), uint8(8), uint8(3), uint8(3), uint8(2), uint8(1), uint8(0))
	f.Add(uint8(4), uint8(1), uint8(3), uint8(8), uint8(8), uint8(2), uint8(2), uint8(2), uint8(0), uint8(1))
	f.Add(uint8(5), uint8(2), uint8(3), uint8(4), uint8(1), uint8(0), uint8(2), uint8(1), uint8(3), uint8(0))
	f.Add(uint8(6), uint8(5), uint8(3), uint8(2), uint8(4), uint8(0), uint8(1), uint8(1), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, op, n, c, h, w, k1, k2, stride, pad, extra uint8) {
		dim := func(v uint8) int { return int(v%9) + 1 } // 1..9, small enough to run
		var inputs []map[string]any
		var attrs map[string]any
		in := func(name, dt string, shape ...int) {
			inputs = append(inputs, map[string]any{"name": name, "dtype": dt, "shape": shape})
		}
		s, p, g := int(stride%4), int(pad%4), int(extra%5)
		var name string
		switch op % 7 {
		case 0, 1, 2: // conv1d, conv2d, conv3d with groups
			rank := int(op%7) + 1
			name = []string{"conv1d", "conv2d", "conv3d"}[rank-1]
			x := []int{dim(n), dim(c)}
			wt := []int{dim(k1) + dim(extra), max(dim(c)/max(g, 1), 1)}
			for d := 0; d < rank; d++ {
				x = append(x, []int{dim(h), dim(w), dim(h + w)}[d])
				wt = append(wt, []int{dim(k1), dim(k2), dim(k1 + k2)}[d]%4+1)
			}
			in("X", "float32", x...)
			in("W", "float32", wt...)
			attrs = map[string]any{"strides": repeat(s, rank), "pads": repeat(p, 2*rank), "dilations": repeat(int(extra%3), rank)}
			if g > 0 {
				attrs["groups"] = g
			}
		case 3, 4: // max_pool2d, avg_pool2d
			name = []string{"max_pool2d", "avg_pool2d"}[op%7-3]
			in("X", "float32", dim(n), dim(c), dim(h), dim(w))
			attrs = map[string]any{"kernel_shape": []int{dim(k1) % 5, dim(k2) % 5}, "strides": []int{s, s}, "pads": []int{p, p % 2, p % 3, p}}
			if name == "max_pool2d" {
				attrs["dilations"] = []int{int(extra%3) + 1, 1}
			} else {
				attrs["count_include_pad"] = extra%2 == 1
			}
		case 5: // pad
			name = "pad"
			in("X", "float32", dim(n), dim(c), dim(h))
			attrs = map[string]any{"pads": []int{p, int(k1 % 3), int(k2%3) - 1, s, int(extra % 3), 0}, "value": 1.5}
		case 6: // gather
			name = "gather"
			in("X", "float32", dim(n), dim(c), dim(h))
			in("I", "int32", dim(w), dim(k1))
			attrs = map[string]any{"axis": int(extra%5) - 2}
		}
		var names []string
		for _, x := range inputs {
			names = append(names, x["name"].(string))
		}
		src, _ := json.Marshal(map[string]any{"name": "f", "inputs": inputs, "outputs": []string{"Y"},
			"nodes": []any{map[string]any{"op": name, "inputs": names, "output": "Y", "attrs": attrs}}})
		graph, err := fusion.ParseJSON(src)
		if err != nil {
			return // refused with an error: fine
		}
		plan, err := fusion.Compile(graph, fusion.Options{})
		if err != nil {
			return
		}
		// Running is the slow part: keep it to small work.
		work := int64(1)
		for _, x := range append(append([]*fusion.Tensor{}, graph.Inputs...), graph.Outputs...) {
			for _, d := range x.Shape {
				if v, ok := d.IsConst(); ok {
					work *= max(v, 1)
				}
			}
		}
		if work > 1e7 {
			t.Skip("too much work to run")
		}
		data := map[string]any{}
		for _, x := range graph.Inputs {
			d, err := fusion.NewData(x, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ids, ok := d.([]int32); ok {
				for i := range ids {
					ids[i] = -int32(i % 2) // 0 and -1 (the last): in range of any axis
				}
			}
			data[x.Name] = d
		}
		out, err := plan.Interpret(nil, data)
		if err != nil {
			t.Fatalf("%s accepted with attrs %v but does not run: %v", name, attrs, err)
		}
		elems := int64(1)
		for _, d := range graph.Outputs[0].Shape {
			v, ok := d.IsConst()
			if !ok || v < 1 {
				t.Fatalf("%s: inferred output dimension %s", name, d)
			}
			elems *= v
		}
		if got := len(ast.Float64s(ast.Float32, out["Y"])); int64(got) != elems {
			t.Fatalf("%s: %d output elements, inferred shape %s", name, got, graph.Outputs[0].Shape)
		}
	})
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}
