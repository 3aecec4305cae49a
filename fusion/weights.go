package fusion

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/loom-go/loom/internal/safetensors"
)

// A graph's constants may live outside its JSON, in a weights file: the
// graph's "weights" names a safetensors file beside it, and each constant
// declared without "data" is the tensor of that name there, of the
// declared dtype and shape. The JSON stays small and readable whatever
// the model's size (the 64 MiB limit is the JSON's), and the weights
// stay binary. ReadJSONFile reads both; WriteJSONFile writes both.

// ReadJSONFile reads the graph in the JSON file at path, with its weights
// file when it names one (relative to path's directory, inside it).
func ReadJSONFile(path string) (*Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJSON+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJSON {
		return nil, &GraphError{Msg: fmt.Sprintf("the graph is larger than %d MiB, the limit (keep large constants in a weights file: see WriteJSONFile)", maxJSON>>20)}
	}
	return parseJSON(data, filepath.Dir(path))
}

// openWeights opens the weights file a graph names; nil when it names
// none.
func openWeights(name, dir string) (*safetensors.File, error) {
	if name == "" {
		return nil, nil
	}
	if dir == "" {
		return nil, &GraphError{Where: "weights", Msg: fmt.Sprintf("the graph keeps its constants in %q: read it from its file (ReadJSONFile, or the loom command's -graph FILE) so that the weights file is found beside it", name)}
	}
	if filepath.IsAbs(name) || !filepath.IsLocal(name) {
		return nil, &GraphError{Where: "weights", Msg: fmt.Sprintf("%q is not a file name relative to the graph's directory", name)}
	}
	w, err := safetensors.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, &GraphError{Where: "weights", Msg: err.Error()}
	}
	return w, nil
}

// weightData fills constant t (declared at where) from w.
func weightData(w *safetensors.File, where string, t *Tensor, file string) error {
	if w == nil {
		return &GraphError{Where: where + ".data", Msg: fmt.Sprintf("constant %s has no data, and the graph names no weights file", t.Name)}
	}
	dt, shape, ok := w.Info(t.Name)
	if !ok {
		return &GraphError{Where: where + ".data", Msg: fmt.Sprintf("constant %s has no data, and %s holds no tensor of that name", t.Name, file)}
	}
	want := make([]int64, len(t.Shape))
	for k, d := range t.Shape {
		want[k], _ = d.IsConst()
	}
	if dt != t.DType || !slices.Equal(shape, want) {
		return &GraphError{Where: where, Msg: fmt.Sprintf("constant %s is declared %s %v, but %s holds it as %s %v", t.Name, t.DType, want, file, dt, shape)}
	}
	wt, err := w.Read(t.Name)
	if err != nil {
		return &GraphError{Where: where + ".data", Msg: err.Error()}
	}
	t.Data = wt.Data
	return nil
}

// inlineLimit is the most elements a constant keeps in the JSON when the
// graph has a weights file.
const inlineLimit = 16

// WriteJSONFile writes g as JSON to path. With weights (a file name, in
// path's directory), every constant of more than 16 elements goes to that
// safetensors file and the JSON refers to it; without, the constants are
// inline as WriteJSON writes them.
func WriteJSONFile(path string, g *Graph, weights string) error {
	jg, err := toJSON(g)
	if err != nil {
		return err
	}
	if weights != "" {
		if filepath.Base(weights) != weights {
			return fmt.Errorf("fusion: the weights file %q must be a name in the graph's directory", weights)
		}
		jg.Weights = weights
		var tensors []safetensors.Tensor
		for k, t := range g.Constants {
			if len(t.Data) <= inlineLimit {
				continue
			}
			shape := make([]int64, len(t.Shape))
			for a, d := range t.Shape {
				shape[a], _ = d.IsConst()
			}
			tensors = append(tensors, safetensors.Tensor{Name: t.Name, DType: t.DType, Shape: shape, Data: t.Data})
			jg.Constants[k].Data = nil
		}
		if err := writeFile(filepath.Join(filepath.Dir(path), weights), func(w io.Writer) error {
			return safetensors.Write(w, tensors, map[string]string{"format": "loom", "graph": g.Name})
		}); err != nil {
			return err
		}
	}
	return writeFile(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(jg)
	})
}

// writeFile writes a file whole or not at all: to a temporary file, then
// renamed.
func writeFile(path string, write func(w io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil { // CreateTemp's is 0600
		return err
	}
	return os.Rename(tmp.Name(), path)
}
