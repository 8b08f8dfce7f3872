#!/usr/bin/env python3
"""Converts each zoo model with `gkrt convert`, runs it with `gkrt run` on every
backend with fusion on and off, and compares with onnxruntime's outputs. Prints one
line per run with the max abs and max rel error; exits 1 past the tolerance.

    python tests/models/check_models.py GKRT_BINARY MODEL_DIR [--diagonal]

--diagonal runs (reference, fusion off) and (cpu, fusion on) only: both backends and
both fusion states at half the time, for the large models."""
import glob
import os
import subprocess
import sys

import numpy as np

gkrt, model_dir = sys.argv[1], sys.argv[2]
diagonal = "--diagonal" in sys.argv[3:]
RTOL, ATOL = 1e-3, 1e-4
BACKENDS = ["reference", "cpu"]
ok = True
runs = 0
for onnx_path in sorted(glob.glob(os.path.join(model_dir, "*.onnx"))):
    name = os.path.splitext(os.path.basename(onnx_path))[0]
    gkm = os.path.join(model_dir, name + ".gkm")
    subprocess.run([gkrt, "convert", onnx_path, "-o", gkm], check=True, stdout=subprocess.DEVNULL)
    inputs = []
    for path in sorted(glob.glob(os.path.join(model_dir, f"{name}_input_*.npy"))):
        inputs += ["--input", path[len(os.path.join(model_dir, name + "_input_")):-4].replace("%", "/") + "=" + path]
    expected = [np.load(p) for p in sorted(glob.glob(os.path.join(model_dir, f"{name}_expected_*.npy")))]
    for k, e in enumerate(expected):  # a saturated reference (one-hot softmax) would prove nothing
        if e.size >= 10 and len(np.unique(e)) < 10:
            print(f"{name}: reference output {k} is degenerate ({len(np.unique(e))} distinct values); fix the weights")
            ok = False
    combos = [(b, f) for b in BACKENDS for f in ("--opt_level=0", "--opt_level=2")]
    if diagonal:
        combos = [("reference", "--opt_level=0"), ("cpu", "--opt_level=2")]
    for backend, fusion in combos:
        if True:
            out_dir = os.path.join(model_dir, f"out_{name}_{backend}_{fusion[-1]}")
            subprocess.run([gkrt, "run", gkm, *inputs, "--backend", backend, "--flags", fusion, "--output-dir", out_dir],
                           check=True, stdout=subprocess.DEVNULL)
            outs = sorted(glob.glob(os.path.join(out_dir, "**", "*.npy"), recursive=True))
            for want, got_path in zip(expected, outs):
                got = np.load(got_path)
                abs_err = float(np.max(np.abs(got.astype(np.float64) - want)))
                rel_err = float(np.max(np.abs(got.astype(np.float64) - want) / (np.abs(want) + 1e-6)))
                good = got.shape == want.shape and np.allclose(got, want, rtol=RTOL, atol=ATOL)
                ok = ok and good
                runs += 1
                print(f"{name:18s} {backend:9s} fusion {'on ' if fusion.endswith('2') else 'off'} "
                      f"max abs err {abs_err:.2e}  max rel err {rel_err:.2e}  {'ok' if good else 'MISMATCH'}")
print(f"zoo: {runs if ok else 0} runs within rtol {RTOL} atol {ATOL}")
sys.exit(0 if ok else 1)
