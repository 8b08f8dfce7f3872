#!/usr/bin/env python3
"""The "light" models shipped in the onnx package (onnx/backend/test/data/light:
AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19,
ZFNet-512) with their stripped weights filled in: each ConstantOfShape that stands in
for a weight becomes a random initializer (He-scaled; BatchNorm scales small and
variances positive, so deep residual nets do not saturate their softmax). Writes OUT/<model>.onnx, an input and onnxruntime's outputs, like
make_models.py.

    python tests/models/make_light_models.py OUT [model ...]"""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from zoo_common import save_case

OUT = sys.argv[1]
wanted = set(sys.argv[2:])
os.makedirs(OUT, exist_ok=True)
light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
rng = np.random.default_rng(11)

for path in sorted(glob.glob(os.path.join(light, "light_*.onnx"))):
    name = os.path.basename(path)[len("light_"):-len(".onnx")]
    if wanted and name not in wanted:
        continue
    m = onnx.load(path)
    g = m.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    users = {}
    for node in g.node:
        for k, i in enumerate(node.input):
            users.setdefault(i, []).append((node.op_type, k))
    kept, new_inits = [], []
    for node in g.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shape = [int(d) for d in inits[node.input[0]]]
            uses = users.get(node.output[0], [])
            if any(op == "BatchNormalization" and k == 1 for op, k in uses):  # small scales keep residual sums bounded
                w = rng.uniform(0.2, 0.4, shape)
            elif any(op == "BatchNormalization" and k == 4 for op, k in uses):  # variances positive
                w = rng.uniform(0.5, 1.5, shape)
            else:
                fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
                w = rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1)) * (0.1 if len(shape) == 1 else 1.0)
            new_inits.append(numpy_helper.from_array(w.astype(np.float32), node.output[0]))
        else:
            kept.append(node)
    del g.node[:]
    g.node.extend(kept)
    g.initializer.extend(new_inits)
    out_path = os.path.join(OUT, name + ".onnx")
    onnx.save(m, out_path)
    init_names = {t.name for t in g.initializer}
    feeds = {}
    for i in g.input:
        if i.name in init_names:
            continue
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    save_case(OUT, name, out_path, feeds)
    print("wrote", name)
