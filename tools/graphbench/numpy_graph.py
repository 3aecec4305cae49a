#!/usr/bin/python3
"""numpy's side of `loom bench -graph`: runs an operator graph (loom's JSON,
see fusion/doc.go) op by op in numpy, the way a numpy user writes it (matmul
through numpy's BLAS, every other op one numpy expression), and prints one
JSON line: graph, sizes, threads, ms (best per-call time, sampled as
../shared/peers samples: a warm-up call, then samples of reps calls of at
least 20 ms each, at least 5, more while they total under 0.3 s, at most 30).

    numpy_graph.py GRAPH.json [S=128 ...] [--threads T]

Threads: OPENBLAS_NUM_THREADS (set here before numpy is imported) reaches the
matmuls only; numpy's other operations run on one thread.
"""
import json
import math
import os
import sys
import time

threads = 1
args = []
argv = sys.argv[1:]
i = 0
while i < len(argv):
    if argv[i] == "--threads":
        threads = int(argv[i + 1])
        i += 2
        continue
    args.append(argv[i])
    i += 1
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(threads)

import numpy as np  # noqa: E402  (after the thread settings)

DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64, "bool": np.bool_}


def dim(d, sizes):
    """A dimension of the JSON: an integer, a symbol, or a product/sum written as text."""
    if isinstance(d, int):
        return d
    return int(eval(str(d), {"__builtins__": {}}, dict(sizes)))


def erf(x):
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26): numpy has none."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(x.dtype)


def axis_of(a, rank, default):
    ax = a.get("axis", default)
    return ax + rank if ax < 0 else ax


def conv2d(x, w, a):
    sh, sw = a.get("strides", [1, 1])
    pads = a.get("pads", [0, 0, 0, 0])
    dh, dw = a.get("dilations", [1, 1])
    groups = a.get("groups", 1)
    if pads:
        x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    oh = (h - dh * (r - 1) - 1) // sh + 1
    ow = (wd - dw * (s - 1) - 1) // sw + 1
    out = np.empty((n, k, oh, ow), dtype=x.dtype)
    kg = k // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        # im2col: windows [n, cg, oh, ow, r, s], then one tensordot (BLAS).
        win = np.lib.stride_tricks.sliding_window_view(xs, ((r - 1) * dh + 1, (s - 1) * dw + 1), axis=(2, 3))
        win = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]
        out[:, g * kg:(g + 1) * kg] = np.einsum("ncpqrs,kcrs->nkpq", win, w[g * kg:(g + 1) * kg], optimize=True)
    return out


def run_graph(g, sizes, inputs):
    env = dict(inputs)
    for c in g.get("constants", []):
        shape = [dim(d, sizes) for d in c.get("shape", [])]
        data = np.array(c.get("data", [0]), dtype=DTYPES[c.get("dtype", "float32")])
        env[c["name"]] = np.full(shape, data[0], dtype=data.dtype) if data.size == 1 else data.reshape(shape)
    for n in g["nodes"]:
        op, a = n["op"], n.get("attrs", {}) or {}
        x = [env[name] for name in n["inputs"]]
        if op in ("add", "sub", "mul", "div", "max", "min", "pow"):
            f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                 "max": np.maximum, "min": np.minimum, "pow": np.power}[op]
            y = f(x[0], x[1])
        elif op == "matmul":
            y = np.matmul(x[0], x[1])
        elif op == "transpose":
            y = np.transpose(x[0], a["perm"])
        elif op == "reshape":
            y = np.reshape(x[0], [dim(d, sizes) for d in a["shape"]])
        elif op == "broadcast_to":
            # A copy: loom writes the broadcast output, a view would not.
            y = np.broadcast_to(x[0], [dim(d, sizes) for d in a["shape"]]).copy()
        elif op == "softmax":
            ax = axis_of(a, x[0].ndim, -1)
            e = np.exp(x[0] - x[0].max(axis=ax, keepdims=True))
            y = e / e.sum(axis=ax, keepdims=True)
        elif op == "layernorm":
            ax = axis_of(a, x[0].ndim, -1)
            axes = tuple(range(ax, x[0].ndim))
            mean = x[0].mean(axis=axes, keepdims=True)
            d = x[0] - mean
            var = (d * d).mean(axis=axes, keepdims=True)
            y = d / np.sqrt(var + np.float32(a.get("epsilon", 1e-5)))
            if len(x) > 1:
                y = y * x[1]
            if len(x) > 2:
                y = y + x[2]
        elif op == "rms_norm":
            y = x[0] / np.sqrt((x[0] * x[0]).mean(axis=-1, keepdims=True) + np.float32(a.get("epsilon", 1e-5)))
            if len(x) > 1:
                y = y * x[1]
        elif op == "gelu":
            v = x[0]
            if a.get("approximate", "none") == "tanh":
                y = 0.5 * v * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (v + np.float32(0.044715) * v * v * v)))
            else:
                y = 0.5 * v * (1 + erf(v * np.float32(1 / math.sqrt(2))))
        elif op == "relu":
            y = np.maximum(x[0], 0)
        elif op in ("exp", "log", "sqrt", "tanh", "abs", "neg"):
            y = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs, "neg": np.negative}[op](x[0])
        elif op == "rsqrt":
            y = 1 / np.sqrt(x[0])
        elif op == "sigmoid":
            y = 1 / (1 + np.exp(-x[0]))
        elif op == "silu":
            y = x[0] / (1 + np.exp(-x[0]))
        elif op in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min"):
            f = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min}[op]
            y = f(x[0], axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", False)))
        elif op == "conv2d":
            y = conv2d(x[0], x[1], a)
        else:
            raise SystemExit(f"numpy_graph.py: op {op} is not supported here")
        env[n["output"]] = y
    return [env[o] for o in g["outputs"]]


def main():
    if not args:
        raise SystemExit(__doc__)
    path = args[0]
    text = open(path).read()
    if path.endswith(".txtar"):
        text = text.split("-- graph.json --\n", 1)[1].split("\n-- ", 1)[0]
    g = json.loads(text)
    sizes = {}
    for kv in args[1:]:
        k, v = kv.split("=")
        sizes[k] = int(v)
    rng = np.random.default_rng(1)
    inputs = {}
    for t in g["inputs"]:
        shape = [dim(d, sizes) for d in t["shape"]]
        dt = DTYPES[t.get("dtype", "float32")]
        if np.issubdtype(dt, np.floating):
            inputs[t["name"]] = (rng.random(shape, dtype=np.float64) * 2 - 1).astype(dt)
        else:
            inputs[t["name"]] = rng.integers(0, 4, shape).astype(dt)
    run_graph(g, sizes, inputs)  # warm-up
    start = time.perf_counter()
    run_graph(g, sizes, inputs)
    reps = max(1, int(0.02 / max(time.perf_counter() - start, 1e-6)))
    best, total, samples = float("inf"), 0.0, 0
    while samples < 5 or (total < 0.3 and samples < 30):
        start = time.perf_counter()
        for _ in range(reps):
            run_graph(g, sizes, inputs)
        d = time.perf_counter() - start
        total += d
        best = min(best, d / reps)
        samples += 1
    print(json.dumps({"graph": g["name"], "sizes": sizes, "threads": threads, "ms": best * 1e3, "samples": samples,
                      "peer": "numpy " + np.__version__, "blas": blas_in_use()}))


def blas_in_use():
    """The BLAS library numpy's matmul runs (from this process's mappings)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.lower()}
        return ", ".join(sorted(libs)) or "unknown"
    except OSError:
        return "unknown"


main()
