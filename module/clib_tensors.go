package module

import (
	"fmt"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// The descriptor interface of a graph library: NAME_run takes its inputs
// and outputs as arrays of tensor descriptors laid out as DLPack's
// DLTensor, and NAME_num_inputs, NAME_input, ... describe them, so that a
// program (or a code generator) calls any graph the same way, knowing
// nothing of it beforehand.

// tensorTypes declares the descriptor types, once per program (every
// graph header carries them, under one guard).
const tensorTypes = `#ifndef LOOM_TENSOR_DEFINED
#define LOOM_TENSOR_DEFINED
/* A tensor descriptor with the layout of DLPack's DLTensor (dlpack.h), so
 * that a DLTensor * can be passed where a loom_tensor * is taken. loom
 * reads tensors on the CPU (device_type 1, kDLCPU; 0 is taken as the CPU
 * too), compact and row-major (strides NULL, or the row-major strides). */
typedef struct loom_device {
	int32_t device_type;
	int32_t device_id;
} loom_device;
typedef struct loom_dtype {
	uint8_t code; /* LOOM_DTYPE_INT, _UINT, _FLOAT, _BFLOAT or _BOOL (DLPack's codes) */
	uint8_t bits;
	uint16_t lanes; /* 1 */
} loom_dtype;
enum { LOOM_DTYPE_INT = 0, LOOM_DTYPE_UINT = 1, LOOM_DTYPE_FLOAT = 2, LOOM_DTYPE_BFLOAT = 4, LOOM_DTYPE_BOOL = 6 };
typedef struct loom_tensor {
	void *data;
	loom_device device;
	int32_t ndim;
	loom_dtype dtype;
	int64_t *shape;
	int64_t *strides;
	uint64_t byte_offset;
} loom_tensor;
/* What a graph says of one of its inputs or outputs. */
typedef struct loom_tensor_info {
	const char *name;        /* the model's name for it */
	loom_dtype dtype;
	int32_t ndim;
	const char *const *dims; /* each dimension: "768", or a size given at run time: "S", "2*S + 1" */
} loom_tensor_info;
#endif

#ifndef LOOM_STATUS_STRING_DEFINED
#define LOOM_STATUS_STRING_DEFINED
/* What a status code means, in a few words: the most telling of the
 * faults it sums. */
static inline const char *loom_status_string(int32_t code) {
	/* The first of the faults summed in code, the caller's first. */
	if (code == LOOM_OK)
		return "ok";
	if (code < 0 || code > 15)
		return "unknown status";
	if (code & LOOM_BAD_ARGUMENT)
		return "bad argument";
	if (code & LOOM_NO_MEMORY)
		return "out of memory";
	if (code & LOOM_INDEX_OUT_OF_RANGE)
		return "index out of range";
	return "integer division by zero";
}
#endif

`

// dlType is a dtype's DLPack code and bits.
func dlType(dt ast.DType) (code, bits int) {
	switch dt {
	case ast.Bool:
		return 6, 8
	case ast.Int32:
		return 0, 32
	case ast.Int64:
		return 0, 64
	case ast.Float16:
		return 2, 16
	case ast.BFloat16:
		return 4, 16
	case ast.Float32:
		return 2, 32
	}
	return 2, 64
}

// descriptorDecls declares the graph's descriptor functions.
func (g *cGraph) descriptorDecls(b *strings.Builder) {
	n := g.name
	fmt.Fprintf(b, `/*
 * %[1]s_run runs the graph on num_inputs input descriptors and num_outputs
 * output descriptors, in the order %[1]s_input and %[1]s_output give. Each
 * output's shape must be the one %[1]s_shapes computes (the caller owns
 * its data). Returns status->code (status may be NULL), as %[1]s does.
 */
int32_t %[1]s_run(const loom_tensor *inputs, int32_t num_inputs,
	const loom_tensor *outputs, int32_t num_outputs,
	int32_t threads, loom_status *status);

/* %[1]s_shapes writes each output's shape at these inputs into
 * outputs[i].shape (an array of outputs[i].ndim, which must be the
 * output's rank); only the shapes and ranks are read or written. */
int32_t %[1]s_shapes(const loom_tensor *inputs, int32_t num_inputs,
	loom_tensor *outputs, int32_t num_outputs, loom_status *status);

/* The graph's inputs and outputs: how many, and each one's name, dtype
 * and dimensions (NULL for an index out of range). */
int32_t %[1]s_num_inputs(void);
int32_t %[1]s_num_outputs(void);
const loom_tensor_info *%[1]s_input(int32_t i);
const loom_tensor_info *%[1]s_output(int32_t i);

`, n)
}

// modelName is a tensor's name as the model gives it.
func (g *cGraph) modelName(t *fusion.Tensor) string {
	if n, ok := g.m.plan.Graph.ModelNames[t.Name]; ok {
		return n
	}
	return t.Name
}

// cString quotes s as a C string literal.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f || c == '?':
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// descriptorSource defines the descriptor functions.
func (g *cGraph) descriptorSource(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	n := g.name
	b.WriteString("\n/* The descriptor interface. */\n")
	table := func(kind string, ts []*fusion.Tensor) {
		for i, t := range ts {
			var dims []string
			for _, d := range t.Shape {
				dims = append(dims, cString(d.String()))
			}
			if len(dims) == 0 {
				dims = []string{"0"}
			}
			p("static const char *const lg_%s%d_dims[] = {%s};\n", kind, i, strings.Join(dims, ", "))
		}
		p("static const loom_tensor_info lg_%ss[] = {\n", kind)
		for i, t := range ts {
			code, bits := dlType(t.DType)
			p("\t{%s, {%d, %d, 1}, %d, lg_%s%d_dims},\n", cString(g.modelName(t)), code, bits, len(t.Shape), kind, i)
		}
		if len(ts) == 0 {
			p("\t{0},\n")
		}
		b.WriteString("};\n")
		p("int32_t %s_num_%ss(void) { return %d; }\n", n, kind, len(ts))
		p("const loom_tensor_info *%s_%s(int32_t i) { return i >= 0 && i < %d ? &lg_%ss[i] : NULL; }\n", n, kind, len(ts), kind)
	}
	table("input", g.m.inputs)
	table("output", g.m.outputs)
	// lg_check_desc checks one descriptor against its info.
	p(`
static int32_t lg_check_desc(const loom_tensor *t, const loom_tensor_info *info, const char *kind, int32_t i, int need_data, loom_status *st) {
	if (!t->shape && t->ndim > 0)
		return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %%s %%d (%%s): no shape (NULL)", kind, (int)i, info->name);
	if (t->device.device_type != 0 && t->device.device_type != 1)
		return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %%s %%d (%%s): device type %%d; loom runs on the CPU (kDLCPU, 1)", kind, (int)i, info->name, (int)t->device.device_type);
	if (t->dtype.code != info->dtype.code || t->dtype.bits != info->dtype.bits || (t->dtype.lanes != 1 && t->dtype.lanes != 0))
		return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %%s %%d (%%s): dtype code %%d, %%d bits, %%d lanes; the graph's is code %%d, %%d bits, 1 lane", kind, (int)i, info->name, (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes, (int)info->dtype.code, (int)info->dtype.bits);
	if (t->ndim != info->ndim)
		return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %%s %%d (%%s): rank %%d; the graph's is %%d", kind, (int)i, info->name, (int)t->ndim, (int)info->ndim);
	if (t->strides) {
		int64_t want = 1;
		for (int32_t k = t->ndim - 1; k >= 0; k--) {
			if (t->shape[k] != 1 && t->strides[k] != want)
				return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %%s %%d (%%s): strides are not compact row-major (dimension %%d has stride %%lld, not %%lld)", kind, (int)i, info->name, (int)k, (long long)t->strides[k], (long long)want);
			if (__builtin_mul_overflow(want, t->shape[k], &want))
				return lg_fail(st, LOOM_BAD_ARGUMENT, "module: %%s %%d (%%s): its size overflows int64", kind, (int)i, info->name);
		}
	}
	(void)need_data;
	return LOOM_OK;
}

static void *lg_data(const loom_tensor *t) { return t->data ? (char *)t->data + t->byte_offset : NULL; }
`)
	counts := func(in, out string) {
		p("\tif (!inputs && num_inputs > 0)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: inputs is NULL\");\n")
		p("\tif (!%s && num_outputs > 0)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: outputs is NULL\");\n", out)
		p("\tif (num_inputs != %d || num_outputs != %d)\n\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: graph %s takes %d inputs and %d outputs, not %%d and %%d\", (int)num_inputs, (int)num_outputs);\n",
			len(g.m.inputs), len(g.m.outputs), g.m.plan.Graph.Name, len(g.m.inputs), len(g.m.outputs))
		p("\tfor (int32_t i = 0; i < num_inputs; i++)\n\t\tif ((rc = lg_check_desc(&inputs[i], &lg_inputs[i], \"input\", i, 1, st)))\n\t\t\treturn rc;\n")
		_ = in
	}
	var inShapes, outShapes, args []string
	for i := range g.m.inputs {
		inShapes = append(inShapes, fmt.Sprintf("inputs[%d].shape", i))
		args = append(args, fmt.Sprintf("lg_data(&inputs[%d])", i), fmt.Sprintf("inputs[%d].shape", i))
	}
	for i := range g.m.outputs {
		outShapes = append(outShapes, fmt.Sprintf("outputs[%d].shape", i))
		args = append(args, fmt.Sprintf("lg_data(&outputs[%d])", i), fmt.Sprintf("outputs[%d].shape", i))
	}
	p("\nint32_t %s_run(const loom_tensor *inputs, int32_t num_inputs, const loom_tensor *outputs, int32_t num_outputs, int32_t threads, loom_status *st) {\n\tint32_t rc;\n", n)
	counts("inputs", "outputs")
	p("\tfor (int32_t i = 0; i < num_outputs; i++)\n\t\tif ((rc = lg_check_desc(&outputs[i], &lg_outputs[i], \"output\", i, 1, st)))\n\t\t\treturn rc;\n")
	p("\treturn %s(%s);\n}\n", n, strings.Join(append(args, "threads", "st"), ", "))
	p("\nint32_t %s_shapes(const loom_tensor *inputs, int32_t num_inputs, loom_tensor *outputs, int32_t num_outputs, loom_status *st) {\n\tint32_t rc;\n", n)
	counts("inputs", "outputs")
	p("\tfor (int32_t i = 0; i < num_outputs; i++) {\n\t\tif (outputs[i].ndim != lg_outputs[i].ndim)\n\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: output %%d (%%s): ndim %%d; the graph's rank is %%d\", (int)i, lg_outputs[i].name, (int)outputs[i].ndim, (int)lg_outputs[i].ndim);\n")
	p("\t\tif (!outputs[i].shape && outputs[i].ndim > 0)\n\t\t\treturn lg_fail(st, LOOM_BAD_ARGUMENT, \"module: output %%d (%%s): no shape array (NULL)\", (int)i, lg_outputs[i].name);\n\t}\n")
	p("\treturn %s_output_shapes(%s);\n}\n", n, strings.Join(append(append(inShapes, outShapes...), "st"), ", "))
}
