#!/usr/bin/env python3
"""Writes the ONNX backend node tests defined in the installed `onnx` package
(onnx/backend/test/case/node) in ONNX's on-disk layout:

    OUT/<test name>/model.onnx
    OUT/<test name>/test_data_set_0/input_0.pb ... output_0.pb ...

Recent `onnx` wheels ship the case definitions but not the generated data, so this
script produces it, as ONNX's own `backend-test-tools generate-data` does for the
model tests. Tensor-typed inputs and outputs only (sequences/maps/optionals are left
out and the runner counts those tests as skipped)."""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node

out = sys.argv[1]
warnings.simplefilter("ignore")
np.seterr(all="ignore")
if os.path.exists(out):
    shutil.rmtree(out)
written = 0
for case in node.collect_testcases(None):
    d = os.path.join(out, case.name)
    os.makedirs(d)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, f"test_data_set_{i}")
        os.makedirs(ds)
        for prefix, values, infos in (("input", inputs, case.model.graph.input),
                                      ("output", outputs, case.model.graph.output)):
            for j, v in enumerate(values):
                if j < len(infos) and not infos[j].type.HasField("tensor_type"):
                    continue
                if isinstance(v, onnx.TensorProto):  # some cases hand over ready tensors
                    with open(os.path.join(ds, f"{prefix}_{j}.pb"), "wb") as f:
                        f.write(v.SerializeToString())
                    continue
                if not isinstance(v, np.ndarray) and not np.isscalar(v):
                    try:
                        v = np.asarray(v)
                    except Exception:  # noqa: BLE001
                        continue
                try:
                    t = numpy_helper.from_array(np.asarray(v), infos[j].name if j < len(infos) else "")
                except Exception:  # noqa: BLE001  (strings, custom float types)
                    continue
                with open(os.path.join(ds, f"{prefix}_{j}.pb"), "wb") as f:
                    f.write(t.SerializeToString())
    written += 1
print(f"wrote {written} ONNX node tests to {out}")
