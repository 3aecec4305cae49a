#!/usr/bin/python3
"""testdata/onnx/make.py: the small ONNX models package onnx's tests import.

Each case is a directory NAME/ in ONNX's backend-test layout: model.onnx and
test_data_set_0/input_K.pb (random inputs, fixed seed). reference.js then
runs each model with ONNX Runtime and writes test_data_set_0/output_K.pb,
the outputs loom's import must reproduce. Regenerate both with
`make onnx-testdata` (needs Debian's python3-onnx and python3-numpy, and
onnxruntime-node in bin/modelbench).
"""
import os, shutil, sys
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261128)
F = TP.FLOAT


def rand(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def init(name, arr):
    return nh.from_array(np.asarray(arr), name)


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def save(name, nodes, inputs, outputs, feeds, inits=(), opset=13, external=False):
    """inputs: [(name, elem, shape with ints or dim_param strings)];
    feeds: the arrays given for them; outputs: [(name, elem, shape)]."""
    graph = h.make_graph(nodes, name, [vi(*i) for i in inputs],
                         [vi(*o) for o in outputs], initializer=list(inits))
    model = h.make_model(graph, producer_name="loom testdata/onnx/make.py",
                         opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    if opset <= 17:  # the newest this python3-onnx (1.12) knows; ONNX Runtime checks the others
        onnx.checker.check_model(model)
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    if external:  # every initializer in weights.bin beside the model
        onnx.save_model(model, os.path.join(d, "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    else:
        onnx.save(model, os.path.join(d, "model.onnx"))
    for k, ((iname, _, _), arr) in enumerate(zip(inputs, feeds)):
        t = nh.from_array(np.asarray(arr), iname)
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())


def unary(op, lo=-2.0, hi=2.0, opset=13, **attrs):
    save(op.lower() if not attrs else f"{op.lower()}_attrs", [h.make_node(op, ["x"], ["y"], **attrs)],
         [("x", F, ["N", 5])], [("y", F, ["N", 5])], [rand(3, 5, lo=lo, hi=hi)], opset=opset)


for op in ["Relu", "Neg", "Abs", "Exp", "Tanh", "Sigmoid", "Erf", "Softplus", "Identity", "Reciprocal"]:
    unary(op)
unary("Log", lo=0.1, hi=4)
unary("Sqrt", lo=0.0, hi=4)
unary("LeakyRelu", alpha=0.2)
unary("HardSigmoid", alpha=0.3, beta=0.4)
save("hardswish", [h.make_node("HardSwish", ["x"], ["y"])], [("x", F, [2, 8])], [("y", F, [2, 8])],
     [rand(2, 8, lo=-5, hi=5)], opset=14)
save("dropout", [h.make_node("Dropout", ["x"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3])], [rand(2, 3)])
save("clip11", [h.make_node("Clip", ["x", "lo", "hi"], ["y"])], [("x", F, [4, 4])], [("y", F, [4, 4])],
     [rand(4, 4, lo=-8, hi=8)], inits=[init("lo", np.float32(0)), init("hi", np.float32(6))], opset=11)
save("clip_min_only", [h.make_node("Clip", ["x", "lo"], ["y"])], [("x", F, [4, 4])], [("y", F, [4, 4])],
     [rand(4, 4)], inits=[init("lo", np.float32(-0.5))], opset=13)
save("clip9", [h.make_node("Clip", ["x"], ["y"], min=-1.0, max=1.5)], [("x", F, [4, 4])], [("y", F, [4, 4])],
     [rand(4, 4)], opset=9)
save("cast", [h.make_node("Cast", ["x"], ["i"], to=TP.INT32), h.make_node("Cast", ["i"], ["y"], to=TP.FLOAT)],
     [("x", F, [3, 4])], [("y", F, [3, 4])], [rand(3, 4, lo=-9, hi=9)])

# Binary operators with broadcasting.
for op in ["Add", "Sub", "Mul", "Div", "Max", "Min"]:
    save(op.lower(), [h.make_node(op, ["a", "b"], ["y"])], [("a", F, ["N", 3, 4]), ("b", F, [3, 1])],
         [("y", F, ["N", 3, 4])], [rand(2, 3, 4), rand(3, 1, lo=0.5, hi=2)])
save("max3", [h.make_node("Max", ["a", "b", "c"], ["y"])], [("a", F, [2, 3]), ("b", F, [3]), ("c", F, [2, 1])],
     [("y", F, [2, 3])], [rand(2, 3), rand(3), rand(2, 1)])
save("sum_mean", [h.make_node("Sum", ["a", "b", "c"], ["s"]), h.make_node("Mean", ["a", "b"], ["m"])],
     [("a", F, [2, 3]), ("b", F, [3]), ("c", F, [2, 3])], [("s", F, [2, 3]), ("m", F, [2, 3])],
     [rand(2, 3), rand(3), rand(2, 3)])
save("pow", [h.make_node("Pow", ["x", "two"], ["x2"]), h.make_node("Pow", ["x", "half"], ["xh"]),
             h.make_node("Pow", ["x", "e"], ["xe"])],
     [("x", F, [2, 5])], [("x2", F, [2, 5]), ("xh", F, [2, 5]), ("xe", F, [2, 5])], [rand(2, 5, lo=0.1, hi=3)],
     inits=[init("two", np.float32(2)), init("half", np.float32(0.5)), init("e", np.float32(1.7))])
save("compare_where", [h.make_node("Less", ["a", "b"], ["lt"]), h.make_node("Greater", ["a", "b"], ["gt"]),
                       h.make_node("Cast", ["a"], ["ai"], to=TP.INT32), h.make_node("Cast", ["b"], ["bi"], to=TP.INT32),
                       h.make_node("Equal", ["ai", "bi"], ["eq"]), h.make_node("Not", ["eq"], ["ne"]),
                       h.make_node("Where", ["lt", "a", "b"], ["mn"]), h.make_node("Where", ["ne", "mn", "zero"], ["y"])],
     [("a", F, [3, 4]), ("b", F, [4])], [("y", F, [3, 4]), ("gt", TP.BOOL, [3, 4])],
     [np.round(rand(3, 4, lo=-3, hi=3)), np.round(rand(4, lo=-3, hi=3))], inits=[init("zero", np.float32(0))])

# Shapes and data movement.
save("reshape_dynamic", [
    h.make_node("Shape", ["x"], ["s"]),
    h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
    h.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
    h.make_node("Concat", ["n1", "c"], ["shape"], axis=0),
    h.make_node("Reshape", ["x", "shape"], ["r"]),
    h.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3])],
    [("x", F, ["S", 12])], [("y", F, ["S", 3, 2, 2])], [rand(5, 12)],
    inits=[init("zero", np.int64(0)), init("axes0", np.array([0], np.int64)), init("c", np.array([2, 3, 2], np.int64))])
save("reshape_infer", [h.make_node("Reshape", ["x", "s"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 12])],
     [rand(2, 3, 4)], inits=[init("s", np.array([0, -1], np.int64))])
save("flatten", [h.make_node("Flatten", ["x"], ["y"], axis=2)], [("x", F, [2, 3, 4, 5])], [("y", F, [6, 20])],
     [rand(2, 3, 4, 5)])
save("squeeze11", [h.make_node("Unsqueeze", ["x"], ["u"], axes=[0, 3]), h.make_node("Squeeze", ["u"], ["y"], axes=[0])],
     [("x", F, [2, 3])], [("y", F, [2, 3, 1])], [rand(2, 3)], opset=11)
save("squeeze13", [h.make_node("Unsqueeze", ["x", "a"], ["u"]), h.make_node("Squeeze", ["u"], ["y"])],
     [("x", F, [2, 3])], [("y", F, [2, 3])], [rand(2, 3)], inits=[init("a", np.array([-1, 0], np.int64))])
save("concat", [h.make_node("Concat", ["a", "b", "k"], ["y"], axis=-1)], [("a", F, [2, 3]), ("b", F, [2, 1])],
     [("y", F, [2, 6])], [rand(2, 3), rand(2, 1)], inits=[init("k", rand(2, 2))])
save("slice", [h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [("x", F, [6, 7])], [("y", F, [2, 3])],
     [rand(6, 7)], inits=[init("st", np.array([1, -6], np.int64)), init("en", np.array([5, 1000], np.int64)),
                          init("ax", np.array([0, 1], np.int64)), init("sp", np.array([2, 2], np.int64))])
save("slice_dynamic", [h.make_node("Slice", ["x", "st", "en", "ax"], ["y"])], [("x", F, ["S", 4])], [("y", F, ["T", 4])],
     [rand(6, 4)], inits=[init("st", np.array([1], np.int64)), init("en", np.array([-1], np.int64)),
                          init("ax", np.array([0], np.int64))])
save("split13", [h.make_node("Split", ["x", "sp"], ["a", "b"], axis=1)], [("x", F, [2, 5])],
     [("a", F, [2, 2]), ("b", F, [2, 3])], [rand(2, 5)], inits=[init("sp", np.array([2, 3], np.int64))])
save("split18", [h.make_node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)], [("x", F, [7, 2])],
     [("a", F, [3, 2]), ("b", F, [3, 2]), ("c", F, [1, 2])], [rand(7, 2)], opset=18)
save("gather", [h.make_node("Gather", ["w", "ids"], ["e"]), h.make_node("Gather", ["x", "one"], ["col"], axis=1)],
     [("ids", TP.INT64, ["S"]), ("x", F, [3, 4])], [("e", F, ["S", 4]), ("col", F, [3])],
     [np.array([0, 9, 3, -1], np.int64), rand(3, 4)], inits=[init("w", rand(10, 4)), init("one", np.int64(1))])
save("expand", [h.make_node("Shape", ["x"], ["s"]), h.make_node("ConstantOfShape", ["s"], ["z"], value=h.make_tensor("v", F, [1], [0.5])),
                h.make_node("Add", ["x", "z"], ["xz"]), h.make_node("Expand", ["b", "s"], ["be"]),
                h.make_node("Mul", ["xz", "be"], ["y"])],
     [("x", F, ["N", 3]), ("b", F, [1, 3])], [("y", F, ["N", 3])], [rand(4, 3), rand(1, 3)])
save("range_size", [h.make_node("Size", ["x"], ["n"]), h.make_node("Cast", ["n"], ["nf"], to=TP.FLOAT),
                    h.make_node("Range", ["zero", "nf", "one"], ["r"]), h.make_node("Add", ["x", "r"], ["y"])],
     [("x", F, [6])], [("y", F, [6])], [rand(6)], inits=[init("zero", np.float32(0)), init("one", np.float32(1))])
save("pad", [h.make_node("Pad", ["x", "p", "v"], ["y"])], [("x", F, [2, 3])], [("y", F, [3, 6])], [rand(2, 3)],
     inits=[init("p", np.array([1, 2, 0, 1], np.int64)), init("v", np.float32(-1.5))])

# Neural-network operators.
save("conv_bias", [h.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])],
     [("x", F, [1, 3, 9, 9])], [("y", F, [1, 4, 5, 5])], [rand(1, 3, 9, 9)], inits=[init("w", rand(4, 3, 3, 3)), init("b", rand(4))])
