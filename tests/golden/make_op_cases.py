#!/usr/bin/env python3
"""Writes one golden case per op behaviour: inputs and numpy-computed outputs as .npy,
plus manifest.json naming the op, its attributes and the tolerance.

    python tests/golden/make_op_cases.py OUT_DIR

tests/unit/op_golden_test.cc runs every case on every backend. Expected values come
from numpy in float64 (finite differences for gradient ops), not from gkrt."""
import json
import math
import os
import sys

import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else "golden"
rng = np.random.default_rng(20261121)
cases = []


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def i32(*shape, lo=-20, hi=20):
    return rng.integers(lo, hi, shape).astype(np.int32)


def case(name, op, inputs, outputs, attrs=None, rtol=1e-5, atol=1e-6, num_outputs=None, constant_inputs=()):
    """inputs/outputs: lists of arrays (None = absent optional input); constant_inputs:
    positions of inputs given as constants (shape operands a session must know)."""
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    ins = []
    for k, a in enumerate(inputs):
        if a is None:
            ins.append(None)
            continue
        p = os.path.join(name, f"in{k}.npy")
        np.save(os.path.join(OUT, p), np.array(a, order="C"))
        ins.append(p)
    outs = []
    for k, a in enumerate(outputs):
        p = os.path.join(name, f"out{k}.npy")
        np.save(os.path.join(OUT, p), np.array(a, order="C"))
        outs.append(p)
    cases.append({"name": name, "op": op, "attrs": {k: str(v) for k, v in (attrs or {}).items()},
                  "inputs": ins, "outputs": outs, "rtol": rtol, "atol": atol,
                  "num_outputs": num_outputs or len(outputs), "constant_inputs": list(constant_inputs)})


def ints(v):
    return ",".join(str(int(x)) for x in v)


def as32(x):
    return np.asarray(x, dtype=np.float64).astype(np.float32)


erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)
sig = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def softplus(x, beta=1.0, thr=20.0):
    return np.where(beta * x > thr, x, np.log1p(np.exp(beta * x)) / beta)


def deriv(f, x, h=1e-4):
    x = x.astype(np.float64)
    return (f(x + h) - f(x - h)) / (2 * h)


# ---- unary float ---------------------------------------------------------------
x = f32(3, 5)
pos = f32(3, 5, lo=0.1, hi=4.0)
unit = f32(3, 5, lo=-0.95, hi=0.95)
for op, inp, ref in [
    ("Exp", x, np.exp), ("Log", pos, np.log), ("Sqrt", pos, np.sqrt), ("Rsqrt", pos, lambda v: 1 / np.sqrt(v)),
    ("Reciprocal", pos, lambda v: 1 / v), ("Floor", x * 3, np.floor), ("Ceil", x * 3, np.ceil),
    ("Trunc", x * 3, np.trunc), ("Sin", x, np.sin), ("Cos", x, np.cos), ("Tan", unit, np.tan),
    ("Tanh", x, np.tanh), ("ACos", unit, np.arccos), ("Acosh", pos + 1, np.arccosh), ("Asin", unit, np.arcsin),
    ("Asinh", x, np.arcsinh), ("Atan", x, np.arctan), ("Cosh", x, np.cosh), ("Sinh", x, np.sinh),
    ("Erf", x, erf), ("Erfc", x, erfc), ("Expm1", x, np.expm1), ("Log1p", pos, np.log1p), ("Sigmoid", x, sig),
    ("SiLU", x, lambda v: v * sig(v)), ("FastGeLU", x, lambda v: v * sig(1.702 * v)),
    ("ReLU6", x * 5, lambda v: np.clip(v, 0, 6)), ("HSigmoid", x * 3, lambda v: np.clip(v / 6 + 0.5, 0, 1)),
    ("HSwish", x * 3, lambda v: v * np.clip(v + 3, 0, 6) / 6), ("Softsign", x, lambda v: v / (1 + np.abs(v))),
]:
    case(op, op, [inp], [as32(ref(inp.astype(np.float64)))])
case("Round_half_even", "Round", [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6], np.float32)],
     [np.array([-2, -2, -0, 0, 2, 2, 0, -1], np.float32)])
case("GeLU_tanh", "GeLU", [x], [as32(gelu_tanh(x.astype(np.float64)))], {"approximate": "tanh"})
case("GeLU_erf", "GeLU", [x], [as32(gelu_erf(x.astype(np.float64)))], {"approximate": "none"})
case("Softplus", "Softplus", [x * 5], [as32(softplus(x.astype(np.float64) * 5))])
case("Softplus_beta_threshold", "Softplus", [x * 5], [as32(softplus(x.astype(np.float64) * 5, 2.0, 1.0))],
     {"beta": 2, "threshold": 1})
case("SoftplusExt", "SoftplusExt", [x * 5], [as32(softplus(x.astype(np.float64) * 5, 2.0, 1.0))],
     {"beta": 2, "threshold": 1})
case("LeakyReLU", "LeakyReLU", [x], [as32(np.where(x < 0, 0.1 * x.astype(np.float64), x))], {"alpha": 0.1})
case("Elu", "Elu", [x], [as32(np.where(x > 0, x, 1.5 * np.expm1(x.astype(np.float64))))], {"alpha": 1.5})
case("HShrink", "HShrink", [x], [as32(np.where(np.abs(x) > 0.5, x, 0))], {"alpha": 0.5})
case("Clip", "Clip", [x], [np.clip(x, -0.5, 0.7)], {"min": -0.5, "max": 0.7})
case("Exp_float16", "Exp", [x.astype(np.float16)], [np.exp(x.astype(np.float64)).astype(np.float16)],
     rtol=2e-3, atol=1e-3)

# ---- unary numeric ---------------------------------------------------------------
xi = i32(4, 3)
for op, ref in [("Abs", np.abs), ("Neg", np.negative), ("Sign", np.sign), ("Square", np.square),
                ("ReLU", lambda v: np.maximum(v, 0)), ("OnesLike", np.ones_like), ("ZerosLike", np.zeros_like)]:
    case(op, op, [x], [as32(ref(x.astype(np.float64)))])
    case(op + "_int32", op, [xi], [ref(xi).astype(np.int32)])
case("IdentityMath", "IdentityMath", [x], [x])
special = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -3.5], np.float32)
case("ReLU_nan", "ReLU", [special], [np.maximum(special, 0)])
case("IsFinite", "IsFinite", [special], [np.isfinite(special)])
case("IsInf", "IsInf", [special], [np.isinf(special)])
case("IsNan", "IsNan", [special], [np.isnan(special)])
bools = rng.integers(0, 2, (3, 4)).astype(bool)
bools2 = rng.integers(0, 2, (3, 4)).astype(bool)
case("LogicalNot", "LogicalNot", [bools], [~bools])
case("Cast_f32_i32", "Cast", [x * 10], [np.trunc(x * 10).astype(np.int32)], {"to": "int32"})
case("Cast_f32_bool", "Cast", [np.array([0, 1.5, -2, 0], np.float32)], [np.array([0, 1, 1, 0], bool)], {"to": "bool"})
case("Cast_i64_f32", "Cast", [xi.astype(np.int64)], [xi.astype(np.float32)], {"to": "float32"})
case("Cast_bool_f32", "Cast", [bools], [bools.astype(np.float32)], {"to": "float32"})
case("Cast_f32_f16", "Cast", [x], [x.astype(np.float16)], {"to": "float16"}, rtol=0, atol=0)
case("Cast_f16_f32", "Cast", [x.astype(np.float16)], [x.astype(np.float16).astype(np.float32)], {"to": "float32"})
case("Cast_i32_i8", "Cast", [xi], [xi.astype(np.int8)], {"to": "int8"})
case("Cast_f64_i16", "Cast", [x.astype(np.float64) * 100], [np.trunc(x.astype(np.float64) * 100).astype(np.int16)],
     {"to": "int16"})
