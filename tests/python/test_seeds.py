"""The seeds' two networks (../shared/seeds/enable_graph_kernel_fusion.md) from Python,
printed exactly as the seeds print them."""
import numpy as np

import gkrt

MYNET = """result: [[2. 2. 2. 2.]
 [2. 2. 2. 2.]
 [2. 2. 2. 2.]
 [2. 2. 2. 2.]]
"""
MYNET_MYOP = """result: [[-0.015104 -0.015104 -0.015104 -0.015104]
 [-0.015104 -0.015104 -0.015104 -0.015104]
 [-0.015104 -0.015104 -0.015104 -0.015104]
 [-0.015104 -0.015104 -0.015104 -0.015104]]
"""


def test_mynet_prints_as_the_seed(examples, capsys):
    x = np.ones((4, 4)).astype(np.float32) * 0.5
    sess = gkrt.InferenceSession(str(examples / "mynet.gkm"))
    (result,) = sess.run(None, {"x": x})
    print("result: {}".format(result))
    assert capsys.readouterr().out == MYNET


def test_mynet_with_myop_prints_as_the_seed(examples, capsys):
    x = np.ones((4, 4)).astype(np.float32) * 0.2
    y = np.ones((4, 4)).astype(np.float32) * 0.3
    sess = gkrt.InferenceSession(str(examples / "mynet_myop.gkm"))
    (result,) = sess.run(None, {"x": x, "y": y})
    print("result: {}".format(result))
    assert capsys.readouterr().out == MYNET_MYOP


def test_every_backend_prints_the_same(examples):
    x = np.ones((4, 4)).astype(np.float32) * 0.5
    for backend in gkrt.available_backends():
        sess = gkrt.InferenceSession(examples / "mynet.gkm", backend=backend)
        assert sess.get_providers() == [backend]
        (result,) = sess.run(["result"], {"x": x})
        np.testing.assert_array_equal(result, np.full((4, 4), 2.0, np.float32))


def test_model_from_bytes_and_fusion_flags(examples):
    data = (examples / "mynet.gkm").read_bytes()
    fused = gkrt.InferenceSession(data, threads=1)
    unfused = gkrt.InferenceSession(data, threads=1, flags="--opt_level=0")
    assert fused.kernel_count() == 1 and unfused.kernel_count() == 2
    x = np.random.default_rng(0).random((4, 4), dtype=np.float32)
    np.testing.assert_allclose(fused.run(None, {"x": x})[0], x * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(unfused.run(None, {"x": x})[0], x * 2 + 1, rtol=1e-6)


def test_version_and_backends():
    assert gkrt.__version__.count(".") == 2
    assert {"reference", "cpu"} <= set(gkrt.available_backends())
    assert gkrt.get_available_providers() == gkrt.available_backends()
