#!/usr/bin/env python3
"""Builds the zoo's generated models with onnx.helper, with random weights (fixed
seed), plus an input and onnxruntime's outputs for it:

    OUT/<model>.onnx, OUT/<model>_input_<name>.npy, OUT/<model>_expected_<k>.npy

Models: `mlp` (784-256-128-10, GELU, softmax) and `transformer_block` (one encoder
block: seq 128, d_model 256, 4 heads, FFN 1024, post-LayerNorm)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from zoo_common import save_case

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(7)


def weight(name, shape, scale=None):
    scale = scale if scale is not None else 1.0 / np.sqrt(shape[0])
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def mlp():
    inits = [weight("w1", [784, 256]), weight("b1", [256], 0.1), weight("w2", [256, 128]), weight("b2", [128], 0.1),
             weight("w3", [128, 10]), weight("b3", [10], 0.1)]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"]), helper.make_node("Add", ["h1", "b1"], ["a1"]),
        helper.make_node("Gelu", ["a1"], ["g1"]),
        helper.make_node("Gemm", ["g1", "w2", "b2"], ["h2"]), helper.make_node("Relu", ["h2"], ["r2"]),
        helper.make_node("MatMul", ["r2", "w3"], ["h3"]), helper.make_node("Add", ["h3", "b3"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 784])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [8, 10])], inits)
    return helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 20)]), {"x": rng.standard_normal((8, 784))}


def transformer_block(seq=128, d=256, heads=4, ffn=1024):
    hd = d // heads
    inits = [weight(n, [d, d]) for n in ("wq", "wk", "wv", "wo")]
    inits += [weight(n, [d], 0.05) for n in ("bq", "bk", "bv", "bo")]
    inits += [weight("w1", [d, ffn]), weight("b1", [ffn], 0.05), weight("w2", [ffn, d]), weight("b2", [d], 0.05)]
    inits += [numpy_helper.from_array(np.ones(d, np.float32) + 0.1 * rng.standard_normal(d).astype(np.float32), n)
              for n in ("g1", "g2")]
    inits += [weight(n, [d], 0.05) for n in ("be1", "be2")]
    inits += [const("heads_shape", [1, seq, heads, hd]), const("merge_shape", [1, seq, d]),
              numpy_helper.from_array(np.array(1.0 / np.sqrt(hd), np.float32), "scale")]
    n = []

    def proj(name, w, b):
        n.append(helper.make_node("MatMul", ["x", w], [name + "_m"]))
        n.append(helper.make_node("Add", [name + "_m", b], [name + "_a"]))
        n.append(helper.make_node("Reshape", [name + "_a", "heads_shape"], [name + "_r"]))
    proj("q", "wq", "bq")
    proj("k", "wk", "bk")
    proj("v", "wv", "bv")
    n.append(helper.make_node("Transpose", ["q_r"], ["q_t"], perm=[0, 2, 1, 3]))
    n.append(helper.make_node("Transpose", ["k_r"], ["k_t"], perm=[0, 2, 3, 1]))
    n.append(helper.make_node("Transpose", ["v_r"], ["v_t"], perm=[0, 2, 1, 3]))
    n.append(helper.make_node("MatMul", ["q_t", "k_t"], ["scores"]))
    n.append(helper.make_node("Mul", ["scores", "scale"], ["scaled"]))
    n.append(helper.make_node("Softmax", ["scaled"], ["attn"], axis=-1))
    n.append(helper.make_node("MatMul", ["attn", "v_t"], ["ctx"]))
    n.append(helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]))
    n.append(helper.make_node("Reshape", ["ctx_t", "merge_shape"], ["ctx_m"]))
    n.append(helper.make_node("MatMul", ["ctx_m", "wo"], ["o_m"]))
    n.append(helper.make_node("Add", ["o_m", "bo"], ["o"]))
    n.append(helper.make_node("Add", ["x", "o"], ["res1"]))
    n.append(helper.make_node("LayerNormalization", ["res1", "g1", "be1"], ["ln1"], axis=-1, epsilon=1e-5))
    n.append(helper.make_node("MatMul", ["ln1", "w1"], ["f1"]))
    n.append(helper.make_node("Add", ["f1", "b1"], ["f1b"]))
    n.append(helper.make_node("Gelu", ["f1b"], ["f1g"]))
    n.append(helper.make_node("MatMul", ["f1g", "w2"], ["f2"]))
    n.append(helper.make_node("Add", ["f2", "b2"], ["f2b"]))
    n.append(helper.make_node("Add", ["ln1", "f2b"], ["res2"]))
    n.append(helper.make_node("LayerNormalization", ["res2", "g2", "be2"], ["y"], axis=-1, epsilon=1e-5))
    g = helper.make_graph(n, "transformer_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, d])], inits)
    return helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 20)]), {"x": rng.standard_normal((1, seq, d))}


for name, make in (("mlp", mlp), ("transformer_block", transformer_block)):
    model, feeds = make()
    onnx.checker.check_model(model)
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(model, path)
    save_case(OUT, name, path, {k: v.astype(np.float32) for k, v in feeds.items()})
print("wrote mlp, transformer_block to", OUT)
