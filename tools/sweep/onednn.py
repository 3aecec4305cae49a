#!/usr/bin/env python3
"""tools/sweep/onednn.py ONEDNN_SUITE GRAPH NAME=VALUE... --threads T

oneDNN's time on a graph of testdata/sweep at one size of the sweep
(../shared/peers takes fixed sizes only): matmul_m as a matmul [M,1024] x
[1024,1024], softmax_C as a softmax over the last axis of [R,C], through
tools/onednn (bin/onednn_suite) on random inputs. Prints one JSON line like
tools/graphbench/numpy_graph.py's, with "peer": "onednn"; nothing for a
graph oneDNN 2.6 has no primitive for (rmsnorm; the chain)."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def main():
    args = sys.argv[1:]
    threads = 1
    if "--threads" in args:
        i = args.index("--threads")
        threads = int(args[i + 1])
        del args[i:i + 2]
    binary, graph, sizes = args[0], args[1], dict(a.split("=") for a in args[2:])
    sizes = {k: int(v) for k, v in sizes.items()}
    name = os.path.splitext(os.path.basename(graph))[0]
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as d:
        if name == "matmul_m":
            m = sizes["M"]
            rng.standard_normal((m, 1024), dtype=np.float32).tofile(os.path.join(d, "A.bin"))
            rng.standard_normal((1024, 1024), dtype=np.float32).tofile(os.path.join(d, "B.bin"))
            spec = ["bmm", "1", str(m), "1024", "1024"]
        elif name.startswith("softmax_"):
            r, c = sizes["R"], int(name.split("_")[1])
            rng.standard_normal((r, c), dtype=np.float32).tofile(os.path.join(d, "X.bin"))
            spec = ["softmax", str(r), str(c)]
        else:
            return
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        out = subprocess.run([binary, d] + spec, env=env, check=True, capture_output=True, text=True).stdout
        line = json.loads(out.strip().splitlines()[-1])
    print(json.dumps({"peer": "onednn", "graph": json.load(open(graph))["name"], "sizes": sizes,
                      "threads": threads, "ms": line["ms"], "impl": line["impl"]}))


if __name__ == "__main__":
    main()
