#!/usr/bin/env python3
"""gkrt's benchmark suite: everything measured on this machine in one run, and
reported as ratios against references measured in the same run.

    .venv/bin/python bench/run_benchmarks.py [--build build] [--threads 1,2] [--quick]

1. Fused elementwise chains (the seeds' MyNet x*2+1 and MyOp (x'^3 - y) * x'^3 with
   x' = 2x, on 16M floats) on the cpu backend against a STREAM-style triad
   (bench/triad.cc): achieved GB/s / triad GB/s, at each thread count.
2. Fused vs unfused (the cpu backend, fusion on and off): MyNet, MyOp, a LayerNorm
   block, a softmax, a GeLU MLP; and the LayerNorm block and softmax expanded and
   stitched into one reduce cluster (opt_level 3) against the hand-written kernels.
3. End to end against onnxruntime's CPU provider (ORT_ENABLE_ALL, the same thread
   count, the same ONNX graph): the zoo MLP, the transformer encoder block (seq 128),
   and a ResNet-style conv block. Ratio = gkrt p50 / onnxruntime p50 (<= 1: gkrt is
   at least as fast).
4. cpu against opencl (PoCL on this machine's CPU unless another OpenCL device is
   found) on the seeds' MyOp and the transformer block: both rows of one `gkrt bench
   --backend cpu,opencl` table, and the opencl session compile cold (empty program
   cache) vs warm (second start). PoCL's own kernel cache is switched off
   (POCL_KERNEL_CACHE=0) so that "cold" compiles for real.
5. Recurrent: a 2-layer bidirectional LSTM (seq 100, batch 1, input 128, hidden 128,
   layers joined as PyTorch exports them) against onnxruntime, gkrt / onnxruntime p50.
6. MindSpore 2.10 (optional; skipped with the reason when it is not installed): the
   seeds' MyOp body on 16M floats and the transformer block in MindSpore on CPU with
   graph kernel fusion on and off (bench/mindspore_bench.py, one process each), beside
   gkrt fused; ratio = gkrt p50 / MindSpore graph-kernel-on p50.
7. Peers (--sections peers, not in the default set: minutes): bench/run_peers.py — the
   zoo CNNs, the transformer block, MiniLM and three real vision models in gkrt,
   onnxruntime, OpenVINO and MNN, gkrt / best peer per model, written to
   build/bench/peers.md.
Session compile time (fusion + kernel preparation) is reported for every model.
--sections picks some of them (chains, fusion, reduce, e2e, recurrent, opencl, mindspore, peers)."""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--threads", default="1,2")
ap.add_argument("--quick", action="store_true", help="fewer iterations")
ap.add_argument("--sections", default="chains,fusion,reduce,e2e,recurrent,opencl,mindspore",
                help="comma-separated sections to run")
args = ap.parse_args()
GKRT = os.path.join(args.build, "tools", "gkrt")
TRIAD = os.path.join(args.build, "tools", "gkrt_triad")
OUT = os.path.join(args.build, "bench")
os.makedirs(OUT, exist_ok=True)
ITER = 10 if args.quick else 30
rng = np.random.default_rng(3)
N16M = 16 << 20


def model(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs], list(inits))
    m = helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 20)])
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(m, path)
    return path


