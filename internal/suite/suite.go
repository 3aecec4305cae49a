// Package suite is the public benchmark suite: every distinct operator
// configuration, after fusion, of ResNet-50 and MobileNetV2 at batch 1
// (224x224), BERT-base at sequence length 128, and GPT-2 small at one
// decode step (M = 1 matmuls, a 512-token cache) and over a 512-token
// prompt; the cases of issue 20's table, where loom was found slow; and
// layers of other architectures (ResNeXt-50, ConvNeXt-T, EfficientNet-B0,
// YOLOv5s, ViT-B/16) whose shapes the others lack: grouped, 2x2 to 16x16,
// strided 5x5 depthwise with SiLU, a squeeze-excitation gate, a chain of
// pools with their concat. Each case is a graph (see package fusion's
// JSON format) of one fused kernel's worth of operators: a convolution with its bias,
// activation and residual, a matmul with its epilogue, a normalization, an
// attention's steps. [Write] saves them as graph JSON files, which is what
// loom bench -suite DIR reads.
package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Case is one benchmark case: a model's name and the graph, as JSON.
type Case struct {
	Model string
	Name  string // unique across the suite: model_kernel
	Graph []byte
	// OneDNN is the case for oneDNN's side (tools/onednn/suite.cpp): its
	// kind and dimensions on one line, "" where oneDNN has no primitive
	// for it (a gather).
	OneDNN string
}

// Cases returns the whole suite, in model order.
func Cases() []Case {
	var out []Case
	for _, m := range []struct {
		name  string
		cases func() []*graph
	}{
		{"resnet50", resnet50}, {"mobilenetv2", mobilenetV2}, {"bert", bert}, {"gpt2_decode", gpt2Decode}, {"gpt2_prefill", gpt2Prefill},
		{"issue20", issue20},
		{"resnext50", resnext50}, {"convnext_tiny", convnextTiny}, {"efficientnet_b0", efficientnetB0}, {"efficientnet_v2_s", efficientnetV2S}, {"yolov5s", yolov5s}, {"vit_b16", vitB16},
	} {
		seen := map[string]bool{}
		for _, g := range m.cases() {
			g.name = m.name + "_" + g.name
			if seen[g.name] {
				continue // the same configuration again
			}
			seen[g.name] = true
			data, err := json.MarshalIndent(g.json(), "", "  ")
			if err != nil {
				panic(err)
			}
			out = append(out, Case{Model: m.name, Name: g.name, Graph: append(data, '\n'), OneDNN: g.spec})
		}
	}
	return out
}

// Write saves every case as DIR/NAME.json, and its oneDNN line as
// DIR/NAME.onednn where it has one.
func Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range Cases() {
		if err := os.WriteFile(filepath.Join(dir, c.Name+".json"), c.Graph, 0o644); err != nil {
			return err
		}
		if c.OneDNN != "" {
			if err := os.WriteFile(filepath.Join(dir, c.Name+".onednn"), []byte(c.OneDNN+"\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// graph is a graph under construction.
type graph struct {
	name      string
	inputs    []tensor
	constants []tensor
	nodes     []node
	outputs   []string
	n         int
	spec      string // the oneDNN line (see Case.OneDNN)
}

type tensor struct {
	Name  string    `json:"name"`
	DType string    `json:"dtype"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data,omitempty"`
}

type node struct {
	Op     string         `json:"op"`
	Inputs []string       `json:"inputs"`
	Output string         `json:"output"`
	Attrs  map[string]any `json:"attrs,omitempty"`
}

func newGraph(name string) *graph { return &graph{name: name} }

func (g *graph) input(name string, shape ...int) string {
	g.inputs = append(g.inputs, tensor{Name: name, DType: "float32", Shape: shape})
	return name
}

func (g *graph) ids(name string, shape ...int) string {
	g.inputs = append(g.inputs, tensor{Name: name, DType: "int32", Shape: shape})
	return name
}

func (g *graph) scalar(v float64) string {
	name := fmt.Sprintf("c%d", len(g.constants))
	g.constants = append(g.constants, tensor{Name: name, DType: "float32", Shape: []int{}, Data: []float64{v}})
	return name
}

// op adds a node and returns its output's name.
func (g *graph) op(op string, attrs map[string]any, inputs ...string) string {
	g.n++
	out := fmt.Sprintf("t%d", g.n)
	g.nodes = append(g.nodes, node{Op: op, Inputs: inputs, Output: out, Attrs: attrs})
	return out
}

func (g *graph) out(names ...string) *graph {
	g.outputs = append(g.outputs, names...)
	return g
}

func (g *graph) json() any {
	return map[string]any{"name": g.name, "inputs": g.inputs, "constants": g.constants, "nodes": g.nodes, "outputs": g.outputs}
}

// Names returns the names of the cases, sorted.
func Names() []string {
	var out []string
	for _, c := range Cases() {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}