save("conv_depthwise_same", [h.make_node("Conv", ["x", "w"], ["y"], group=6, auto_pad="SAME_UPPER", strides=[2, 2])],
     [("x", F, [1, 6, 7, 8])], [("y", F, [1, 6, 4, 4])], [rand(1, 6, 7, 8)], inits=[init("w", rand(6, 1, 3, 3))])
save("conv1d", [h.make_node("Conv", ["x", "w", "b"], ["y"], pads=[2, 0])], [("x", F, [2, 4, 10])], [("y", F, [2, 5, 10])],
     [rand(2, 4, 10)], inits=[init("w", rand(5, 4, 3)), init("b", rand(5))])
save("maxpool_ceil", [h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
     [("x", F, [1, 2, 8, 8])], [("y", F, [1, 2, 4, 4])], [rand(1, 2, 8, 8)])
save("avgpool", [h.make_node("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                 h.make_node("AveragePool", ["x"], ["b"], kernel_shape=[2, 2], pads=[1, 1, 0, 0], count_include_pad=1)],
     [("x", F, [1, 2, 7, 7])], [("a", F, [1, 2, 4, 4]), ("b", F, [1, 2, 7, 7])], [rand(1, 2, 7, 7)])
save("global_pool", [h.make_node("GlobalAveragePool", ["x"], ["a"]), h.make_node("GlobalMaxPool", ["x"], ["m"])],
     [("x", F, ["N", 3, 5, 4])], [("a", F, ["N", 3, 1, 1]), ("m", F, ["N", 3, 1, 1])], [rand(2, 3, 5, 4)])
save("batchnorm", [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
     [("x", F, [2, 3, 4, 4])], [("y", F, [2, 3, 4, 4])], [rand(2, 3, 4, 4)],
     inits=[init("s", rand(3)), init("b", rand(3)), init("m", rand(3)), init("v", rand(3, lo=0.5, hi=2))])
save("matmul_shapes", [h.make_node("MatMul", ["x", "w"], ["a"]), h.make_node("MatMul", ["v", "w"], ["b"]),
                       h.make_node("MatMul", ["x", "u"], ["c"]), h.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
                       h.make_node("MatMul", ["x", "xt"], ["d"])],
     [("x", F, ["B", "S", 8]), ("v", F, [8])], [("a", F, ["B", "S", 5]), ("b", F, [5]), ("c", F, ["B", "S"]), ("d", F, ["B", "S", "S"])],
     [rand(2, 3, 8), rand(8)], inits=[init("w", rand(8, 5)), init("u", rand(8))])
save("gemm", [h.make_node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0),
              h.make_node("Gemm", ["at", "w2"], ["z"], transA=1)],
     [("a", F, [3, 4]), ("at", F, [4, 3])], [("y", F, [3, 6]), ("z", F, [3, 2])], [rand(3, 4), rand(4, 3)],
     inits=[init("w", rand(6, 4)), init("c", rand(6)), init("w2", rand(4, 2))])
save("softmax11", [h.make_node("Softmax", ["x"], ["y"], axis=1), h.make_node("LogSoftmax", ["x"], ["z"])],
     [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4]), ("z", F, [2, 3, 4])], [rand(2, 3, 4)], opset=11)
save("softmax13", [h.make_node("Softmax", ["x"], ["y"], axis=1)], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])], [rand(2, 3, 4)])
save("layernorm17", [h.make_node("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)],
     [("x", F, ["S", 16])], [("y", F, ["S", 16])], [rand(3, 16)], inits=[init("s", rand(16)), init("b", rand(16))], opset=17)
save("reduce13", [h.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=0), h.make_node("ReduceSum", ["x", "ax"], ["s"]),
                  h.make_node("ReduceMax", ["x"], ["mx"]), h.make_node("ReduceL2", ["x"], ["l2"], axes=[-1]),
                  h.make_node("ReduceLogSumExp", ["x"], ["lse"], axes=[2], keepdims=0), h.make_node("ReduceSumSquare", ["x"], ["ss"], axes=[0])],
     [("x", F, [2, 3, 4])], [("m", F, [2, 4]), ("s", F, [2, 1, 4]), ("mx", F, [1, 1, 1]), ("l2", F, [2, 3, 1]),
                             ("lse", F, [2, 3]), ("ss", F, [1, 3, 4])],
     [rand(2, 3, 4)], inits=[init("ax", np.array([1], np.int64))])
save("reduce18", [h.make_node("ReduceMean", ["x", "ax"], ["m"], keepdims=0), h.make_node("ReduceMin", ["x", "ax"], ["mn"])],
     [("x", F, [2, 3, 4])], [("m", F, [2, 4]), ("mn", F, [2, 1, 4])], [rand(2, 3, 4)],
     inits=[init("ax", np.array([1], np.int64))], opset=18)

# Small networks.
def cnn():
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             h.make_node("BatchNormalization", ["c1", "g", "be", "mu", "va"], ["n1"]),
             h.make_node("Relu", ["n1"], ["r1"]),
             h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             h.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=8),
             h.make_node("Clip", ["c2", "zero", "six"], ["r2"]),
             h.make_node("GlobalAveragePool", ["r2"], ["gap"]),
             h.make_node("Flatten", ["gap"], ["f"]),
             h.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1)]
    inits = [init("w1", rand(8, 3, 3, 3, lo=-0.5, hi=0.5)), init("b1", rand(8)), init("g", rand(8)), init("be", rand(8)),
             init("mu", rand(8)), init("va", rand(8, lo=0.5, hi=2)), init("w2", rand(8, 1, 3, 3)),
             init("zero", np.float32(0)), init("six", np.float32(6)), init("fc", rand(10, 8)), init("fcb", rand(10))]
    save("net_cnn", nodes, [("x", F, ["N", 3, 16, 16])], [("y", F, ["N", 10])], [rand(2, 3, 16, 16)], inits=inits)