def scalar(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


def w(name, shape, scale=0.05):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def build_models():
    m = {}
    m["mynet_16m"] = model("mynet_16m", [helper.make_node("Mul", ["x", "two"], ["a"]),
                                         helper.make_node("Add", ["a", "one"], ["y"])],
                           [("x", [N16M])], [("y", [N16M])], [scalar("two", 2), scalar("one", 1)])
    m["myop_16m"] = model("myop_16m", [helper.make_node("Mul", ["x", "two"], ["a"]),
                                       helper.make_node("Pow", ["a", "three"], ["c"]),
                                       helper.make_node("Sub", ["c", "y"], ["d"]),
                                       helper.make_node("Mul", ["d", "c"], ["r"])],
                          [("x", [N16M]), ("y", [N16M])], [("r", [N16M])], [scalar("two", 2), scalar("three", 3)])
    m["layernorm_block"] = model("layernorm_block", [
        helper.make_node("Add", ["x", "res"], ["s"]),
        helper.make_node("LayerNormalization", ["s", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
        [("x", [512, 768]), ("res", [512, 768])], [("y", [512, 768])], [w("g", [768]), w("b", [768])])
    m["softmax"] = model("softmax", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                         [("x", [4096, 512])], [("y", [4096, 512])])
    m["gelu_mlp"] = model("gelu_mlp", [
        helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Gelu", ["hb"], ["g"]), helper.make_node("MatMul", ["g", "w2"], ["o"]),
        helper.make_node("Add", ["o", "b2"], ["y"])],
        [("x", [128, 512])], [("y", [128, 512])], [w("w1", [512, 2048]), w("b1", [2048]), w("w2", [2048, 512]),
                                                    w("b2", [512])])
    m["conv_block"] = model("conv_block", [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), helper.make_node("Add", ["c2", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["y"])],
        [("x", [1, 64, 56, 56])], [("y", [1, 64, 56, 56])],
        [w("w1", [64, 64, 3, 3]), w("b1", [64]), w("w2", [64, 64, 3, 3]), w("b2", [64])])
    m["bilstm_2layer"] = bilstm_model("bilstm_2layer", seq=100, batch=1, input_size=128, hidden=128, layers=2)
    zoo = os.path.join(args.build, "zoo")
    subprocess.run([sys.executable, "tests/models/make_models.py", zoo], check=True, stdout=subprocess.DEVNULL)
    m["mlp"] = os.path.join(zoo, "mlp.onnx")
    m["transformer_block"] = os.path.join(zoo, "transformer_block.onnx")
    return m


def bilstm_model(name, seq, batch, input_size, hidden, layers):
    nodes, inits, x, size = [], [numpy_helper.from_array(np.array([seq, batch, 2 * hidden], np.int64), "merge")], "x", input_size
    for layer in range(layers):
        p = f"l{layer}_"
        inits += [w(p + "W", [2, 4 * hidden, size], 0.08), w(p + "R", [2, 4 * hidden, hidden], 0.08),
                  w(p + "B", [2, 8 * hidden], 0.05)]
        nodes += [helper.make_node("LSTM", [x, p + "W", p + "R", p + "B"], [p + "y"], hidden_size=hidden,
                                   direction="bidirectional"),
                  helper.make_node("Transpose", [p + "y"], [p + "yt"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", [p + "yt", "merge"], [p + "out"])]
        x, size = p + "out", 2 * hidden
    nodes[-1].output[0] = "y"
    return model(name, nodes, [("x", [seq, batch, input_size])], [("y", [seq, batch, 2 * hidden])], inits)


def gkrt_bench(onnx_path, threads, fusion, backend="cpu", env=None, show=False):
    gkm = onnx_path[:-5] + ".gkm"
    subprocess.run([GKRT, "convert", onnx_path, "-o", gkm], check=True, stdout=subprocess.DEVNULL)
    js = gkm + ".json"
    subprocess.run([GKRT, "bench", gkm, "--backend", backend, "--threads", str(threads), "--fusion", fusion,
                    "--iterations", str(ITER), "--warmup", "3", "--json", js], check=True,
                   stdout=None if show else subprocess.DEVNULL, env=env)
    rows = json.load(open(js))
    if "," in backend:
        return {(r["backend"], r["fusion"]): r for r in rows}
    return {r["fusion"]: r for r in rows}


def ort_p50(onnx_path, threads):
    return ort_stats(onnx_path, threads)[0]


def ort_stats(onnx_path, threads):
    """onnxruntime's p50 and min ms."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
             for i in s.get_inputs()}
    for _ in range(3):
        s.run(None, feeds)
    times = []
    for _ in range(ITER):
        t0 = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times)), float(np.min(times))


def main():
    models = build_models()
    sections = set(args.sections.split(","))
    for threads in [int(t) for t in args.threads.split(",")]:
        triad = float(subprocess.run([TRIAD, str(N16M), str(threads)], check=True, capture_output=True,
                                     text=True).stdout)
        print(f"\n== {threads} thread(s); STREAM-style triad {triad:.1f} GB/s")
        if "chains" in sections:
            print("-- fused elementwise chains vs the triad (16M floats)")
            for name in ("mynet_16m", "myop_16m"):
                r = gkrt_bench(models[name], threads, "on")["on"]
                gbps = r["fused_bytes_per_run"] / (r["min_ms"] / 1e3) / 1e9
                print(f"{name:18s} {r['min_ms']:8.2f} ms  {gbps:6.1f} GB/s  = {100 * gbps / triad:5.1f}% of triad "
                      f"({r['kernels']} kernel{'s' if r['kernels'] != 1 else ''})")
        if "fusion" in sections:
            print("-- fused vs unfused, cpu backend (p50 ms)")
            for name in ("mynet_16m", "myop_16m", "layernorm_block", "softmax", "gelu_mlp"):
                r = gkrt_bench(models[name], threads, "on,off")
                print(f"{name:18s} fused {r['on']['p50_ms']:8.3f}  unfused {r['off']['p50_ms']:8.3f}  "
                      f"speed-up {r['off']['p50_ms'] / r['on']['p50_ms']:5.2f}x  kernels {r['on']['kernels']} vs "
                      f"{r['off']['kernels']}")
        if "reduce" in sections:
            print("-- reduce-cluster executor: Softmax/LayerNorm expanded and stitched into one cluster "
                  "(opt_level 3) vs the hand-written kernel (p50 ms)")
            stitched = dict(os.environ, MS_DEV_GRAPH_KERNEL_FLAGS="--opt_level=3 --enable_expand_ops=Softmax,LayerNorm")
            for name in ("layernorm_block", "softmax"):
                st = gkrt_bench(models[name], threads, "on", env=stitched)["on"]
                hk = gkrt_bench(models[name], threads, "on")["on"]
                print(f"{name:18s} reduce cluster {st['p50_ms']:8.3f} ({st['kernels']} kernel{'s' if st['kernels'] != 1 else ''})"
                      f"  hand-written {hk['p50_ms']:8.3f} ({hk['kernels']} kernels)  ratio {st['p50_ms'] / hk['p50_ms']:5.2f}")
        e2e = [n for n, sec in (("mlp", "e2e"), ("transformer_block", "e2e"), ("conv_block", "e2e"),
                                ("bilstm_2layer", "recurrent")) if sec in sections]
        if e2e:
            print("-- end to end vs onnxruntime CPU (p50 ms; ratio = gkrt / onnxruntime)")
        for name in e2e:
            r = gkrt_bench(models[name], threads, "on")["on"]
            o, o_min = ort_stats(models[name], threads)
            # min too for the recurrent model: a step-synchronous loop shows a loaded machine most
            extra = f"  min {r['min_ms']:.3f} vs {o_min:.3f} ratio {r['min_ms'] / o_min:5.2f}" if name == "bilstm_2layer" else ""
            print(f"{name:18s} gkrt {r['p50_ms']:8.3f}  onnxruntime {o:8.3f}  ratio {r['p50_ms'] / o:5.2f}  "
                  f"compile {r['compile_ms']:.1f} ms{extra}")
        if "mindspore" in sections:
            mindspore_bench(models, threads)
    if "opencl" in sections:
        opencl_bench(models, int(args.threads.split(",")[-1]))
    if "peers" in sections:
        print("\n== gkrt vs onnxruntime, OpenVINO and MNN on the same ONNX files (bench/run_peers.py)", flush=True)
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_peers.py"),
                        "--build", args.build, "--threads", args.threads,
                        "--markdown", os.path.join(OUT, "peers.md")], check=True)


def mindspore_bench(models, threads):
    try:
        import mindspore  # noqa: F401
    except ImportError as e:
        print(f"-- MindSpore: not run ({e}; ./setup.sh installs it into .venv)")
        return
    print("-- MindSpore 2.10 CPU, graph kernel fusion on/off, beside gkrt fused (p50 ms; ratio = gkrt / MindSpore on; "
          "MindSpore's time includes copying the output out)")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mindspore_bench.py")
    for name in ("myop_16m", "transformer_block"):
        ms = {}
        for fusion in ("on", "off"):
            r = subprocess.run([sys.executable, script, name, fusion, str(threads), str(ITER)], capture_output=True,
                               text=True, cwd=OUT)  # AKG writes its kernel files into the working directory
            if r.returncode != 0:
                print(f"{name:18s} MindSpore graph kernel {fusion}: failed ({r.stderr.strip().splitlines()[-1][:200]})")
                break
            ms[fusion] = json.loads(r.stdout.strip().splitlines()[-1])
        if len(ms) < 2:
            continue
        g = gkrt_bench(models[name], threads, "on")["on"]
        print(f"{name:18s} gkrt {g['p50_ms']:8.3f}  MindSpore GK on {ms['on']['p50_ms']:8.3f}  "
              f"off {ms['off']['p50_ms']:8.3f}  ratio {g['p50_ms'] / ms['on']['p50_ms']:5.2f}  "
              f"MindSpore compile on {ms['on']['compile_ms']:.0f} ms, off {ms['off']['compile_ms']:.0f} ms")


def opencl_bench(models, threads):
    probe = subprocess.run([GKRT, "bench", os.path.join(args.build, "examples", "mynet.gkm"), "--backend", "opencl",
                            "--iterations", "1", "--warmup", "0"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"\n== opencl: not run ({probe.stderr.strip()[:200]})")
        return
    env = dict(os.environ, POCL_KERNEL_CACHE="0")
    print(f"\n== cpu vs opencl, {threads} cpu thread(s); opencl compile cold (empty cache) vs warm (second start)")
    for name in ("myop_16m", "transformer_block"):
        r = gkrt_bench(models[name], threads, "on", backend="cpu,opencl", env=env)
        c, o = r[("cpu", "on")], r[("opencl", "on")]
        print(f"{name:18s} cpu p50 {c['p50_ms']:8.3f} ms  opencl p50 {o['p50_ms']:8.3f} ms ({o['kernels']} kernels)  "
              f"opencl compile cold {o['compile_ms']:7.1f} ms  warm {o['warm_compile_ms']:6.1f} ms  "
              f"= {o['compile_ms'] / o['warm_compile_ms']:5.1f}x")


main()
