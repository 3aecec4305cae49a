package onnx

// converter converts one operator: run, given between minIn and maxIn
// inputs (maxIn -1: any number) and at most maxOut outputs.
type converter struct {
	run           func(c *ctx) error
	minIn, maxIn  int
	maxOut        int
	absentAllowed bool // optional inputs may be given as ""
}

// converters maps each ONNX operator loom imports to its conversion.
var converters map[string]converter

func init() {
	one := func(f func(c *ctx) error) converter { return converter{run: f, minIn: 1, maxIn: 1, maxOut: 1} }
	span := func(f func(c *ctx) error, lo, hi, outs int) converter {
		return converter{run: f, minIn: lo, maxIn: hi, maxOut: outs, absentAllowed: true}
	}
	converters = map[string]converter{
		// Element-wise.
		"Relu": one(unary("relu")), "Neg": one(unary("neg")), "Abs": one(unary("abs")), "Exp": one(unary("exp")),
		"Log": one(unary("log")), "Sqrt": one(unary("sqrt")), "Tanh": one(unary("tanh")), "Sigmoid": one(unary("sigmoid")),
		"Erf": one(unary("erf")), "Softplus": one(unary("softplus")),
		"Sin": one(unary("sin")), "Cos": one(unary("cos")), "Tan": one(convTan),
		"Floor": one(unary("floor")), "Ceil": one(unary("ceil")), "Round": one(unary("round")),
		"Identity": one(passThrough), "Dropout": span(passThrough, 1, 3, 2),
		"Reciprocal": one(convReciprocal), "Clip": span(convClip, 1, 3, 1), "LeakyRelu": one(convLeakyRelu),
		"HardSigmoid": one(convHardSigmoid), "HardSwish": one(convHardSigmoid), "Gelu": one(convGelu),
		"Cast": one(convCast), "CastLike": span(convCast, 2, 2, 1), "Not": one(convNot), "Where": span(convWhere, 3, 3, 1),
		"Sum": span(convSum, 1, -1, 1), "Mean": span(convSum, 1, -1, 1),
		"Elu": one(convElu), "Selu": one(convSelu), "Mish": one(convMish), "PRelu": span(convPRelu, 2, 2, 1),
		"Sign": one(convSign), "Mod": span(convMod, 2, 2, 1), "And": span(convLogic, 2, 2, 1), "Or": span(convLogic, 2, 2, 1), "Xor": span(convLogic, 2, 2, 1),
		// Shapes and data movement.
		"Shape": one(convShape), "Size": one(convSize), "Constant": span(convConstant, 0, 0, 1),
		"Reshape": span(convReshape, 2, 2, 1), "Flatten": one(convFlatten),
		"Squeeze": span(convSqueeze, 1, 2, 1), "Unsqueeze": span(convUnsqueeze, 1, 2, 1),
		"Transpose": one(convTranspose), "Concat": span(convConcat, 1, -1, 1), "Slice": span(convSlice, 1, 5, 1),
		"Split": span(convSplit, 1, 2, -1), "Gather": span(convGather, 2, 2, 1),
		"ConstantOfShape": one(convConstantOfShape), "Expand": span(convExpand, 2, 2, 1),
		"Range": span(convRange, 3, 3, 1), "Pad": span(convPad, 1, 4, 1),
		"Tile": span(convTile, 2, 2, 1), "ScatterND": span(convScatterND, 3, 3, 1), "Trilu": span(convTrilu, 1, 2, 1), "Resize": span(convResize, 1, 4, 1),
		// Neural-network operators.
		"Conv": span(convConv, 2, 3, 1), "MaxPool": span(convPool, 1, 1, 2), "AveragePool": one(convPool),
		"GlobalAveragePool": one(convGlobalPool), "GlobalMaxPool": one(convGlobalPool),
		"BatchNormalization": span(convBatchNorm, 5, 5, 3), "MatMul": span(convMatMul, 2, 2, 1),
		"Gemm": span(convGemm, 2, 3, 1), "Softmax": one(convSoftmax), "LogSoftmax": one(convSoftmax),
		"LayerNormalization": span(convLayerNorm, 2, 3, 3), "InstanceNormalization": span(convInstanceNorm, 3, 3, 1),
		"ConvTranspose": span(convConvTranspose, 2, 3, 1), "CumSum": span(convCumSum, 2, 2, 1),
		"Einsum": span(convEinsum, 1, 2, 1), "ArgMax": one(convArgMax), "ArgMin": one(convArgMax),
		"TopK": span(convTopK, 2, 2, 2),
	}
	for name := range binaryOps {
		converters[name] = span(convBinary, 2, 2, 1)
	}
	converters["Max"] = span(convBinary, 1, -1, 1)
	converters["Min"] = span(convBinary, 1, -1, 1)
	for name := range reduceOps {
		converters[name] = span(convReduce, 1, 2, 1)
	}
}