def attention():
    # One head-split self-attention block as PyTorch exports it: shape
    # arithmetic on the dynamic sequence length, QKV split, scaled softmax.
    d, heads = 16, 2
    hd = d // heads
    nodes = [
        h.make_node("MatMul", ["x", "wqkv"], ["qkv0"]), h.make_node("Add", ["qkv0", "bqkv"], ["qkv"]),
        h.make_node("Split", ["qkv", "split"], ["q", "k", "v"], axis=2),
        h.make_node("Shape", ["x"], ["xs"]), h.make_node("Gather", ["xs", "i0"], ["b"]), h.make_node("Gather", ["xs", "i1"], ["s"]),
        h.make_node("Unsqueeze", ["b", "a0"], ["b1"]), h.make_node("Unsqueeze", ["s", "a0"], ["s1"]),
        h.make_node("Concat", ["b1", "s1", "hh"], ["hshape"], axis=0),
    ]
    for t in "qkv":
        nodes += [h.make_node("Reshape", [t, "hshape"], [t + "r"]),
                  h.make_node("Transpose", [t + "r"], [t + "t"], perm=[0, 2, 1, 3] if t != "k" else [0, 2, 3, 1])]
    nodes += [
        h.make_node("MatMul", ["qt", "kt"], ["sc0"]), h.make_node("Div", ["sc0", "scale"], ["sc"]),
        h.make_node("Softmax", ["sc"], ["p"], axis=-1), h.make_node("MatMul", ["p", "vt"], ["o"]),
        h.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        h.make_node("Concat", ["b1", "s1", "dd"], ["oshape"], axis=0),
        h.make_node("Reshape", ["ot", "oshape"], ["or"]),
        h.make_node("MatMul", ["or", "wo"], ["y0"]), h.make_node("Add", ["y0", "x"], ["res"]),
        h.make_node("ReduceMean", ["res"], ["mu"], axes=[-1]), h.make_node("Sub", ["res", "mu"], ["dev"]),
        h.make_node("Pow", ["dev", "two"], ["dev2"]), h.make_node("ReduceMean", ["dev2"], ["var"], axes=[-1]),
        h.make_node("Add", ["var", "eps"], ["vare"]), h.make_node("Sqrt", ["vare"], ["sd"]),
        h.make_node("Div", ["dev", "sd"], ["y"]),
    ]
    inits = [init("wqkv", rand(d, 3 * d, lo=-0.3, hi=0.3)), init("bqkv", rand(3 * d)), init("split", np.array([d, d, d], np.int64)),
             init("i0", np.int64(0)), init("i1", np.int64(1)), init("a0", np.array([0], np.int64)),
             init("hh", np.array([heads, hd], np.int64)), init("dd", np.array([d], np.int64)),
             init("scale", np.float32(np.sqrt(hd))), init("wo", rand(d, d, lo=-0.3, hi=0.3)),
             init("two", np.float32(2)), init("eps", np.float32(1e-5))]
    save("net_attention", nodes, [("x", F, ["B", "S", d])], [("y", F, ["B", "S", d])], [rand(2, 7, d)], inits=inits)


