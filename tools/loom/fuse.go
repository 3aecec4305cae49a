package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/sysmem"
)

// checkBudget is how many block instances the default check interprets
// (the fused plan and one kernel per operator together): seconds of the
// interpreter's time.
const checkBudget = 5_000_000

// fuseKernel is one line of loom fuse -json: a kernel of the plan.
type fuseKernel struct {
	Kernel  string   `json:"kernel"`
	Kind    string   `json:"kind"`
	Nodes   []string `json:"nodes"`
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
	Func    string   `json:"func"` // the function, in loom's text form
}

// fuseMemory is the memory plan's line.
type fuseMemory struct {
	Memory string `json:"memory"` // the plan, as text
	Peak   int64  `json:"peak_bytes"`
	Naive  int64  `json:"naive_bytes"`
}

// fuseCheck is one output's check against one kernel per operator.
type fuseCheck struct {
	Check     string           `json:"check"`
	MaxRelErr float64          `json:"max_rel_err"`
	Sizes     map[string]int64 `json:"sizes,omitempty"` // the sizes it was checked at
	With      string           `json:"with"`            // "interpreter" or "compiled"
	OK        bool             `json:"ok"`
}

// fuseSkipped says why there was no check.
type fuseSkipped struct {
	Skipped string `json:"check_skipped"`
}

