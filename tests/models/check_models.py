#!/usr/bin/env python3
"""Converts each zoo model with `gkrt convert`, runs it with `gkrt run` on every
backend with fusion on and off, and compares with onnxruntime's outputs. Prints one
line per run with the max abs and max rel error; exits 1 past the tolerance.

    python tests/models/check_models.py GKRT_BINARY MODEL_DIR [--diagonal]
        [--models mlp,transformer_block] [--runner "qemu-aarch64 -L /usr/aarch64-linux-gnu"]
        [--backends reference,cpu,opencl] [--fusion off,on]

--diagonal runs (reference, fusion off) and (cpu, fusion on) only: both backends and
both fusion states at half the time, for the large models. --runner runs a cross-built
GKRT_BINARY under an emulator on the .gkm files the host build converted (a cross
build has no ONNX import), so a board's outputs are checked against onnxruntime's."""
import argparse
import glob
import os
import subprocess
import sys

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("gkrt")
ap.add_argument("model_dir")
ap.add_argument("--diagonal", action="store_true")
ap.add_argument("--models", default="")
ap.add_argument("--runner", default="")
ap.add_argument("--backends", default="reference,cpu", help="comma-separated backends to run")
ap.add_argument("--fusion", default="off,on", help="off, on or off,on")
ap.add_argument("--gkm-suffix", default="", help="convert to NAME<suffix>.gkm (a run beside another on the same dir)")
args = ap.parse_args()
gkrt, model_dir, diagonal = args.gkrt, args.model_dir, args.diagonal
runner = args.runner.split(";") if ";" in args.runner else args.runner.split()
wanted = set(filter(None, args.models.split(",")))
RTOL, ATOL = 1e-3, 1e-4
BACKENDS = args.backends.split(",")
ok = True
runs = 0
for onnx_path in sorted(glob.glob(os.path.join(model_dir, "*.onnx"))):
    name = os.path.splitext(os.path.basename(onnx_path))[0]
    if wanted and name not in wanted:
        continue
    gkm = os.path.join(model_dir, name + args.gkm_suffix + ".gkm")
    frozen = []  # <name>_freeze_<input>.npy: fixed at conversion (gkrt convert --freeze)
    for path in sorted(glob.glob(os.path.join(model_dir, f"{name}_freeze_*.npy"))):
        frozen += ["--freeze", path[len(os.path.join(model_dir, name + "_freeze_")):-4] + "=" + path]
    if not runner:
        subprocess.run([gkrt, "convert", onnx_path, "-o", gkm, *frozen], check=True, stdout=subprocess.DEVNULL)
    elif not os.path.exists(gkm):
        sys.exit(f"{gkm} is missing: the host build converts the zoo (ctest --preset host) before a cross build checks it")
    inputs = []
    for path in sorted(glob.glob(os.path.join(model_dir, f"{name}_input_*.npy"))):
        inputs += ["--input", path[len(os.path.join(model_dir, name + "_input_")):-4].replace("%", "/") + "=" + path]
    expected = [np.load(p) for p in sorted(glob.glob(os.path.join(model_dir, f"{name}_expected_*.npy")))]
    for k, e in enumerate(expected):  # a saturated reference (one-hot softmax) would prove nothing
        if e.size >= 10 and len(np.unique(e)) < 10:
            print(f"{name}: reference output {k} is degenerate ({len(np.unique(e))} distinct values); fix the weights")
            ok = False
    levels = [{"off": "--opt_level=0", "on": "--opt_level=2"}[f] for f in args.fusion.split(",")]
    combos = [(b, f) for b in BACKENDS for f in levels]
    if diagonal:
        combos = [("reference", "--opt_level=0"), ("cpu", "--opt_level=2")]
    for backend, fusion in combos:
        if True:
            out_dir = os.path.join(model_dir, f"out_{name}_{backend}_{fusion[-1]}" + ("_target" if runner else ""))
            subprocess.run([*runner, gkrt, "run", gkm, *inputs, "--backend", backend, "--flags", fusion, "--output-dir", out_dir],
                           check=True, stdout=subprocess.DEVNULL)
            outs = sorted(glob.glob(os.path.join(out_dir, "**", "*.npy"), recursive=True))
            for want, got_path in zip(expected, outs):
                got = np.load(got_path)
                abs_err = float(np.max(np.abs(got.astype(np.float64) - want)))
                rel_err = float(np.max(np.abs(got.astype(np.float64) - want) / (np.abs(want) + 1e-6)))
                good = got.shape == want.shape and np.allclose(got, want, rtol=RTOL, atol=ATOL)
                ok = ok and good
                runs += 1
                host_note = ""
                host_path = got_path.replace(out_dir, out_dir[:-len("_target")]) if runner else ""
                if host_path and os.path.exists(host_path):  # the board against the host, same model and flags
                    host = np.load(host_path)
                    same = host.shape == got.shape and np.allclose(got, host, rtol=1e-4, atol=1e-5)
                    ok = ok and same
                    host_note = f"  vs host max abs {float(np.max(np.abs(got.astype(np.float64) - host))):.2e}" + \
                        ("" if same else " MISMATCH")
                print(f"{name:18s} {backend:9s} fusion {'on ' if fusion.endswith('2') else 'off'} "
                      f"max abs err {abs_err:.2e}  max rel err {rel_err:.2e}  {'ok' if good else 'MISMATCH'}{host_note}")
print(f"zoo: {runs if ok else 0} runs within rtol {RTOL} atol {ATOL}")
sys.exit(0 if ok else 1)