def dense():
    # The C library test's network: small, one symbolic size, weights.
    nodes = [h.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1), h.make_node("Relu", ["g"], ["y"])]
    save("net_dense", nodes, [("x", F, ["N", 8])], [("y", F, ["N", 10])], [rand(2, 8)],
         inits=[init("w", rand(10, 8)), init("b", rand(10))])


def more_ops():
    # Operators loom imports as several of its own.
    unary("Elu", alpha=0.7)
    unary("Selu")
    save("mish", [h.make_node("Mish", ["x"], ["y"])], [("x", F, [3, 5])], [("y", F, [3, 5])], [rand(3, 5, lo=-4, hi=4)], opset=18)
    save("prelu", [h.make_node("PRelu", ["x", "s"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])], [rand(2, 3, 4)],
         inits=[init("s", rand(3, 1, lo=0, hi=0.5))])
    save("sign", [h.make_node("Sign", ["x"], ["y"])], [("x", F, [6])], [("y", F, [6])], [np.array([-2, 0, 3, -0.5, 0, 1], np.float32)])
    save("logic", [h.make_node("Greater", ["a", "zero"], ["pa"]), h.make_node("Greater", ["b", "zero"], ["pb"]),
                   h.make_node("And", ["pa", "pb"], ["and"]), h.make_node("Or", ["pa", "pb"], ["or"]),
                   h.make_node("Xor", ["pa", "pb"], ["xor"])],
         [("a", F, [3, 4]), ("b", F, [4])], [("and", TP.BOOL, [3, 4]), ("or", TP.BOOL, [3, 4]), ("xor", TP.BOOL, [3, 4])],
         [rand(3, 4), rand(4)], inits=[init("zero", np.float32(0))])
    save("tile", [h.make_node("Tile", ["x", "r"], ["y"])], [("x", F, [2, 3])], [("y", F, [4, 9])], [rand(2, 3)],
         inits=[init("r", np.array([2, 3], np.int64))])
    save("trilu", [h.make_node("Trilu", ["x"], ["u"]), h.make_node("Trilu", ["x", "k"], ["l"], upper=0)],
         [("x", F, [2, 4, 5])], [("u", F, [2, 4, 5]), ("l", F, [2, 4, 5])], [rand(2, 4, 5)], inits=[init("k", np.int64(-1))], opset=14)
    save("cumsum", [h.make_node("CumSum", ["x", "ax"], ["a"]), h.make_node("CumSum", ["x", "ax0"], ["b"], exclusive=1, reverse=1)],
         [("x", F, [3, 5])], [("a", F, [3, 5]), ("b", F, [3, 5])], [rand(3, 5)],
         inits=[init("ax", np.int64(1)), init("ax0", np.int64(0))], opset=14)
    save("instancenorm", [h.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-4)],
         [("x", F, [2, 3, 4, 5])], [("y", F, [2, 3, 4, 5])], [rand(2, 3, 4, 5)], inits=[init("s", rand(3)), init("b", rand(3))])
    save("convtranspose", [h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0])],
         [("x", F, [1, 4, 5, 6])], [("y", F, [1, 3, 10, 12])], [rand(1, 4, 5, 6)], inits=[init("w", rand(4, 3, 3, 3)), init("b", rand(3))])
    save("convtranspose_grouped", [h.make_node("ConvTranspose", ["x", "w"], ["y"], group=2, dilations=[2, 1], pads=[3, 0, 0, 0])],
         [("x", F, [2, 4, 5, 5])], [("y", F, [2, 2, 6, 7])], [rand(2, 4, 5, 5)], inits=[init("w", rand(4, 1, 3, 3))])
    save("convtranspose1d", [h.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3])],
         [("x", F, [1, 2, 4])], [("y", F, [1, 3, 12])], [rand(1, 2, 4)], inits=[init("w", rand(2, 3, 3))])
    for mode, coord, nearest in [("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
                                 ("linear", "half_pixel", None), ("linear", "align_corners", None),
                                 ("linear", "pytorch_half_pixel", None)]:
        attrs = {"mode": mode, "coordinate_transformation_mode": coord}
        if nearest:
            attrs["nearest_mode"] = nearest
        save(f"resize_{mode}_{coord}", [h.make_node("Resize", ["x", "", "sc"], ["y"], **attrs)],
             [("x", F, [1, 2, 4, 5])], [("y", F, [1, 2, 8, 7])], [rand(1, 2, 4, 5)],
             inits=[init("sc", np.array([1, 1, 2, 1.5], np.float32))])
    save("resize_sizes", [h.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear")],
         [("x", F, [1, 1, 6, 6])], [("y", F, [1, 1, 3, 4])], [rand(1, 1, 6, 6)], inits=[init("sz", np.array([1, 1, 3, 4], np.int64))])
    save("einsum", [h.make_node("Einsum", ["a", "b"], ["y"], equation="bhid,bhjd->bhij"),
                    h.make_node("Einsum", ["a"], ["t"], equation="bhid->bdh"),
                    h.make_node("Einsum", ["m", "n"], ["z"], equation="ik,kj")],
         [("a", F, [2, 3, 4, 5]), ("b", F, [2, 3, 6, 5]), ("m", F, [3, 4]), ("n", F, [4, 2])],
         [("y", F, [2, 3, 4, 6]), ("t", F, [2, 5, 3]), ("z", F, [3, 2])],
         [rand(2, 3, 4, 5), rand(2, 3, 6, 5), rand(3, 4), rand(4, 2)])


save("external_data", [h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Add", ["m", "b"], ["y"])],
     [("x", F, [2, 6])], [("y", F, [2, 3])], [rand(2, 6)], inits=[init("w", rand(6, 3)), init("b", rand(3))], external=True)
cnn()
attention()
dense()
more_ops()
save("topk", [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1), h.make_node("TopK", ["x", "k1"], ["sv", "si"], largest=0)],
     [("x", F, [2, 6, 3])], [("v", F, [2, 3, 3]), ("i", TP.INT64, [2, 3, 3]), ("sv", F, [2, 6, 1]), ("si", TP.INT64, [2, 6, 1])],
     [np.round(rand(2, 6, 3, lo=-3, hi=3))], inits=[init("k", np.array([3], np.int64)), init("k1", np.array([1], np.int64))], opset=11)
save("argmax", [h.make_node("ArgMax", ["x"], ["a"], axis=1), h.make_node("ArgMin", ["x"], ["b"], axis=-1, keepdims=0, select_last_index=1)],
     [("x", F, [3, 4, 5])], [("a", TP.INT64, [3, 1, 5]), ("b", TP.INT64, [3, 4])], [np.round(rand(3, 4, 5, lo=-2, hi=2))], opset=13)
# Rounding and the periodic functions on tensors computed at run time.
unary("Sin", lo=-7, hi=7)
unary("Cos", lo=-7, hi=7)
unary("Tan", lo=-1.4, hi=1.4)
unary("Floor", lo=-4, hi=4)
unary("Ceil", lo=-4, hi=4)
save("round", [h.make_node("Round", ["x"], ["y"])], [("x", F, [12])], [("y", F, [12])],
     [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.3, 0.49999997, 7.7, -7.7, 16777215, 3.5], np.float32)], opset=11)
