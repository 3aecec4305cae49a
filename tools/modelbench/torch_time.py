#!/usr/bin/python3
"""tools/modelbench/torch_time.py NAME DATA THREADS [SECONDS [CALLS]]: PyTorch
eager's side of make modelbench. Builds model NAME as export.py does (same
weights), runs it on the inputs loomtime wrote into DATA (meta.json and the
raw files it names) with THREADS intra-op threads, checks its output against
loom's, times it the way loomtime times Module.Run (3 warm-up calls, then at
least CALLS calls and SECONDS seconds) and prints one JSON line.
"""
import json, os, sys, time
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402

DTYPES = {"float32": np.float32, "int64": np.int64, "int32": np.int32}


def main():
    name, data, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
    calls = int(sys.argv[5]) if len(sys.argv) > 5 else 50
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    make, _ = export.models()[name]
    model = export.build(make)
    meta = json.load(open(os.path.join(data, "meta.json")))
    inputs = []
    for t in meta["inputs"]:
        a = np.fromfile(os.path.join(data, t["file"]), dtype=DTYPES[t.get("dtype", "float32")]).reshape(t["shape"])
        inputs.append(torch.from_numpy(a))
    for _ in range(3):
        out = model(*inputs)
    want = np.fromfile(os.path.join(data, meta["outputs"][0]["file"]), dtype=np.float32)
    got = out.numpy().reshape(-1)
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(got - want).max() / scale) if got.size == want.size else float("inf")
    times = []
    start = time.perf_counter()
    while len(times) < calls or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        model(*inputs)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    pct = lambda p: times[min(len(times) - 1, int(p * len(times)))]
    print(json.dumps({"engine": "pytorch", "graph": name, "threads": threads, "calls": len(times),
                      "median_ms": pct(0.5), "p10_ms": pct(0.1), "p90_ms": pct(0.9), "min_ms": times[0],
                      "max_rel_err": err, "version": torch.__version__,
                      "blas": "openblas" if "openblas" in open("/proc/self/maps").read() else "other"}))


main()
