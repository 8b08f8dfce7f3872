"""Golden cases for the integer and QLinear ops (runtime/ir/ops/quant_linear.cc), computed
as onnx.reference computes them: int32 sums of (x - zero point) products, the rescale
multiplier in float32 step by step, numpy's rint (half to even), clip to the type."""
import math

import numpy as np


def conv_int(x, w, pads, groups=1):
    """int64 NCHW x OIHW convolution, stride 1, of already zero-point-shifted operands."""
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = xp.shape
    o, cg, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1), np.int64)
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(out.shape[2]):
            for j in range(out.shape[3]):
                out[:, oc, i, j] = (xp[:, g * cg:(g + 1) * cg, i:i + kh, j:j + kw] * w[oc]).sum(axis=(1, 2, 3))
    return out


def add_cases(case, rng):
    a = rng.integers(0, 256, (3, 5)).astype(np.uint8)
    b = rng.integers(-128, 128, (5, 4)).astype(np.int8)
    azp, bzp = np.uint8(131), rng.integers(-5, 5, (4,)).astype(np.int8)
    case("MatMulInteger_per_column_zero_point", "MatMulInteger", [a, b, np.array(azp), bzp],
         [((a.astype(np.int64) - azp) @ (b.astype(np.int64) - bzp)).astype(np.int32)], rtol=0, atol=0)

    x = rng.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(-128, 128, (4, 1, 3, 3)).astype(np.int8)
    xzp, wzp = np.uint8(100), rng.integers(-3, 3, (4,)).astype(np.int8)
    want = conv_int(x.astype(np.int64) - xzp, w.astype(np.int64) - wzp.reshape(4, 1, 1, 1), (1, 1, 1, 1), groups=2)
    case("ConvInteger_grouped_padded", "ConvInteger", [x, w, np.array(xzp), wzp], [want.astype(np.int32)],
         {"pads": "1,1,1,1", "groups": 2}, rtol=0, atol=0)

    # QLinear: the cpu backend rounds acc * m in float32 where the reference uses double;
    # a value on a rounding edge may move by one step there.
    qa = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    qb = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    a_s, b_s, y_s = np.float32(0.02), rng.uniform(0.005, 0.02, (5,)).astype(np.float32), np.float32(0.05)
    a_z, b_z, y_z = np.uint8(128), np.zeros(5, np.int8), np.uint8(120)
    acc = (qa.astype(np.int32) - np.int32(a_z)) @ qb.astype(np.int32)
    m = (a_s * b_s) / y_s
    case("QLinearMatMul_3d_per_column", "QLinearMatMul",
         [qa, np.array(a_s), np.array(a_z), qb, b_s, b_z, np.array(y_s), np.array(y_z)],
         [np.clip(np.rint(acc * m) + y_z, 0, 255).astype(np.uint8)], rtol=0, atol=1)

    # QuantBatchMatMul (inference_qbmm_add_fusion's op): (int32 sum + bias) * float32(as * bs).
    qbias = rng.integers(-3000, 3000, (5,)).astype(np.int32)
    qbmm_scale = (a_s * b_s).astype(np.float32)
    case("QuantBatchMatMul_per_column_bias", "QuantBatchMatMul",
         [qa, np.array(a_s), np.array(a_z), qb, b_s, b_z, qbias],
         [((acc + qbias).astype(np.float32) * qbmm_scale).astype(np.float32)], rtol=1e-6, atol=0)

    # MatMulIntegerToFloat (onnxruntime's com.microsoft op; gkrt's matmul_integer_to_float_fusion
    # makes it and its Relu/Gelu forms): float32(acc) * float32(as * bs) + bias, then the activation.
    fbias = rng.uniform(-1, 1, (5,)).astype(np.float32)
    fz = np.array(np.uint8(128))
    to_float = (acc.astype(np.float32) * (a_s * b_s).astype(np.float32)).astype(np.float32) + fbias
    fins = [qa, qb, np.array(a_s), b_s, fz, b_z, fbias]
    case("MatMulIntegerToFloat_per_column_bias", "MatMulIntegerToFloat", fins, [to_float], constant_inputs=(1, 3, 5, 6))
    case("MatMulIntegerToFloatRelu_per_column_bias", "MatMulIntegerToFloatRelu", fins, [np.maximum(to_float, 0)],
         constant_inputs=(1, 3, 5, 6))
    t64 = to_float.astype(np.float64)
    gelu = 0.5 * t64 * (1 + np.vectorize(math.erf)(t64 / math.sqrt(2)))
    case("MatMulIntegerToFloatGelu_erf", "MatMulIntegerToFloatGelu", fins, [gelu.astype(np.float32)],
         {"approximate": "none"}, constant_inputs=(1, 3, 5, 6))

    cw = rng.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
    w_s = rng.uniform(0.002, 0.01, (3,)).astype(np.float32)
    bias = rng.integers(-2000, 2000, (3,)).astype(np.int32)
    x_s, c_s, x_z, c_z = np.float32(0.03), np.float32(0.2), np.uint8(90), np.int8(-10)
    cacc = conv_int(x.astype(np.int64) - x_z, cw.astype(np.int64), (1, 1, 1, 1)) + bias.reshape(1, 3, 1, 1)
    cm = ((x_s * w_s) / c_s).reshape(1, 3, 1, 1)
    case("QLinearConv_per_channel_bias_int8_out", "QLinearConv",
         [x, np.array(x_s), np.array(x_z), cw, w_s, np.zeros(3, np.int8), np.array(c_s), np.array(c_z), bias],
         [np.clip(np.rint(cacc * cm) + c_z, -128, 127).astype(np.int8)], {"pads": "1,1,1,1"}, rtol=0, atol=1)

    # QLinearAdd / QLinearMul (com.microsoft): float32 arithmetic, a bias row broadcast.
    ea = rng.integers(0, 256, (3, 6)).astype(np.uint8)
    eb = rng.integers(0, 256, (6,)).astype(np.uint8)
    s_a, s_b, s_c = np.float32(0.1), np.float32(0.05), np.float32(0.12)
    z_a, z_b, z_c = np.uint8(128), np.uint8(100), np.uint8(110)
    fa, fb = (ea.astype(np.int32) - z_a).astype(np.float32), (eb.astype(np.int32) - z_b).astype(np.float32)
    params = [np.array(s_a), np.array(z_a), eb, np.array(s_b), np.array(z_b), np.array(s_c), np.array(z_c)]
    case("QLinearAdd_bias_row", "QLinearAdd", [ea] + params,
         [np.clip(np.rint(fa * (s_a / s_c) + fb * (s_b / s_c)) + z_c, 0, 255).astype(np.uint8)], rtol=0, atol=1)
    case("QLinearMul_bias_row", "QLinearMul", [ea] + params,
         [np.clip(np.rint(fa * fb * (s_a * s_b / s_c)) + z_c, 0, 255).astype(np.uint8)], rtol=0, atol=1)
