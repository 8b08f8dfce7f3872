#!/usr/bin/env python3
"""Per-call overhead of gkrt's Python package against onnxruntime's, same process, same
file: the seeds' MyNet (x * 2 + 1 on a 4x4 tensor) written as ONNX, run by both.

    .venv/bin/python bench/python_overhead.py [--runs 20000] [--repeats 7]

Prints microseconds per run() (median of the repeats, and the min) for each engine at
threads 1 and 2, and gkrt's ratio (below 1.0: gkrt's call is the cheaper one)."""
import argparse
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "build" / "python"))
import gkrt  # noqa: E402


def mynet_onnx(path: str) -> None:
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    g = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["a"]), helper.make_node("Add", ["a", "one"], ["result"])],
                          "MyNet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
                          [helper.make_tensor_value_info("result", TensorProto.FLOAT, [4, 4])], [two, one])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def per_call_us(sess, feeds, runs: int, repeats: int):
    for _ in range(200):
        sess.run(None, feeds)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(runs):
            sess.run(None, feeds)
        times.append((time.perf_counter() - t0) / runs * 1e6)
    return statistics.median(times), min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = str(pathlib.Path(d) / "mynet.onnx")
        mynet_onnx(path)
        x = np.ones((4, 4), np.float32) * 0.5
        print(f"MyNet 4x4 from Python, {a.runs} runs x {a.repeats} repeats (us per run: median, min)")
        print("threads  onnxruntime          gkrt                 gkrt/onnxruntime")
        for threads in (1, 2):
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            o = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            g = gkrt.InferenceSession(path, threads=threads)
            np.testing.assert_array_equal(o.run(None, {"x": x})[0], g.run(None, {"x": x})[0])
            om, omin = per_call_us(o, {"x": x}, a.runs, a.repeats)
            gm, gmin = per_call_us(g, {"x": x}, a.runs, a.repeats)
            print(f"{threads:<8} {om:7.2f} ({omin:6.2f})     {gm:7.2f} ({gmin:6.2f})     {gm / om:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
