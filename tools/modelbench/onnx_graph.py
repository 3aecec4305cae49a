#!/usr/bin/python3
"""Writes an ONNX model (opset 17) of one of loom's operator graphs (loom's
JSON, see fusion/doc.go, or the graph.json section of a txtar) at fixed
sizes, for ONNX Runtime's side of tools/modelbench.

    onnx_graph.py GRAPH OUT.onnx [S=128 ...]

Every shape is made concrete with the sizes given. Covers the operators the
benchmark's graphs use: add, sub, mul, div, max, min, matmul, transpose,
reshape, softmax, layernorm, gelu (exact: 0.5 x (1 + erf(x / sqrt 2));
opset 17 has no Gelu), relu, conv2d. Any other operator is an error naming
it. Needs python3-onnx (Debian's, 1.12).
"""
import json
import math
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DTYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "int32": TensorProto.INT32, "int64": TensorProto.INT64}
NP = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64}
BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min", "matmul": "MatMul"}


def fail(msg):
    print("onnx_graph.py: " + msg, file=sys.stderr)
    sys.exit(1)


def read_graph(path):
    with open(path) as f:
        text = f.read()
    if path.endswith(".txtar"):
        marker = "-- graph.json --\n"
        if marker not in text:
            fail(f"{path}: no graph.json section")
        text = text.split(marker, 1)[1]
        end = text.find("\n-- ")
        if end >= 0:
            text = text[:end]
    return json.loads(text)


def dim(d, sizes):
    if isinstance(d, int):
        return d
    try:
        return int(eval(str(d), {"__builtins__": {}}, dict(sizes)))
    except Exception as e:  # a symbol without a value
        fail(f"dimension {d!r}: {e} (give every symbol a value: S=128)")


def convert(g, sizes):
    nodes, inits = [], []
    counter = [0]

    def fresh(base):
        counter[0] += 1
        return f"{base}__{counter[0]}"

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    inputs = []
    for t in g["inputs"]:
        shape = [dim(d, sizes) for d in t["shape"]]
        inputs.append(helper.make_tensor_value_info(t["name"], DTYPES[t.get("dtype", "float32")], shape))
    for c in g.get("constants", []) or []:
        shape = [dim(d, sizes) for d in c.get("shape", [])]
        data = np.array(c.get("data", [0]), dtype=NP[c.get("dtype", "float32")])
        arr = np.full(shape, data[0], dtype=data.dtype) if data.size == 1 else data.reshape(shape)
        const(c["name"], arr)
    for n in g["nodes"]:
        op, a, x, y = n["op"], n.get("attrs", {}) or {}, n["inputs"], n["output"]
        if op in BINARY:
            nodes.append(helper.make_node(BINARY[op], x, [y]))
        elif op == "relu":
            nodes.append(helper.make_node("Relu", x, [y]))
        elif op == "transpose":
            nodes.append(helper.make_node("Transpose", x, [y], perm=a["perm"]))
        elif op == "reshape":
            shape = const(fresh(y + "_shape"), np.array([dim(d, sizes) for d in a["shape"]], dtype=np.int64))
            nodes.append(helper.make_node("Reshape", [x[0], shape], [y]))
        elif op == "softmax":
            nodes.append(helper.make_node("Softmax", x, [y], axis=a.get("axis", -1)))
        elif op == "layernorm":
            axis = a.get("axis", -1)
            eps = float(a.get("epsilon", 1e-5))
            ins = list(x)
            if len(ins) < 2:
                fail(f"layernorm {y}: without a scale input is not converted")
            nodes.append(helper.make_node("LayerNormalization", ins, [y], axis=axis, epsilon=eps))
        elif op == "gelu":
            if a.get("approximate", "none") not in ("none", "", None):
                fail(f"gelu {y}: approximate={a['approximate']!r} is not converted")
            inv = const(fresh("inv_sqrt2"), np.array(1 / math.sqrt(2), dtype=np.float32))
            half = const(fresh("half"), np.array(0.5, dtype=np.float32))
            one = const(fresh("one"), np.array(1.0, dtype=np.float32))
            t1, t2, t3, t4 = fresh(y), fresh(y), fresh(y), fresh(y)
            nodes += [
                helper.make_node("Mul", [x[0], inv], [t1]),
                helper.make_node("Erf", [t1], [t2]),
                helper.make_node("Add", [t2, one], [t3]),
                helper.make_node("Mul", [x[0], half], [t4]),
                helper.make_node("Mul", [t4, t3], [y]),
            ]
        elif op == "conv2d":
            kw = {"strides": a.get("strides", [1, 1]), "pads": a.get("pads", [0, 0, 0, 0]),
                  "dilations": a.get("dilations", [1, 1]), "group": a.get("groups", 1)}
            nodes.append(helper.make_node("Conv", x, [y], **kw))
        else:
            fail(f"node {y}: operator {op!r} is not converted")
    # The outputs' shapes: from ONNX's shape inference on the graph
    # without them (the checker wants every graph output shaped).
    probe = helper.make_model(helper.make_graph(nodes, g["name"], inputs, [], initializer=inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(probe).graph.value_info}
    outputs = []
    for o in g["outputs"]:
        if o not in inferred:
            fail(f"output {o}: ONNX's shape inference gave it no shape")
        outputs.append(inferred[o])
    graph = helper.make_graph(nodes, g["name"], inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="loom-modelbench")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    if len(sys.argv) < 3:
        fail("usage: onnx_graph.py GRAPH OUT.onnx [NAME=N ...]")
    sizes = {}
    for kv in sys.argv[3:]:
        name, _, val = kv.partition("=")
        if not name or not val.isdigit():
            fail(f"size {kv!r}: want NAME=N")
        sizes[name] = int(val)
    model = convert(read_graph(sys.argv[1]), sizes)
    onnx.save(model, sys.argv[2])


if __name__ == "__main__":
    main()
