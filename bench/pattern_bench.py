#!/usr/bin/env python3
"""The Appendix 3 pattern passes on the zoo's transformer block and MiniLM: gkrt's cpu
backend with the pattern passes on (the cpu profile's defaults) and off, each pass alone
switched off, and the peers (onnxruntime, OpenVINO, MNN where installed) in the same
run, at 1 and 2 threads. p50 ms; ratio = gkrt / best peer (<= 1: gkrt is faster).

    .venv/bin/python bench/pattern_bench.py [--build build] [--zoo build/zoo] [--threads 1,2] [--repeat 3]

The zoo models come from `ctest --test-dir build -R "zoo_models|zoo_minilm"`. The
machine is shared and noisy: each number is the median of --repeat runs of `gkrt bench`."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--zoo", default=None)
ap.add_argument("--threads", default="1,2")
ap.add_argument("--iterations", type=int, default=50)
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--per-pass", action="store_true", help="also each default pass switched off alone")
args = ap.parse_args()
GKRT = os.path.join(args.build, "tools", "gkrt")
ZOO = args.zoo or os.path.join(args.build, "zoo")
PATTERN_PASSES = ["FlashAttentionFusionV1", "FlashAttentionFusionV2", "add_layer_norm_fusion",
                  "matmul_elem_biasadd_fusion", "matmul_elem_add_fusion", "matmul_elem_gelu_fusion"]
ALL_OFF = ",".join(["RecognizeExportedPatterns"] + PATTERN_PASSES + [
    "add_layer_norm_v3_fusion", "add_layer_norm_ext_fusion", "inference_swiglu_fusion", "inference_matmul_split_fusion",
    "add_rms_norm_fusion", "add_cast_rms_norm_cast_fusion", "MatMulAllReduce", "matmul_elem_relu_fusion",
    "inference_qbmm_allreduce_add_fusion"])


def feeds_for(name):
    import glob
    out = {}
    for f in sorted(glob.glob(os.path.join(ZOO, f"{name}_input_*.npy"))):
        out[os.path.basename(f)[len(name) + 7:-4]] = np.load(f)
    return out


def gkrt_p50(gkm, threads, flags):
    env = dict(os.environ, MS_DEV_GRAPH_KERNEL_FLAGS=flags)
    p50s, kernels = [], 0
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "r.json")
        for _ in range(args.repeat):
            subprocess.run([GKRT, "bench", gkm, "--backend", "cpu", "--threads", str(threads), "--fusion", "on",
                            "--iterations", str(args.iterations), "--warmup", "5", "--json", js], check=True,
                           stdout=subprocess.DEVNULL, env=env)
            r = json.load(open(js))[0]
            p50s.append(r["p50_ms"])
            kernels = r["kernels"]
    return float(np.median(p50s)), kernels


def timed(run):
    for _ in range(5):
        run()
    med = []
    for _ in range(args.repeat):
        t = []
        for _ in range(args.iterations):
            t0 = time.perf_counter()
            run()
            t.append((time.perf_counter() - t0) * 1e3)
        med.append(np.median(t))
    return float(np.median(med))


def peers(onnx_path, feeds, threads):
    out = {}
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads, so.log_severity_level = threads, 1, 3
    s = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    out["onnxruntime"] = timed(lambda: s.run(None, feeds))
    try:
        import openvino as ov
        core = ov.Core()
        m = core.read_model(onnx_path)
        m.reshape({k: list(v.shape) for k, v in feeds.items()})
        c = core.compile_model(m, "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
                                          "INFERENCE_PRECISION_HINT": "f32"})
        req = c.create_infer_request()
        out["OpenVINO"] = timed(lambda: req.infer(feeds))
    except Exception as e:  # noqa: BLE001 - a peer that does not run is reported, not fatal
        print(f"   (OpenVINO skipped: {e})", file=sys.stderr)
    try:
        import MNN
        mnn = onnx_path[:-5] + ".mnn"
        conv = os.path.join(os.path.dirname(sys.executable), "mnnconvert")
        subprocess.run([conv, "-f", "ONNX", "--modelFile", onnx_path, "--MNNModel", mnn, "--bizCode", "gkrt"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rt = MNN.nn.create_runtime_manager(({"backend": "CPU", "numThread": threads, "precision": "high"},))
        mod = MNN.nn.load_module_from_file(mnn, list(feeds), [], runtime_manager=rt)
        vars_ = []
        for k, v in feeds.items():
            p = MNN.expr.placeholder(list(v.shape), MNN.expr.NCHW, MNN.expr.int if v.dtype == np.int64 else MNN.expr.float)
            p.write(v.astype(np.int32) if v.dtype == np.int64 else v)
            vars_.append(p)

        def run():
            o = mod.forward(vars_)
            (o[0] if isinstance(o, list) else o).read()
        out["MNN"] = timed(run)
    except Exception as e:  # noqa: BLE001
        print(f"   (MNN skipped: {e})", file=sys.stderr)
    return out


def main():
    for name in ("transformer_block", "minilm"):
        onnx_path = os.path.join(ZOO, name + ".onnx")
        gkm = os.path.join(ZOO, name + ".pattern.gkm")
        subprocess.run([GKRT, "convert", onnx_path, "-o", gkm], check=True, stdout=subprocess.DEVNULL)
        feeds = feeds_for(name)
        for threads in [int(t) for t in args.threads.split(",")]:
            on, k_on = gkrt_p50(gkm, threads, "")
            off, k_off = gkrt_p50(gkm, threads, "--disable_pass=" + ALL_OFF)
            p = peers(onnx_path, feeds, threads)
            best = min(p.values())
            print(f"{name:18s} {threads}t  patterns on {on:7.3f} ms ({k_on} kernels)  off {off:7.3f} ms ({k_off} kernels)"
                  f"  speed-up {off / on:4.2f}x  " + "  ".join(f"{k} {v:7.3f}" for k, v in p.items()) +
                  f"  gkrt/best peer {on / best:4.2f}")
            if args.per_pass:
                for pp in PATTERN_PASSES:
                    t, k = gkrt_p50(gkm, threads, "--disable_pass=" + pp)
                    print(f"    without {pp:28s} {t:7.3f} ms ({k} kernels): the pass gives {t / on:4.2f}x")


main()
