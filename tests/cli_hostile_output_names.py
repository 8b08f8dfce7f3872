#!/usr/bin/env python3
"""`gkrt run --output-dir DIR` with outputs named like paths ("../../escape", "/tmp/abs",
"sub/dir", ".hidden", "a\\b"): every file lands directly inside DIR, nothing outside.

    python tests/cli_hostile_output_names.py GKRT_BINARY WORK_DIR"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

gkrt, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
names = ["../../escape", "/tmp/gkrt_abs_escape", "sub/dir", ".hidden", "a\\b", "..", "sub/dir"[:3] + "_dir"]
nodes = [helper.make_node("Relu" if k % 2 else "Neg", ["x"], [n]) for k, n in enumerate(names)]
g = helper.make_graph(nodes, "hostile", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in names])
model = os.path.join(work, "hostile.onnx")
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model)
gkm = os.path.join(work, "hostile.gkm")
subprocess.run([gkrt, "convert", model, "-o", gkm], check=True, stdout=subprocess.DEVNULL)
np.save(os.path.join(work, "x.npy"), np.array([1.5, -2.0], np.float32))
out = os.path.join(work, "deep", "out")
before = set(os.listdir(work))
r = subprocess.run([gkrt, "run", gkm, "--input", "x=" + os.path.join(work, "x.npy"), "--output-dir", out],
                   capture_output=True, text=True)
print(r.stdout + r.stderr)
if r.returncode != 0:
    sys.exit("gkrt run failed")
written = sorted(os.listdir(out))
print("written:", written)
ok = True
for f in written:
    if not os.path.isfile(os.path.join(out, f)) or not f.endswith(".npy"):
        print("not a plain .npy directly in DIR:", f)
        ok = False
if len(written) != len(names):
    print(f"{len(written)} files for {len(names)} outputs")
    ok = False
new_outside = set(os.listdir(work)) - before - {"deep"}
escapes = [os.path.join(work, "escape.npy"), os.path.join(work, "deep", "escape.npy"), "/tmp/gkrt_abs_escape.npy",
           os.path.join(out, "sub")]
if new_outside or any(os.path.exists(p) for p in escapes):
    print("written outside DIR:", new_outside, [p for p in escapes if os.path.exists(p)])
    ok = False
for k, n in enumerate(names):  # each output's values, found through the printed mapping or its plain name
    want = -np.array([1.5, -2.0], np.float32) if k % 2 == 0 else np.maximum(np.array([1.5, -2.0], np.float32), 0)
    line = next((l for l in r.stdout.splitlines() if l.startswith(f"output '{n}' written as ")), None)
    path = line.split(" written as ", 1)[1] if line else os.path.join(out, n + ".npy")
    if not np.array_equal(np.load(path), want):
        print("wrong values for", n, "in", path)
        ok = False
print("hostile output names:", "ok" if ok else "FAILED")
sys.exit(0 if ok else 1)
