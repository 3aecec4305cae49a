package fusion_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
)

// TestPackWeights: the constant weight matrices of matrix products large
// enough (K x N at least 4096, N a multiple of 16) are stored in panels
// of 16 columns, one shared by three products (one of them batched)
// packed once; a batched
// weight, a small one, a weight that is an input and Options.PlainWeights
// are left alone; one of 260 columns gets a padded last panel. The plan computes what the graph
// does, at 0, 1 and 3 rows, and a panel given in the graph's JSON
// reads as the pass writes it.
func TestPackWeights(t *testing.T) {
	g := parseGraph(t, `{"name": "mlp",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["M", 256]}, {"name": "V", "dtype": "float32", "shape": [256, 256]},
			{"name": "Z", "dtype": "float32", "shape": [2, "M", 256]}, {"name": "S", "dtype": "float32", "shape": ["M", 128]}],
		"constants": [
			{"name": "W", "dtype": "float32", "shape": [256, 256], "data": `+ramp(256*256)+`},
			{"name": "Bias", "dtype": "float32", "shape": [256], "data": `+ramp(256)+`},
			{"name": "Odd", "dtype": "float32", "shape": [256, 260], "data": `+ramp(256*260)+`},
			{"name": "Small", "dtype": "float32", "shape": [128, 16], "data": `+ramp(128*16)+`}],
		"nodes": [
			{"op": "matmul", "inputs": ["X", "W"], "output": "a"},
			{"op": "add", "inputs": ["a", "Bias"], "output": "b"},
			{"op": "gelu", "inputs": ["b"], "output": "c"},
			{"op": "matmul", "inputs": ["c", "W"], "output": "d"},
			{"op": "matmul", "inputs": ["d", "Odd"], "output": "e"},
			{"op": "matmul", "inputs": ["S", "Small"], "output": "f"},
			{"op": "matmul", "inputs": ["d", "V"], "output": "h"},
			{"op": "matmul", "inputs": ["Z", "W"], "output": "z"}],
		"outputs": ["e", "f", "h", "z"]}`)
	packed, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range packed.Graph.Nodes {
		if x.Op == "matmul" && x.Attrs.Panel == 16 {
			n++
			if want := int64(map[bool]int64{true: 260}[x.Inputs[1].Name == "Odd_panels"]); x.Attrs.Columns != want {
				t.Errorf("%s reads %s with columns %d, want %d", x.Output.Name, x.Inputs[1].Name, x.Attrs.Columns, want)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d products read packed weights, want the three of W (one batched) and Odd's:\n%s", n, packed)
	}
	panels := map[string]string{}
	for _, c := range packed.Graph.Constants {
		if strings.HasSuffix(c.Name, "_panels") {
			panels[c.Name] = c.Shape.String()
		}
	}
	// Odd's 260 columns: 17 panels, the last with 4 columns and 12 of
	// padding.
	if want := map[string]string{"W_panels": "[16, 256, 16]", "Odd_panels": "[17, 256, 16]"}; !maps.Equal(panels, want) {
		t.Errorf("packed constants %v, want %v", panels, want)
	}
	plain, err := fusion.Compile(g, fusion.Options{PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "_panels") {
		t.Errorf("PlainWeights packed a weight:\n%s", plain)
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int64{0, 1, 3} {
		compare(t, g, packed, ref, map[string]int64{"M": m})
	}
	// The same product written with its weights in panels by hand.
	hand := parseGraph(t, `{"name": "hand",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["M", 3]}, {"name": "P", "dtype": "float32", "shape": [2, 3, 4]}],
		"nodes": [{"op": "matmul", "inputs": ["X", "P"], "output": "Y", "attrs": {"panel": 4}}],
		"outputs": ["Y"]}`)
	if got := hand.Outputs[0].Shape.String(); got != "[M, 8]" {
		t.Errorf("a product with panels of 4 gives %s, want [M, 8]", got)
	}
	p, err := fusion.Compile(hand, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Interpret(map[string]int64{"M": 1}, map[string]any{"X": []float32{1, 2, 3}, "P": []float32{
		1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, // panel 0: columns 0-3, rows k = 0, 1, 2
		2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 2, 3, 0, 2, 0, 0, 15}
	if got := out["Y"].([]float32); !slices.Equal(got, want) {
		t.Errorf("a product with panels of 4: got %v, want %v", got, want)
	}
	// The same panels holding 6 columns, the last panel's 2 of padding
	// never read; columns that the panels do not hold are refused.
	padded := parseGraph(t, `{"name": "hand",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["M", 3]}, {"name": "P", "dtype": "float32", "shape": [2, 3, 4]}],
		"nodes": [{"op": "matmul", "inputs": ["X", "P"], "output": "Y", "attrs": {"panel": 4, "columns": 6}}],
		"outputs": ["Y"]}`)
	if got := padded.Outputs[0].Shape.String(); got != "[M, 6]" {
		t.Errorf("a product of 6 columns in panels of 4 gives %s, want [M, 6]", got)
	}
	if p, err = fusion.Compile(padded, fusion.Options{}); err != nil {
		t.Fatal(err)
	}
	if out, err = p.Interpret(map[string]int64{"M": 1}, map[string]any{"X": []float32{1, 2, 3}, "P": []float32{
		1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0,
		2, 0, 9, 9, 0, 0, 9, 9, 0, 0, 9, 9}}); err != nil {
		t.Fatal(err)
	}
	if got, want := out["Y"].([]float32), []float32{1, 2, 3, 0, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("6 columns in panels of 4: got %v, want %v", got, want)
	}
	for _, bad := range []string{`"panel": 4, "columns": 4`, `"panel": 4, "columns": 9`, `"columns": 6`} {
		_, err := fusion.ParseJSON([]byte(`{"name": "bad",
			"inputs": [{"name": "X", "dtype": "float32", "shape": ["M", 3]}, {"name": "P", "dtype": "float32", "shape": [2, 3, 4]}],
			"nodes": [{"op": "matmul", "inputs": ["X", "P"], "output": "Y", "attrs": {` + bad + `}}],
			"outputs": ["Y"]}`))
		if err == nil || !strings.Contains(err.Error(), "columns") {
			t.Errorf("attrs {%s}: error %v, want one naming columns", bad, err)
		}
	}
}

// TestPackConvWeights: the constant weights of convolutions run with
// their channels last are stored in panels of 16 filters, [F/16,
// C/groups, kh, kw, 16]: a plain one and a grouped strided 5x5 one, one
// weight read by two convolutions packed once; a depthwise one is left
// as it is. The plan computes what the graph does at batch 0, 1 and 2,
// and loom's own choice of layout (auto) takes such a graph to NHWC.
func TestPackConvWeights(t *testing.T) {
	g := parseGraph(t, `{"name": "convs",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 16, 7, 5]}],
		"constants": [
			{"name": "W1", "dtype": "float32", "shape": [32, 16, 3, 3], "data": `+ramp(32*16*9)+`},
			{"name": "W2", "dtype": "float32", "shape": [32, 16, 5, 5], "data": `+ramp(32*16*25)+`},
			{"name": "W3", "dtype": "float32", "shape": [32, 1, 3, 3], "data": `+ramp(32*9)+`}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "W1"], "output": "c1", "attrs": {"pads": [1, 1, 1, 1]}},
			{"op": "relu", "inputs": ["c1"], "output": "r"},
			{"op": "conv2d", "inputs": ["r", "W2"], "output": "c2", "attrs": {"pads": [2, 2, 2, 2], "strides": [2, 2], "groups": 2}},
			{"op": "conv2d", "inputs": ["c2", "W3"], "output": "c3", "attrs": {"pads": [1, 1, 1, 1], "groups": 32}},
			{"op": "conv2d", "inputs": ["X", "W1"], "output": "c4", "attrs": {"strides": [2, 2]}}],
		"outputs": ["c3", "c4"]}`)
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, PlainWeights: true, Layout: fusion.LayoutChannelsFirst})
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range []string{fusion.LayoutChannelsLast, fusion.LayoutAuto} {
		p, err := fusion.Compile(g, fusion.Options{Layout: layout})
		if err != nil {
			t.Fatal(err)
		}
		convs, panels := 0, 0
		for _, n := range p.Graph.Nodes {
			if n.Op == "conv2d" && n.Attrs.Panel == 16 {
				convs++
			}
		}
		for _, c := range p.Graph.Constants {
			if strings.HasSuffix(c.Name, "_panels") {
				panels++
				if got := c.Shape.String(); got != "[2, 16, 3, 3, 16]" && got != "[2, 16, 5, 5, 16]" {
					t.Errorf("layout %q: %s has shape %s, want [2, 16, k, k, 16]", layout, c.Name, got)
				}
			}
		}
		if convs != 3 || panels != 2 {
			t.Errorf("layout %q: %d convolutions read %d packed weights, want 3 reading W1's and W2's:\n%s", layout, convs, panels, p)
		}
		batches := []int64{0, 2}
		if layout == fusion.LayoutAuto {
			batches = []int64{1}
		}
		for _, n := range batches {
			compare(t, g, p, ref, map[string]int64{"N": n})
		}
	}
	plain, err := fusion.Compile(g, fusion.Options{PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "_panels") {
		t.Errorf("PlainWeights packed a weight:\n%s", plain)
	}
}

// TestConvPanelsByHand: a convolution written with its weights in panels
// ([F/p, C, kh, kw, p], attribute panel) reads filter f at [f / p, c, i,
// j, f mod p]; panels on a convolution whose channels come first, or
// weights of another rank, are refused naming the node.
func TestConvPanelsByHand(t *testing.T) {
	hand := parseGraph(t, `{"name": "hand",
		"inputs": [{"name": "X", "dtype": "float32", "shape": [1, 1, 2, 2]}, {"name": "P", "dtype": "float32", "shape": [2, 2, 1, 1, 2]}],
		"nodes": [{"op": "conv2d", "inputs": ["X", "P"], "output": "Y", "attrs": {"panel": 2, "layout": "NHWC"}}],
		"outputs": ["Y"]}`)
	if got := hand.Outputs[0].Shape.String(); got != "[1, 1, 2, 4]" {
		t.Fatalf("a convolution with panels of 2 gives %s, want [1, 1, 2, 4]", got)
	}
	p, err := fusion.Compile(hand, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// X: pixel 0 has channels (1, 2), pixel 1 (3, 4). Panel 0 holds
	// filters 0 and 1, panel 1 filters 2 and 3, each [c][f mod 2].
	out, err := p.Interpret(nil, map[string]any{"X": []float32{1, 2, 3, 4}, "P": []float32{
		1, 0, 0, 1, // filter 0 = channel 0, filter 1 = channel 1
		1, 10, 1, 0}}) // filter 2 = c0 + c1, filter 3 = 10 c0
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 2, 3, 10, 3, 4, 7, 30}
	if got := out["Y"].([]float32); !slices.Equal(got, want) {
		t.Errorf("a convolution with panels of 2: got %v, want %v", got, want)
	}
	for _, c := range []struct{ attrs, weights, want string }{
		{`{"panel": 2}`, `[2, 2, 1, 1, 2]`, "channels last"},
		{`{"panel": 2, "layout": "NHWC"}`, `[2, 2, 1, 2]`, "rank 5"},
		{`{"panel": 4, "layout": "NHWC"}`, `[2, 2, 1, 1, 2]`, "panel 4"},
		{`{"panel": -1, "layout": "NHWC"}`, `[2, 2, 1, 1, 2]`, "panel -1"},
	} {
		_, err := fusion.ParseJSON([]byte(`{"name": "bad",
			"inputs": [{"name": "X", "dtype": "float32", "shape": [1, 1, 2, 2]}, {"name": "P", "dtype": "float32", "shape": ` + c.weights + `}],
			"nodes": [{"op": "conv2d", "inputs": ["X", "P"], "output": "Y", "attrs": ` + c.attrs + `}],
			"outputs": ["Y"]}`))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "conv2d") {
			t.Errorf("attrs %s, weights %s: got error %v, want one naming the node and saying %q", c.attrs, c.weights, err, c.want)
		}
	}
}

// TestPackConvWeightsOtherRanks: filters of a conv1d (NWC, dilated), a
// conv3d (NDHWC, strided) and a conv2d over symbolic rows go into panels
// too, [F/16, C, kernel..., 16], and the plan computes what the graph
// does (the symbolic rows at 1 and 5).
func TestPackConvWeightsOtherRanks(t *testing.T) {
	g := parseGraph(t, `{"name": "ranks",
		"inputs": [{"name": "X", "dtype": "float32", "shape": [2, 11, 32]}, {"name": "V", "dtype": "float32", "shape": [1, 5, 4, 3, 16]}],
		"constants": [
			{"name": "W", "dtype": "float32", "shape": [5, 32, 32], "data": `+ramp(5*32*32)+`},
			{"name": "U", "dtype": "float32", "shape": [2, 2, 2, 16, 32], "data": `+ramp(8*16*32)+`}],
		"nodes": [
			{"op": "conv1d", "inputs": ["X", "W"], "output": "a", "attrs": {"layout": "NWC", "pads": [2, 2], "dilations": [2]}},
			{"op": "conv3d", "inputs": ["V", "U"], "output": "b", "attrs": {"layout": "NDHWC", "strides": [2, 1, 2]}}],
		"outputs": ["a", "b"]}`)
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var shapes []string
	for _, c := range p.Graph.Constants {
		if strings.HasSuffix(c.Name, "_panels") {
			shapes = append(shapes, c.Shape.String())
		}
	}
	slices.Sort(shapes)
	if want := []string{"[2, 16, 2, 2, 2, 16]", "[2, 32, 5, 16]"}; !slices.Equal(shapes, want) {
		t.Errorf("packed filters %v, want %v:\n%s", shapes, want, p)
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	compare(t, g, p, ref, nil)

	sym := parseGraph(t, `{"name": "rows",
		"inputs": [{"name": "X", "dtype": "float32", "shape": [1, "H", 6, 16]}],
		"constants": [{"name": "W", "dtype": "float32", "shape": [3, 3, 16, 32], "data": `+ramp(9*16*32)+`}],
		"nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y", "attrs": {"layout": "NHWC", "pads": [1, 1, 1, 1]}}],
		"outputs": ["Y"]}`)
	if p, err = fusion.Compile(sym, fusion.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.String(), "_panels") {
		t.Errorf("the convolution over symbolic rows reads its filters as the graph has them:\n%s", p)
	}
	if ref, err = fusion.Compile(sym, fusion.Options{NoFuse: true, PlainWeights: true}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []int64{1, 5} {
		compare(t, sym, p, ref, map[string]int64{"H": h})
	}
}

// TestPackedWeightReadElsewhere: a weight matrix that a product reads
// packed and an element-wise node reads as it is computes both right (the
// element-wise node keeps the graph's layout).
func TestPackedWeightReadElsewhere(t *testing.T) {
	g := parseGraph(t, `{"name": "shared_weight",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["M", 64]}, {"name": "Y", "dtype": "float32", "shape": [64, 64]}],
		"constants": [{"name": "W", "dtype": "float32", "shape": [64, 64], "data": `+ramp(64*64)+`}],
		"nodes": [
			{"op": "matmul", "inputs": ["X", "W"], "output": "a"},
			{"op": "add", "inputs": ["Y", "W"], "output": "b"}],
		"outputs": ["a", "b"]}`)
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	compare(t, g, p, ref, map[string]int64{"M": 3})
}

// TestPackRuntimeFilters: a convolution in NHWC whose filters are an
// input of the graph (computed per call) reads them in the panels
// constant filters get, moved by one transpose of the input
// (runtimePanels) that is a layout conversion, grouped or not; a
// depthwise one and one of fewer filters than a panel keep the layout
// pass's transpose. A 1x1 convolution, which the layout pass makes a
// matrix product, reads its runtime weights in the same panels seen as
// a matrix's (runtimeMatrixPanels). Each computes what the unfused plan
// in NCHW does.
func TestPackRuntimeFilters(t *testing.T) {
	g := parseGraph(t, `{"name": "runtime",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 16, 7, 5]},
			{"name": "W1", "dtype": "float32", "shape": [32, 16, 3, 3]},
			{"name": "W2", "dtype": "float32", "shape": [32, 1, 3, 3]},
			{"name": "W3", "dtype": "float32", "shape": [8, 32, 3, 3]},
			{"name": "W4", "dtype": "float32", "shape": [32, 16, 3, 3]},
			{"name": "W5", "dtype": "float32", "shape": [128, 32, 1, 1]}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "W1"], "output": "c1", "attrs": {"pads": [1, 1, 1, 1], "strides": [2, 1]}},
			{"op": "conv2d", "inputs": ["c1", "W2"], "output": "c2", "attrs": {"pads": [1, 1, 1, 1], "groups": 32}},
			{"op": "conv2d", "inputs": ["c2", "W3"], "output": "c3", "attrs": {"pads": [0, 1, 0, 1]}},
			{"op": "conv2d", "inputs": ["c1", "W4"], "output": "c4", "attrs": {"pads": [1, 1, 1, 1], "groups": 2, "dilations": [2, 1]}},
			{"op": "conv2d", "inputs": ["c1", "W5"], "output": "c5"}],
		"outputs": ["c3", "c4", "c5"]}`)
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, PlainWeights: true, Layout: fusion.LayoutChannelsFirst})
	if err != nil {
		t.Fatal(err)
	}
	p, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast})
	if err != nil {
		t.Fatal(err)
	}
	var packed []string
	for _, n := range p.Graph.Nodes {
		if n.Op == "conv2d" && n.Attrs.Panel == 16 {
			w := n.Inputs[1]
			packed = append(packed, w.Shape.String())
			if tr := w.Producer; !fusion.IsLayoutConversion(tr) {
				t.Errorf("the filters %s come from %v, want a transpose that is a layout conversion", w.Name, tr)
			}
		}
	}
	if len(packed) != 2 || packed[0] != "[2, 16, 3, 3, 16]" || packed[1] != "[2, 16, 3, 3, 16]" {
		t.Errorf("convolutions reading runtime panels: %v, want W1's and W4's (two groups), [2, 16, 3, 3, 16] each:\n%s", packed, p)
	}
	products := 0
	for _, n := range p.Graph.Nodes {
		if n.Op != "matmul" {
			continue
		}
		products++
		w := n.Inputs[1]
		if n.Attrs.Panel != 16 || w.Shape.String() != "[8, 32, 16]" {
			t.Errorf("the 1x1 convolution's product reads %s %s with panel %d, want [8, 32, 16] with panel 16", w.Name, w.Shape, n.Attrs.Panel)
		}
		var tr *fusion.Node
		if re := w.Producer; re != nil && re.Op == "reshape" {
			tr = re.Inputs[0].Producer
		}
		if !fusion.IsLayoutConversion(tr) {
			t.Errorf("the 1x1 convolution's panels %s come from %v, want a view of a transpose that is a layout conversion", w.Name, tr)
		}
	}
	if products != 1 {
		t.Errorf("%d matrix products, want the 1x1 convolution's:\n%s", products, p)
	}
	for _, n := range []int64{0, 1, 2} {
		compare(t, g, p, ref, map[string]int64{"N": n})
	}
}

// TestPackInputMatrices: the weight matrix of a product that the graph
// takes as an input (given per call) goes into panels by one transpose
// the pack pass marks as a layout conversion (inputPanels), a kernel of
// its own, when the product has rows enough to read it again: a known
// number of rows of at least packRows (64); a product of fewer rows or
// of a symbolic number alone, and a matrix whose columns are not a multiple of the panel,
// read it as it is (a product of fewer rows reads panels made for
// another).
// The plans compute what the unfused plain one does.
func TestPackInputMatrices(t *testing.T) {
	g := parseGraph(t, `{"name": "inputs",
		"inputs": [{"name": "A", "dtype": "float32", "shape": ["M", 64]},
			{"name": "A64", "dtype": "float32", "shape": [64, 64]},
			{"name": "A1", "dtype": "float32", "shape": [63, 64]},
			{"name": "B", "dtype": "float32", "shape": [64, 96]},
			{"name": "C", "dtype": "float32", "shape": [64, 90]},
			{"name": "D", "dtype": "float32", "shape": [64, 96]},
			{"name": "R", "dtype": "float32", "shape": [64, 96]}],
		"nodes": [
			{"op": "matmul", "inputs": ["A", "B"], "output": "y"},
			{"op": "matmul", "inputs": ["A64", "B"], "output": "y64"},
			{"op": "add", "inputs": ["y64", "R"], "output": "z64"},
			{"op": "matmul", "inputs": ["A1", "B"], "output": "y1"},
			{"op": "matmul", "inputs": ["A1", "D"], "output": "d1"},
			{"op": "matmul", "inputs": ["A", "C"], "output": "w"}],
		"outputs": ["y", "z64", "y1", "d1", "w"]}`)
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	var packed []string
	for _, n := range p.Graph.Nodes {
		if n.Op != "matmul" || n.Attrs.Panel == 0 {
			continue
		}
		packed = append(packed, n.Inputs[0].Name)
		w := n.Inputs[1]
		if w.Shape.String() != "[6, 64, 16]" || !fusion.IsLayoutConversion(w.Producer) {
			t.Errorf("the product of %s reads %s %s from %v, want [6, 64, 16] from a transpose that is a layout conversion", n.Inputs[0].Name, w.Name, w.Shape, w.Producer)
		}
	}
	if strings.Join(packed, " ") != "A64 A1" {
		t.Errorf("products reading panels, by their first operand: %v, want A64's and A1's (63 rows) of B (not A's of B, of symbolic rows, A1's of D, nor A's of C)", packed)
	}
	convert := 0
	for _, k := range p.Kernels {
		if strings.Join(k.Inputs, " ") == "B" {
			convert++
		}
	}
	if convert != 1 {
		t.Errorf("%d kernels read B alone, want one that moves it into panels once:\n%s", convert, p)
	}
	for _, m := range []int64{0, 1, 17} {
		compare(t, g, p, ref, map[string]int64{"M": m})
	}
}
