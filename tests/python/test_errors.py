"""Bad input raises gkrt.GkrtError (a RuntimeError) carrying gkrt's message, naming the
thing at fault and the fix; nothing crashes."""
import numpy as np
import pytest

import gkrt


def test_missing_file():
    with pytest.raises(gkrt.GkrtError, match="cannot open model '/nonexistent/net.gkm'"):
        gkrt.InferenceSession("/nonexistent/net.gkm")


def test_neither_gkm_nor_onnx(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("not a model at all")
    with pytest.raises(gkrt.GkrtError, match="neither a gkrt model .* nor an ONNX model"):
        gkrt.InferenceSession(bad)
    with pytest.raises(gkrt.GkrtError, match="neither a gkrt model"):
        gkrt.InferenceSession(b"\x00\x01garbage\xff" * 10)


def test_truncated_model(examples, tmp_path):
    data = (examples / "mynet.gkm").read_bytes()
    cut = tmp_path / "cut.gkm"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(gkrt.GkrtError, match="invalid model"):
        gkrt.InferenceSession(cut)
    assert issubclass(gkrt.GkrtError, RuntimeError)


def test_wrong_shape_dtype_name_and_missing_input(examples):
    sess = gkrt.InferenceSession(examples / "mynet.gkm")
    x = np.ones((4, 4), np.float32)
    with pytest.raises(gkrt.GkrtError, match=r"input 'x' dim 0 is fixed at 4 .* got 2x4"):
        sess.run(None, {"x": x[:2]})
    with pytest.raises(gkrt.GkrtError, match="input 'x' is float32, got int32"):
        sess.run(None, {"x": x.astype(np.int32)})
    with pytest.raises(gkrt.GkrtError, match="the model has no input 'z'; inputs: x"):
        sess.run(None, {"z": x})
    with pytest.raises(gkrt.GkrtError, match=r"input 'x' \(float32 4x4\) is not given"):
        sess.run(None, {})
    with pytest.raises(gkrt.GkrtError, match="the model has no output 'nope'; outputs: result"):
        sess.run(["nope"], {"x": x})
    with pytest.raises(gkrt.GkrtError, match="is not a gkrt dtype"):
        sess.run(None, {"x": x.astype(np.complex64)})
    # the session still works after every error
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.full((4, 4), 3.0, np.float32))


def test_non_contiguous_input_is_taken(examples):
    sess = gkrt.InferenceSession(examples / "mynet.gkm")
    x = np.arange(32, dtype=np.float32).reshape(4, 8)[:, ::2]
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x * 2 + 1)


def test_unknown_or_missing_backend(examples):
    with pytest.raises(gkrt.GkrtError, match="unknown backend 'tpu'; available: reference, cpu"):
        gkrt.InferenceSession(examples / "mynet.gkm", backend="tpu")
    if "cuda" not in gkrt.available_backends():
        with pytest.raises(gkrt.GkrtError, match="cuda"):
            gkrt.InferenceSession(examples / "mynet.gkm", backend="cuda")


def test_bad_flags_precision_threads(examples):
    with pytest.raises(gkrt.GkrtError, match="opt_level"):
        gkrt.InferenceSession(examples / "mynet.gkm", flags="--opt_level=9")
    with pytest.raises(gkrt.GkrtError, match="precision"):
        gkrt.InferenceSession(examples / "mynet.gkm", precision="f8")
    with pytest.raises(gkrt.GkrtError, match="threads must be >= 0"):
        gkrt.InferenceSession(examples / "mynet.gkm", threads=-1)


def test_convert_errors_name_the_file(tmp_path):
    with pytest.raises(gkrt.GkrtError, match="cannot open '/nonexistent.onnx'"):
        gkrt.convert("/nonexistent.onnx", tmp_path / "out.gkm")
    assert not (tmp_path / "out.gkm").exists()
