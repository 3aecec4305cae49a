package module

import (
	"bufio"
	_ "embed"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/buildtool"
	"github.com/loom-go/loom/internal/rawdata"
)

// graphRuntime is the C runtime pasted into every graph library: status,
// dimension arithmetic, the arena planner, the arena pool.
//
//go:embed runtime/graphrt.c
var graphRuntime string

// Library is what Build writes: a C library holding the whole graph.
type Library struct {
	Dir    string
	Name   string // the entry point's C name
	Header string // NAME.h
	Static string // libNAME.a
	Shared string // libNAME.so
	// Source is the generated C of the graph (NAME_graph.c): the shape
	// function, the memory plan and the calls of the kernels.
	Source string
	// Weights is the weights file (NAME.weights) of a library built
	// with BuildOptions.WeightsFile; "" when they are in the library.
	Weights string
}

// Build writes the module as a C library into dir (created if needed):
// NAME.h, libNAME.a and libNAME.so, holding every kernel, the shape
// function, the memory planner, the arena pool and loom's thread pool, so
// that a C program needs nothing else:
//
//	cc -O2 -I DIR prog.c DIR/libNAME.a -lm -pthread
//
// The entry point, NAME, takes each input's data and shape, each output's
// data and shape, a thread count and a status (see the header it writes);
// NAME_output_shapes and NAME_memory answer before a call. name must be a
// C identifier. Build needs a C compiler (cc) and ar.
func (m *Module) Build(dir, name string) (*Library, error) {
	return m.BuildWith(dir, name, BuildOptions{})
}

// BuildOptions choose how Build writes a library.
type BuildOptions struct {
	// WeightsFile keeps the graph's weights out of the library: in
	// NAME.weights beside it, which a program loads once, before its
	// first call, with NAME_load_weights(path, status) (the file is
	// checked against the library it was built with). By default the
	// weights are read-only data of the library itself.
	WeightsFile bool
}

