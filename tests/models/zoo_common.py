"""Shared by the zoo generators: save a model's inputs and onnxruntime's outputs in
the layout check_models.py reads (<name>_input_<input>.npy, <name>_expected_<k>.npy;
'/' in input names is written as '%')."""
import os

import numpy as np
import onnxruntime as ort


def save_case(out_dir, name, model_path, feeds):
    for k, v in feeds.items():
        np.save(os.path.join(out_dir, f"{name}_input_{k.replace('/', '%')}.npy"), v)
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    outputs = sess.run(None, feeds)
    for i, out in enumerate(outputs):
        np.save(os.path.join(out_dir, f"{name}_expected_{i}.npy"), out)
    return outputs
