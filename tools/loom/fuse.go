package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/workload"
)

// runFuse reads a JSON graph, runs the graph passes and fusion, and
// prints the plan: kernels, buffers and their functions. With -size for
// every symbol it also prints the memory plan and checks the fused
// kernels against one kernel per operator on random inputs.
func runFuse(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fuse", "[-dump PASSES] [-nofuse] [-size NAME=VALUE]... GRAPH.json", `Reads an operator graph in loom's JSON format (fusion/doc.go), runs the
graph passes and fusion, and prints the kernels, the buffers between them
and each kernel's function. With a value for every symbol it also prints
the memory plan and checks the fused kernels against one kernel per
operator on random inputs.`, stderr)
	dump := fs.String("dump", "", "print the graph after these passes (comma-separated: "+strings.Join(fusion.DumpNames(), ",")+")")
	noFuse := fs.Bool("nofuse", false, "one kernel per operator")
	sizes := sizeFlags{}
	fs.Var(sizes, "size", "a value for a symbol, NAME=VALUE (repeatable)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return wrongArgs(fs, stderr, "one GRAPH.json")
	}
	data, err := readInput(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	g, err := fusion.ParseJSON(data)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Arg(0), err)
		return 1
	}
	opts := fusion.Options{NoFuse: *noFuse, DumpTo: stdout}
	if *dump != "" {
		opts.Dump = strings.Split(*dump, ",")
		for _, name := range opts.Dump {
			if !slices.Contains(fusion.DumpNames(), name) {
				fmt.Fprintf(stderr, "loom fuse: -dump %s: no such pass (have %s)\n", name, strings.Join(fusion.DumpNames(), ", "))
				return 2
			}
		}
	}
	p, err := fusion.Compile(g, opts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprint(stdout, p)
	if len(sizes) == 0 && len(g.Symbols()) > 0 {
		return 0
	}
	mem, err := p.Memory(sizes)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "\nmemory plan:\n%s", mem)
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	r := rand.New(rand.NewPCG(1, 1))
	in := map[string]any{}
	for _, x := range g.Inputs {
		d, err := fusion.NewData(x, sizes)
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
	got, err := p.Interpret(sizes, in)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	want, err := ref.Interpret(sizes, in)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, t := range g.Outputs {
		e := workload.MaxRelErr(got[t.Name], want[t.Name])
		fmt.Fprintf(stdout, "check %s: max relative error %.3g against one kernel per operator\n", t.Name, e)
		if e > 1e-5 {
			return 1
		}
	}
	return 0
}