// runFuse reads a JSON graph, runs the graph passes and fusion, and
// prints the plan: kernels, buffers and their functions. With -size for
// every symbol it also prints the memory plan and checks the fused
// kernels against one kernel per operator on random inputs.
func runFuse(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fuse", "[-dump PASSES] [-nofuse] [-size NAME=VALUE]... [-check auto|full|off] [-json] (GRAPH.json | -onnx M.onnx)", `Reads an operator graph in loom's JSON format (fusion/doc.go) or an ONNX
model, runs the
graph passes and fusion, and prints the kernels, the buffers between them
and each kernel's function. With a value for every symbol it also prints
the memory plan and checks the fused kernels against one kernel per
operator with the interpreter, on random inputs.

The check interprets both plans, which at a real layer's sizes takes
minutes: by default (-check auto) it interprets at the sizes given when
that is cheap, else at smaller values of the graph's symbols, else (a layer
of fixed shape) runs both plans compiled with LLVM at the sizes given, and
says which; -check full interprets at the sizes given, whatever it costs.
-json prints one JSON object per line: each kernel, the memory plan and
each check.`, stderr)
	dump := fs.String("dump", "", "print the graph after these passes (comma-separated: "+strings.Join(fusion.DumpNames(), ",")+")")
	noFuse := fs.Bool("nofuse", false, "one kernel per operator")
	sizes := sizeFlags{}
	fs.Var(sizes, "size", "a value for a symbol, NAME=VALUE (repeatable, or comma-separated)")
	checkMode := fs.String("check", "auto", "the check against one kernel per operator: auto, full or off")
	asJSON := fs.Bool("json", false, "print one JSON object per line instead of text")
	var layout layoutChoice
	layoutFlag(fs, &layout)
	onnxPath := fs.String("onnx", "", "an ONNX model `M.onnx` to fuse instead of a GRAPH.json argument (loom fuse M.onnx does the same)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	path := *onnxPath
	switch {
	case path == "" && fs.NArg() != 1:
		return wrongArgs(fs, stderr, "one GRAPH.json")
	case path != "" && fs.NArg() != 0:
		return wrongArgs(fs, stderr, "no GRAPH.json with -onnx")
	case path == "":
		path = fs.Arg(0)
	}
	switch *checkMode {
	case "auto", "full", "off":
	default:
		fmt.Fprintf(stderr, "loom fuse: unknown -check %q (have auto, full, off)\n", *checkMode)
		return 2
	}
	g, err := readGraph(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	opts := layout.options()
	opts.NoFuse, opts.DumpTo = *noFuse, stdout
	if *dump != "" {
		opts.Dump = strings.Split(*dump, ",")
		for _, name := range opts.Dump {
			if !slices.Contains(fusion.DumpNames(), name) {
				fmt.Fprintf(stderr, "loom fuse: -dump %s: no such pass (have %s)\n", name, strings.Join(fusion.DumpNames(), ", "))
				return 2
			}
		}
		if *asJSON {
			opts.DumpTo = stderr // stdout holds JSON lines only
		}
	}
	p, err := fusion.Compile(g, opts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	if *asJSON {
		for _, k := range p.Kernels {
			enc.Encode(fuseKernel{Kernel: k.Name, Kind: k.Kind.String(), Nodes: k.Nodes, Inputs: k.Inputs, Outputs: k.Outputs, Func: ast.Print(k.Func)})
		}
	} else {
		fmt.Fprint(stdout, p)
	}
	if len(sizes) == 0 && len(g.Symbols()) > 0 {
		return 0
	}
	mem, err := p.Memory(sizes)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *asJSON {
		enc.Encode(fuseMemory{Memory: mem.String(), Peak: mem.Peak, Naive: mem.Naive})
	} else {
		fmt.Fprintf(stdout, "\nmemory plan:\n%s", mem)
	}
	if *checkMode == "off" {
		return 0
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	at, note := checkSizes(p, ref, sizes, *checkMode == "full")
	runKernel, with := ast.Interpret, "interpreter"
	if at == nil {
		// Too much to interpret even at smaller sizes (a layer of fixed
		// shape): both plans compiled, at the sizes given.
		at, runKernel, with = sizes, runCompiled, "compiled"
		note = "the sizes given with compiled kernels: " + note
		need, err := p.Bytes(at)
		if err == nil {
			refBytes, _ := ref.Bytes(at)
			err = sysmem.Check("checking the plan", need+refBytes)
		}
		if err != nil {
			if *asJSON {
				enc.Encode(fuseSkipped{err.Error()})
			} else {
				fmt.Fprintf(stdout, "check skipped: %v\n", err)
			}
			return 0
		}
	}
	if note != "" && !*asJSON {
		fmt.Fprintf(stdout, "check at %s\n", note)
	}
	r := rand.New(rand.NewPCG(1, 1))
	in := map[string]any{}
	for _, x := range g.Inputs {
		d, err := fusion.NewData(x, at)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if v, ok := d.([]float32); ok {
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
		}
		in[x.Name] = d
	}
	got, err := p.Execute(at, in, runKernel)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	want, err := ref.Execute(at, in, runKernel)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	status := 0
	for _, t := range g.Outputs {
		e := check.MaxRelErr(got[t.Name], want[t.Name])
		ok := e <= 1e-5
		if !ok {
			status = 1
		}
		if *asJSON {
			c := fuseCheck{Check: t.Name, MaxRelErr: e, With: with, OK: ok}
			if len(at) > 0 {
				c.Sizes = at
			}
			enc.Encode(c)
			continue
		}
		fmt.Fprintf(stdout, "check %s: max relative error %.3g against one kernel per operator\n", t.Name, e)
	}
	return status
}

// checkSizes chooses the sizes the check runs at: the ones given when
// full is set or interpreting both plans there stays within checkBudget
// block instances; else the graph's symbols halved until it does (and a
// note saying so); else none (nil, and a note saying why).
func checkSizes(p, ref *fusion.Plan, sizes map[string]int64, full bool) (map[string]int64, string) {
	cost := func(at map[string]int64) float64 { return planInstances(p, at) + planInstances(ref, at) }
	if full || cost(sizes) <= checkBudget {
		return sizes, ""
	}
	at := maps.Clone(sizes)
	for cost(at) > checkBudget {
		shrunk := false
		for name, v := range at {
			if v > 1 {
				at[name], shrunk = max(v/2, 1), true
			}
		}
		if !shrunk {
			return nil, fmt.Sprintf("interpreting the plans would take about %.3g block instances, more than the default check's %d (-check full interprets them)", cost(sizes), checkBudget)
		}
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(at)) {
		parts = append(parts, fmt.Sprintf("%s=%d", name, at[name]))
	}
	sort.Strings(parts)
	return at, fmt.Sprintf("%s, smaller than the sizes given (-check full checks at those)", strings.Join(parts, ","))
}

// runCompiled runs a kernel compiled with LLVM, for checks too large to
// interpret.
func runCompiled(f *ast.Func, sizes map[string]int64, args map[string]any) error {
	k, err := native.Compile(f, llvm.Options{})
	if err != nil {
		return err
	}
	return k.Run(sizes, args)
}

// planInstances estimates the block instances interpreting a plan runs.
func planInstances(p *fusion.Plan, sizes map[string]int64) float64 {
	total := 0.0
	for _, k := range p.Kernels {
		total += autotune.Iterations(k.Func, sizes)
	}
	return total
}
