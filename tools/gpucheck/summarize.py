#!/usr/bin/env python3
"""summarize.py RAW OUT: pairs loom's tuned times with the references that
tools/gpucheck/run measured (RAW, JSON lines), writes one JSON line per
kernel to OUT and prints the table: the gemms against cuBLAS (cuBLAS's time
over loom's: the fraction of cuBLAS's speed loom reaches), the bandwidth
kernels against the device-to-device copy (loom's bytes read and written
per second over the copy's)."""
import json
import sys

TARGETS = {"gemm_f32": 0.7, "gemm_f16_f32": 0.6, "softmax": 0.8, "rmsnorm": 0.8}


def shape_dims(shape):
    return [int(x) for x in str(shape).replace("×", "x").split("x") if x.strip().isdigit()]


def main(raw, out):
    rows = [json.loads(l) for l in open(raw) if l.strip().startswith("{")]
    loom = {r["kernel"]: r for r in rows if "loom" in r}
    peers = [r for r in rows if "peer" in r]
    figures = []
    for name in ["gemm_f32", "gemm_f16_f32", "softmax", "rmsnorm"]:
        l = loom.get(name)
        fig = {"kernel": name, "target": TARGETS[name]}
        if l is None or not l.get("ms"):
            fig["note"] = "loom: no result"
            figures.append(fig)
            continue
        fig.update(loom_ms=l["ms"], shape=l["shape"], default_ms=l.get("default_ms"), trials=l.get("trials"),
                   failed=l.get("failed"), tune_seconds=l.get("seconds"))
        if name.startswith("gemm"):
            p = next((p for p in peers if p["kernel"] == name), None)
            if p:
                m, n, k = shape_dims(p["shape"])
                fig.update(reference=p["peer"], reference_ms=p["ms"], reference_spread=[p["ms_min"], p["ms_max"]],
                           reference_err=p.get("max_rel_err"), ratio=p["ms"] / l["ms"],
                           loom_tflops=2 * m * n * k / (l["ms"] * 1e-3) / 1e12, reference_tflops=p["tflops"])
        else:
            r, d = shape_dims(l["shape"])[:2]
            moved = 2 * r * d * 4 + (d * 4 if name == "rmsnorm" else 0)
            p = next((p for p in peers if p["kernel"] == "copy" and p["bytes"] == r * d * 4), None)
            gbps = moved / (l["ms"] * 1e-3) / 1e9
            fig.update(loom_gbps=gbps, bytes=moved)
            if p:
                fig.update(reference="copy %d MiB" % (p["bytes"] >> 20), reference_ms=p["ms"],
                           reference_spread=[p["ms_min"], p["ms_max"]], reference_gbps=p["gbps"], ratio=gbps / p["gbps"])
        figures.append(fig)
    with open(out, "w") as f:
        for fig in figures:
            f.write(json.dumps(fig) + "\n")
    print("%-14s %-18s %10s %10s %-22s %10s %7s %6s" % ("kernel", "shape", "loom ms", "default", "reference", "ref ms", "ratio", "target"))
    for fig in figures:
        def num(k, fmt="%.4g"):
            v = fig.get(k)
            return fmt % v if isinstance(v, (int, float)) else "-"
        print("%-14s %-18s %10s %10s %-22s %10s %7s %6s" % (fig["kernel"], fig.get("shape", "-"), num("loom_ms"), num("default_ms"),
              fig.get("reference", "-"), num("reference_ms"), num("ratio", "%.2f"), fig["target"]))
    for fig in figures:
        extra = {k: v for k, v in fig.items() if k in ("loom_tflops", "reference_tflops", "loom_gbps", "reference_gbps", "reference_err", "note")}
        if extra:
            print("  %s: %s" % (fig["kernel"], ", ".join("%s %s" % (k, ("%.4g" % v) if isinstance(v, float) else v) for k, v in extra.items())))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
