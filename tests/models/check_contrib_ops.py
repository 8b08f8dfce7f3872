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
    """inputs: {name: array} (graph inputs); outputs: [names] (float) or {name: TensorProto type};
    inits: {name: array}."""
    types = outputs if isinstance(outputs, dict) else {n: TensorProto.FLOAT for n in outputs}
    g = helper.make_graph(
        nodes, "contrib",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in types.items()],
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


U8, I32 = TensorProto.UINT8, TensorProto.INT32
ONE_STEP = (0.0, 1.0)  # quantized outputs: within one quantization step of onnxruntime's


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def i8(*shape):
    """7-bit weights, as onnxruntime's quantizer writes them for CPUs without VNNI
    (reduce_range): its u8 x s8 kernels there saturate 16-bit pair sums of full-range
    int8 (gkrt computes them exactly)."""
    return RNG.integers(-63, 64, shape).astype(np.int8)


def sc(v):
    return np.array(v, np.float32)


def zp(v, t=np.uint8):
    return np.array(v, t)


def ort_run(m, feeds):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def quant_cases():
    """onnxruntime's quantizer's operators: (name, model, feeds, numpy outputs or None, (rtol, atol))."""
    x = u8(2, 3, 6, 6)
    q = {"xs": sc(0.05), "xz": zp(120), "ys": sc(0.004), "yz": zp(0)}
    io = ["x", "xs", "xz", "ys", "yz"]
    yield ("QLinearSigmoid", model([helper.make_node("QLinearSigmoid", io, ["y"], domain=MS)], {"x": x}, {"y": U8}, q),
           {"x": x}, None, ONE_STEP)
    q2 = dict(q, ys=sc(0.03), yz=zp(100))
    yield ("QLinearLeakyRelu alpha 0.2", model([helper.make_node("QLinearLeakyRelu", io, ["y"], domain=MS, alpha=0.2)], {"x": x},
                                               {"y": U8}, q2), {"x": x}, None, ONE_STEP)
    q3 = dict(q, ys=sc(1 / 256), yz=zp(0))
    for axis, opset in ((-1, 13), (1, 12)):
        yield (f"QLinearSoftmax axis {axis} opset {opset}",
               model([helper.make_node("QLinearSoftmax", io, ["y"], domain=MS, axis=axis, opset=opset)], {"x": x}, {"y": U8}, q3),
               {"x": x}, None, ONE_STEP)
    x2 = u8(2, 2, 6, 6)
    cat = {"ys": sc(0.06), "yz": zp(110), "as": sc(0.05), "az": zp(120), "bs": sc(0.08), "bz": zp(90)}
    yield ("QLinearConcat axis 1", model([helper.make_node("QLinearConcat", ["ys", "yz", "x", "as", "az", "x2", "bs", "bz"], ["y"],
                                                           domain=MS, axis=1)], {"x": x, "x2": x2}, {"y": U8}, cat),
           {"x": x, "x2": x2}, None, ONE_STEP)
    qp = dict(q, ys=sc(0.05), yz=zp(118))
    xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    for last in (0, 1):
        xin = xl if last else x
        yield (f"QLinearGlobalAveragePool channels_last={last}",
               model([helper.make_node("QLinearGlobalAveragePool", io, ["y"], domain=MS, channels_last=last)], {"x": xin}, {"y": U8}, qp),
               {"x": xin}, None, ONE_STEP)
        yield (f"QLinearAveragePool 3x3/2 pad 1 channels_last={last}",
               model([helper.make_node("QLinearAveragePool", io, ["y"], domain=MS, channels_last=last, kernel_shape=[3, 3], strides=[2, 2],
                                       pads=[1, 1, 1, 1], count_include_pad=0)], {"x": xin}, {"y": U8}, qp), {"x": xin}, None, ONE_STEP)
    cond = RNG.integers(0, 2, (2, 3, 6, 6)).astype(bool)
    wq = {"as": sc(0.05), "az": zp(120), "bs": sc(0.08), "bz": zp(90), "zs": sc(0.07), "zz": zp(100)}
    yield ("QLinearWhere", model([helper.make_node("QLinearWhere", ["c", "x", "as", "az", "x2", "bs", "bz", "zs", "zz"], ["y"], domain=MS)],
                                 {"c": cond, "x": x, "x2": u8(2, 3, 6, 6)}, {"y": U8}, wq),
           {"c": cond, "x": x, "x2": u8(2, 3, 6, 6)}, None, ONE_STEP)
    a, b = u8(4, 16), i8(16, 8)
    gq = {"as_": sc(0.02), "az": zp(128), "b": b, "bs": (RNG.uniform(0.005, 0.02, 8)).astype(np.float32), "bz": np.zeros(8, np.int8),
          "c": RNG.integers(-500, 500, 8).astype(np.int32)}
    yield ("QGemm per-column, C, float output",
           model([helper.make_node("QGemm", ["a", "as_", "az", "b", "bs", "bz", "c"], ["y"], domain=MS, alpha=1.0)], {"a": a}, ["y"], gq),
           {"a": a}, None, (1e-5, 1e-5))
    gq2 = dict(gq, bt=np.ascontiguousarray(b.T), ys=sc(0.05), yz=zp(128))
    yield ("QGemm transB, quantized output",
           model([helper.make_node("QGemm", ["a", "as_", "az", "bt", "bs", "bz", "c", "ys", "yz"], ["y"], domain=MS, transB=1)], {"a": a},
                 {"y": U8}, gq2), {"a": a}, None, ONE_STEP)
    mq = {"b": b, "as_": sc(0.02), "bs": gq["bs"], "az": zp(128), "bz": np.zeros(8, np.int8), "bias": f32(8)}
    yield ("MatMulIntegerToFloat", model([helper.make_node("MatMulIntegerToFloat", ["a", "b", "as_", "bs", "az", "bz", "bias"], ["y"],
                                                           domain=MS)], {"a": a}, ["y"], mq), {"a": a}, None, (1e-5, 1e-5))
    af = f32(3, 16)
    dq = {"b": b, "bs": gq["bs"], "bz": np.zeros(8, np.int8), "bias": f32(8)}
    yield ("DynamicQuantizeMatMul", model([helper.make_node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz", "bias"], ["y"], domain=MS)],
                                          {"a": af}, ["y"], dq), {"a": af}, None, (1e-4, 1e-4))
    # DynamicQuantizeLSTM: X quantized to uint8 once, h before every step, as onnxruntime
    # does (gkrt's op of that name): within float rounding of onnxruntime's gates (its
    # sigmoid/tanh approximations) and a rare one-step flip of a quantized h
    S, B, I, H = 5, 2, 6, 4
    xs = f32(S, B, I)
    w, r = i8(1, I, 4 * H), i8(1, H, 4 * H)
    lq = {"w": w, "r": r, "bias": f32(1, 8 * H, scale=0.1), "ws": RNG.uniform(0.002, 0.01, (1, 4 * H)).astype(np.float32),
          "wz": np.zeros((1, 4 * H), np.int8), "rs": RNG.uniform(0.002, 0.01, (1, 4 * H)).astype(np.float32), "rz": np.zeros((1, 4 * H), np.int8)}
    yield ("DynamicQuantizeLSTM", model([helper.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "bias", "", "", "", "", "ws", "wz", "rs", "rz"],
                                                          ["y", "yh", "yc"], domain=MS, hidden_size=H)], {"x": xs}, ["y", "yh", "yc"], lq),
           {"x": xs}, None, (0.0, 2e-3))
    # bidirectional, uint8 weights with a zero point per direction, initial states, 3 rows
    S, B, I, H = 7, 3, 10, 8
    xb = f32(S, B, I)
    u8w = lambda *shape: RNG.integers(64, 192, shape).astype(np.uint8)
    lb = {"w": u8w(2, I, 4 * H), "r": u8w(2, H, 4 * H), "bias": f32(2, 8 * H, scale=0.1), "ws": sc([0.006, 0.004]),
          "wz": zp([128, 121]), "rs": sc([0.005, 0.007]), "rz": zp([131, 127]), "h0": f32(2, B, H, scale=0.5),
          "c0": f32(2, B, H, scale=0.5)}
    yield ("DynamicQuantizeLSTM bidirectional uint8", model([helper.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "bias", "", "h0", "c0", "",
                                                                                 "ws", "wz", "rs", "rz"], ["y", "yh", "yc"], domain=MS,
                                                                                hidden_size=H, direction="bidirectional")],
                                                             {"x": xb}, ["y", "yh", "yc"], lb), {"x": xb}, None, (0.0, 2e-3))
    V, K, block = 10, 32, 16
    table = RNG.integers(0, 256, (V, K // 2)).astype(np.uint8)
    gb = {"table": table, "scales": RNG.uniform(0.01, 0.05, (V, K // block)).astype(np.float32),
          "zps": RNG.integers(0, 256, (V, K // block // 2)).astype(np.uint8)}
    idx = np.array([[1, 4, 9], [0, 0, 7]], np.int64)
    yield ("GatherBlockQuantized 4-bit block 16", model([helper.make_node("GatherBlockQuantized", ["table", "idx", "scales", "zps"], ["y"],
                                                                          domain=MS, bits=4, block_size=block, gather_axis=0, quantize_axis=1)],
                                                        {"idx": idx}, ["y"], gb), {"idx": idx}, None, (1e-6, 1e-6))


def more_cases():
    """The transformer optimizer's and converters' remaining operators."""
    ids = RNG.integers(0, 30, (2, 6)).astype(np.int32)
    seg = RNG.integers(0, 2, (2, 6)).astype(np.int32)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    emb = {"word": f32(30, 16), "pos": f32(10, 16), "segw": f32(2, 16), "g": f32(16), "b": f32(16)}
    yield ("EmbedLayerNormalization", model([helper.make_node("EmbedLayerNormalization", ["ids", "seg", "word", "pos", "segw", "g", "b", "mask"],
                                                              ["y", "mi", "sum"], domain=MS, epsilon=1e-12)], {"ids": ids, "seg": seg, "mask": mask},
                                            {"y": TensorProto.FLOAT, "mi": I32, "sum": TensorProto.FLOAT}, emb),
           {"ids": ids, "seg": seg, "mask": mask}, None, (1e-4, 1e-4))
    xc, wc, bc, zc = f32(1, 3, 8, 8), f32(4, 3, 3, 3, scale=0.3), f32(4), f32(1, 4, 8, 8)
    for act, params in (("Relu", []), ("LeakyRelu", [0.2]), ("Clip", [-0.5, 0.5]), ("Sigmoid", []), ("HardSigmoid", [0.3, 0.4])):
        kw = {"activation": act, "pads": [1, 1, 1, 1]}
        if params:
            kw["activation_params"] = params
        yield (f"FusedConv {act} + Z", model([helper.make_node("FusedConv", ["x", "w", "b", "z"], ["y"], domain=MS, **kw)], {"x": xc, "z": zc},
                                            ["y"], {"w": wc, "b": bc}), {"x": xc, "z": zc}, None, (1e-4, 1e-4))
    # Attention (the BERT form the transformer optimizer writes, and GPT-2's with a past)
    B, S, hid, nh = 2, 5, 32, 4
    xa, wa, ba = f32(B, S, hid), f32(hid, 3 * hid, scale=0.2), f32(3 * hid, scale=0.1)
    raw = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    lengths = np.array([3, 5], np.int32)
    for label, mask in (("raw mask [B, T]", raw), ("lengths [B]", lengths)):
        yield (f"Attention {label}", model([helper.make_node("Attention", ["x", "w", "b", "m"], ["y"], domain=MS, num_heads=nh)],
                                           {"x": xa, "m": mask}, ["y"], {"w": wa, "b": ba}), {"x": xa, "m": mask}, None, (1e-4, 1e-4))
    past = f32(2, B, nh, 3, hid // nh)
    x1 = f32(B, 1, hid)
    yield ("Attention unidirectional with past", model([helper.make_node("Attention", ["x", "w", "b", "", "past"], ["y", "present"], domain=MS,
                                                                         num_heads=nh, unidirectional=1)],
                                                       {"x": x1, "past": past}, ["y", "present"], {"w": wa, "b": ba}),
           {"x": x1, "past": past}, None, (1e-4, 1e-4))
    xq, wq = u8(B, S, hid), i8(hid, 3 * hid)
    qa = {"w": wq, "b": ba, "xs": sc(0.02), "ws": sc(0.01), "xz": zp(128), "wz": zp(0, np.int8)}
    yield ("QAttention raw mask", model([helper.make_node("QAttention", ["x", "w", "b", "xs", "ws", "m", "xz", "wz"], ["y"], domain=MS,
                                                          num_heads=nh)], {"x": xq, "m": raw}, ["y"], qa), {"x": xq, "m": raw}, None, (1e-3, 1e-3))
    qm, km, vm, bm = f32(B, S, hid), f32(B, S, hid), f32(B, S, hid), f32(3 * hid, scale=0.1)
    yield ("MultiHeadAttention q,k,v + bias, key_padding_mask", model(
        [helper.make_node("MultiHeadAttention", ["q", "k", "v", "b", "m"], ["y"], domain=MS, num_heads=nh)],
        {"q": qm, "k": km, "v": vm, "m": raw}, ["y"], {"b": bm}), {"q": qm, "k": km, "v": vm, "m": raw}, None, (1e-4, 1e-4))
    ab = f32(1, nh, S, S)
    yield ("MultiHeadAttention attention_bias", model(
        [helper.make_node("MultiHeadAttention", ["q", "k", "v", "", "", "ab"], ["y"], domain=MS, num_heads=nh)],
        {"q": qm, "k": km, "v": vm, "ab": ab}, ["y"]), {"q": qm, "k": km, "v": vm, "ab": ab}, None, (1e-4, 1e-4))
    ag, wg, bg = f32(4, 16), f32(16, 8), f32(8)
    for act, kw in (("Relu", {}), ("LeakyRelu", {"activation_alpha": 0.1})):
        yield (f"FusedGemm {act} transB", model([helper.make_node("FusedGemm", ["a", "w", "b"], ["y"], domain=MS, activation=act, transB=1,
                                                                  alpha=0.7, **kw)], {"a": ag}, ["y"],
                                                {"w": np.ascontiguousarray(wg.T), "b": bg}), {"a": ag}, None, (1e-4, 1e-4))
    # NhwcConv and BiasSplitGelu have no onnxruntime cpu kernel: the standard ops (run by
    # onnxruntime) and numpy are the references
    xn = np.ascontiguousarray(xc.transpose(0, 2, 3, 1))
    conv = model([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], {"x": xc}, ["y"], {"w": wc, "b": bc})
    want = ort_run(conv, {"x": xc})[0].transpose(0, 2, 3, 1)
    yield ("NhwcConv", model([helper.make_node("NhwcConv", ["x", "w", "b"], ["y"], domain=MS, pads=[1, 1, 1, 1])], {"x": xn}, ["y"],
                             {"w": wc, "b": bc}), {"x": xn}, [want], (1e-4, 1e-4))
    xb, bias = f32(2, 4, 16), f32(16)
    h = xb + bias
    left, right = h[..., :8], h[..., 8:]
    erf = np.vectorize(__import__("math").erf)
    gelu = 0.5 * right * (1 + erf(right / np.sqrt(2)))
    yield ("BiasSplitGelu", model([helper.make_node("BiasSplitGelu", ["x", "bias"], ["y"], domain=MS)], {"x": xb}, ["y"], {"bias": bias}),
           {"x": xb}, [(left * gelu).astype(np.float32)], (1e-5, 1e-5))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gkrt")
    ap.add_argument("work_dir")
    ap.add_argument("--backends", default="reference,cpu")
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    ok, runs = True, 0
    all_cases = [c + (None, (1e-4, 1e-4)) if len(c) == 3 else c + ((1e-4, 1e-4),) if len(c) == 4 else c
                 for c in list(cases()) + list(quant_cases()) + list(more_cases())]
    for k, (name, m, feeds, numpy_want, (rtol, atol)) in enumerate(all_cases):
        path = os.path.join(args.work_dir, f"contrib_{k}.onnx")
        onnx.save(m, path)
        out_names = [o.name for o in m.graph.output]
        if numpy_want is not None:
            want = numpy_want
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
                w = np.asarray(w)
                good = good and got.shape == w.shape and got.dtype == w.dtype and np.allclose(
                    got.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
                if got.shape == w.shape and w.size:
                    worst = max(worst, float(np.abs(got.astype(np.float64) - w.astype(np.float64)).max()))
            runs += 1
            ok = ok and good
            print(f"{name:48s} {backend:9s} max abs err {worst:.2e}  {'ok' if good else 'MISMATCH'}")
    print(f"contrib ops: {runs if ok else 0} runs within each case's tolerance of onnxruntime (1e-4, quantized outputs one step)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
