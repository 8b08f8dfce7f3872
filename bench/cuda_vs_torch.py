"""gkrt's cuda backend against PyTorch on the same GPU, in one run (issue 16).

Zoo transformer block (batch 1, seq 128, d 256, 4 heads, FFN 1024) built in PyTorch
with the model's own weights, timed as eager, eager inside a CUDA graph and
torch.compile (mode="reduce-overhead": CUDA graphs); gkrt timed by `gkrt bench
--backend cuda`. TF32 is off on both sides (float32 results). Optional rows: the
seeds' MyOp chain on 16M floats against a device-to-device copy, and ResNet-50 /
MiniLM on gkrt (torchvision's ResNet-50, random weights, for the PyTorch side).

On a machine with ONNX (this one), export the block's weights for a GPU machine
without the onnx package:
    .venv/bin/python bench/cuda_vs_torch.py --export-weights build/zoo/transformer_block_weights.npz
On the GPU machine (torch there; gkrt built with cuda; the .gkm converted here):
    python bench/cuda_vs_torch.py --gkrt build/tools/gkrt --block-gkm build/zoo/transformer_block.gkm \\
        --weights build/zoo/transformer_block_weights.npz --input build/zoo/transformer_block_input_x.npy \\
        --expected build/zoo/transformer_block_expected_0.npy [--myop-gkm M.gkm] [--resnet-gkm R.gkm] [--minilm-gkm M.gkm]
Exits 2 with a message when torch or a GPU is absent.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

BLOCK_WEIGHTS = ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo", "w1", "b1", "w2", "b2", "g1", "g2", "be1", "be2", "scale")


def export_weights(onnx_path, out):
    import onnx
    from onnx import numpy_helper
    m = onnx.load(onnx_path)
    w = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer if i.name in BLOCK_WEIGHTS}
    missing = [n for n in BLOCK_WEIGHTS if n not in w]
    if missing:
        sys.exit(f"{onnx_path} lacks initializers {missing}: not the zoo transformer block")
    np.savez(out, **w)
    print("wrote", out)


def need_torch():
    try:
        import torch
    except ImportError:
        print("cuda_vs_torch: PyTorch is not installed here; run this on the GPU machine (/opt/torch/.venv/bin/python)")
        sys.exit(2)
    if not torch.cuda.is_available():
        print("cuda_vs_torch: PyTorch sees no CUDA GPU here; nothing to measure")
        sys.exit(2)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def time_cuda(torch, fn, iterations, warmup):
    """Median milliseconds of fn() over `iterations` runs, each timed by CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def in_cuda_graph(torch, fn, example):
    """fn captured once in a CUDA graph; the returned callable copies its inputs in and replays.
    `example` is one tensor or a list of them (fn then takes them as separate arguments)."""
    many = isinstance(example, (list, tuple))
    static_in = [t.clone() for t in example] if many else [example.clone()]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(*static_in)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = fn(*static_in)

    def run(*xs):
        for dst, src in zip(static_in, xs):
            dst.copy_(src)
        graph.replay()
        return static_out
    return run


def block_fn(torch, w):
    F = torch.nn.functional
    t = {k: torch.from_numpy(np.asarray(v, np.float32)).cuda() for k, v in w.items()}
    d, heads = t["wq"].shape[0], 4
    hd = d // heads

    def block(x):  # x [1, seq, d]: the ONNX graph of tests/models/make_models.py, op for op
        seq = x.shape[1]
        def proj(wn, bn):
            return (x @ t[wn] + t[bn]).reshape(1, seq, heads, hd)
        q = proj("wq", "bq").permute(0, 2, 1, 3)
        k = proj("wk", "bk").permute(0, 2, 3, 1)
        v = proj("wv", "bv").permute(0, 2, 1, 3)
        attn = torch.softmax((q @ k) * t["scale"], dim=-1)
        ctx = (attn @ v).permute(0, 2, 1, 3).reshape(1, seq, d)
        ln1 = F.layer_norm(x + ctx @ t["wo"] + t["bo"], (d,), t["g1"], t["be1"], 1e-5)
        f = F.gelu(ln1 @ t["w1"] + t["b1"])
        return F.layer_norm(ln1 + f @ t["w2"] + t["b2"], (d,), t["g2"], t["be2"], 1e-5)
    return block