// BuildWith is Build with options.
func (m *Module) BuildWith(dir, name string, opts BuildOptions) (*Library, error) {
	if m.closed {
		return nil, ErrClosed
	}
	if !isCIdent(name) {
		return nil, fmt.Errorf("module: build: %q is not a C identifier", name)
	}
	if reservedGraphName(name) {
		return nil, fmt.Errorf("module: build: graph %s: the library's name %q is a name C, its library or loom's runtime already uses; give it another (loom build -name)", m.plan.Graph.Name, name)
	}
	g, err := m.cGraph(name)
	if err != nil {
		return nil, err
	}
	g.weightsFile = opts.WeightsFile && g.blobSize > 0
	// The build tools run in dir: every path they are given is absolute.
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lib := &Library{
		Dir: dir, Name: name,
		Header: filepath.Join(dir, name+".h"),
		Static: filepath.Join(dir, "lib"+name+".a"),
		Shared: filepath.Join(dir, "lib"+name+".so"),
		Source: filepath.Join(dir, name+"_graph.c"),
	}
	rt := filepath.Join(dir, "loomrt.c")
	if err := os.WriteFile(rt, native.RuntimeSource(), 0o644); err != nil {
		return nil, err
	}
	sources := []string{lib.Source, rt}
	if g.blobSize > 0 {
		asm, err := g.writeWeights(dir)
		if err != nil {
			return nil, fmt.Errorf("module: build: %w", err)
		}
		if g.weightsFile {
			lib.Weights = filepath.Join(dir, name+".weights")
		} else {
			sources = append(sources, asm)
		}
	}
	// The source holds the weights' checksum: written after them.
	if err := os.WriteFile(lib.Header, []byte(g.header()), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(lib.Source, []byte(g.source()), 0o644); err != nil {
		return nil, err
	}
	objs := []string{}
	for i, k := range m.kernels {
		if k.native == nil {
			continue // a view
		}
		// The kernels were lowered when the module was compiled: their
		// objects only rename the entry points.
		obj := filepath.Join(dir, g.kernelSymbol(i)+".o")
		lowered, err := k.native.Lowered()
		if err == nil {
			err = native.WriteObjectAs(lowered, g.kernelSymbol(i), obj)
		}
		if err != nil {
			return nil, fmt.Errorf("module: build: kernel %s: %w", k.k.Name, err)
		}
		objs = append(objs, obj)
		for j, v := range k.variants {
			sym := g.variantSymbol(i, j)
			obj := filepath.Join(dir, sym+".o")
			lowered, err := v.native.Lowered()
			if err == nil {
				err = native.WriteObjectAs(lowered, sym, obj)
			}
			if err != nil {
				return nil, fmt.Errorf("module: build: kernel %s, bucket %d: %w", k.k.Name, j, err)
			}
			objs = append(objs, obj)
		}
	}
	for _, src := range sources {
		obj := strings.TrimSuffix(strings.TrimSuffix(src, ".c"), ".S") + ".o"
		if err := run(dir, "cc", "-O2", "-fPIC", "-pthread", "-std=c11", "-D_GNU_SOURCE", "-c", src, "-o", obj); err != nil {
			return nil, fmt.Errorf("module: build: %w", err)
		}
		objs = append(objs, obj)
	}
	os.Remove(lib.Static) // ar would add to an old one
	if err := run(dir, "ar", append([]string{"rcs", lib.Static}, objs...)...); err != nil {
		return nil, fmt.Errorf("module: build: %w", err)
	}
	if err := run(dir, "cc", append(append([]string{"-shared", "-o", lib.Shared}, objs...), "-lm", "-pthread")...); err != nil {
		return nil, fmt.Errorf("module: build: %w", err)
	}
	for _, o := range objs {
		os.Remove(o)
	}
	os.Remove(filepath.Join(dir, name+"_weights.S"))
	os.Remove(filepath.Join(dir, name+"_weights.bin"))
	return lib, nil
}

// blobLimit is the most elements a constant keeps as a C initializer;
// larger ones (weights) go into the library as bytes (NAME_weights.bin,
// assembled with .incbin), which compiles in no time whatever their size.
const blobLimit = 16

// blobAlign aligns each constant in the weights blob.
const blobAlign = 64

// writeWeights writes the large constants' bytes and the assembly file
// that puts them in the library's read-only data; it returns the
// assembly file.
func (g *cGraph) writeWeights(dir string) (string, error) {
	bin := filepath.Join(dir, g.name+"_weights.bin")
	if g.weightsFile {
		bin = filepath.Join(dir, g.name+".weights")
	}
	f, err := os.Create(bin)
	if err != nil {
		return "", err
	}
	sum := fnv.New64a()
	w := bufio.NewWriterSize(io.MultiWriter(f, sum), 1<<20)
	off := int64(0)
	for _, t := range g.consts {
		at, ok := g.blobAt[t.Name]
		if !ok {
			continue
		}
		for ; off < at; off++ {
			w.WriteByte(0)
		}
		b := constBytes(t)
		w.Write(b)
		off += int64(len(b))
	}
	for ; off < g.blobSize; off++ {
		w.WriteByte(0)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	g.blobSum = sum.Sum64()
	if g.weightsFile {
		return "", nil
	}
	asm := filepath.Join(dir, g.name+"_weights.S")
	sym := g.name + "_weights"
	text := fmt.Sprintf("/* Generated by loom: the weights of graph %s (%d bytes). */\n", g.m.plan.Graph.Name, off) +
		"\t.section .rodata\n" +
		fmt.Sprintf("\t.balign %d\n\t.globl %s\n\t.hidden %s\n%s:\n", blobAlign, sym, sym, sym) +
		fmt.Sprintf("\t.incbin %q\n", bin) +
		"\t.section .note.GNU-stack,\"\",%progbits\n"
	return asm, os.WriteFile(asm, []byte(text), 0o644)
}

// constBytes is a constant's elements as the kernels read them:
// little-endian, each of its dtype's width.
func constBytes(t *fusion.Tensor) []byte {
	b, _ := rawdata.Append(nil, ast.DataOf(t.DType, t.Data))
	return b
}

// run runs a build tool in dir; its failure is one line, the whole
// output in a log (see buildtool.Run).
func run(dir, tool string, args ...string) error { return buildtool.Run(dir, tool, args...) }

// cGraph is the module as the C generator sees it.
type cGraph struct {
	m       *Module
	name    string
	syms    []string          // the graph's symbols, sorted: sz[i] is syms[i]
	boundBy [][2]int          // per symbol: the input and dimension that binds it
	ident   map[string]string // C identifier of every tensor in the header (by name)
	src     map[string]string // its name in the generated source: lg_in0, lg_out0, lg_c0
	inter   []*fusion.Buffer  // the intermediates, in plan order: bufs[i]
	alias   map[string]string // views: tensor -> the tensor whose memory it shares
	consts  []*fusion.Tensor
	// blobAt places each large constant in the weights blob (its byte
	// offset); blobSize is the blob's bytes.
	blobAt   map[string]int64
	blobSize int64
	// weightsFile: the blob is a file loaded at run time (NAME.weights,
	// of checksum blobSum: FNV-1a 64), not data of the library.
	weightsFile bool
	blobSum     uint64
}

func (m *Module) cGraph(name string) (*cGraph, error) {
	g := &cGraph{m: m, name: name, syms: m.plan.Graph.Symbols(), ident: map[string]string{}, src: map[string]string{}, alias: map[string]string{}, blobAt: map[string]int64{}}
	// The header names the parameters after the tensors; the source
	// names them lg_in0, lg_out0, ... so that no tensor's name can meet
	// a name of the generated code.
	used := map[string]bool{name: true, "threads": true, "status": true}
	for _, b := range m.plan.Buffers {
		id := cIdentOf(b.Tensor.Name)
		if strings.HasPrefix(id, name+"_") || strings.HasSuffix(id, "_shape") {
			id = "t_" + id
		}
		for used[id] || used[id+"_shape"] {
			id += "_"
		}
		used[id], used[id+"_shape"] = true, true
		g.ident[b.Tensor.Name] = id
		switch {
		case b.AliasOf != nil:
			g.alias[b.Tensor.Name] = b.AliasOf.Name
		case b.Role == fusion.RoleIntermediate:
			g.inter = append(g.inter, b)
		case b.Role == fusion.RoleConstant:
			g.src[b.Tensor.Name] = fmt.Sprintf("lg_c%d", len(g.consts))
			g.consts = append(g.consts, b.Tensor)
			if len(b.Tensor.Data) > blobLimit {
				g.blobAt[b.Tensor.Name] = g.blobSize
				g.blobSize += (int64(len(b.Tensor.Data)*max(b.Tensor.DType.Bytes(), 1)) + blobAlign - 1) / blobAlign * blobAlign
			}
		}
	}
	for i, t := range m.inputs {
		g.src[t.Name] = fmt.Sprintf("lg_in%d", i)
	}
	for i, t := range m.outputs {
		g.src[t.Name] = fmt.Sprintf("lg_out%d", i)
	}
	for _, s := range g.syms {
		at := [2]int{-1, -1}
		for i, t := range m.inputs {
			for k, d := range t.Shape {
				if at[0] < 0 && d.Equal(fusion.Sym(s)) {
					at = [2]int{i, k}
				}
			}
		}
		if at[0] < 0 {
			return nil, fmt.Errorf("module: build: no input dimension is the size %s alone: it cannot be bound from the inputs' shapes", s)
		}
		g.boundBy = append(g.boundBy, at)
	}
	return g, nil
}

func (g *cGraph) kernelSymbol(i int) string { return fmt.Sprintf("%s_k%d", g.name, i) }

// variantSymbol names kernel i's schedule for its j-th bucket of sizes.
func (g *cGraph) variantSymbol(i, j int) string { return fmt.Sprintf("%s_k%d_b%d", g.name, i, j) }

// bucketTest is the C condition that the sizes sz are in a bucket.
func (g *cGraph) bucketTest(bucket map[string][2]int64) string {
	var conds []string
	for _, name := range slices.Sorted(maps.Keys(bucket)) {
		r, at := bucket[name], slices.Index(g.syms, name)
		conds = append(conds, fmt.Sprintf("sz[%d] >= %d && sz[%d] <= %d", at, r[0], at, r[1]))
	}
	if len(conds) == 0 {
		return "1"
	}
	return strings.Join(conds, " && ")
}

// params returns the C parameters of the entry point, named by names
// (g.ident in the header, g.src in the source).
func (g *cGraph) params(names map[string]string) []string {
	var ps []string
	for _, t := range g.m.inputs {
		id := names[t.Name]
		ps = append(ps, fmt.Sprintf("const %s *%s", llvm.CType(t.DType), id), "const int64_t *"+id+"_shape")
	}
	for _, t := range g.m.outputs {
		id := names[t.Name]
		ps = append(ps, fmt.Sprintf("%s *%s", llvm.CType(t.DType), id), "const int64_t *"+id+"_shape")
	}
	return ps
}

// shapeParams returns the input shapes as C parameters, named by names.
func (g *cGraph) shapeParams(names map[string]string) []string {
	var ps []string
	for _, t := range g.m.inputs {
		ps = append(ps, "const int64_t *"+names[t.Name]+"_shape")
	}
	return ps
}

// outShapeParams returns the output shapes as C parameters, to be filled.
func (g *cGraph) outShapeParams(names map[string]string) []string {
	var ps []string
	for _, t := range g.m.outputs {
		ps = append(ps, "int64_t *"+names[t.Name]+"_shape")
	}
	return ps
}

func (g *cGraph) shapeArgs() string {
	var as []string
	for _, t := range g.m.inputs {
		as = append(as, g.src[t.Name]+"_shape")
	}
	return strings.Join(append(as, "0"), ", ") // 0: the bind function's dummy, for a graph without inputs
}

func (g *cGraph) header() string {
	var b strings.Builder
	guard := strings.ToUpper(g.name) + "_H"
	gr := g.m.plan.Graph
	fmt.Fprintf(&b, "/* Generated by loom from graph %s. Do not edit. */\n", gr.Name)
	fmt.Fprintf(&b, "#ifndef %s\n#define %s\n\n#include <stdbool.h>\n#include <stdint.h>\n\n", guard, guard)
	b.WriteString("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n")
	b.WriteString(llvm.StatusCodesC)
	b.WriteString(`#ifndef LOOM_STATUS_DEFINED
#define LOOM_STATUS_DEFINED
/* The outcome of a call: code is LOOM_OK or the sum of the LOOM_ codes
 * above, message says what was wrong (empty on success). */
typedef struct loom_status {
	int32_t code;
	char message[256];
} loom_status;
#endif

`)
	b.WriteString(tensorTypes)
	if g.weightsFile {
		fmt.Fprintf(&b, `/* %[1]s keeps its weights in %[1]s.weights (%[2]d bytes): load them once,
 * before the first call, with the file's path. A file other than the one
 * the library was built with is refused. */
int32_t %[1]s_load_weights(const char *path, loom_status *status);

`, g.name, g.blobSize)
	}
	g.descriptorDecls(&b)
	fmt.Fprintf(&b, "/*\n * %s runs graph %s: %d kernels, the intermediates in one arena.\n *\n", g.name, gr.Name, len(g.m.kernels))
	b.WriteString(" * Inputs (row-major; each with its shape, an array of its rank):\n")
	for _, t := range g.m.inputs {
		fmt.Fprintf(&b, " *   %-10s %s %s\n", g.ident[t.Name], t.DType, t.Shape)
	}
	b.WriteString(" * Outputs (the caller's memory, of the shape NAME_output_shapes gives):\n")
	for _, t := range g.m.outputs {
		fmt.Fprintf(&b, " *   %-10s %s %s\n", g.ident[t.Name], t.DType, t.Shape)
	}
	if len(g.syms) > 0 {
		b.WriteString(" * Sizes, bound from the inputs' shapes:\n")
		for i, s := range g.syms {
			at := g.boundBy[i]
			fmt.Fprintf(&b, " *   %-10s input %s, dimension %d\n", s, g.ident[g.m.inputs[at[0]].Name], at[1])
		}
	}
	b.WriteString(` *
 * threads > 0 sets the threads of loom's runtime (one pool per process);
 * 0 keeps the setting (LOOM_NUM_THREADS, else one per core). status may
 * be NULL. Returns status->code. Calls may run concurrently on different
 * data. Float16 and bfloat16 elements are their 16-bit encodings.
 */
`)
	fmt.Fprintf(&b, "int32_t %s(\n\t%s,\n\tint32_t threads, loom_status *status);\n\n", g.name, strings.Join(g.params(g.ident), ",\n\t"))
	fmt.Fprintf(&b, "/* The outputs' shapes at these input shapes (each array of its output's\n * rank). */\n")
	fmt.Fprintf(&b, "int32_t %s_output_shapes(\n\t%s,\n\tloom_status *status);\n\n", g.name, strings.Join(append(g.shapeParams(g.ident), g.outShapeParams(g.ident)...), ",\n\t"))
	b.WriteString("/* The arena's bytes at these input shapes, and what allocating every\n * intermediate apart would take. */\n")
	fmt.Fprintf(&b, "int32_t %s_memory(\n\t%s);\n\n", g.name, strings.Join(append(g.shapeParams(g.ident), "int64_t *peak, int64_t *naive, loom_status *status"), ",\n\t"))
	b.WriteString("/* loom's runtime: the number of threads parallel loops use. */\nvoid loom_set_num_threads(int32_t n);\nint32_t loom_get_num_threads(void);\n\n")
	b.WriteString("#ifdef __cplusplus\n}\n#endif\n\n#endif\n")
	return b.String()
}

// dimTable encodes d for lg_eval.
func (g *cGraph) dimTable(d fusion.Dim) string {
	ms := d.Monomials()
	vals := []string{strconv.Itoa(len(ms))}
	for _, t := range ms {
		vals = append(vals, strconv.FormatInt(t.Coef, 10)+"LL", strconv.Itoa(len(t.Syms)))
		for _, s := range t.Syms {
			vals = append(vals, strconv.Itoa(slices.Index(g.syms, s)))
		}
	}
	return "{" + strings.Join(vals, ", ") + "}"
}

func (g *cGraph) source() string {
	var b strings.Builder
	gr := g.m.plan.Graph
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("/* Generated by loom from graph %s. Do not edit. */\n#include \"%s.h\"\n\n", gr.Name, g.name)
	b.WriteString(graphRuntime)
	b.WriteString("\n/* The kernels (each NAME_kI.o). */\n")
	for i, k := range g.m.kernels {
		if k.native != nil {
			p("int32_t %s_packed(void *const *buffers, const int64_t *sizes);\n", g.kernelSymbol(i))
			for j := range k.variants {
				p("int32_t %s_packed(void *const *buffers, const int64_t *sizes); /* for a bucket of its sizes */\n", g.variantSymbol(i, j))
			}
		}
	}
	if len(g.consts) > 0 {
		b.WriteString("\n/* The graph's constants: the large ones in NAME_weights (read-only\n * data the library holds, from NAME_weights.bin). */\n")
		switch {
		case g.weightsFile:
			g.loadWeights(&b)
		case g.blobSize > 0:
			p("extern const unsigned char %s_weights[] __attribute__((visibility(\"hidden\")));\n", g.name)
			p("static const unsigned char *const lg_weights = %s_weights;\n", g.name)
		}
		for _, t := range g.consts {
			if at, ok := g.blobAt[t.Name]; ok {
				p("#define %s ((const %s *)(lg_weights + %d)) /* %s */\n", g.src[t.Name], llvm.CType(t.DType), at, t.Name)
				continue
			}
			p("static const %s %s[] = {%s}; /* %s */\n", llvm.CType(t.DType), g.src[t.Name], constData(t), t.Name)
		}
	}
	ns := max(len(g.syms), 1)
	// The shape function.
	b.WriteString("\n/* The shape function: binds the sizes from the inputs' shapes and\n * checks every input dimension. */\n")
	p("static int32_t %s_bind(%s, int64_t *sz, loom_status *st) {\n", g.name, strings.Join(append(g.shapeParams(g.src), "int dummy"), ", "))
	p("\t(void)dummy;\n\tchar at[256];\n\tsize_t n;\n")
	for _, t := range g.m.inputs {
		id := g.src[t.Name]
		p("\tif (!%s_shape)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: input %s has no shape (NULL)\");\n", id, t.Name)
	}
	for i, s := range g.syms {
		at := g.boundBy[i]
		t := g.m.inputs[at[0]]
		id := g.src[t.Name]
		p("\tsz[%d] = %s_shape[%d]; /* %s */\n", i, id, at[1], s)
		p("\tif (sz[%d] < 0)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: input %s: dimension %d is %%lld\", (long long)sz[%d]);\n", i, t.Name, at[1], i)
	}
	// Sizes printed as the Go API prints them: "S=5 T=3".
	b.WriteString("\tn = 0;\n\tat[0] = 0;\n")
	for i, s := range g.syms {
		p("\tn += (size_t)snprintf(at + n, n < sizeof at ? sizeof at - n : 0, \"%s%s=%%lld\", (long long)sz[%d]);\n", map[bool]string{true: " ", false: ""}[i > 0], s, i)
	}
	b.WriteString("\t(void)n;\n")
	for _, t := range g.m.inputs {
		id := g.src[t.Name]
		for k, d := range t.Shape {
			p("\t{\n\t\tstatic const int64_t dim[] = %s;\n\t\tint64_t v;\n", g.dimTable(d))
			p("\t\tif (!lg_eval(dim, sz, &v))\n\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: input %s: dimension %d (%s): fusion: a dimension overflows int64\");\n", t.Name, k, d)
			if c, ok := d.IsConst(); ok {
				p("\t\tif (%s_shape[%d] != v)\n\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: input %s: dimension %d is %%lld; the graph's is %d\", (long long)%s_shape[%d]);\n", id, k, t.Name, k, c, id, k)
			} else {
				p("\t\tif (%s_shape[%d] != v)\n\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: input %s: dimension %d is %%lld; the graph's is %s = %%lld at %%s\", (long long)%s_shape[%d], (long long)v, at);\n", id, k, t.Name, k, d, id, k)
			}
			b.WriteString("\t}\n")
		}
	}
	b.WriteString("\treturn LOOM_OK;\n}\n")

	// Elements of a tensor, with overflow checks.
	elems := func(what string, t *fusion.Tensor, into string) {
		p("\t{\n\t\tint64_t v = 1, d;\n")
		for _, d := range t.Shape {
			p("\t\t{\n\t\t\tstatic const int64_t dim[] = %s;\n\t\t\tif (!lg_eval(dim, sz, &d) || d < 0 || __builtin_mul_overflow(v, d, &v))\n\t\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: %s %s: its size overflows int64 or is negative at these inputs\");\n\t\t}\n", g.dimTable(d), what, t.Name)
		}
		p("\t\t%s = v;\n\t}\n", into)
	}

	// The memory plan.
	ni := max(len(g.inter), 1)
	b.WriteString("\n/* The memory plan: every intermediate's bytes at these sizes, placed. */\n")
	p("static int32_t %s_plan(const int64_t *sz, lg_buf *bufs, int64_t *peak, int64_t *naive, loom_status *st) {\n", g.name)
	p("\tint order[%d], live[%d];\n\tint64_t total = 0;\n", ni, ni)
	for i, buf := range g.inter {
		t := buf.Tensor
		p("\tbufs[%d].first = %d;\n\tbufs[%d].last = %d;\n", i, buf.First, i, buf.Last)
		elems("intermediate", t, fmt.Sprintf("bufs[%d].size", i))
		p("\tif (__builtin_mul_overflow(bufs[%d].size, (int64_t)%d, &bufs[%d].size) || bufs[%d].size > ((int64_t)1 << 60))\n", i, max(t.DType.Bytes(), 1), i, i)
		p("\t\treturn lg_fail(st, LOOM_NO_MEMORY, \"module: intermediate %s needs more than 2^60 bytes at these inputs\");\n", t.Name)
		p("\ttotal += lg_round(bufs[%d].size);\n", i)
	}
	p("\t*naive = total;\n\t*peak = %s;\n\t(void)order;\n\t(void)live;\n\treturn LOOM_OK;\n}\n", map[bool]string{true: fmt.Sprintf("lg_place(bufs, %d, order, live)", len(g.inter)), false: "0"}[len(g.inter) > 0])

	// NAME_output_shapes and NAME_memory.
	p("\nint32_t %s_output_shapes(%s, loom_status *st) {\n", g.name, strings.Join(append(g.shapeParams(g.src), g.outShapeParams(g.src)...), ", "))
	p("\tint64_t sz[%d];\n\tint32_t rc = %s_bind(%s, sz, st);\n\tif (rc)\n\t\treturn rc;\n", ns, g.name, g.shapeArgs())
	for _, t := range g.m.outputs {
		id := g.src[t.Name]
		p("\tif (!%s_shape)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: output %s: no shape array (NULL)\");\n", id, t.Name)
		for k, d := range t.Shape {
			p("\t{\n\t\tstatic const int64_t dim[] = %s;\n\t\tif (!lg_eval(dim, sz, &%s_shape[%d]))\n\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: output %s: dimension %d overflows int64\");\n\t}\n", g.dimTable(d), id, k, t.Name, k)
		}
	}
	b.WriteString("\treturn lg_ok(st);\n}\n")
	p("\nint32_t %s_memory(%s) {\n", g.name, strings.Join(append(g.shapeParams(g.src), "int64_t *peak, int64_t *naive, loom_status *st"), ", "))
	p("\tint64_t sz[%d], pk, nv;\n\tlg_buf bufs[%d];\n\tint32_t rc = %s_bind(%s, sz, st);\n\tif (rc)\n\t\treturn rc;\n", ns, ni, g.name, g.shapeArgs())
	p("\tif ((rc = %s_plan(sz, bufs, &pk, &nv, st)))\n\t\treturn rc;\n\tif (peak)\n\t\t*peak = pk;\n\tif (naive)\n\t\t*naive = nv;\n\treturn lg_ok(st);\n}\n", g.name)

	// The entry point.
	p("\nint32_t %s(%s, int32_t threads, loom_status *st) {\n", g.name, strings.Join(g.params(g.src), ", "))
	p("\tint64_t sz[%d], peak, naive, count, cap = 0;\n\tlg_buf bufs[%d];\n\tstatic char empty[64];\n\tchar *arena = NULL;\n", ns, ni)
	if g.weightsFile {
		p("\tif (!__atomic_load_n(&lg_weights, __ATOMIC_ACQUIRE))\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: graph %s: its weights are not loaded: call %s_load_weights with the path of %s.weights first\");\n", g.m.plan.Graph.Name, g.name, g.name)
	}
	p("\tint32_t rc = %s_bind(%s, sz, st);\n\tif (rc)\n\t\treturn rc;\n", g.name, g.shapeArgs())
	for _, t := range g.m.inputs {
		id := g.src[t.Name]
		elems("input", t, "count")
		p("\tif (!%s && count > 0)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: input %s has no data (NULL)\");\n", id, t.Name)
	}
	for _, t := range g.m.outputs {
		id := g.src[t.Name]
		p("\tif (!%s_shape)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: output %s has no shape (NULL)\");\n", id, t.Name)
		p("\t{\n\t\tint64_t want[%d];\n\t\tint bad = 0;\n", max(len(t.Shape), 1))
		for k, d := range t.Shape {
			p("\t\t{\n\t\t\tstatic const int64_t dim[] = %s;\n\t\t\tif (!lg_eval(dim, sz, &want[%d]))\n\t\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: output %s: dimension %d overflows int64\");\n\t\t\tbad |= %s_shape[%d] != want[%d];\n\t\t}\n", g.dimTable(d), k, t.Name, k, id, k, k)
		}
		p("\t\tif (bad) {\n\t\t\tchar a[128], b[128];\n\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: output %s has shape %%s; at these inputs it is %%s\", lg_shape(a, sizeof a, %s_shape, %d), lg_shape(b, sizeof b, want, %d));\n\t\t}\n\t}\n", t.Name, id, len(t.Shape), len(t.Shape))
		elems("output", t, "count")
		p("\tif (!%s && count > 0)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: output %s has no data (NULL)\");\n", id, t.Name)
	}
	p("\tif ((rc = %s_plan(sz, bufs, &peak, &naive, st)))\n\t\treturn rc;\n", g.name)
	b.WriteString("\tif (peak > 0 && !(arena = lg_take(peak, &cap)))\n\t\treturn lg_fail(st, LOOM_NO_MEMORY, \"module: no memory for an arena of %lld bytes\", (long long)peak);\n")
	b.WriteString("\tif (threads > 0)\n\t\tloom_set_num_threads(threads);\n")
	arg := func(tensor string) (string, error) {
		if root, ok := g.alias[tensor]; ok {
			tensor = root
		}
		id := g.src[tensor]
		for i, buf := range g.inter {
			if buf.Tensor.Name == tensor {
				return fmt.Sprintf("(bufs[%d].size ? arena + bufs[%d].offset : empty)", i, i), nil
			}
		}
		if id == "" {
			return "", fmt.Errorf("no tensor %s", tensor)
		}
		return "(void *)" + id, nil
	}
	for i, k := range g.m.kernels {
		if k.native == nil {
			p("\t/* %s: a view of %s, nothing to run */\n", k.k.Name, k.k.Alias)
			continue
		}
		var bufs, sizes []string
		for _, prm := range k.f.Params {
			a, err := arg(prm.Name)
			if err != nil {
				a = "NULL /* " + err.Error() + " */"
			}
			bufs = append(bufs, a)
		}
		for _, s := range k.f.Sizes {
			sizes = append(sizes, fmt.Sprintf("sz[%d]", slices.Index(g.syms, s.Name)))
		}
		if len(bufs) == 0 {
			bufs = []string{"NULL"}
		}
		if len(sizes) == 0 {
			sizes = []string{"0"}
		}
		p("\t{ /* %s */\n\t\tvoid *const b[] = {%s};\n\t\tconst int64_t s[] = {%s};\n", k.k.Name, strings.Join(bufs, ", "), strings.Join(sizes, ", "))
		p("\t\tint32_t (*fn)(void *const *, const int64_t *) = %s_packed;\n", g.kernelSymbol(i))
		for j, v := range k.variants {
			// The first bucket that holds the sizes, as Go's runtime picks.
			els := "else "
			if j == 0 {
				els = ""
			}
			p("\t\t%sif (%s)\n\t\t\tfn = %s_packed;\n", els, g.bucketTest(v.bucket), g.variantSymbol(i, j))
		}
		p("\t\tif ((rc = fn(b, s))) {\n\t\t\tlg_give(arena, cap);\n\t\t\treturn lg_kernel_failed(st, \"%s\", \"%s\", rc);\n\t\t}\n\t}\n", k.k.Name, g.m.gathersOf(k))
	}
	b.WriteString("\t(void)naive;\n\tlg_give(arena, cap);\n\treturn lg_ok(st);\n}\n")
	g.descriptorSource(&b)
	return b.String()
}

// loadWeights defines NAME_load_weights, which reads the weights file of
// a library built with BuildOptions.WeightsFile, checked by size and
// checksum.
func (g *cGraph) loadWeights(b *strings.Builder) {
	fmt.Fprintf(b, `static const unsigned char *lg_weights;
static pthread_mutex_t lg_weights_mu = PTHREAD_MUTEX_INITIALIZER;
static int32_t lg_load_weights(const char *path, loom_status *st);
/* Loads the weights once: calls from several threads wait for the first. */
int32_t %[1]s_load_weights(const char *path, loom_status *st) {
	pthread_mutex_lock(&lg_weights_mu);
	int32_t rc = __atomic_load_n(&lg_weights, __ATOMIC_ACQUIRE) ? lg_ok(st) : lg_load_weights(path, st);
	pthread_mutex_unlock(&lg_weights_mu);
	return rc;
}
static int32_t lg_load_weights(const char *path, loom_status *st) {
	if (!path)
		return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %[1]s_load_weights: no path (NULL)");
	FILE *f = fopen(path, "rb");
	if (!f)
		return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %[1]s_load_weights: cannot open %%s", path);
	void *p = NULL;
	if (posix_memalign(&p, %[2]d, %[3]d)) {
		fclose(f);
		return lg_fail(st, LOOM_NO_MEMORY, "module: %[1]s_load_weights: no memory for %[3]d bytes of weights");
	}
	size_t n = fread(p, 1, %[3]d, f);
	int longer = fgetc(f) != EOF;
	fclose(f);
	uint64_t h = 14695981039346656037ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
	if (n != %[3]d || longer || h != %[4]dULL) {
		free(p);
		return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %[1]s_load_weights: %%s is not the weights file this library was built with (%[3]d bytes, FNV-1a %[4]x)", path);
	}
	__atomic_store_n(&lg_weights, (const unsigned char *)p, __ATOMIC_RELEASE);
	return lg_ok(st);
}
`, g.name, blobAlign, g.blobSize, g.blobSum)
}

// constData prints a constant's elements as a C initializer.
func constData(t *fusion.Tensor) string {
	var vals []string
	switch d := ast.DataOf(t.DType, t.Data).(type) {
	case []float32:
		for _, v := range d {
			vals = append(vals, cFloat(float64(v), 32))
		}
	case []float64:
		for _, v := range d {
			vals = append(vals, cFloat(v, 64))
		}
	case []int32:
		for _, v := range d {
			vals = append(vals, strconv.FormatInt(int64(v), 10))
		}
	case []int64:
		for _, v := range d {
			vals = append(vals, strconv.FormatInt(v, 10)+"LL")
		}
	case []bool:
		for _, v := range d {
			vals = append(vals, strconv.FormatBool(v))
		}
	case []uint16:
		for _, v := range d {
			vals = append(vals, strconv.FormatUint(uint64(v), 10))
		}
	}
	if len(vals) == 0 {
		vals = []string{"0"}
	}
	return strings.Join(vals, ", ")
}

// cFloat prints v exactly, as a C literal of the given width.
func cFloat(v float64, bits int) string {
	suffix := ""
	if bits == 32 {
		suffix = "f"
	}
	switch {
	case math.IsNaN(v):
		return "__builtin_nan" + suffix + "(\"\")"
	case math.IsInf(v, 1):
		return "__builtin_inf" + suffix + "()"
	case math.IsInf(v, -1):
		return "-__builtin_inf" + suffix + "()"
	}
	return strconv.FormatFloat(v, 'x', -1, bits) + suffix
}

// isCIdent reports whether s is a C identifier.
func isCIdent(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	return !strings.ContainsFunc(s, func(c rune) bool {
		return !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9')
	})
}

// reservedGraphName reports whether a library may not be called name: C
// or loom's runtime gives it or its kernels' names (NAME_k0: pthread_k0)
// a meaning (llvm.IsReservedC), or it is a name of the runtime pasted into
// the graph's source (lg_..., LG_...).
func reservedGraphName(name string) bool {
	return llvm.IsReservedC(name) || llvm.IsReservedC(name+"_k0") || strings.HasPrefix(name, "lg_") || strings.HasPrefix(name, "LG_")
}

// cIdentOf makes a C identifier of a tensor's name.
func cIdentOf(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		s = "t_" + s
	}
	if strings.HasPrefix(s, "lg_") || strings.HasPrefix(s, "loom_") {
		s += "_"
	}
	return llvm.SafeCName(s)
}
