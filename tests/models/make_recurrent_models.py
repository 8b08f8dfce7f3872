#!/usr/bin/env python3
"""Small recurrent models built with onnx.helper (random weights from a fixed seed):
an LSTM with initial states and all three outputs, a reverse GRU
(linear_before_reset, as PyTorch exports it) with a linear head, and a 2-layer
bidirectional LSTM with per-sequence lengths wired as PyTorch exports stacked layers
(Transpose + Reshape between them), and LSTM/GRU with non-default activations,
alpha/beta and clip. Writes OUT/<model>.onnx, inputs and onnxruntime's
outputs like make_models.py; check_models.py compares gkrt with them.

    python tests/models/make_recurrent_models.py OUT"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from zoo_common import save_case

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(22)
OPSET = 14  # layout attribute


def weight(name, shape, scale=None):
    fan_in = shape[-1]
    w = rng.uniform(-1, 1, shape) * (scale if scale is not None else 1.0 / np.sqrt(fan_in))
    return numpy_helper.from_array(w.astype(np.float32), name)


def save(name, nodes, inputs, outputs, inits, feeds):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(model, path)
    save_case(OUT, name, path, feeds)


def value(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# LSTM, forward, bias and initial states; outputs (sorted by name = output order) Y, Y_h, Y_c.
T, B, I, H = 12, 2, 16, 24
save("rnn_lstm",
     [helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["out0_y", "out1_y_h", "out2_y_c"], hidden_size=H)],
     [value("x", [T, B, I]), value("h0", [1, B, H]), value("c0", [1, B, H])],
     [value("out0_y", [T, 1, B, H]), value("out1_y_h", [1, B, H]), value("out2_y_c", [1, B, H])],
     [weight("W", [1, 4 * H, I]), weight("R", [1, 4 * H, H]), weight("B", [1, 8 * H], 0.2)],
     {"x": rng.standard_normal((T, B, I)).astype(np.float32),
      "h0": rng.uniform(-0.5, 0.5, (1, B, H)).astype(np.float32),
      "c0": rng.uniform(-0.5, 0.5, (1, B, H)).astype(np.float32)})

# GRU, reverse, linear_before_reset; a MatMul head on Y. (onnxruntime has no layout 1:
# the ONNX node tests and the unit tests cover it.)
T, B, I, H, C = 10, 3, 8, 16, 5
save("rnn_gru",
     [helper.make_node("GRU", ["x", "W", "R", "B"], ["y", "y_h"], hidden_size=H, direction="reverse",
                       linear_before_reset=1),
      helper.make_node("Reshape", ["y", "shape"], ["y2"]),
      helper.make_node("MatMul", ["y2", "head"], ["out0_logits"]),
      helper.make_node("Identity", ["y_h"], ["out1_y_h"])],
     [value("x", [T, B, I])],
     [value("out0_logits", [T, B, C]), value("out1_y_h", [1, B, H])],
     [weight("W", [1, 3 * H, I]), weight("R", [1, 3 * H, H]), weight("B", [1, 6 * H], 0.2), weight("head", [H, C]),
      numpy_helper.from_array(np.array([T, B, H], np.int64), "shape")],
     {"x": rng.standard_normal((T, B, I)).astype(np.float32)})

# Two bidirectional LSTM layers with sequence lengths, then a linear head per step.
T, B, I, H, C = 16, 3, 12, 20, 6
lens = numpy_helper.from_array(np.array([16, 11, 5], np.int32), "lens")
nodes, inits = [], [lens, weight("head", [2 * H, C])]
layer_in, in_size = "x", I
for layer in range(2):
    p = f"l{layer}_"
    inits += [weight(p + "W", [2, 4 * H, in_size]), weight(p + "R", [2, 4 * H, H]), weight(p + "B", [2, 8 * H], 0.2)]
    nodes += [helper.make_node("LSTM", [layer_in, p + "W", p + "R", p + "B", "lens"], [p + "y"], hidden_size=H,
                               direction="bidirectional"),
              helper.make_node("Transpose", [p + "y"], [p + "yt"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", [p + "yt", "merge"], [p + "out"])]
    layer_in, in_size = p + "out", 2 * H
inits.append(numpy_helper.from_array(np.array([T, B, 2 * H], np.int64), "merge"))
nodes.append(helper.make_node("MatMul", [layer_in, "head"], ["out0_logits"]))
save("rnn_bilstm", nodes, [value("x", [T, B, I])], [value("out0_logits", [T, B, C])], inits,
     {"x": rng.standard_normal((T, B, I)).astype(np.float32)})
# Non-default activations with alpha/beta (onnxruntime reads them per function that takes
# one), clip, and a linear_before_reset GRU with Affine/ThresholdedRelu.
T, B, I, H = 6, 2, 4, 5
for name, op, gates, dirs, attrs in (
        ("rnn_activations_lstm", "LSTM", 4, 2,
         dict(activations=["HardSigmoid", "Elu", "Softsign", "Sigmoid", "LeakyRelu", "ScaledTanh"],
              activation_alpha=[0.3, 0.8, 0.05, 0.9], activation_beta=[0.4, 0.7], direction="bidirectional", clip=2.5)),
        ("rnn_activations_gru", "GRU", 3, 1,
         dict(activations=["Affine", "ThresholdedRelu"], activation_alpha=[0.5, 0.1], activation_beta=[0.25],
              linear_before_reset=1))):
    save(name, [helper.make_node(op, ["x", "W", "R", "B"], ["out0_y", "out1_y_h"], hidden_size=H, **attrs)],
         [value("x", [T, B, I])], [value("out0_y", [T, dirs, B, H]), value("out1_y_h", [dirs, B, H])],
         [weight("W", [dirs, gates * H, I], 0.5), weight("R", [dirs, gates * H, H], 0.5),
          weight("B", [dirs, 2 * gates * H], 0.5)],
         {"x": rng.standard_normal((T, B, I)).astype(np.float32)})
print(f"wrote rnn_lstm, rnn_gru, rnn_bilstm, rnn_activations_lstm, rnn_activations_gru to {OUT}")