# A rotary embedding whose angles depend on the sequence length S, known
# only at run time (LLaMA's, when exported with a dynamic axis).
save("rotary_dynamic", [
    h.make_node("Shape", ["x"], ["shape"]), h.make_node("Gather", ["shape", "one"], ["s"], axis=0),
    h.make_node("Range", ["zero", "s", "one"], ["pos_i"]), h.make_node("Cast", ["pos_i"], ["pos"], to=F),
    h.make_node("Unsqueeze", ["pos", "ax1"], ["pos2"]), h.make_node("Mul", ["pos2", "inv_freq"], ["freqs"]),
    h.make_node("Concat", ["freqs", "freqs"], ["emb"], axis=1),
    h.make_node("Cos", ["emb"], ["cos"]), h.make_node("Sin", ["emb"], ["sin"]),
    h.make_node("Slice", ["x", "s0", "s4", "ax2"], ["x1"]), h.make_node("Slice", ["x", "s4", "s8", "ax2"], ["x2"]),
    h.make_node("Neg", ["x2"], ["nx2"]), h.make_node("Concat", ["nx2", "x1"], ["rot"], axis=2),
    h.make_node("Mul", ["x", "cos"], ["a"]), h.make_node("Mul", ["rot", "sin"], ["b"]), h.make_node("Add", ["a", "b"], ["y"])],
    [("x", F, [2, "S", 8])], [("y", F, [2, "S", 8])], [rand(2, 7, 8)],
    inits=[init("zero", np.int64(0)), init("one", np.int64(1)), init("ax1", np.array([1], np.int64)),
           init("ax2", np.array([2], np.int64)), init("s0", np.array([0], np.int64)), init("s4", np.array([4], np.int64)),
           init("s8", np.array([8], np.int64)),
           init("inv_freq", (1.0 / (10000 ** (np.arange(0, 8, 2, dtype=np.float32) / 8))).astype(np.float32))])
