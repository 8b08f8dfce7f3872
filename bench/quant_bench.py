#!/usr/bin/env python3
"""int8 and bf16 on the cpu backend against float32 and against onnxruntime, in one run:
per model and thread count, p50 ms of
  gkrt f32        the float model (`gkrt bench`, fusion on)
  gkrt bf16       the float model with --precision bf16 (float32 where the CPU has no bf16)
  gkrt int8 MODE  the quantized file (qdq: quant_dq_op_q_fusion on; qop; dyn)
  ort f32, ort int8 MODE  onnxruntime on the same files (its default optimizations)
and the ratios gkrt int8 / ort int8 (<= 1: gkrt faster) and gkrt f32 / gkrt int8
(the int8 speed-up). The machine is shared and noisy: medians of --repeat runs.

    .venv/bin/python bench/quant_bench.py [--build build] [--quant build/zoo_quant] [--threads 1,2]
        [--models transformer_block,squeezenet] [--modes qdq,qop,dyn] [--repeat 3] [--iterations 20]

The quantized models come from tests/models/make_quant_models.py (ctest -R zoo_quant_models);
the float ones from build/zoo and build/zoo_light."""
import argparse
import glob
import json
import os
import subprocess
import tempfile
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--quant", default=None)
ap.add_argument("--threads", default="1,2")
ap.add_argument("--models", default="transformer_block,squeezenet")
ap.add_argument("--modes", default="qdq,qop,dyn")
ap.add_argument("--iterations", type=int, default=20)
ap.add_argument("--repeat", type=int, default=3)
args = ap.parse_args()
GKRT = os.path.join(args.build, "tools", "gkrt")
QUANT = args.quant or os.path.join(args.build, "zoo_quant")


def float_model(name):
    for d in ("zoo", "zoo_light"):
        p = os.path.join(args.build, d, name + ".onnx")
        if os.path.exists(p):
            return p
    return None


def feeds_for(prefix):
    out = {}
    for f in sorted(glob.glob(os.path.join(QUANT, f"{prefix}_input_*.npy"))):
        out[f[len(os.path.join(QUANT, prefix + "_input_")):-4].replace("%", "/")] = np.load(f)
    return out


def gkrt_p50(onnx_path, feeds, threads, precision="f32"):
    with tempfile.TemporaryDirectory() as d:
        gkm = os.path.join(d, "m.gkm")
        shapes = [f"--input-shape={k}=" + ",".join(map(str, v.shape)) for k, v in feeds.items()]
        subprocess.run([GKRT, "convert", onnx_path, "-o", gkm], check=True, stdout=subprocess.DEVNULL)
        inputs = []
        for k, v in feeds.items():
            np.save(os.path.join(d, k.replace("/", "%") + ".npy"), v)
            inputs += ["--input", f"{k}=" + os.path.join(d, k.replace("/", "%") + ".npy")]
        js = os.path.join(d, "r.json")
        p50s = []
        for _ in range(args.repeat):
            subprocess.run([GKRT, "bench", gkm, "--backend", "cpu", "--threads", str(threads), "--fusion", "on",
                            "--precision", precision, "--iterations", str(args.iterations), "--warmup", "3",
                            "--json", js, *inputs], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            p50s.append(json.load(open(js))[0]["p50_ms"])
        del shapes
        return float(np.median(p50s))


def ort_p50(onnx_path, feeds, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads, so.log_severity_level = threads, 1, 3
    s = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        s.run(None, feeds)
    med = []
    for _ in range(args.repeat):
        t = []
        for _ in range(args.iterations):
            t0 = time.perf_counter()
            s.run(None, feeds)
            t.append((time.perf_counter() - t0) * 1e3)
        med.append(np.median(t))
    return float(np.median(med))


def main():
    print("p50 ms, median of", args.repeat, "runs of", args.iterations, "iterations; noisy shared machine: read ratios")
    print(f"{'model':20s} {'thr':>3s} {'gkrt f32':>9s} {'gkrt bf16':>9s} {'ort f32':>8s} "
          f"{'mode':>4s} {'gkrt int8':>9s} {'ort int8':>8s} {'gkrt/ort int8':>13s} {'gkrt f32/int8':>13s}")
    for name in filter(None, args.models.split(",")):
        fm = float_model(name)
        for threads in map(int, args.threads.split(",")):
            first = next((m for m in args.modes.split(",") if os.path.exists(os.path.join(QUANT, f"{name}_{m}.onnx"))), None)
            if fm is None or first is None:
                print(f"{name}: models missing (ctest -R 'zoo_models|zoo_light_models|zoo_quant_models')")
                break
            feeds = feeds_for(f"{name}_{first}")
            f32, bf16, of32 = gkrt_p50(fm, feeds, threads), gkrt_p50(fm, feeds, threads, "bf16"), ort_p50(fm, feeds, threads)
            for mode in filter(None, args.modes.split(",")):
                q = os.path.join(QUANT, f"{name}_{mode}.onnx")
                if not os.path.exists(q):
                    continue
                g8, o8 = gkrt_p50(q, feeds, threads), ort_p50(q, feeds, threads)
                print(f"{name:20s} {threads:3d} {f32:9.2f} {bf16:9.2f} {of32:8.2f} {mode:>4s} {g8:9.2f} {o8:8.2f} "
                      f"{g8 / o8:13.2f} {f32 / g8:13.2f}", flush=True)


main()
