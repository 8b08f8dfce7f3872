"""Every gkrt dtype in and out of numpy: the standard ones as themselves, bfloat16,
float8, float4 and the 4-/2-bit ints as ml_dtypes arrays (float32 / int8 where ml_dtypes
is missing, as the CLI's .npy files)."""
import numpy as np
import pytest

import gkrt

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper  # noqa: E402

# (gkrt name, ONNX type, numpy dtype, sample values exactly representable)
TYPES = [
    ("float16", TensorProto.FLOAT16, np.float16, [0.5, -2.0, 3.25]),
    ("float64", TensorProto.DOUBLE, np.float64, [0.5, -2.0, 1e10]),
    ("int8", TensorProto.INT8, np.int8, [-128, 0, 127]),
    ("uint16", TensorProto.UINT16, np.uint16, [0, 7, 65535]),
    ("int64", TensorProto.INT64, np.int64, [-5, 0, 1 << 40]),
    ("bool", TensorProto.BOOL, np.bool_, [True, False, True]),
    ("bfloat16", TensorProto.BFLOAT16, ml_dtypes.bfloat16, [0.5, -2.0, 256.0]),
    ("float8e4m3fn", TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, [0.5, -2.0, 448.0]),
    ("float8e5m2", TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2, [0.5, -2.0, 1024.0]),
    ("float4e2m1", TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn, [0.5, -2.0, 6.0]),
    ("int4", TensorProto.INT4, ml_dtypes.int4, [-8, 0, 7]),
    ("uint4", TensorProto.UINT4, ml_dtypes.uint4, [0, 9, 15]),
]


def cast_model(path, onnx_type):
    """x (type) -> Cast(float) -> y ; z (float) -> Cast(type) -> w."""
    g = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["z"], ["w"], to=onnx_type)],
        "casts",
        [helper.make_tensor_value_info("x", onnx_type, [3]), helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3]), helper.make_tensor_value_info("w", onnx_type, [3])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)]), path)


@pytest.mark.parametrize("name,onnx_type,np_type,values", TYPES, ids=[t[0] for t in TYPES])
def test_dtype_round_trip(tmp_path, name, onnx_type, np_type, values):
    path = tmp_path / f"cast_{name}.onnx"
    cast_model(str(path), onnx_type)
    sess = gkrt.InferenceSession(path)
    assert sess.get_inputs()[0].dtype == name and sess.get_outputs()[1].dtype == name
    x = np.array(values, dtype=np_type)
    z = np.array(values, dtype=np.float32)
    y, w = sess.run(None, {"x": x, "z": z})
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.array(values, dtype=np.float32))
    assert w.dtype == np.dtype(np_type), f"{name} came back as {w.dtype}"
    np.testing.assert_array_equal(w.astype(np.float32), np.array(values, dtype=np.float32))


def test_float32_feeds_a_bfloat16_input(tmp_path):
    """As the CLI reads .npy files: float32 data for a bfloat16 input is rounded to it."""
    path = tmp_path / "cast_bf16.onnx"
    cast_model(str(path), TensorProto.BFLOAT16)
    sess = gkrt.InferenceSession(path)
    y, _ = sess.run(None, {"x": np.array([1.0, 1.00390625, 3.0], np.float32), "z": np.zeros(3, np.float32)})
    np.testing.assert_array_equal(y, np.array([1.0, 1.0, 3.0], np.float32))  # 1 + 2^-8 rounds to 1 in bfloat16


def test_outputs_are_numpy_owned_not_copied_per_access(tmp_path):
    path = tmp_path / "cast_f16.onnx"
    cast_model(str(path), TensorProto.FLOAT16)
    sess = gkrt.InferenceSession(path)
    y1, _ = sess.run(None, {"x": np.ones(3, np.float16), "z": np.ones(3, np.float32)})
    y2, _ = sess.run(None, {"x": np.zeros(3, np.float16), "z": np.ones(3, np.float32)})
    # each run's outputs are arrays of their own: a later run does not overwrite them
    np.testing.assert_array_equal(y1, np.ones(3, np.float32))
    np.testing.assert_array_equal(y2, np.zeros(3, np.float32))
    assert y1.flags.writeable and y1.flags.c_contiguous