# Swin's window masks: remainders, scatters and expansions of values known
# when the model is read (computed at import), and an attention dropout
# exported in training mode at ratio 0 with its mask unread.
save("swin_mask", [
    h.make_node("Mod", ["ai", "bi"], ["mi"]), h.make_node("Mod", ["af", "bf"], ["mf"], fmod=1),
    h.make_node("Cast", ["mi"], ["mic"], to=F), h.make_node("Add", ["mic", "mf"], ["m"]),
    h.make_node("Range", ["zero", "four", "one"], ["r"]), h.make_node("Reshape", ["r", "col"], ["rc"]),
    h.make_node("Expand", ["rc", "sq"], ["re"]), h.make_node("Cast", ["re"], ["ref"], to=F),
    h.make_node("ConstantOfShape", ["sq"], ["z"], value=h.make_tensor("v", F, [1], [0.0])),
    h.make_node("ScatterND", ["z", "idx", "upd"], ["sc"]),
    h.make_node("Add", ["x", "sc"], ["a"]), h.make_node("Add", ["a", "m"], ["b"]), h.make_node("Add", ["b", "ref"], ["c"]),
    h.make_node("Dropout", ["c", "ratio", "train"], ["y", "mask"])],
    [("x", F, [4, 4])], [("y", F, [4, 4])], [rand(4, 4)],
    inits=[init("ai", np.array([-7, 7, -3, 5], np.int64)), init("bi", np.array([3, -3, 3, 3], np.int64)),
           init("af", np.array([-7.5, 7.5, 2.25, -1], np.float32)), init("bf", np.array([2, -2, 1, 3], np.float32)),
           init("zero", np.int64(0)), init("four", np.int64(4)), init("one", np.int64(1)),
           init("col", np.array([4, 1], np.int64)), init("sq", np.array([4, 4], np.int64)),
           init("idx", np.array([[0, 1], [2, 3], [3, 0]], np.int64)), init("upd", np.array([5, 6, -1], np.float32)),
           init("ratio", np.float32(0)), init("train", np.array(True))])
print("wrote", len([n for n in os.listdir(HERE) if os.path.isdir(os.path.join(HERE, n))]), "cases under", HERE)
