"""The com.microsoft cases of tests/models/check_contrib_ops.py as folders for a GPU machine
(which has no onnxruntime): OUT/caseNN with model.onnx, in_*.npy, want_*.npy (onnxruntime
here), name.txt and tol.txt; tests/cuda/run_contrib_cases.sh runs them there.

    .venv/bin/python tests/cuda/make_contrib_cases.py .gpu/contrib"""
import os, sys, shutil
import numpy as np, onnx, onnxruntime as ort
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import check_contrib_ops as cc
out = sys.argv[1] if len(sys.argv) > 1 else ".gpu/contrib"
shutil.rmtree(out, ignore_errors=True)
cases = [c + (None, (1e-4, 1e-4)) if len(c) == 3 else c + ((1e-4, 1e-4),) if len(c) == 4 else c
         for c in list(cc.cases()) + list(cc.quant_cases()) + list(cc.more_cases())]
for k, (name, m, feeds, want, (rtol, atol)) in enumerate(cases):
    d = os.path.join(out, f"case{k:02d}")
    os.makedirs(d)
    onnx.save(m, os.path.join(d, "model.onnx"))
    if want is None:
        so = ort.SessionOptions(); so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        want = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"]).run(None, feeds)
    for n, a in feeds.items():
        np.save(os.path.join(d, f"in_{n}.npy"), a)
    for o, w in zip([o.name for o in m.graph.output], want):
        np.save(os.path.join(d, f"want_{o}.npy"), np.asarray(w))
    open(os.path.join(d, "name.txt"), "w").write(name)
    open(os.path.join(d, "tol.txt"), "w").write(f"{rtol} {atol}")
print(len(cases), "cases")
