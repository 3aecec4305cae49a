// Package onnx imports ONNX models (https://onnx.ai) as fusion graphs, so
// that a model exported by PyTorch, TensorFlow or another framework
// compiles with loom (package module) into a Go module or a C library.
//
// Import (or ImportFile, which also finds external data files beside the
// model) reads a ModelProto of default-domain operator set version 7 to
// 21 and converts it node by node, in order:
//
//   - initializers and Constant nodes become the graph's constants
//     (element types float32, float64, float16, bfloat16, int32, int64 and
//     bool; raw or typed data, in the model or in external files);
//   - each named dimension of an input (dim_param, such as batch_size)
//     becomes a symbol of the graph, a size given at run time, unless
//     Options.Dims fixes it; an unnamed dynamic dimension becomes a symbol
//     of its own;
//   - what can be computed at import is: an exporter's shape arithmetic
//     (Shape, Gather, Unsqueeze, Concat, Slice, arithmetic on sizes) is
//     evaluated with the graph's symbols kept, so that its Reshape gets a
//     shape such as [S, 12, 64]; small constant subgraphs are evaluated;
//     Gemm's transposed weights are transposed once;
//   - every other node becomes loom operators (see fusion's package
//     documentation): some one to one (Relu, MatMul, Conv, Softmax,
//     LayerNormalization, ...), others rewritten (Conv's bias as an add,
//     Clip as max and min, Flatten and Squeeze as reshapes,
//     GlobalAveragePool as a mean, Pow(x, 2) as x*x, a MatMul of [..., M,
//     K] by a [K, N] weight as one 2-D product, ConvTranspose as a
//     convolution of the input with zeros between its elements, Resize as
//     gathers, Einsum as transposes, reshapes and one batched matmul).
//
// The tensors get identifiers as names (an ONNX name is any string);
// Model.ONNXNames and Graph.ModelNames keep the model's names. An
// operator loom cannot import, or an input it needs at import time that
// is computed at run time (a Reshape's shape that depends on data), is an
// *Error naming the node, its operator, domain and opset.
//
// The operators:
//
//	element-wise  Abs Add And Cast CastLike Ceil Clip Cos Div Elu Equal Erf
//	              Exp Floor Gelu Greater GreaterOrEqual HardSigmoid HardSwish
//	              Identity LeakyRelu Less LessOrEqual Log Max Mean Min Mish
//	              Mod (of values known at import) Mul Neg Not Or Pow PRelu
//	              Reciprocal Relu Round (halves to even) Selu Sigmoid Sign
//	              Sin Softplus Sqrt Sub Sum Tan Tanh Where Xor Dropout
//	              (inference, or a ratio of 0; its mask unread)
//	shapes        Concat Constant ConstantOfShape Expand Flatten Gather Pad
//	              (constant mode) Range Reshape Resize (nearest, linear)
//	              ScatterND (of values known at import) Shape Size Slice
//	              Split Squeeze Tile Transpose Trilu Unsqueeze
//	networks      ArgMax ArgMin AveragePool BatchNormalization Conv ConvTranspose CumSum
//	              Einsum Gemm GlobalAveragePool GlobalMaxPool
//	              InstanceNormalization LayerNormalization LogSoftmax MatMul
//	              MaxPool Softmax TopK (k known, at most 64)
//	reductions    ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax
//	              ReduceMean ReduceMin ReduceSum ReduceSumSquare
//
// testdata/onnx holds a small model per operator with ONNX Runtime's
// outputs, which the tests compare the import with.
package onnx
