package fusion_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/golden"
)

// TestLayoutChannelsLast compiles every golden graph with a convolution
// or a pooling in layout NHWC and checks it against the graph as written,
// one kernel per operator, at the sizes the file gives.
func TestLayoutChannelsLast(t *testing.T) {
	files, _ := filepath.Glob("../testdata/fusion/*.txtar")
	checked := 0
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := golden.Section(ar, "graph.json")
		sizes, ok := golden.Section(ar, "sizes")
		if !ok || !strings.Contains(src, "conv2d") && !strings.Contains(src, "pool2d") {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			g, err := fusion.ParseJSON([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			last, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(last.String(), "_nhwc") {
				t.Errorf("no node runs in NHWC:\n%s", last)
			}
			ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, Layout: fusion.LayoutChannelsFirst})
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(sizes), "\n") {
				compare(t, g, last, ref, parseSizes(t, line))
			}
		})
		checked++
	}
	if checked < 3 {
		t.Fatalf("only %d graphs with a convolution or pooling", checked)
	}
}

// TestLayoutConvertsAtTheEnds: a chain of convolutions, a bias, ReLU6, a
// residual addition and a pooling converts to NHWC once, at its input,
// and back once, before the reshape that needs NCHW; the weights are
// constants moved at compile time, and the 1x1 convolution becomes a
// matrix product.
func TestLayoutConvertsAtTheEnds(t *testing.T) {
	g := parseGraph(t, `{"name": "chain",
		"inputs": [{"name": "X", "dtype": "float32", "shape": [1, 8, 10, 10]}],
		"constants": [
			{"name": "W1", "dtype": "float32", "shape": [8, 1, 3, 3], "data": `+ramp(72)+`},
			{"name": "B1", "dtype": "float32", "shape": [8, 1, 1], "data": `+ramp(8)+`},
			{"name": "W2", "dtype": "float32", "shape": [8, 8, 1, 1], "data": `+ramp(64)+`},
			{"name": "zero", "dtype": "float32", "shape": [], "data": [0]},
			{"name": "six", "dtype": "float32", "shape": [], "data": [6]}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "W1"], "output": "a", "attrs": {"groups": 8, "pads": [1, 1, 1, 1]}},
			{"op": "add", "inputs": ["a", "B1"], "output": "b"},
			{"op": "max", "inputs": ["b", "zero"], "output": "c"},
			{"op": "min", "inputs": ["c", "six"], "output": "d"},
			{"op": "conv2d", "inputs": ["d", "W2"], "output": "e"},
			{"op": "add", "inputs": ["e", "X"], "output": "f"},
			{"op": "max_pool2d", "inputs": ["f"], "output": "p", "attrs": {"kernel_shape": [2, 2], "strides": [2, 2]}},
			{"op": "reduce_mean", "inputs": ["p"], "output": "m", "attrs": {"axes": [2, 3], "keepdims": true}},
			{"op": "reshape", "inputs": ["m"], "output": "Y", "attrs": {"shape": [1, 8]}}],
		"outputs": ["Y"]}`)
	var dump strings.Builder
	p, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast, Dump: []string{"dce"}, DumpTo: &dump})
	if err != nil {
		t.Fatal(err)
	}
	transposes := transposesIn(dump.String())
	// X is moved once, for the first convolution and the residual
	// addition; the mean, [1, 1, 1, 8], goes back to NCHW for the reshape.
	if len(transposes) != 2 {
		t.Errorf("%d transposes, want 2 (X in, the mean out):\n%s", len(transposes), dump.String())
	}
	// The depthwise convolution and the pooling run in NHWC; the 1x1
	// convolution is a matrix product of pixels by channels.
	if n := strings.Count(dump.String(), `layout: "NHWC"`); n != 2 {
		t.Errorf("%d nodes in layout NHWC, want 2 (the depthwise convolution and the pooling):\n%s", n, dump.String())
	}
	if n := strings.Count(dump.String(), "= matmul("); n != 1 {
		t.Errorf("%d matrix products, want 1 (the 1x1 convolution):\n%s", n, dump.String())
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, Layout: fusion.LayoutChannelsFirst})
	if err != nil {
		t.Fatal(err)
	}
	compare(t, g, p, ref, nil)
	if slices.ContainsFunc(g.Nodes, func(n *fusion.Node) bool { return n.Attrs.Layout != "" }) {
		t.Error("Compile changed the caller's graph")
	}
}

