#!/usr/bin/env python3
"""onnxruntime's own operators (com.microsoft) that gkrt converts: one small model per
op and attribute form, run by onnxruntime (its contrib kernels are the reference) and by
`gkrt convert` + `gkrt run` on each backend; prints one line per case and exits 1 past
the tolerance or when a case does not convert.

    python tests/models/check_contrib_ops.py GKRT_BINARY WORK_DIR [--backends reference,cpu]"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from nbits import quantize_nbits

MS = "com.microsoft"
RNG = np.random.default_rng(7)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def model(nodes, inputs, outputs, inits=()):
    """inputs: {name: array} (graph inputs); outputs: [names]; inits: {name: array}."""
    g = helper.make_graph(
        nodes, "contrib",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in dict(inits).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=8)


def cases():
    """(name, model, feeds[, numpy outputs where onnxruntime has no cpu kernel])"""
    x, skip, g, b, bias = f32(2, 5, 16), f32(2, 5, 16), f32(16), f32(16), f32(16)
    for simplified in (False, True):
        op = "SkipSimplifiedLayerNormalization" if simplified else "SkipLayerNormalization"
        ins = ["x", "skip", "g"] + ([] if simplified else ["b"]) + ["bias"]
        outs = ["y", "", "", "sum"]
        inits = {"g": g, "b": b, "bias": bias}
        yield (op, model([helper.make_node(op, ins, outs, domain=MS, epsilon=1e-5)], {"x": x, "skip": skip}, ["y", "sum"], inits),
               {"x": x, "skip": skip})
    yield ("SimplifiedLayerNormalization", model([helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y"], epsilon=1e-6, axis=-1)],
                                                 {"x": x}, ["y"], {"g": g}), {"x": x})
    yield ("FastGelu+bias", model([helper.make_node("FastGelu", ["x", "bias"], ["y"], domain=MS)], {"x": x}, ["y"], {"bias": bias}), {"x": x})
    yield ("BiasGelu", model([helper.make_node("BiasGelu", ["x", "bias"], ["y"], domain=MS)], {"x": x}, ["y"], {"bias": bias}), {"x": x})
    yield ("Gelu", model([helper.make_node("Gelu", ["x"], ["y"], domain=MS)], {"x": x}, ["y"]), {"x": x})
    yield ("QuickGelu", model([helper.make_node("QuickGelu", ["x"], ["y"], domain=MS, alpha=1.5)], {"x": x}, ["y"]), {"x": x})
    # onnxruntime has BiasAdd on CUDA only: numpy's x + bias + skip is the reference
    yield ("BiasAdd", model([helper.make_node("BiasAdd", ["x", "bias", "skip"], ["y"], domain=MS)], {"x": x, "skip": skip}, ["y"],
                            {"bias": bias}), {"x": x, "skip": skip}, [x + bias + skip])
    a, w = f32(2, 6, 8), f32(2, 10, 8)
    yield ("FusedMatMul transB alpha", model([helper.make_node("FusedMatMul", ["a", "w"], ["y"], domain=MS, transB=1, alpha=0.5)],
                                             {"a": a, "w": w}, ["y"]), {"a": a, "w": w})
    at = f32(8, 6)
    yield ("FusedMatMul transA", model([helper.make_node("FusedMatMul", ["a", "w"], ["y"], domain=MS, transA=1)],
                                       {"a": at, "w": f32(8, 3)}, ["y"]), {"a": at, "w": f32(8, 3)})
    for bits, sym, K, block in ((4, False, 64, 32), (4, True, 80, 32), (8, False, 64, 16), (8, True, 100, 32)):
        wkn = f32(K, 24, scale=0.2)
        packed, scales, zp = quantize_nbits(wkn, bits, sym, block)
        inits = {"B": packed, "scales": scales.reshape(-1), "bias": f32(24)}
        if zp is not None:
            inits["zp"] = zp.reshape(-1)
        ins = ["a", "B", "scales", "zp" if zp is not None else "", "", "bias"]  # A, B, scales, zero_points, g_idx, bias
        a = f32(3, K)
        node = helper.make_node("MatMulNBits", ins, ["y"], domain=MS, K=K, N=24, bits=bits, block_size=block)
        yield (f"MatMulNBits {bits}-bit {'sym' if sym else 'zp'} K={K} block {block}", model([node], {"a": a}, ["y"], inits), {"a": a})
    # RotaryEmbedding (onnxruntime's input order: x, position_ids, cos, sin)
    S, heads, head = 5, 2, 8
    cos = np.cos(RNG.uniform(0, 3, (32, head // 2))).astype(np.float32)
    sin = np.sin(RNG.uniform(0, 3, (32, head // 2))).astype(np.float32)
    for inter in (0, 1):
        xr = f32(1, S, heads * head)
        pos = np.array([[3, 4, 5, 6, 7]], np.int64)
        yield (f"RotaryEmbedding interleaved={inter}",
               model([helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, interleaved=inter, num_heads=heads)],
                     {"x": xr, "pos": pos}, ["y"], {"cos": cos, "sin": sin}), {"x": xr, "pos": pos})
    # GroupQueryAttention: 4 query heads on 2 KV heads of 16 (onnxruntime: a multiple of
    # 16), rotary inside, a past of 3
    nh, nkv, P, head = 4, 2, 3, 16
    cos = np.cos(RNG.uniform(0, 3, (32, head // 2))).astype(np.float32)
    sin = np.sin(RNG.uniform(0, 3, (32, head // 2))).astype(np.float32)
    for packed_qkv in (False, True):
        for Sq in (4, 1):
            q, k, v = f32(1, Sq, nh * head), f32(1, Sq, nkv * head), f32(1, Sq, nkv * head)
            pk, pv = f32(1, nkv, P, head), f32(1, nkv, P, head)
            feeds = {"q": np.concatenate([q, k, v], -1) if packed_qkv else q}
            if not packed_qkv:
                feeds.update({"k": k, "v": v})
            feeds.update({"pk": pk, "pv": pv, "seqlens": np.array([P + Sq - 1], np.int32), "total": np.array(P + Sq, np.int32)})
            ins = ["q", "" if packed_qkv else "k", "" if packed_qkv else "v", "pk", "pv", "seqlens", "total", "cos", "sin"]
            node = helper.make_node("GroupQueryAttention", ins, ["y", "present_k", "present_v"], domain=MS, num_heads=nh,
                                    kv_num_heads=nkv, do_rotary=1)
            yield (f"GroupQueryAttention {'packed' if packed_qkv else 'q,k,v'} S={Sq} past {P}",
                   model([node], feeds, ["y", "present_k", "present_v"], {"cos": cos, "sin": sin}), feeds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gkrt")
    ap.add_argument("work_dir")
    ap.add_argument("--backends", default="reference,cpu")
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    ok, runs = True, 0
    for k, (name, m, feeds, *numpy_want) in enumerate(cases()):
        path = os.path.join(args.work_dir, f"contrib_{k}.onnx")
        onnx.save(m, path)
        out_names = [o.name for o in m.graph.output]
        if numpy_want:
            want = numpy_want[0]
        else:
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
        gkm = path[:-5] + ".gkm"
        r = subprocess.run([args.gkrt, "convert", path, "-o", gkm], capture_output=True, text=True)
        if r.returncode:
            print(f"{name:48s} does not convert: {r.stderr.strip()[-300:]}")
            ok = False
            continue
        inputs = []
        for n, a in feeds.items():
            f = os.path.join(args.work_dir, f"contrib_{k}_{n}.npy")
            np.save(f, a)
            inputs += ["--input", f"{n}={f}"]
        for backend in args.backends.split(","):
            out = os.path.join(args.work_dir, f"out_{k}_{backend}")
            r = subprocess.run([args.gkrt, "run", gkm, "--backend", backend, "--output-dir", out] + inputs,
                               capture_output=True, text=True)
            if r.returncode:
                print(f"{name:48s} {backend:9s} failed: {r.stderr.strip()[-300:]}")
                ok = False
                continue
            worst, good = 0.0, True
            for o, w in zip(out_names, want):
                got = np.load(os.path.join(out, o + ".npy"))
                good = good and got.shape == w.shape and np.allclose(got, w, rtol=1e-4, atol=1e-4)
                if got.shape == w.shape and w.size:
                    worst = max(worst, float(np.abs(got - w).max()))
            runs += 1
            ok = ok and good
            print(f"{name:48s} {backend:9s} max abs err {worst:.2e}  {'ok' if good else 'MISMATCH'}")
    print(f"contrib ops: {runs if ok else 0} runs within rtol 1e-4 atol 1e-4 of onnxruntime")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