case("Cast_u16_f64", "Cast", [np.array([0, 7, 65535], np.uint16)], [np.array([0, 7, 65535], np.float64)], {"to": "float64"})
case("Cast_i64_f64_exact", "Cast", [np.array([2**53 - 1, -3], np.int64)], [np.array([2**53 - 1, -3], np.float64)],
     {"to": "float64"}, rtol=0, atol=0)
case("Cast_f32_u32_saturates", "Cast", [np.array([-5.5, 3.7, 5e9, np.nan], np.float32)],
     [np.array([0, 3, 2**32 - 1, 0], np.uint32)], {"to": "uint32"})

# ---- binary, ternary, variadic ------------------------------------------------------
a, b = f32(2, 3, 4), f32(3, 1)
bp = f32(3, 1, lo=0.5, hi=2.0)
ai, bi = i32(2, 3, 4), i32(3, 1, lo=1, hi=7) * np.where(rng.integers(0, 2, (3, 1)) > 0, 1, -1).astype(np.int32)
d64, e64 = a.astype(np.float64), b.astype(np.float64)
for op, ref in [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Maximum", np.maximum),
                ("Minimum", np.minimum), ("SquaredDifference", lambda p, q: (p - q) ** 2)]:
    case(op, op, [a, b], [as32(ref(d64, e64))])
    case(op + "_int32", op, [ai, bi], [ref(ai.astype(np.int64), bi.astype(np.int64)).astype(np.int32)])
case("Div", "Div", [a, bp], [as32(d64 / bp)])
case("Div_int32_trunc", "Div", [ai, bi], [np.trunc(ai / bi).astype(np.int32)])
case("Div_int32_by_zero", "Div", [np.array([5, -3], np.int32), np.array([0, 0], np.int32)], [np.array([0, 0], np.int32)])
case("RealDiv", "RealDiv", [a, bp], [as32(d64 / bp)])
case("Pow", "Pow", [np.abs(a) + 0.1, b], [as32(np.power(np.abs(d64) + 0.1, e64))], rtol=2e-5)
case("FloorDiv", "FloorDiv", [a * 5, bp], [as32(np.floor(d64 * 5 / bp))])
case("FloorDiv_int32", "FloorDiv", [ai, bi], [np.floor_divide(ai, bi).astype(np.int32)])
case("FloorMod", "FloorMod", [a * 5, bp], [as32(np.mod(d64 * 5, bp.astype(np.float64)))], atol=1e-5)
case("FloorMod_int32", "FloorMod", [ai, bi], [np.mod(ai, bi).astype(np.int32)])
case("Mod", "Mod", [a * 5, bp], [as32(np.fmod(d64 * 5, bp.astype(np.float64)))], atol=1e-5)
case("Mod_int32", "Mod", [ai, bi], [np.fmod(ai, bi).astype(np.int32)])
case("DivMod_floor", "DivMod", [a * 5, bp], [as32(np.floor(d64 * 5 / bp))], {"mode": "floor"})
case("DivMod_trunc_int32", "DivMod", [ai, bi], [np.trunc(ai / bi).astype(np.int32)], {"mode": "trunc"})
case("Atan2", "Atan2", [a, b], [as32(np.arctan2(d64, e64))])
ac = np.round(a)
bc = np.round(b)
for op, ref in [("Equal", np.equal), ("NotEqual", np.not_equal), ("Greater", np.greater),
                ("GreaterEqual", np.greater_equal), ("Less", np.less), ("LessEqual", np.less_equal)]:
    case(op, op, [ac, bc], [ref(ac, bc)])
case("Equal_int32", "Equal", [ai, bi], [np.equal(ai, bi)])
for op, ref in [("LogicalAnd", np.logical_and), ("LogicalOr", np.logical_or), ("LogicalXor", np.logical_xor)]:
    case(op, op, [bools, bools2], [ref(bools, bools2)])
cond = rng.integers(0, 2, (2, 1, 4)).astype(bool)
case("Select", "Select", [cond, a, b], [np.where(cond, a, np.broadcast_to(b, a.shape))])
case("Select_int32", "Select", [cond, ai, bi], [np.where(cond, ai, np.broadcast_to(bi, ai.shape))])
c3 = f32(2, 3, 4)
case("AddN", "AddN", [a, c3, a], [as32(d64 + c3 + d64)])
case("AddN_int32", "AddN", [ai, ai, ai], [ai * 3])
big = np.array([2**40 + 1, 2**63 + 5, 7], np.uint64)
case("Add_uint64_exact", "Add", [big, np.array([1], np.uint64)], [big + np.uint64(1)], rtol=0, atol=0)
case("Mul_int16", "Mul", [ai.astype(np.int16), bi.astype(np.int16)], [(ai * bi).astype(np.int16)])
case("Sub_uint16_wraps", "Sub", [np.array([1, 5], np.uint16), np.array([2, 1], np.uint16)],
     [np.array([65535, 4], np.uint16)])
case("Add_float64", "Add", [d64, e64], [d64 + e64])
case("FusedMulAdd", "FusedMulAdd", [a, b, c3], [as32(d64 * e64 + c3)])
val = np.array(0.5, np.float32)
case("Addcmul", "Addcmul", [c3, a, b, val], [as32(c3 + 0.5 * d64 * e64)])

# ---- reductions -------------------------------------------------------------------------
r = f32(3, 4, 5)
r64 = r.astype(np.float64)
case("ReduceSum", "ReduceSum", [r], [as32(r64.sum(axis=1, keepdims=True))], {"axes": "1", "keep_dims": "true"})
case("ReduceSum_int32", "ReduceSum", [ai], [ai.sum(axis=(0, 2)).astype(np.int32)], {"axes": "0,2"})
u32 = np.abs(ai).astype(np.uint32) * np.uint32(100000)
case("ReduceSum_uint32", "ReduceSum", [u32], [u32.sum(axis=(0, 2), dtype=np.uint32)], {"axes": "0,2"})
case("ReduceMax_int16", "ReduceMax", [ai.astype(np.int16)], [ai.astype(np.int16).max(axis=1)], {"axes": "1"})
case("ReduceMean_all", "ReduceMean", [r], [as32(r64.mean())])
case("MeanExt", "MeanExt", [r], [as32(r64.mean(axis=(0, 2)))], {"axes": "0,2"})
case("ReduceMax", "ReduceMax", [r], [r.max(axis=(0, 2))], {"axes": "0,-1"})
case("ReduceMin", "ReduceMin", [r], [r.min(axis=2, keepdims=True)], {"axes": "2", "keep_dims": "true"})
case("ReduceProd", "ReduceProd", [r], [as32(r64.prod(axis=0))], {"axes": "0"})
case("ArgMax", "ArgMax", [r], [r.argmax(axis=1).astype(np.int64)], {"axis": 1})
case("ArgMin", "ArgMin", [r], [np.expand_dims(r.argmin(axis=-1), -1).astype(np.int64)], {"axis": -1, "keep_dims": "true"})
case("ArgMaxWithValue", "ArgMaxWithValue", [r], [r.argmax(axis=0).astype(np.int64), r.max(axis=0)], {"axis": 0})
case("ArgMinWithValue", "ArgMinWithValue", [r], [r.argmin(axis=2).astype(np.int64), r.min(axis=2)], {"axis": 2})
cs = np.cumsum(r64, axis=1)
case("CumSum", "CumSum", [r], [as32(cs)], {"axis": 1})
excl_rev = np.flip(np.cumsum(np.flip(r64, 2), axis=2), 2) - r64
case("CumSum_exclusive_reverse", "CumSum", [r], [as32(excl_rev)], {"axis": 2, "exclusive": "true", "reverse": "true"})
case("SquareSumAll", "SquareSumAll", [a, c3], [as32((d64 ** 2).sum()), as32((c3.astype(np.float64) ** 2).sum())])
eq_a = np.round(a)
eq_b = np.where(rng.integers(0, 2, a.shape) > 0, eq_a, eq_a + 1).astype(np.float32)
case("EqualCount", "EqualCount", [eq_a, eq_b], [np.array([np.sum(eq_a == eq_b)], np.float32)])
nchw = f32(2, 3, 4, 5)
case("BiasAddGrad", "BiasAddGrad", [nchw], [as32(nchw.astype(np.float64).sum(axis=(0, 2, 3)))])
case("BiasAddGrad_NHWC", "BiasAddGrad", [nchw], [as32(nchw.astype(np.float64).sum(axis=(0, 1, 2)))], {"format": "NHWC"})
gx, gy, gd = f32(3, 4), f32(4), f32(3, 4)
mx = gx >= gy
case("MaximumGrad", "MaximumGrad", [gx, gy, gd], [np.where(mx, gd, 0).astype(np.float32),
                                                   as32(np.where(mx, 0, gd.astype(np.float64)).sum(axis=0))])