// transposesIn returns the lines of a dumped graph that transpose.
func transposesIn(dump string) []string {
	var out []string
	for _, line := range strings.Split(dump, "\n") {
		if strings.Contains(line, "transpose(") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

func parseGraph(t *testing.T, src string) *fusion.Graph {
	t.Helper()
	g, err := fusion.ParseJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// ramp is a JSON list of n small distinct values.
func ramp(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for k := range n {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString([]string{"0.5", "-0.25", "0.125", "1", "-1", "0.75", "-0.5"}[k%7])
	}
	b.WriteString("]")
	return b.String()
}

// TestLayoutPassWindows takes convolutions and poolings of every kind
// through the layout pass (1x1 ones padded, strided, grouped or not, which
// only the plain one turns into a matrix product; dilated, grouped and
// depthwise windows; poolings with padding), each with a bias and an
// activation after it, at batch sizes 0, 1 and 2, against the graph as
// written.
func TestLayoutPassWindows(t *testing.T) {
	for _, c := range []struct {
		name, x, w, attrs string
	}{
		{"1x1", `[4, 5, 6]`, `[3, 4, 1, 1]`, `{}`},
		{"1x1 padded", `[4, 5, 6]`, `[3, 4, 1, 1]`, `{"pads": [1, 0, 0, 2]}`},
		{"1x1 strided padded", `[4, 5, 6]`, `[3, 4, 1, 1]`, `{"pads": [1, 1, 1, 1], "strides": [2, 3]}`},
		{"1x1 strided", `[4, 7, 6]`, `[3, 4, 1, 1]`, `{"strides": [2, 2]}`},
		{"1x1 grouped", `[4, 5, 6]`, `[6, 2, 1, 1]`, `{"groups": 2}`},
		{"3x3 dilated", `[2, 7, 6]`, `[3, 2, 3, 3]`, `{"dilations": [2, 1], "pads": [2, 1, 2, 1]}`},
		{"3x3 grouped", `[4, 6, 6]`, `[4, 2, 3, 3]`, `{"groups": 2, "pads": [1, 1, 1, 1]}`},
		{"5x5 depthwise strided", `[3, 9, 8]`, `[3, 1, 5, 5]`, `{"groups": 3, "strides": [2, 2], "pads": [2, 2, 2, 2]}`},
		{"2x2 stride 2", `[3, 8, 8]`, `[5, 3, 2, 2]`, `{"strides": [2, 2]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := strings.TrimSuffix(c.w[1:], "]")
			filters := strings.Split(f, ",")[0]
			g := parseGraph(t, `{"name": "w",
				"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", `+c.x[1:]+`}],
				"constants": [{"name": "W", "dtype": "float32", "shape": `+c.w+`, "data": `+ramp(elemsOf(c.w))+`},
					{"name": "B", "dtype": "float32", "shape": [`+filters+`, 1, 1], "data": `+ramp(elemsOf("["+filters+"]"))+`}],
				"nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "C", "attrs": `+c.attrs+`},
					{"op": "add", "inputs": ["C", "B"], "output": "D"},
					{"op": "silu", "inputs": ["D"], "output": "E"},
					{"op": "max_pool2d", "inputs": ["E"], "output": "P", "attrs": {"kernel_shape": [2, 2], "pads": [1, 0, 1, 0]}},
					{"op": "avg_pool2d", "inputs": ["E"], "output": "Q", "attrs": {"kernel_shape": [3, 2], "pads": [1, 1, 1, 0], "count_include_pad": true}}],
				"outputs": ["P", "Q", "E"]}`)
			last, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, Layout: fusion.LayoutChannelsFirst})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{0, 1, 2} {
				compare(t, g, last, ref, map[string]int64{"N": n})
			}
		})
	}
}

// elemsOf is the number of elements of a JSON shape of constants.
func elemsOf(shape string) int {
	n := 1
	for _, d := range strings.Split(strings.Trim(shape, "[]"), ",") {
		v, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil {
			panic(err)
		}
		n *= v
	}
	return n
}

// TestLayoutConcat: SqueezeNet's Fire module in NHWC. The two
// expansions' results are joined along the channels in NHWC (the
// concat's axis moved from 1 to 3, at either sign), with no conversion to
// NCHW and back around it; the joined tensor, read as pixels by the next
// 1x1 convolution, is computed by parts in a kernel of its own, the view
// apart (mergingView), whether or not the graph returns it. Checked
// against the graph as written at batch sizes 0, 1 and 2.
func TestLayoutConcat(t *testing.T) {
	for _, c := range []struct{ axis, outputs string }{{"1", `"Y", "Z"`}, {"-3", `"Y", "Z"`}, {"1", `"Y"`}} {
		axis := c.axis
		g := parseGraph(t, `{"name": "fire",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 4, 6, 6]}],
		"constants": [
			{"name": "S", "dtype": "float32", "shape": [3, 4, 1, 1], "data": `+ramp(12)+`},
			{"name": "E1", "dtype": "float32", "shape": [5, 3, 1, 1], "data": `+ramp(15)+`},
			{"name": "E3", "dtype": "float32", "shape": [6, 3, 3, 3], "data": `+ramp(162)+`},
			{"name": "Q", "dtype": "float32", "shape": [2, 11, 1, 1], "data": `+ramp(22)+`}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "S"], "output": "s"},
			{"op": "relu", "inputs": ["s"], "output": "r"},
			{"op": "conv2d", "inputs": ["r", "E1"], "output": "e1"},
			{"op": "relu", "inputs": ["e1"], "output": "a1"},
			{"op": "conv2d", "inputs": ["r", "E3"], "output": "e3", "attrs": {"pads": [1, 1, 1, 1]}},
			{"op": "relu", "inputs": ["e3"], "output": "a3"},
			{"op": "concat", "inputs": ["a1", "a3"], "output": "Z", "attrs": {"axis": `+axis+`}},
			{"op": "conv2d", "inputs": ["Z", "Q"], "output": "Y"}],
		"outputs": [`+c.outputs+`]}`)
		var dump strings.Builder
		p, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast, Dump: []string{"dce"}, DumpTo: &dump})
		if err != nil {
			t.Fatal(err)
		}
		transposes := transposesIn(dump.String())
		// X in; the outputs back.
		if want := 1 + strings.Count(c.outputs, ","); len(transposes) != want+1 {
			t.Errorf("axis %s, outputs %s: %d transposes, want %d (X in, the outputs back):\n%s", axis, c.outputs, len(transposes), want+1, dump.String())
		}
		if !strings.Contains(dump.String(), "axis: 3") {
			t.Errorf("axis %s, outputs %s: no concat along NHWC's channels:\n%s", axis, c.outputs, dump.String())
		}
		if plan := p.String(); !strings.Contains(plan, "Z_nhwc_part1") {
			t.Errorf("axis %s, outputs %s: the concat is not computed by parts:\n%s", axis, c.outputs, plan)
		}
		ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, Layout: fusion.LayoutChannelsFirst})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int64{0, 1, 2} {
			compare(t, g, p, ref, map[string]int64{"N": n})
		}
	}
}

// TestLayoutLanelessGroups: under LayoutAuto a grouped convolution whose
// groups hold 6 or 4 input channels (no vector of 8 or more lanes inside
// a group) stays NCHW between dense convolutions that go channels last,
// converted around; alone in a graph it leaves the graph NCHW. Asked for
// NHWC, it goes channels last too. Groups of 8 go channels last with
// their neighbours. Each is checked against the graph as written at
// batch sizes 0, 1 and 2.
func TestLayoutLanelessGroups(t *testing.T) {
	chain := parseGraph(t, `{"name": "chain",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 12, 7, 6]}],
		"constants": [
			{"name": "W1", "dtype": "float32", "shape": [12, 12, 3, 3], "data": `+ramp(1296)+`},
			{"name": "W2", "dtype": "float32", "shape": [12, 6, 3, 3], "data": `+ramp(648)+`},
			{"name": "W3", "dtype": "float32", "shape": [8, 12, 1, 1], "data": `+ramp(96)+`}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "W1"], "output": "a", "attrs": {"pads": [1, 1, 1, 1]}},
			{"op": "relu", "inputs": ["a"], "output": "b"},
			{"op": "conv2d", "inputs": ["b", "W2"], "output": "c", "attrs": {"groups": 2, "pads": [1, 1, 1, 1], "strides": [2, 2]}},
			{"op": "relu", "inputs": ["c"], "output": "d"},
			{"op": "conv2d", "inputs": ["d", "W3"], "output": "Y"}],
		"outputs": ["Y"]}`)
	// chainOf is chain with its grouped convolution's groups holding cpg
	// input channels (24 channels in 24/cpg groups).
	chainOf := func(cpg int) *fusion.Graph {
		return parseGraph(t, fmt.Sprintf(`{"name": "chain%d",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 24, 7, 6]}],
		"constants": [
			{"name": "W1", "dtype": "float32", "shape": [24, 24, 1, 1], "data": %s},
			{"name": "W2", "dtype": "float32", "shape": [24, %d, 3, 3], "data": %s},
			{"name": "W3", "dtype": "float32", "shape": [24, 24, 3, 3], "data": %s}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "W1"], "output": "a"},
			{"op": "conv2d", "inputs": ["a", "W2"], "output": "c", "attrs": {"groups": %d, "pads": [1, 1, 1, 1]}},
			{"op": "relu", "inputs": ["c"], "output": "d"},
			{"op": "conv2d", "inputs": ["d", "W3"], "output": "Y", "attrs": {"pads": [1, 1, 1, 1]}}],
		"outputs": ["Y"]}`, cpg, ramp(576), cpg, ramp(24*cpg*9), ramp(24*24*9), 24/cpg))
	}
	alone := parseGraph(t, `{"name": "alone",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 12, 7, 6]}],
		"constants": [{"name": "W2", "dtype": "float32", "shape": [12, 6, 3, 3], "data": `+ramp(648)+`}],
		"nodes": [{"op": "conv2d", "inputs": ["X", "W2"], "output": "Y", "attrs": {"groups": 2, "pads": [1, 1, 1, 1]}}],
		"outputs": ["Y"]}`)
	for _, c := range []struct {
		name   string
		g      *fusion.Graph
		layout string
		nhwc   int // nodes in layout NHWC
	}{
		{"chain auto", chain, fusion.LayoutAuto, 1},         // the dense 3x3; the 1x1 is a product
		{"chain NHWC", chain, fusion.LayoutChannelsLast, 2}, // the grouped one too
		{"alone auto", alone, fusion.LayoutAuto, 0},         // no reason to convert
		{"alone NHWC", alone, fusion.LayoutChannelsLast, 1},
		{"groups of 4 auto", chainOf(4), fusion.LayoutAuto, 1}, // the dense 3x3
		{"groups of 4 NHWC", chainOf(4), fusion.LayoutChannelsLast, 2},
		{"groups of 8 auto", chainOf(8), fusion.LayoutAuto, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var dump strings.Builder
			p, err := fusion.Compile(c.g, fusion.Options{Layout: c.layout, Dump: []string{"dce"}, DumpTo: &dump})
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(dump.String(), `layout: "NHWC"`); n != c.nhwc {
				t.Errorf("%d nodes in layout NHWC, want %d:\n%s", n, c.nhwc, dump.String())
			}
			ref, err := fusion.Compile(c.g, fusion.Options{NoFuse: true, Layout: fusion.LayoutChannelsFirst})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{0, 1, 2} {
				compare(t, c.g, p, ref, map[string]int64{"N": n})
			}
		})
	}
}

// TestKeepsChannelsFirstMalformed: asked about a grouped convolution node
// without its weights, KeepsChannelsFirst says no rather than panicking.
func TestKeepsChannelsFirstMalformed(t *testing.T) {
	groups := int64(4)
	n := &fusion.Node{Op: "conv2d", Inputs: []*fusion.Tensor{{Name: "X"}}}
	n.Attrs.Groups = &groups
	if fusion.KeepsChannelsFirst(n) {
		t.Error("a convolution without weights kept channels first")
	}
	n.Inputs = append(n.Inputs, nil)
	if fusion.KeepsChannelsFirst(n) {
		t.Error("a convolution with nil weights kept channels first")
	}
}
