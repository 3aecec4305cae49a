// Package fusion turns a graph of tensor operators into fused kernels:
// ScheduleBlock functions (package ast) ready to be scheduled and compiled.
//
// A Graph comes from Go code (Builder, which infers each node's shape as
// it is added), from JSON (ReadJSON, ParseJSON, ReadJSONFile; WriteJSON and
// WriteJSONFile write it back), or from an ONNX model (package onnx). Its shapes may be symbolic: a dimension is a polynomial
// over named sizes (S, S1*S2), and Infer solves the equalities the
// operators imply (adding [S0, 768] to [S1, 768] makes S1 the same size as
// S0; a contradiction is an error naming the node and both shapes).
//
// Compile runs the pipeline in pipeline.go, a table of passes each in its
// own file: decompose composite operators (softmax, layernorm, rms_norm,
// gelu) into primitive ones, take the stride of a 1x1 convolution into a
// slice of its input (unstride), fold constants (a reshape or transpose of
// weights whatever their size), fold a per-channel scale and shift after a
// convolution (a batch normalization) into its weights (foldaffine: exact
// to rounding, unlike the other passes), drop the taps of a convolution
// that read only its padding (taps: an atrous convolution dilated past
// its image is a 1x1 one), run 2-d convolutions and
// poolings with their channels last where Options.Layout says (layout:
// transposes at the ends of each chain only, weights moved once; a 1x1
// convolution, or one whose window tiles the image, a matrix product of
// pixels or patches by filters; a concat of such results joined in
// NHWC), move element-wise work after a concat onto its inputs (concat:
// a batch norm after DenseNet's joined features runs on each input as it
// is written into its slice), store
// large constant weight matrices, and the filters of convolutions with
// their channels last, in panels of 16 columns or filters (pack, unless
// Options.PlainWeights: constants once, filters computed per call by one
// transpose in place of the layout pass's, and a weight matrix the graph
// takes as an input by one transpose per call where its product has 64
// rows or more), simplify algebra (rules.go),
// eliminate common subexpressions and dead code; then it groups operators
// into kernels by CINN's fusion rules (fuse.go) and lowers each group to
// one function whose loop nests are aligned (lower.go). A concat that
// gets a buffer is one block per input writing its slice, and what the
// kernel computes of those inputs is computed right in its slice; a max
// pool of 5x5 or more at stride 1 is a max along rows, then one along
// columns; a max pool reads its border as the nearest input element (an
// index clamped, no padded copy; in NCHW along the height only) where
// that leaves every maximum as it is. The result is a
// Plan: the kernels in execution order, the buffers each reads and
// writes, and (Plan.Memory) an arena layout for the intermediate buffers
// (package fusion/memplan). Some tensors take no memory of their own
// (Buffer.AliasOf): a reshape's output is a view of its input (the kernel
// is skipped), and a kernel that adds a residual no later kernel reads
// writes its result over the residual (inplace.go).
//
// The interpreter is the reference: Plan.Interpret runs the kernels one
// after the other, and compiling with Options.NoFuse (one kernel per
// operator) gives the same outputs as the fused plan.
//
// # The JSON format
//
//	{
//	  "name": "rmsnorm",
//	  "inputs":    [{"name": "X", "dtype": "float32", "shape": ["S", 768]},
//	                {"name": "W", "dtype": "float32", "shape": [768]}],
//	  "constants": [{"name": "eps", "dtype": "float32", "shape": [], "data": [1e-6]}],
//	  "nodes":     [{"op": "rms_norm", "inputs": ["X", "W"], "output": "Y",
//	                 "attrs": {"epsilon": 1e-6}}],
//	  "outputs":   ["Y"]
//	}
//
// A graph's weights may live beside its JSON: "weights" names a
// safetensors file in the JSON file's directory, and each constant listed
// without "data" is the tensor of its name there, of the dtype and shape
// the JSON declares (ReadJSONFile reads both; WriteJSONFile writes
// constants of more than 16 elements there). "model_names" maps tensor
// names to those of the model the graph came from, which a C library
// reports for its inputs and outputs.
//
// Names (of the graph, tensors and symbols) are identifiers that are not
// reserved words of loom's text form. A dtype is one of bool, int32,
// int64, float16, bfloat16, float32, float64. An input's dimension is a
// non-negative integer or a symbol; a constant's shape is constant and
// its data lists every element in row-major order, each a value of its
// dtype (1e300 is no float32, 0.5 no int32; so for a pad's value and a
// norm's epsilon). Nodes may come in any order; each computes one tensor,
// its "output". Every graph output is computed by a node; a graph has at
// most MaxNodes nodes.
//
// The operators, their inputs and their attributes:
//
//	neg abs relu exp log sqrt rsqrt tanh sigmoid erf identity silu softplus   (x)
//	floor ceil sin cos   (x)
//	round                (x)        to the nearest integer value, halves to the even one
//	cast                 (x)        dtype
//	add sub mul div max min pow     (a, b), broadcast by numpy's rules
//	equal not_equal less less_equal greater greater_equal
//	                     (a, b)     broadcast; the result is bool
//	where                (cond, a, b)  cond bool; the three broadcast together
//	iota                 (x)        axis (0), dtype (int64): each element's index along
//	                                axis; x gives only the shape
//	broadcast_to         (x)        shape
//	reshape              (x)        shape: dims, one of them may be -1
//	transpose            (x)        perm (default: reversed axes)
//	slice                (x)        axes (default 0..), starts, ends, steps (positive);
//	                                a symbolic axis takes start >= 0, step 1 and an
//	                                end < 0 (from the end) or >= 2^40 (to the end)
//	concat               (x...)     axis (default 0)
//	pad                  (x)        pads [begins..., ends...], value (0)
//	gather               (x, idx)   axis (default 0); an index of an axis of
//	                                size n is in [-n, n), negative from the end
//	                                (as in ONNX); one outside is an error:
//	                                Infer's for constant indices, else the
//	                                kernel's (a status of the compiled code)
//	reduce_sum reduce_mean reduce_max reduce_min
//	                     (x)        axes (default all, negative from the end), keepdims
//	matmul               (a, b)     [..., M, K] × [..., K, N], batch dims broadcast;
//	                                panel p: b comes in panels of p columns,
//	                                [..., N/p, K, p] (the pack pass's form);
//	                                columns N: the last of ceil(N/p) panels
//	                                is padded (its padding never read)
//	conv1d conv2d conv3d (x, w)     N C spatial... × F C/groups kernel...; strides,
//	                                pads [begins..., ends...], dilations (one per
//	                                spatial axis), groups (1; depthwise: the
//	                                channels); strides > 1 need constant spatial sizes;
//	                                layout NHWC (NWC, NDHWC): N spatial... C ×
//	                                kernel... C/groups F, the result N out... F;
//	                                with it, panel p: w comes in panels of p
//	                                filters, [F/p, C/groups, kernel..., p]
//	max_pool2d           (x)        NCHW (layout NHWC: N H W C); kernel_shape [2],
//	                                strides, pads, dilations
//	avg_pool2d           (x)        NCHW (or NHWC); kernel_shape [2], strides, pads,
//	                                count_include_pad (divide by the whole window)
//	softmax              (x)        axis (default -1)
//	layernorm            (x[, scale[, shift]])  axis (normalizes axis..end), epsilon (1e-5)
//	rms_norm             (x[, weight])          epsilon (1e-6), over the last axis
//	batch_norm           (x, scale, shift, mean, var)  inference: per channel (axis 1),
//	                                epsilon (1e-5)
//	gelu                 (x)        approximate: "none" (the exact erf form) or "tanh"
//
// In an attribute shape, a dimension may be a polynomial of the inputs'
// symbols written as a string ("S1*S2", "2*S + 1").
package fusion