mn = gx <= gy
case("MinimumGrad", "MinimumGrad", [gx, gy, gd], [np.where(mn, gd, 0).astype(np.float32),
                                                   as32(np.where(mn, 0, gd.astype(np.float64)).sum(axis=0))])


# ---- normalization ---------------------------------------------------------------------
def softmax(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


case("Softmax", "Softmax", [r], [as32(softmax(r64, 1))], {"axis": 1})
case("LogSoftmax", "LogSoftmax", [r], [as32(np.log(softmax(r64, -1)))], {"axis": -1})
sy = softmax(r64, -1).astype(np.float32)
dy = f32(3, 4, 5)
sy64, dy64 = sy.astype(np.float64), dy.astype(np.float64)
case("SoftmaxGradExt", "SoftmaxGradExt", [sy, dy], [as32((dy64 - (dy64 * sy64).sum(-1, keepdims=True)) * sy64)], {"axis": -1})
ly = np.log(sy64).astype(np.float32)
case("LogSoftmaxGrad", "LogSoftmaxGrad", [ly, dy], [as32(dy64 - np.exp(ly.astype(np.float64)) * dy64.sum(-1, keepdims=True))],
     {"axis": -1})
gamma, beta = f32(4, 5), f32(4, 5)
mean = r64.mean(axis=(1, 2), keepdims=True)
var = r64.var(axis=(1, 2), keepdims=True)
ln = (r64 - mean) / np.sqrt(var + 1e-5) * gamma + beta
case("LayerNorm", "LayerNorm", [r, gamma, beta], [as32(ln), as32(mean), as32(var)], {"axis": 1, "epsilon": 1e-5}, atol=1e-5)
g1 = f32(5)
case("LayerNorm_no_affine", "LayerNorm", [r], [as32((r64 - r64.mean(-1, keepdims=True)) /
                                                     np.sqrt(r64.var(-1, keepdims=True) + 1e-3))],
     {"axis": -1, "epsilon": 1e-3}, atol=1e-5, num_outputs=1)
rstd = 1 / np.sqrt((r64 ** 2).mean(-1, keepdims=True) + 1e-6)
case("RmsNorm", "RmsNorm", [r, g1], [as32(r64 * rstd * g1), as32(rstd)], {"axis": -1, "epsilon": 1e-6}, atol=1e-5)
bn = [f32(3, lo=0.5, hi=1.5), f32(3), f32(3), f32(3, lo=0.5, hi=2.0)]
bshape = (1, 3, 1, 1)
bn_ref = (nchw - bn[2].reshape(bshape)) / np.sqrt(bn[3].reshape(bshape).astype(np.float64) + 1e-5) * \
    bn[0].reshape(bshape) + bn[1].reshape(bshape)
case("BatchNorm", "BatchNorm", [nchw] + bn, [as32(bn_ref)], {"axis": 1, "epsilon": 1e-5})


def layer_norm_grad_numeric(xv, dyv, gv, eps):
    """dx, dgamma, dbeta of sum(dy * LayerNorm(x)) by central differences on x."""
    def f(xx):
        m = xx.mean(-1, keepdims=True)
        v = xx.var(-1, keepdims=True)
        return ((xx - m) / np.sqrt(v + eps) * gv * dyv).sum()
    dx = np.zeros_like(xv)
    h = 1e-6
    for idx in np.ndindex(xv.shape):
        p, q = xv.copy(), xv.copy()
        p[idx] += h
        q[idx] -= h
        dx[idx] = (f(p) - f(q)) / (2 * h)
    xhat = (xv - xv.mean(-1, keepdims=True)) / np.sqrt(xv.var(-1, keepdims=True) + eps)
    return dx, (dyv * xhat).sum(0), dyv.sum(0)


lx, ldy, lg = f32(3, 6), f32(3, 6), f32(6)
lx64 = lx.astype(np.float64)
ldx, ldg, ldb = layer_norm_grad_numeric(lx64, ldy.astype(np.float64), lg.astype(np.float64), 1e-5)
case("LayerNormGrad", "LayerNormGrad",
     [lx, ldy, as32(lx64.var(-1, keepdims=True)), as32(lx64.mean(-1, keepdims=True)), lg],
     [as32(ldx), as32(ldg), as32(ldb)], {"axis": -1, "epsilon": 1e-5}, rtol=1e-4, atol=1e-4)
logits = f32(4, 6)
labels = softmax(f32(4, 6).astype(np.float64) * 2, -1).astype(np.float32)
lsm = np.log(softmax(logits.astype(np.float64), -1))
case("SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits", [logits, labels],
     [as32(-(labels * lsm).sum(-1)), as32(np.exp(lsm) - labels)])
bx, bz = f32(3, 4), rng.uniform(0, 1, (3, 4)).astype(np.float32)
bw, bpw = f32(4, lo=0.5, hi=1.5), f32(4, lo=0.5, hi=2.0)
p = sig(bx.astype(np.float64))
bce = -(bpw * bz * np.log(p) + (1 - bz) * np.log(1 - p)) * bw
case("BCEWithLogitsLoss_mean", "BCEWithLogitsLoss", [bx, bz, bw, bpw], [as32(bce.mean())], {"reduction": "mean"})
case("BCEWithLogitsLoss_none", "BCEWithLogitsLoss", [bx, bz], [as32(-(bz * np.log(p) + (1 - bz) * np.log(1 - p)))],
     {"reduction": "none"})
pp = rng.uniform(0.05, 0.95, (3, 4)).astype(np.float32)
case("BinaryCrossEntropy", "BinaryCrossEntropy", [pp, bz, bw],
     [as32((-(bz * np.log(pp.astype(np.float64)) + (1 - bz) * np.log(1 - pp.astype(np.float64))) * bw).sum())],
     {"reduction": "sum"})

# ---- layout ---------------------------------------------------------------------------
case("Reshape", "Reshape", [r], [r.reshape(4, -1)], {"shape": "4,-1"})
case("Reshape_int64", "Reshape", [ai.astype(np.int64)], [ai.astype(np.int64).reshape(-1)], {"shape": "-1"})
case("ExpandDims", "ExpandDims", [a], [a.reshape(2, 1, 3, 4, 1)], {"axes": "1,-1"})
case("Squeeze", "Squeeze", [a.reshape(2, 1, 3, 1, 4)], [a], {"axes": ""})
case("Squeeze_axis", "Squeeze", [a.reshape(2, 1, 3, 1, 4)], [a.reshape(2, 3, 1, 4)], {"axes": "1"})
case("BroadcastTo", "BroadcastTo", [b], [np.broadcast_to(b, (2, 3, 4))], {"shape": "2,-1,4"})
case("Transpose", "Transpose", [r], [r.transpose(2, 0, 1)], {"perm": "2,0,1"})
case("Transpose_bool", "Transpose", [bools], [bools.T], {"perm": ""})
case("Concat", "Concat", [a, c3, a[:, :2]], [np.concatenate([a, c3, a[:, :2]], axis=1)], {"axis": 1})
case("Split", "Split", [r], list(np.split(r, [1, 3], axis=1)), {"axis": 1, "sizes": "1,2,1"})
case("Split_equal", "Split", [r], list(np.split(r, 5, axis=-1)), {"axis": -1, "sizes": ""})
case("Tile", "Tile", [b], [np.tile(b, (2, 2, 3))], {"multiples": "2,2,3"})
case("RepeatInterleaveInt", "RepeatInterleaveInt", [a], [np.repeat(a, 3, axis=1)], {"repeats": 3, "axis": 1})
case("FillV2", "FillV2", [np.array([2.5], np.float32)], [np.full((2, 3), 2.5, np.float32)], {"shape": "2,3"})

# ---- indexing -------------------------------------------------------------------------
case("Slice", "Slice", [r], [r[1:3, 0:4, 2:]], {"begins": "1,0,2", "sizes": "2,-1,3"})
case("StridedSlice", "StridedSlice", [r], [r[:, ::-2, 1:100:2]],
     {"begins": "-1,1", "ends": "-1000,100", "axes": "1,2", "steps": "-2,2"})
case("Gather", "Gather", [r, np.array([[2, 0], [-1, 1]], np.int64)], [np.take(r, [[2, 0], [2, 1]], axis=0)], {"axis": 0})
case("Gather_axis1_int32", "Gather", [r, np.array([3, 0, 3], np.int32)], [np.take(r, [3, 0, 3], axis=1)], {"axis": 1})
for mode, np_mode in [("constant", "constant"), ("reflect", "reflect"), ("edge", "edge")]:
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    case("Pad_" + mode, "Pad", [r], [np.pad(r, ((0, 1), (2, 1), (1, 2)), mode=np_mode, **kw)],
         {"pads": "0,2,1,1,1,2", "mode": mode, "value": 1.5})
oh_idx = np.array([[0, 3], [-1, 7]], np.int64)
oh = np.zeros((2, 2, 4), np.float32) - 1
for i in range(2):
    for j in range(2):
        k = oh_idx[i, j] + (4 if oh_idx[i, j] < 0 else 0)
        if 0 <= k < 4:
            oh[i, j, k] = 2
case("OneHot", "OneHot", [oh_idx], [oh], {"depth": 4, "axis": -1, "on_value": 2, "off_value": -1})


def resize_ref(xv, oh_, ow_, mode, ct, nm="round_prefer_floor"):
    n, c, ih, iw = xv.shape
    out = np.zeros((n, c, oh_, ow_))

    def src(o, il, ol):
        s = ol / il
        if ct == "half_pixel":
            return (o + 0.5) / s - 0.5
        if ct == "asymmetric":
            return o / s
        if ct == "align_corners":
            return o * (il - 1) / (ol - 1) if ol > 1 else 0.0
        return (o + 0.5) / s - 0.5 if ol > 1 else 0.0

    def near(v, n_):
        r_ = {"round_prefer_floor": math.ceil(v - 0.5), "round_prefer_ceil": math.floor(v + 0.5),
              "floor": math.floor(v), "ceil": math.ceil(v)}[nm]
        return min(max(int(r_), 0), n_ - 1)
    for h in range(oh_):
        for w in range(ow_):
            sy, sx = src(h, ih, oh_), src(w, iw, ow_)
            if mode == "nearest":
                out[:, :, h, w] = xv[:, :, near(sy, ih), near(sx, iw)]
            else:
                cy, cx = min(max(sy, 0), ih - 1), min(max(sx, 0), iw - 1)
                y0, x0 = int(cy), int(cx)
                y1, x1 = min(y0 + 1, ih - 1), min(x0 + 1, iw - 1)
                fy, fx = cy - y0, cx - x0
                out[:, :, h, w] = (1 - fy) * ((1 - fx) * xv[:, :, y0, x0] + fx * xv[:, :, y0, x1]) + \
                    fy * ((1 - fx) * xv[:, :, y1, x0] + fx * xv[:, :, y1, x1])
    return out


def cubic_resize_ref(xv, oh_, ow_, ct, a=-0.75, exclude_outside=False):
    """ONNX's reference method: per axis, the 4 nearest positions of the edge-padded
    input (ties to the left) with the cubic coefficients of the ratio in (0, 1]."""
    def coeffs(r):
        return np.array([((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                         ((a + 2) * r - (a + 3)) * r * r + 1,
                         ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
                         ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a])

    def axis_matrix(il, ol):
        m = np.zeros((ol, il))
        s = ol / il
        for o in range(ol):
            x = {"half_pixel": (o + 0.5) / s - 0.5, "asymmetric": o / s,
                 "align_corners": o * (il - 1) / (ol - 1) if ol > 1 else 0.0}[ct]
            r = 1.0 if float(x).is_integer() else x - math.floor(x)
            w = coeffs(r)
            padded = x + 2
            idx = sorted(sorted(range(il + 4), key=lambda i: (abs(padded - i), i))[:4])
            orig = [i - 2 for i in idx]
            if exclude_outside:
                w = np.array([0.0 if (i < 0 or i >= il) else wi for i, wi in zip(orig, w)])
                w = w / w.sum()
            for i, wi in zip(orig, w):
                m[o, min(max(i, 0), il - 1)] += wi
        return m
    my, mx = axis_matrix(xv.shape[2], oh_), axis_matrix(xv.shape[3], ow_)
    return np.einsum("hi,ncij,wj->nchw", my, xv, mx)


img = f32(1, 2, 3, 4)
case("Resize_nearest", "Resize", [img], [as32(resize_ref(img.astype(np.float64), 6, 8, "nearest", "asymmetric", "floor"))],
     {"mode": "nearest", "coordinate_transformation": "asymmetric", "nearest_mode": "floor", "sizes": "6,8"})
case("Resize_bilinear", "Resize", [img], [as32(resize_ref(img.astype(np.float64), 5, 7, "linear", "half_pixel"))],
     {"mode": "linear", "coordinate_transformation": "half_pixel", "sizes": "5,7"})
cimg = f32(1, 2, 4, 5)
case("Resize_bicubic", "Resize", [cimg], [as32(cubic_resize_ref(cimg.astype(np.float64), 7, 3, "half_pixel"))],
     {"mode": "cubic", "coordinate_transformation": "half_pixel", "sizes": "7,3"}, rtol=1e-5, atol=1e-5)
case("Resize_bicubic_exclude_outside", "Resize", [cimg],
     [as32(cubic_resize_ref(cimg.astype(np.float64), 8, 10, "asymmetric", -0.5, True))],
     {"mode": "cubic", "coordinate_transformation": "asymmetric", "sizes": "8,10", "cubic_coeff_a": -0.5,
      "exclude_outside": 1}, rtol=1e-5, atol=1e-5)
case("Resize_bicubic_align_corners", "Resize", [cimg],
     [as32(cubic_resize_ref(cimg.astype(np.float64), 3, 9, "align_corners"))],
     {"mode": "cubic", "coordinate_transformation": "align_corners", "sizes": "3,9"}, rtol=1e-5, atol=1e-5)
case("Resize_bilinear_align_corners", "Resize", [img],
     [as32(resize_ref(img.astype(np.float64), 2, 3, "linear", "align_corners"))],
     {"mode": "linear", "coordinate_transformation": "align_corners", "sizes": "2,3"})

# ---- dynamic-shape ops: shape operands as (constant) tensors --------------------------
i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
dx = f32(2, 3, 4)
case("Shape", "Shape", [dx], [i64(2, 3, 4)])
case("DynamicReshape", "DynamicReshape", [dx, i64(0, -1)], [dx.reshape(2, 12)], constant_inputs=[1])
db = f32(3, 1)
case("DynamicBroadcastTo", "DynamicBroadcastTo", [db, i64(2, 1, 4)], [np.broadcast_to(db, (2, 3, 4))], constant_inputs=[1])
ds = f32(4, 6)
case("DynamicSlice", "DynamicSlice", [ds, i64(1, -1), i64(100, 0), i64(0, 1), i64(2, -2)], [ds[1:100:2, -1:0:-2]],
     constant_inputs=[1, 2, 3, 4])
case("DynamicFill", "DynamicFill", [np.array([2.5], np.float32), i64(2, 3)], [np.full((2, 3), 2.5, np.float32)],
     constant_inputs=[1])
dt = f32(2, 3)
case("DynamicTile", "DynamicTile", [dt, i64(2, 1)], [np.tile(dt, (2, 1))], constant_inputs=[1])
case("DynamicResize_sizes", "DynamicResize", [img, i64(1, 2, 6, 8)],
     [as32(resize_ref(img.astype(np.float64), 6, 8, "nearest", "asymmetric", "floor"))],
     {"mode": "nearest", "coordinate_transformation": "asymmetric", "nearest_mode": "floor"}, constant_inputs=[1])
case("DynamicResize_scales", "DynamicResize", [img],
     [as32(resize_ref(img.astype(np.float64), 6, 6, "linear", "half_pixel"))],
     {"mode": "linear", "coordinate_transformation": "half_pixel", "scale_h": 2.0, "scale_w": 1.5})
case("DynamicRange_int64", "DynamicRange", [i64(3), i64(20), i64(4)], [i64(3, 7, 11, 15, 19)], constant_inputs=[0, 1, 2])
case("DynamicRange_float", "DynamicRange", [np.float32(1.0), np.float32(2.6), np.float32(0.4)],
     [np.array([1.0, 1.4, 1.8, 2.2], np.float32)], constant_inputs=[0, 1, 2])

# ---- linear algebra, convolution, pooling -------------------------------------------
ma, mb = f32(5, 3), f32(3, 4)
case("MatMul", "MatMul", [ma, mb], [as32(ma.astype(np.float64) @ mb)])
case("MatMul_transposed", "MatMul", [ma.T.copy(), mb.T.copy()], [as32(ma.astype(np.float64) @ mb)],
     {"transpose_a": "true", "transpose_b": "true"})
ba, bb = f32(2, 1, 5, 3), f32(3, 3, 4)
case("BatchMatMul", "BatchMatMul", [ba, bb], [as32(np.matmul(ba.astype(np.float64), bb))])
gc = f32(4)
case("Gemm", "Gemm", [ma, mb.T.copy(), gc], [as32(0.5 * (ma.astype(np.float64) @ mb) + 2.0 * gc)],
     {"alpha": 0.5, "beta": 2.0, "transpose_b": "true"})
case("Gemm_no_c", "Gemm", [ma, mb], [as32(ma.astype(np.float64) @ mb)])
fx, fw, fb = f32(2, 3, 3), f32(4, 3), f32(4)
case("FullyConnected", "FullyConnected", [fx, fw, fb], [as32(fx.astype(np.float64) @ fw.T + fb)])


def conv_ref(xv, wv, bv, stride, pads, dil, groups):
    n, c, h, w = xv.shape
    o, cg, kh, kw = wv.shape
    xp = np.pad(xv, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh_ = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow_ = (w + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh_, ow_))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh_):
            for j in range(ow_):
                patch = xp[:, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                           j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                out[:, oc, i, j] = (patch * wv[oc]).sum(axis=(1, 2, 3)) + (bv[oc] if bv is not None else 0)
    return out


cx, cw, cb = f32(2, 4, 7, 6), f32(6, 2, 3, 3), f32(6)
case("Conv2D_grouped_strided_dilated", "Conv2D", [cx, cw, cb],
     [as32(conv_ref(cx.astype(np.float64), cw, cb, (2, 1), (1, 2, 0, 1), (1, 2), 2))],
     {"strides": "2,1", "pads": "1,2,0,1", "dilations": "1,2", "groups": 2}, atol=1e-5)
dw = f32(4, 1, 3, 3)
case("Conv2D_depthwise_no_bias", "Conv2D", [cx, dw],
     [as32(conv_ref(cx.astype(np.float64), dw, None, (1, 1), (1, 1, 1, 1), (1, 1), 4))],
     {"pads": "1,1,1,1", "groups": 4}, atol=1e-5)


def pool_ref(xv, k, s, pads, ceil_mode, is_max, include_pad):
    n, c, h, w = xv.shape

    def olen(i, kk, ss, pb, pe):
        span = i + pb + pe - kk
        o = (-(-span // ss) if ceil_mode else span // ss) + 1
        if ceil_mode and (o - 1) * ss >= i + pb:
            o -= 1
        return o
    oh_, ow_ = olen(h, k[0], s[0], pads[0], pads[2]), olen(w, k[1], s[1], pads[1], pads[3])
    out = np.zeros((n, c, oh_, ow_))
    for i in range(oh_):
        for j in range(ow_):
            h0, w0 = i * s[0] - pads[0], j * s[1] - pads[1]
            h1, w1 = min(h0 + k[0], h + pads[2]), min(w0 + k[1], w + pads[3])
            win = xv[:, :, max(h0, 0):min(h1, h), max(w0, 0):min(w1, w)]
            if is_max:
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = (h1 - h0) * (w1 - w0) if include_pad else win.shape[2] * win.shape[3]
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out


px = f32(1, 2, 7, 8)
case("MaxPool_ceil", "MaxPool", [px], [as32(pool_ref(px.astype(np.float64), (3, 3), (2, 2), (1, 1, 1, 1), True, True, False))],
     {"kernel": "3,3", "strides": "2,2", "pads": "1,1,1,1", "ceil_mode": "true"})
case("AvgPool_exclude_pad", "AvgPool", [px],
     [as32(pool_ref(px.astype(np.float64), (3, 2), (2, 2), (1, 0, 1, 1), False, False, False))],
     {"kernel": "3,2", "strides": "2,2", "pads": "1,0,1,1"})
case("AvgPool_include_pad", "AvgPool", [px],
     [as32(pool_ref(px.astype(np.float64), (3, 3), (1, 1), (1, 1, 1, 1), False, False, True))],
     {"kernel": "3,3", "pads": "1,1,1,1", "count_include_pad": "true"})
case("GlobalAvgPool", "GlobalAvgPool", [px], [as32(px.astype(np.float64).mean(axis=(2, 3), keepdims=True))])
case("BiasAdd", "BiasAdd", [nchw, gc[:3]], [nchw + gc[:3].reshape(1, 3, 1, 1)])
bias5 = f32(5)
case("BiasAdd_NHWC", "BiasAdd", [nchw, bias5], [nchw + bias5], {"format": "NHWC"})

# ---- training ops --------------------------------------------------------------------------
y = f32(3, 4, lo=0.2, hi=0.9)
g = f32(3, 4)
y64, g64, x64 = y.astype(np.float64), g.astype(np.float64), x[:, :4].astype(np.float64)
xs = x[:, :4].copy()
case("SqrtGrad", "SqrtGrad", [y, g], [as32(g64 / (2 * y64))])
case("RsqrtGrad", "RsqrtGrad", [y, g], [as32(-0.5 * y64 ** 3 * g64)])
case("TanhGrad", "TanhGrad", [y, g], [as32(g64 * (1 - y64 ** 2))])
case("SigmoidGrad", "SigmoidGrad", [y, g], [as32((1 - y64) * y64 * g64)])
case("ReluGrad", "ReluGrad", [g, xs], [np.where(xs > 0, g, 0).astype(np.float32)])
case("GeLUGrad", "GeLUGrad", [g, xs], [as32(g64 * deriv(gelu_tanh, xs))], rtol=1e-4, atol=1e-5)
case("GeLUGrad_erf", "GeLUGrad", [g, xs], [as32(g64 * deriv(gelu_erf, xs))], {"approximate": "none"}, rtol=1e-4, atol=1e-5)
case("FastGeLUGrad", "FastGeLUGrad", [g, xs], [as32(g64 * deriv(lambda v: v * sig(1.702 * v), xs))], rtol=1e-4, atol=1e-5)
case("SiLUGrad", "SiLUGrad", [g, xs], [as32(g64 * deriv(lambda v: v * sig(v), xs))], rtol=1e-4, atol=1e-5)
case("SoftplusGrad", "SoftplusGrad", [g, xs], [as32(g64 * deriv(softplus, xs))], rtol=1e-4, atol=1e-5)
case("SoftplusGradExt", "SoftplusGradExt", [g, xs], [as32(g64 * deriv(lambda v: softplus(v, 2.0, 1.0), xs))],
     {"beta": 2, "threshold": 1}, rtol=1e-4, atol=1e-5)
z = rng.uniform(0, 1, (3, 4)).astype(np.float32)
sce = lambda v: -(z * np.log(sig(v)) + (1 - z) * np.log(1 - sig(v)))  # noqa: E731
case("SigmoidCrossEntropyWithLogits", "SigmoidCrossEntropyWithLogits", [xs, z], [as32(sce(x64))])
case("SigmoidCrossEntropyWithLogitsGrad", "SigmoidCrossEntropyWithLogitsGrad", [xs, z, g],
     [as32(deriv(sce, xs) * g64)], rtol=1e-4, atol=1e-5)
c0, c1, c2, c3_ = f32(6, lo=0, hi=4), f32(6, lo=0, hi=4), f32(6, lo=0, hi=4), f32(6, lo=0, hi=2)
gt = c0 > c1
case("ClipByNormNoDivSum", "ClipByNormNoDivSum", [c0, c1, c2, c3_],
     [as32(np.maximum(np.where(gt, np.sqrt(np.where(gt, c0, c2).astype(np.float64)), c0), c3_))])
mask = rng.integers(0, 2, (3, 4)).astype(np.float32)
case("DropoutGrad", "DropoutGrad", [g, mask], [as32(g64 * mask / 0.8)], {"keep_prob": 0.8})
case("Assign", "Assign", [y, g], [g])
case("AssignAdd", "AssignAdd", [y, g], [as32(y64 + g64)])
wn, gn, lr_ = np.array([2.0, 0.0, 3.0], np.float32), np.array([4.0, 1.0, 0.0], np.float32), np.array(0.1, np.float32)
upd, prm = f32(3), f32(3)
ratio = np.where((wn > 0) & (gn > 0), wn / np.where(gn > 0, gn, 1), 1.0)
case("LambApplyWeightAssign", "LambApplyWeightAssign", [wn, gn, lr_, upd, prm], [as32(prm - 0.1 * ratio * upd)])
var_, m_, v_ = f32(5), f32(5), f32(5, lo=0.1, hi=1.0)
gr = f32(5)
sc = lambda v: np.array(v, np.float32)  # noqa: E731
b1, b2, eps, lr, b1p, b2p = 0.9, 0.999, 1e-8, 0.01, 0.9 ** 3, 0.999 ** 3
m2 = b1 * m_ + (1 - b1) * gr.astype(np.float64)
v2 = b2 * v_ + (1 - b2) * gr.astype(np.float64) ** 2
lr_t = lr * math.sqrt(1 - b2p) / (1 - b1p)
case("Adam", "Adam", [var_, m_, v_, sc(b1p), sc(b2p), sc(lr), sc(b1), sc(b2), sc(eps), gr],
     [as32(var_ - lr_t * m2 / (eps + np.sqrt(v2))), as32(m2), as32(v2)], rtol=1e-4, atol=1e-6)
case("Adam_nesterov", "Adam", [var_, m_, v_, sc(b1p), sc(b2p), sc(lr), sc(b1), sc(b2), sc(eps), gr],
     [as32(var_ - lr_t * (b1 * m2 + (1 - b1) * gr) / (eps + np.sqrt(v2))), as32(m2), as32(v2)],
     {"use_nesterov": "true"}, rtol=1e-4, atol=1e-6)
dec = 0.01
case("AdamWeightDecay", "AdamWeightDecay", [var_, m_, v_, sc(lr), sc(b1), sc(b2), sc(eps), sc(dec), gr],
     [as32(var_ - lr * (m2 / (np.sqrt(v2) + eps) + dec * var_)), as32(m2), as32(v2)], rtol=1e-4, atol=1e-6)
mom = 0.9
acc2 = v_ * mom + gr.astype(np.float64)
case("ApplyMomentum", "ApplyMomentum", [var_, v_, sc(lr), gr, sc(mom)], [as32(var_ - lr * acc2), as32(acc2)])
mul = [0.9, 0.1, 0.999, 0.001, 0.01]
am = mul[0] * m_ + mul[1] * gr.astype(np.float64)
av = mul[2] * v_ + mul[3] * gr.astype(np.float64) ** 2
case("AdamApplyOneWithDecay", "AdamApplyOneWithDecay",
     [gr, v_, m_, var_, sc(lr)] + [sc(v) for v in mul] + [sc(1e-6)],
     [as32(av), as32(am), as32(var_ - lr * (am / (1e-6 + np.sqrt(av)) + mul[4] * var_))], rtol=1e-4, atol=1e-6)
steps = 3.0
nm2 = b1 * m_ + (1 - b1) * gr.astype(np.float64)
nv2 = b2 * v_ + (1 - b2) * gr.astype(np.float64) ** 2
lamb_upd = (nm2 / (1 - b1 ** steps)) / (np.sqrt(nv2 / (1 - b2 ** steps)) + 1e-6) + 1.0 * 0.01 * var_
case("LambApplyOptimizerAssign", "LambApplyOptimizerAssign",
     [gr, v_, m_, var_, sc(b1), sc(1 - b1), sc(b2), sc(1 - b2), sc(1e-6), sc(steps), sc(1.0), sc(0.01)],
     [as32(lamb_upd), as32(nv2), as32(nm2)], rtol=1e-4, atol=1e-5)

# ---- recurrent ops: expected values from ONNX's own numpy reference (onnx.reference) ----
def onnx_reference(op, inputs, num_outputs, attrs):
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    names = [f"i{k}" if a is not None else "" for k, a in enumerate(inputs)]
    outs = [f"o{k}" for k in range(num_outputs)]
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    graph = helper.make_graph(
        [helper.make_node(op, names, outs, **attrs)], op,
        [helper.make_tensor_value_info(n, types[a.dtype], a.shape) for n, a in zip(names, inputs) if a is not None],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    return [as32(o) for o in ReferenceEvaluator(model).run(None, {n: a for n, a in zip(names, inputs) if a is not None})]


def recurrent_case(name, op, inputs, num_outputs, **attrs):
    outs = onnx_reference(op, inputs, num_outputs, attrs)
    case(name, op, inputs, outs, {k: v for k, v in attrs.items()}, rtol=1e-4, atol=1e-5)


T_, B_, I_, H_ = 4, 2, 3, 5
rw = lambda *s: f32(*s, lo=-0.6, hi=0.6)  # noqa: E731
recurrent_case("LSTM_bidirectional_peepholes", "LSTM",
               [f32(T_, B_, I_), rw(2, 4 * H_, I_), rw(2, 4 * H_, H_), rw(2, 8 * H_), None, f32(2, B_, H_),
                f32(2, B_, H_), rw(2, 3 * H_)], 3, hidden_size=H_, direction="bidirectional")
recurrent_case("LSTM_reverse_layout1", "LSTM",
               [f32(B_, T_, I_), rw(1, 4 * H_, I_), rw(1, 4 * H_, H_), rw(1, 8 * H_)], 3, hidden_size=H_,
               direction="reverse", layout=1)
recurrent_case("GRU_bidirectional_linear_before_reset", "GRU",
               [f32(T_, B_, I_), rw(2, 3 * H_, I_), rw(2, 3 * H_, H_), rw(2, 6 * H_), None, f32(2, B_, H_)], 2,
               hidden_size=H_, direction="bidirectional", linear_before_reset=1)
recurrent_case("GRU_forward", "GRU", [f32(T_, B_, I_), rw(1, 3 * H_, I_), rw(1, 3 * H_, H_), rw(1, 6 * H_)], 2,
               hidden_size=H_)
recurrent_case("RNN_reverse_initial_h", "RNN",
               [f32(T_, B_, I_), rw(1, H_, I_), rw(1, H_, H_), rw(1, 2 * H_), None, f32(1, B_, H_)], 2,
               hidden_size=H_, direction="reverse")
# onnxruntime's DynamicQuantizeLSTM as gkrt defines it (runtime/ir/ops/recurrent_quant.h):
# X quantized to uint8 once, h before every step over the batch, exact integer products
# rescaled in float32 by x_scale * w_scale[column], then LSTM's default gates.
def dyn_u8(x):
    x = x.astype(np.float32)
    mx, mn = max(np.float32(0), x.max()), min(np.float32(0), x.min())
    scale = np.float32((np.float32(1) if mx == mn else np.float32(mx - mn)) / np.float32(255))
    zp = int(np.rint(np.clip(np.float32(0) - np.float32(mn / scale), 0, 255)))
    q = np.clip(np.rint((x / scale).astype(np.float32)) + zp, 0, 255).astype(np.int64)
    return q, scale, zp


def quant_lstm(x, w, r, b, h0, c0, ws, wz, rs, rz, reverse_dirs):
    T, B, _ = x.shape
    D, H = r.shape[0], r.shape[1]
    G = 4 * H
    per = lambda p, d: np.broadcast_to(p.reshape(D, -1)[d] if p.size > 1 else p.reshape(1), (G,))  # noqa: E731
    xq, xs, xz = dyn_u8(x)
    y = np.zeros((T, D, B, H), np.float32)
    hs_out, cs_out = np.zeros((D, B, H), np.float32), np.zeros((D, B, H), np.float32)
    sig = lambda v: (1.0 / (1.0 + np.exp(-v.astype(np.float64)))).astype(np.float32)  # noqa: E731
    for d in range(D):
        wc = w[d].astype(np.int64) - per(wz, d).astype(np.int64)
        rc = r[d].astype(np.int64) - per(rz, d).astype(np.int64)
        mx = (xs * per(ws, d)).astype(np.float32)
        xw = ((xq - xz) @ wc).astype(np.float32) * mx  # [T, B, G]
        bias = (b[d, :G] + b[d, G:]).astype(np.float32)
        h, c = h0[d].copy(), c0[d].copy()
        for step in range(T):
            t = T - 1 - step if d in reverse_dirs else step
            hq, hsc, hz = dyn_u8(h)
            mh = (hsc * per(rs, d)).astype(np.float32)
            pre = ((xw[t] + ((hq - hz) @ rc).astype(np.float32) * mh) + bias).astype(np.float32)
            i, o, f, cc = sig(pre[:, :H]), sig(pre[:, H:2 * H]), sig(pre[:, 2 * H:3 * H]), np.tanh(pre[:, 3 * H:].astype(np.float64))
            c = (f * c + i * cc).astype(np.float32)
            h = (o * np.tanh(c.astype(np.float64))).astype(np.float32)
            y[t, d] = h
        hs_out[d], cs_out[d] = h, c
    return [y, hs_out, cs_out]


qT, qB, qI, qH = 5, 2, 6, 4
qx = f32(qT, qB, qI)
qw = rng.integers(0, 256, (2, qI, 4 * qH)).astype(np.uint8)
qr = rng.integers(0, 256, (2, qH, 4 * qH)).astype(np.uint8)
qb = f32(2, 8 * qH, lo=-0.2, hi=0.2)
qh0, qc0 = f32(2, qB, qH, lo=-0.5, hi=0.5), f32(2, qB, qH, lo=-0.5, hi=0.5)
qws, qrs = np.array([0.006, 0.004], np.float32), np.array([0.005, 0.007], np.float32)
qwz, qrz = np.array([128, 121], np.uint8), np.array([131, 127], np.uint8)
case("DynamicQuantizeLSTM_bidirectional_uint8", "DynamicQuantizeLSTM",
     [qx, qw, qr, qb, None, qh0, qc0, None, qws, qwz, qrs, qrz],
     quant_lstm(qx, qw, qr, qb, qh0, qc0, qws, qwz, qrs, qrz, {1}), {"hidden_size": qH, "direction": "bidirectional"},
     rtol=1e-4, atol=1e-5, constant_inputs=(1, 2, 3, 8, 9, 10, 11))
qw8 = rng.integers(-128, 128, (1, qI, 4 * qH)).astype(np.int8)
qr8 = rng.integers(-128, 128, (1, qH, 4 * qH)).astype(np.int8)
qcol = lambda lo, hi: rng.uniform(lo, hi, (1, 4 * qH)).astype(np.float32)  # noqa: E731
qz8 = lambda: rng.integers(-3, 4, (1, 4 * qH)).astype(np.int8)  # noqa: E731
qwc, qrc, qwz8, qrz8 = qcol(0.003, 0.008), qcol(0.003, 0.008), qz8(), qz8()
case("DynamicQuantizeLSTM_forward_int8_per_column", "DynamicQuantizeLSTM",
     [qx, qw8, qr8, qb[:1], None, qh0[:1], qc0[:1], None, qwc, qwz8, qrc, qrz8],
     quant_lstm(qx, qw8, qr8, qb[:1], qh0[:1], qc0[:1], qwc, qwz8, qrc, qrz8, set()), {"hidden_size": qH},
     rtol=1e-4, atol=1e-5, constant_inputs=(1, 2, 3, 8, 9, 10, 11))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_cases_indexing_conv_transpose  # noqa: E402

op_cases_indexing_conv_transpose.add_cases(case, rng)
# Quantization (ONNX QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear): numpy's
# rint rounds half to even, as ONNX does. The 4-/2-bit and float8 outputs have no .npy
# form: tests/unit/narrow_dtype_test.cc and the ONNX node tests cover them.
qx = np.concatenate([f32(2, 4, 5, lo=-60, hi=60), np.full((2, 4, 1), 2.5, np.float32)], axis=2)  # 2x4x6, with ties
q_scale = np.array([0.5, 1.0, 2.0, 0.25], np.float32)
q_zp = np.array([3, -4, 0, 100], np.int8)
case("QuantizeLinear_per_axis_int8", "QuantizeLinear", [qx, q_scale, q_zp],
     [np.clip(np.rint(qx / q_scale.reshape(1, 4, 1)).astype(np.int32) + q_zp.reshape(1, 4, 1), -128, 127).astype(np.int8)],
     {"axis": 1, "to": "int8", "precision": "float32"}, rtol=0, atol=0)
qb_scale = rng.uniform(0.5, 4, (2, 4, 2)).astype(np.float32)  # blocks of 4 along axis 2 (the last one short)
qb_zp = rng.integers(0, 255, (2, 4, 2)).astype(np.uint8)
qb_full = np.repeat(qb_scale, 4, axis=2)[:, :, :6]
qb_zfull = np.repeat(qb_zp, 4, axis=2)[:, :, :6].astype(np.int32)
case("QuantizeLinear_blocked_uint8", "QuantizeLinear", [qx, qb_scale, qb_zp],
     [np.clip(np.rint(qx / qb_full).astype(np.int32) + qb_zfull, 0, 255).astype(np.uint8)],
     {"axis": 2, "block_size": 4, "to": "uint8", "precision": "float32"}, rtol=0, atol=0)
dq_x = rng.integers(-128, 127, (2, 4, 6)).astype(np.int8)
case("DequantizeLinear_per_axis_int8", "DequantizeLinear", [dq_x, q_scale, q_zp],
     [as32((dq_x.astype(np.float64) - q_zp.reshape(1, 4, 1)) * q_scale.reshape(1, 4, 1))],
     {"axis": 1, "to": "float32"}, rtol=0, atol=0)
dyn_x = f32(3, 7, lo=-3, hi=5)
dyn_scale = np.float32((np.float32(max(0, dyn_x.max())) - np.float32(min(0, dyn_x.min()))) / np.float32(255))
dyn_zp = np.rint(np.clip(np.float32(0) - np.float32(min(0, dyn_x.min())) / dyn_scale, 0, 255))
case("DynamicQuantizeLinear", "DynamicQuantizeLinear", [dyn_x],
     [np.clip(np.rint(dyn_x / dyn_scale) + dyn_zp, 0, 255).astype(np.uint8), np.array(dyn_scale, np.float32),
      np.array(dyn_zp, np.uint8)], rtol=0, atol=0)

import op_cases_quant_linear  # noqa: E402

op_cases_quant_linear.add_cases(case, rng)

# ---- SliceAtRun: starts/ends are run-time inputs (not constants); the kept counts are attributes
sr = f32(4, 6, 5)
case("SliceAtRun", "SliceAtRun", [sr, i64(1, -2), i64(3, 100)], [sr[1:3, :, -2:]], {"axes": "0,2", "sizes": "2,2"})
case("SliceAtRun_steps_int32", "SliceAtRun", [sr, np.array([5, 0], np.int32), np.array([1, 5], np.int32)],
     [sr[:, 5:1:-2, 0:5:3]], {"axes": "1,-1", "steps": "-2,3", "sizes": "2,2"})

# ---- 3-D pooling: numpy over explicit windows (ONNX semantics) ------------------------
def pool3d_ref(xv, k, st, dil, pads, ceil_mode, mode, count_include_pad=False):
    n_, c_ = xv.shape[:2]
    sp = xv.shape[2:]
    outs = []
    for d in range(3):
        reach = dil[d] * (k[d] - 1) + 1
        span = sp[d] + pads[d] + pads[d + 3] - reach
        ln = (-(-span // st[d]) if ceil_mode else span // st[d]) + 1
        if ceil_mode and (ln - 1) * st[d] >= sp[d] + pads[d]:
            ln -= 1
        outs.append(ln)
    y = np.zeros((n_, c_, *outs))
    for o in np.ndindex(*outs):
        taps = [[o[d] * st[d] - pads[d] + t * dil[d] for t in range(k[d]) if o[d] * st[d] - pads[d] + t * dil[d] < sp[d] + pads[d + 3]]
                for d in range(3)]
        inside = [[i for i in taps[d] if 0 <= i < sp[d]] for d in range(3)]
        win = xv[:, :, inside[0]][:, :, :, inside[1]][:, :, :, :, inside[2]].reshape(n_, c_, -1)
        if mode == "max":
            y[(slice(None), slice(None), *o)] = win.max(axis=2)
        else:
            count = len(taps[0]) * len(taps[1]) * len(taps[2]) if count_include_pad else win.shape[2]
            y[(slice(None), slice(None), *o)] = win.sum(axis=2) / count
    return y


p3 = f32(1, 2, 5, 6, 7)
case("MaxPool3D", "MaxPool3D", [p3], [as32(pool3d_ref(p3.astype(np.float64), (2, 3, 2), (2, 1, 2), (1, 2, 2),
                                                       (1, 0, 1, 0, 1, 1), True, "max"))],
     {"kernel": "2,3,2", "strides": "2,1,2", "dilations": "1,2,2", "pads": "1,0,1,0,1,1", "ceil_mode": 1})
case("AvgPool3D", "AvgPool3D", [p3], [as32(pool3d_ref(p3.astype(np.float64), (3, 2, 3), (2, 2, 2), (1, 1, 1),
                                                       (1, 1, 1, 1, 0, 1), True, "avg"))],
     {"kernel": "3,2,3", "strides": "2,2,2", "pads": "1,1,1,1,0,1", "ceil_mode": 1})
case("AvgPool3D_count_include_pad", "AvgPool3D", [p3],
     [as32(pool3d_ref(p3.astype(np.float64), (2, 2, 2), (1, 2, 3), (2, 1, 1), (1, 0, 1, 1, 1, 0), False, "avg", True))],
     {"kernel": "2,2,2", "strides": "1,2,3", "dilations": "2,1,1", "pads": "1,0,1,1,1,0", "count_include_pad": 1})
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pattern_op_cases.py")).read())

with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump({"cases": cases}, f, indent=1)
print(f"wrote {len(cases)} golden cases to {OUT}")