# The pattern passes the cuda backend runs with rendered kernels (backends/codegen/
# pattern_kernels.h); off by default under the gpu profile until measured here.
PATTERNS = "FlashAttentionFusionV1,FlashAttentionFusionV2,add_layer_norm_fusion"

def gkrt_bench(gkrt, model, iterations, warmup, inputs=(), flags=None, env_extra=None):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        cmd = [gkrt, "bench", model, "--backend", "cuda", "--fusion", "on", "--iterations", str(iterations),
               "--warmup", str(warmup), "--json", out]
        for name_file in inputs:
            cmd += ["--input", name_file]
        env = dict(os.environ, **(env_extra or {}))
        if flags:
            env["MS_DEV_GRAPH_KERNEL_FLAGS"] = flags
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            return None, (r.stdout + r.stderr).strip()
        row = json.load(open(out))[0]
        return row, ""


def print_profile(gkrt, model, inputs, top=12):
    """The `top` most expensive kernels of `gkrt bench --profile` on cuda, and the sums by kind."""
    cmd = [gkrt, "bench", model, "--backend", "cuda", "--profile", "--iterations", "20", "--warmup", "3"]
    for name_file in inputs:
        cmd += ["--input", name_file]
    r = subprocess.run(cmd, capture_output=True, text=True)
    rows = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[4] in ("cuda", "cpu") and parts[1].endswith("%"):
            try:
                rows.append((float(parts[0]), line.strip()))
            except ValueError:
                pass
    if not rows:
        print("  profile: none (" + (r.stdout + r.stderr).strip()[-300:] + ")")
        return
    total = sum(t for t, _ in rows)
    conv = sum(t for t, l in rows if "Conv2D" in l)
    print(f"  profile ({len(rows)} kernels, {total:.3f} ms summed, convolutions with their epilogues {conv:.3f} ms):")
    for _, line in sorted(rows, reverse=True)[:top]:
        print("    " + line[:200])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export-weights", metavar="NPZ", help="write the block's weights (needs onnx) and stop")
    ap.add_argument("--onnx", default="build/zoo/transformer_block.onnx")
    ap.add_argument("--gkrt", default="build/tools/gkrt")
    ap.add_argument("--block-gkm", default="build/zoo/transformer_block.gkm")
    ap.add_argument("--weights", default="build/zoo/transformer_block_weights.npz")
    ap.add_argument("--input", default="build/zoo/transformer_block_input_x.npy")
    ap.add_argument("--expected", default="build/zoo/transformer_block_expected_0.npy")
    ap.add_argument("--myop-gkm", help="the seeds' MyOp on 16M floats (bench/run_benchmarks.py writes myop_16m)")
    ap.add_argument("--resnet-gkm")
    ap.add_argument("--mobilenet-gkm")
    ap.add_argument("--minilm-gkm")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    a = ap.parse_args()
    if a.export_weights:
        export_weights(a.onnx, a.export_weights)
        return
    torch = need_torch()
    print(f"GPU: {torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}; TF32 off; median of {a.iterations} runs\n")

    # Transformer block: the same weights on both sides, PyTorch checked against the ONNX reference output.
    w = dict(np.load(a.weights))
    block = block_fn(torch, w)
    x = torch.from_numpy(np.load(a.input).astype(np.float32)).cuda()
    with torch.no_grad():
        y = block(x).cpu().numpy()
        if os.path.exists(a.expected):
            err = float(np.max(np.abs(y - np.load(a.expected))))
            print(f"PyTorch block vs the zoo's expected output: max |diff| {err:.2e}")
            if err > 1e-3:
                sys.exit("the PyTorch block does not compute the zoo model; fix block_fn before timing it")
        peers = {"eager": time_cuda(torch, lambda: block(x), a.iterations, a.warmup)}
        graphed = in_cuda_graph(torch, block, x)
        peers["eager + CUDA graph"] = time_cuda(torch, lambda: graphed(x), a.iterations, a.warmup)
        try:
            compiled = torch.compile(block, mode="reduce-overhead")
            peers["torch.compile (CUDA graphs)"] = time_cuda(torch, lambda: compiled(x), a.iterations, a.warmup)
        except Exception as e:  # Triton or a compiler missing: say so, keep the other rows
            print("torch.compile failed:", str(e).splitlines()[0])
    best = min(peers.values())
    print("\ntransformer block, batch 1        ms      vs best PyTorch")
    for name, ms in peers.items():
        print(f"  PyTorch {name:<28} {ms:8.4f}  {ms / best:6.2f}")
    # The default flags already run the attention and GEMM bias/residual passes on the gpu
    # column (2026-11-26); the rows after them time the passes still off by default.
    more = "matmul_elem_gelu_fusion,inference_matmul_split_fusion"
    for label, flags in (("default flags", None), ("opt_level 3", "--opt_level=3"),
                         ("+ GeLU epilogue", "--enable_pass=matmul_elem_gelu_fusion"),
                         ("+ Q/K/V as one GEMM", "--enable_pass=inference_matmul_split_fusion"),
                         ("+ add-norm", "--enable_pass=add_layer_norm_fusion"),
                         ("+ GeLU epilogue + one Q/K/V GEMM", "--enable_pass=" + more),
                         ("opt 3 + GeLU epilogue + one Q/K/V GEMM", "--opt_level=3 --enable_pass=" + more)):
        row, why = gkrt_bench(a.gkrt, a.block_gkm, a.iterations, a.warmup, [f"x={a.input}"], flags)
        if row:
            print(f"  gkrt cuda {label} ({row['kernels']} kernels) {row['p50_ms']:8.4f}  {row['p50_ms'] / best:6.2f}"
                  f"   (target <= 0.80; compile cold {row['compile_ms']:.0f} ms, warm {row['warm_compile_ms']:.0f} ms)")
        else:
            print(f"  gkrt cuda {label}: failed:", why)

    if a.myop_gkm:  # fused chain vs a device-to-device copy of the same bytes
        n = 16 << 20
        src = torch.empty(n, device="cuda")
        dst = torch.empty_like(src)
        copy_ms = time_cuda(torch, lambda: dst.copy_(src), a.iterations, a.warmup)
        copy_gbps = 2 * 4 * n / copy_ms / 1e6
        print(f"\nD2D copy of 16M floats: {copy_ms:.4f} ms, {copy_gbps:.0f} GB/s")
        fused_ms = None
        for fusion in ("on", "off"):
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "b.json")
                r = subprocess.run([a.gkrt, "bench", a.myop_gkm, "--backend", "cuda", "--fusion", fusion, "--iterations",
                                    str(a.iterations), "--warmup", str(a.warmup), "--json", out], capture_output=True, text=True)
                if r.returncode:
                    print(f"  gkrt MyOp fusion {fusion}: failed:", (r.stdout + r.stderr).strip())
                    continue
                row = json.load(open(out))[0]
                if fusion == "on":
                    fused_ms = row["p50_ms"]
                    print(f"  gkrt MyOp 16M fusion on: {fused_ms:.4f} ms, {row['kernels']} kernels, "
                          f"{row['fused_gbps']:.0f} GB/s = {row['fused_gbps'] / copy_gbps:.2f} of the copy (target >= 0.9)")
                else:
                    ratio = f" = {row['p50_ms'] / fused_ms:.2f}x the fused time (target >= 3.5)" if fused_ms else ""
                    print(f"  gkrt MyOp 16M fusion off: {row['p50_ms']:.4f} ms, {row['kernels']} kernels{ratio}")

    # Models made by tests/cuda/make_gpu_models.py: NAME.gkm beside NAME.pt (the same PyTorch
    # module, same weights) and NAME_input_*.npy.
    epilogues = "--enable_pass=matmul_elem_biasadd_fusion,matmul_elem_add_fusion"
    for name, gkm in (("ResNet-50", a.resnet_gkm), ("MobileNet-v3-small", a.mobilenet_gkm), ("MiniLM", a.minilm_gkm)):
        if not gkm:
            continue
        stem = os.path.splitext(gkm)[0].removesuffix(".cuda")
        files = sorted(f for f in os.listdir(os.path.dirname(stem) or ".")
                       if f.startswith(os.path.basename(stem) + "_input_") and f.endswith(".npy"))
        inputs = [(f[len(os.path.basename(stem) + "_input_"):-4], os.path.join(os.path.dirname(stem), f)) for f in files]
        row, why = gkrt_bench(a.gkrt, gkm, a.iterations, a.warmup, [f"{n}={p}" for n, p in inputs])
        print(f"\n{name}, batch 1: gkrt cuda " + (f"{row['p50_ms']:.4f} ms ({row['kernels']} kernels)" if row else "failed: " + why))
        if name != "MiniLM":
            # The convolution epilogues (gkrt's own Conv2D row of the gpu column) against
            # the convolutions alone with their chains as separate kernels; where the time goes.
            prow, why = gkrt_bench(a.gkrt, gkm, a.iterations, a.warmup, [f"{n}={p}" for n, p in inputs], "--disable_cluster_ops=Conv2D")
            print("  gkrt cuda without convolution epilogues (--disable_cluster_ops=Conv2D): " +
                  (f"{prow['p50_ms']:.4f} ms ({prow['kernels']} kernels)" if prow else "failed: " + why))
            # Every convolution on cuDNN (before 2026-11-28), and every one as a GEMM,
            # against the default's per-convolution timed choice.
            for mode in ("cudnn", "gemm"):
                prow, why = gkrt_bench(a.gkrt, gkm, a.iterations, a.warmup, [f"{n}={p}" for n, p in inputs],
                                       env_extra={"GKRT_CUDA_CONV": mode})
                print(f"  gkrt cuda with GKRT_CUDA_CONV={mode}: " +
                      (f"{prow['p50_ms']:.4f} ms ({prow['kernels']} kernels)" if prow else "failed: " + why))
            print_profile(a.gkrt, gkm, [f"{n}={p}" for n, p in inputs])
        if name == "MiniLM":
            for label, flags in (("the attention/add-norm passes", "--enable_pass=" + PATTERNS),
                                 ("opt 3 + epilogues + attention/add-norm", "--opt_level=3 " + epilogues + "," + PATTERNS)):
                prow, why = gkrt_bench(a.gkrt, gkm, a.iterations, a.warmup, [f"{n}={p}" for n, p in inputs], flags)
                print(f"  gkrt cuda with {label}: " +
                      (f"{prow['p50_ms']:.4f} ms ({prow['kernels']} kernels)" if prow else "failed: " + why))
        if not os.path.exists(stem + ".pt"):
            print("  PyTorch side not measured: no", stem + ".pt")
            continue
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "make_gpu_models", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cuda", "make_gpu_models.py"))
        makers = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(makers)
        net = makers.build(os.path.basename(stem))
        net.load_state_dict(torch.load(stem + ".pt"))
        net = net.cuda().eval()
        args = [torch.from_numpy(np.load(p)).cuda() for _, p in inputs]
        with torch.no_grad():
            eager = time_cuda(torch, lambda: net(*args), a.iterations, a.warmup)
            graphed = in_cuda_graph(torch, lambda *xs: net(*xs), args)
            graph_ms = time_cuda(torch, lambda: graphed(*args), a.iterations, a.warmup)
        print(f"  PyTorch eager {eager:.4f} ms; eager + CUDA graph {graph_ms:.4f} ms"
              + (f"; gkrt / (eager + CUDA graph) = {row['p50_ms'] / graph_ms:.2f}" if row else ""))

if __name__ == "__main__":
    main()
