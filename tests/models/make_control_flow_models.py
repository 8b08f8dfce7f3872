#!/usr/bin/env python3
"""Small control-flow models built with onnx.helper, written with their inputs and
onnxruntime's outputs in the zoo layout (zoo_common.save_case):

  cf_if_sample_rate   an If on a `sample_rate_is_16k` flag the user freezes at conversion
                      (<name>_freeze_<input>.npy: check_models.py passes it to
                      `gkrt convert --freeze`), so gkrt inlines the branch taken;
  cf_if_data          an If on a condition computed from the data (kept as an If op, both
                      branches compiled); the branches read outer values (captures);
  cf_loop_accumulate  a Loop with a constant trip count accumulating a state (h = tanh(h W
                      + x_i)), reading the outer W and x, with a scan output of every step.

    python tests/models/make_control_flow_models.py OUT"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from zoo_common import save_case

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(22)
F = TensorProto.FLOAT


def save(name, graph, feeds, frozen=()):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(model, path)
    save_case(OUT, name, path, feeds)
    for k in frozen:  # given at conversion, not at run
        os.replace(os.path.join(OUT, f"{name}_input_{k}.npy"), os.path.join(OUT, f"{name}_freeze_{k}.npy"))


def const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name + "_value"))


# --- If on a frozen flag: 16 kHz audio is framed by 4, 8 kHz by 2 ------------------
w16 = rng.standard_normal((4, 8)).astype(np.float32)
w8 = rng.standard_normal((4, 8)).astype(np.float32)
then_g = helper.make_graph(
    [helper.make_node("MatMul", ["frames", "w16"], ["mm16"]), helper.make_node("Relu", ["mm16"], ["then_out"])],
    "then_16k", [], [helper.make_tensor_value_info("then_out", F, [6, 8])])
else_g = helper.make_graph(
    [helper.make_node("MatMul", ["frames", "w8"], ["mm8"]), helper.make_node("Sigmoid", ["mm8"], ["else_out"])],
    "else_8k", [], [helper.make_tensor_value_info("else_out", F, [6, 8])])
graph = helper.make_graph(
    [helper.make_node("Mul", ["audio", "gain"], ["frames"]),
     helper.make_node("If", ["sample_rate_is_16k"], ["features"], then_branch=then_g, else_branch=else_g)],
    "cf_if_sample_rate",
    [helper.make_tensor_value_info("audio", F, [6, 4]), helper.make_tensor_value_info("sample_rate_is_16k", TensorProto.BOOL, [])],
    [helper.make_tensor_value_info("features", F, [6, 8])],
    [numpy_helper.from_array(w16, "w16"), numpy_helper.from_array(w8, "w8"),
     numpy_helper.from_array(np.float32(0.5), "gain")])
save("cf_if_sample_rate", graph,
     {"audio": rng.standard_normal((6, 4)).astype(np.float32), "sample_rate_is_16k": np.array(True)},
     frozen=["sample_rate_is_16k"])

# --- If on the data: both branches kept --------------------------------------------
then_g = helper.make_graph([helper.make_node("Mul", ["x", "scale"], ["then_out"])], "positive", [],
                           [helper.make_tensor_value_info("then_out", F, [3, 5])])
else_g = helper.make_graph([helper.make_node("Sub", ["x", "y"], ["diff"]), helper.make_node("Abs", ["diff"], ["else_out"])],
                           "negative", [], [helper.make_tensor_value_info("else_out", F, [3, 5])])
graph = helper.make_graph(
    [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
     const("zero", np.float32(0)),
     helper.make_node("Greater", ["total", "zero"], ["positive"]),
     helper.make_node("If", ["positive"], ["picked"], then_branch=then_g, else_branch=else_g),
     helper.make_node("Add", ["picked", "y"], ["out"])],
    "cf_if_data",
    [helper.make_tensor_value_info("x", F, [3, 5]), helper.make_tensor_value_info("y", F, [3, 5])],
    [helper.make_tensor_value_info("out", F, [3, 5])],
    [numpy_helper.from_array(rng.standard_normal((3, 5)).astype(np.float32), "scale")])
x = rng.standard_normal((3, 5)).astype(np.float32)
save("cf_if_data", graph, {"x": np.abs(x) + 0.1, "y": rng.standard_normal((3, 5)).astype(np.float32)})

# --- Loop with a constant trip count: an RNN-like accumulation ---------------------
steps, hidden = 5, 8
body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Gather", ["xs", "i"], ["x_i"], axis=0),  # xs[i], as PyTorch exports it
     helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
     helper.make_node("Add", ["hw", "x_i"], ["pre"]),
     helper.make_node("Tanh", ["pre"], ["h_out"]),
     helper.make_node("ReduceMean", ["h_out"], ["step_mean"], keepdims=1)],
    "loop_body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("h_in", F, [1, hidden])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("h_out", F, [1, hidden]),
     helper.make_tensor_value_info("step_mean", F, [1, 1])])
graph = helper.make_graph(
    [const("trips", np.int64(steps)), const("go", np.array(True)),
     helper.make_node("Loop", ["trips", "go", "h0"], ["h_final", "means"], body=body)],
    "cf_loop_accumulate",
    [helper.make_tensor_value_info("h0", F, [1, hidden]), helper.make_tensor_value_info("xs", F, [steps, hidden])],
    [helper.make_tensor_value_info("h_final", F, [1, hidden]), helper.make_tensor_value_info("means", F, [steps, 1, 1])],
    [numpy_helper.from_array((rng.standard_normal((hidden, hidden)) * 0.4).astype(np.float32), "w")])
save("cf_loop_accumulate", graph,
     {"h0": rng.standard_normal((1, hidden)).astype(np.float32), "xs": rng.standard_normal((steps, hidden)).astype(np.float32)})
print(f"wrote 3 control-flow models to {OUT}")
