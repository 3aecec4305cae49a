package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/onnx"
)

// runImport converts an ONNX model into loom's graph JSON and a weights
// file beside it.
func runImport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("import", "[-dim NAME=VALUE]... [-name NAME] -o DIR MODEL.onnx", `Reads an ONNX model (opsets 7 to 21, external data files beside it) and
writes loom's form of it into DIR: NAME.json, the operator graph (fusion/doc.go),
and NAME.safetensors, its weights. The other commands take the JSON with
-graph, or the model itself with -onnx.

Each named dimension of the model's inputs (dim_param, such as batch_size)
becomes a symbol of the graph, given at run time, unless -dim fixes it.
An operator loom cannot import is an error naming the node.`, stderr)
	out := fs.String("o", "", "the output `DIR` (created if missing)")
	name := fs.String("name", "", "the graph's name (default: the model file's name)")
	dims := sizeFlags{}
	fs.Var(dims, "dim", "fix a named dimension of the model's inputs, `NAME=VALUE` (repeatable, or comma-separated)")
	asJSON := fs.Bool("json", false, "print a JSON object: graph (the file written), name, nodes, constants, inputs and outputs (name, dtype, shape), producer, opset")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return wrongArgs(fs, stderr, "one ONNX model file")
	}
	if *out == "" {
		fmt.Fprintln(stderr, "loom import: -o DIR is required")
		return 2
	}
	path := fs.Arg(0)
	if *name == "" {
		*name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	g, m, err := importONNX(path, dims, *name)
	if err != nil {
		fmt.Fprintf(stderr, "loom import: %v\n", err)
		return 1
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "loom import: %v\n", err)
		return 1
	}
	jsonPath := filepath.Join(*out, g.Name+".json")
	if err := fusion.WriteJSONFile(jsonPath, g, g.Name+".safetensors"); err != nil {
		fmt.Fprintf(stderr, "loom import: %v\n", err)
		return 1
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(importedGraph{
			Graph: jsonPath, Name: g.Name, Nodes: len(g.Nodes), Constants: len(g.Constants),
			Inputs: tensorsOf(g.Inputs), Outputs: tensorsOf(g.Outputs), Producer: m.Producer, Opset: m.Opset,
		})
		return 0
	}
	fmt.Fprintf(stdout, "%s: %d nodes, %d constants, inputs %s, outputs %s (from %s, opset %d)\n",
		jsonPath, len(g.Nodes), len(g.Constants), tensorList(g.Inputs), tensorList(g.Outputs), m.Producer, m.Opset)
	return 0
}

// importONNX imports a model for a command: dims fixes named dimensions,
// name (when not empty) names the graph.
func importONNX(path string, dims map[string]int64, name string) (*fusion.Graph, *onnx.Model, error) {
	m, err := onnx.ImportFile(path, onnx.Options{Dims: dims, Name: name})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	return m.Graph, m, nil
}

// importedGraph is what import -json prints.
type importedGraph struct {
	Graph     string           `json:"graph"` // the JSON file written
	Name      string           `json:"name"`
	Nodes     int              `json:"nodes"`
	Constants int              `json:"constants"`
	Inputs    []importedTensor `json:"inputs"`
	Outputs   []importedTensor `json:"outputs"`
	Producer  string           `json:"producer"`
	Opset     int64            `json:"opset"`
}

type importedTensor struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape string `json:"shape"`
}

func tensorsOf(ts []*fusion.Tensor) []importedTensor {
	var out []importedTensor
	for _, t := range ts {
		out = append(out, importedTensor{t.Name, t.DType.String(), t.Shape.String()})
	}
	return out
}

func tensorList(ts []*fusion.Tensor) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s %s%s", t.Name, t.DType, t.Shape))
	}
	return strings.Join(parts, ", ")
}
