# Golden cases of the Appendix 3 pattern ops (runtime/ir/ops/pattern_ops.cc), computed
# with numpy in float64. Run by make_op_cases.py, whose helpers (case, f32, as32, erf,
# sig) it uses.
pa, pb = f32(2, 3, 8), f32(2, 3, 8)
ps = pa.astype(np.float32) + pb
ps64 = ps.astype(np.float64)
pg, pbeta = f32(8), f32(8)
pln = (ps64 - ps64.mean(-1, keepdims=True)) / np.sqrt(ps64.var(-1, keepdims=True) + 1e-5) * pg + pbeta
case("AddLayerNorm", "AddLayerNorm", [pa, pb, pg, pbeta], [as32(pln), ps], {"axis": -1, "epsilon": 1e-5}, atol=1e-5)
prstd = 1 / np.sqrt((ps64 ** 2).mean(-1, keepdims=True) + 1e-6)
case("AddRmsNorm", "AddRmsNorm", [pa, pb, pg], [as32(ps64 * prstd * pg), ps], {"axis": -1, "epsilon": 1e-6}, atol=1e-5)
# RmsNormQuant / AddRmsNormQuant: RmsNorm's y and the beta add in float32 as the unfused ops
# store them, then QuantizeLinear (float32 division, round half to even, saturate).
qn_x = f32(4, 8, lo=-3, hi=3)
qn_x64 = qn_x.astype(np.float64)
qn_rstd = 1 / np.sqrt((qn_x64 ** 2).mean(-1, keepdims=True) + 1e-5)
qn_y = as32(qn_x64 * qn_rstd * pg)
qn_scale, qn_zp = np.array(0.02, np.float32), np.array(-5, np.int8)
qn_v = (qn_y + pbeta).astype(np.float32)
qn_q = np.clip(np.rint(qn_v / qn_scale).astype(np.int32) + int(qn_zp), -128, 127).astype(np.int8)
case("RmsNormQuant", "RmsNormQuant", [qn_x, pg, qn_scale, qn_zp, pbeta], [qn_q], {"axis": -1, "epsilon": 1e-5},
     rtol=0, atol=0)
qa_scale, qa_zp = np.array(0.03, np.float32), np.array(128, np.uint8)
qa_y = as32(ps64 * prstd * pg)
qa_q = np.clip(np.rint(qa_y / qa_scale).astype(np.int32) + int(qa_zp), 0, 255).astype(np.uint8)
case("AddRmsNormQuant", "AddRmsNormQuant", [pa, pb, pg, qa_scale, qa_zp], [qa_q, ps], {"axis": -1, "epsilon": 1e-6},
     rtol=0, atol=0)
sx = f32(3, 10).astype(np.float64)
case("SwiGLU", "SwiGLU", [sx.astype(np.float32)], [as32(sx[:, :5] * sig(sx[:, :5]) * sx[:, 5:])], {"axis": -1, "keep_dims": "false"})

# Attention in BSH (2 heads of 4), the key length 7 differing from the query length 5.
aq, ak, av, am = f32(1, 5, 8), f32(1, 7, 8), f32(1, 7, 8), f32(1, 1, 1, 7)
split = lambda t: t.astype(np.float64).reshape(t.shape[0], t.shape[1], 2, 4).transpose(0, 2, 1, 3)  # noqa: E731
s_ = split(aq) @ split(ak).transpose(0, 1, 3, 2) * 0.5 + am
p_ = np.exp(s_ - s_.max(-1, keepdims=True))
p_ /= p_.sum(-1, keepdims=True)
ao = (p_ @ split(av)).transpose(0, 2, 1, 3).reshape(1, 5, 8)
case("FlashAttention_BSH_masked", "FlashAttention", [aq, ak, av, am], [as32(ao)],
     {"scale": 0.5, "layout": "BSH", "heads": 2, "key_transposed": "false"}, atol=1e-5)
bq, bk, bv = split(aq), split(ak), split(av)
s2 = bq @ bk.transpose(0, 1, 3, 2) * 0.25
p2 = np.exp(s2 - s2.max(-1, keepdims=True))
p2 /= p2.sum(-1, keepdims=True)
case("FlashAttention_BNSD_key_transposed", "FlashAttention",
     [as32(bq), as32(bk.transpose(0, 1, 3, 2)), as32(bv)], [as32(p2 @ bv)],
     {"scale": 0.25, "layout": "BNSD", "heads": 0, "key_transposed": "true"}, atol=1e-5)

mx, mw, mbias, mres = f32(2, 3, 6), f32(6, 5), f32(5), f32(2, 3, 5)
mp = mx.astype(np.float64) @ mw + mbias
nt = {"transpose_a": "false", "transpose_b": "false"}
case("MatMulBiasAdd", "MatMulBiasAdd", [mx, mw, mbias], [as32(mp)], nt)
case("MatMulAdd", "MatMulAdd", [mx, mw, mres, mbias], [as32(mp + mres)], nt)
case("MatMulRelu", "MatMulRelu", [mx, mw.T.copy(), mbias], [as32(np.maximum(mp, 0))],
     {"transpose_a": "false", "transpose_b": "true"})
case("MatMulGelu", "MatMulGelu", [mx, mw, mbias], [as32(gelu_erf(mp))], {"approximate": "none"}, atol=1e-5)
case("MatMulSplit", "MatMulSplit", [mx, mw, mbias], [as32(mp[..., :2]), as32(mp[..., 2:])],
     {"axis": -1, "sizes": "2,3"})
case("MatMulAllReduce", "MatMulAllReduce", [mx, mw, mbias], [as32(mp)], nt)
case("AllReduce", "AllReduce", [mx], [mx])

# CachedAttention (gkrt's own, fusion/kv_cache.h): 3 new positions after 4 cached ones in a
# cache of 10 (positions past 7 hold garbage the op must not read), 4 query heads on 2 KV heads.
cq, ckn, cvn = f32(1, 4, 3, 8), f32(1, 2, 3, 8), f32(1, 2, 3, 8)
cck, ccv = f32(1, 2, 10, 8, lo=-50, hi=50), f32(1, 2, 10, 8, lo=-50, hi=50)
cck[:, :, :4], ccv[:, :, :4] = f32(1, 2, 4, 8), f32(1, 2, 4, 8)
c_keys = np.concatenate([cck[:, :, :4], ckn], 2).astype(np.float64).repeat(2, axis=1)
c_vals = np.concatenate([ccv[:, :, :4], cvn], 2).astype(np.float64).repeat(2, axis=1)
c_s = cq.astype(np.float64) @ c_keys.transpose(0, 1, 3, 2) * 0.3
c_s += np.where(np.arange(7)[None, :] <= 4 + np.arange(3)[:, None], 0, -np.inf)
c_p = np.exp(c_s - c_s.max(-1, keepdims=True))
c_p /= c_p.sum(-1, keepdims=True)
case("CachedAttention_gqa_causal", "CachedAttention", [cq, ckn, cvn, cck, ccv, np.array([4], np.int64)], [as32(c_p @ c_vals)],
     {"scale": 0.3, "layout": "BNSD", "heads": 0, "key_transposed": "false"}, atol=1e-5)

# Rotary (gkrt's own, fusion/passes/rotary_fusion.cc): x [1, 3, 2, 8] with full-size angles
# broadcast over the heads, and with half-size angles (both halves share them).
rx = f32(1, 3, 2, 8)
rang = f32(1, 1, 2, 4, lo=-3, hi=3).astype(np.float64)
rcos_h, rsin_h = np.cos(rang), np.sin(rang)
rcos_f, rsin_f = np.concatenate([rcos_h, rcos_h], -1), np.concatenate([rsin_h, rsin_h], -1)
rx64 = rx.astype(np.float64)
rrot = np.concatenate([-rx64[..., 4:], rx64[..., :4]], -1)
rwant = rx64 * rcos_f + rrot * rsin_f
case("Rotary_full_angles", "Rotary", [rx, as32(rcos_f), as32(rsin_f)], [as32(rwant)], atol=1e-5)
case("Rotary_half_angles", "Rotary", [rx, as32(rcos_h), as32(rsin_h)], [as32(rwant)], atol=1e-5)

# BlockQuantMatMul (gkrt's own, runtime/ir/ops/block_quant_matmul.h): x [1, 2, 80] (K not a
# multiple of B = 32: the last block holds 16) against N = 5 columns of int4 values
# (two's complement nibbles, even k low) with offsets, then 8-bit values with int8
# activations (each block of 32 of a row quantized: q = rint(x * 127 / max|x|) in float32).
bq_x = f32(1, 2, 80)
bq_rng = np.random.default_rng(7)
bq_q4 = bq_rng.integers(-8, 8, size=(5, 3, 32))
bq_s = (bq_rng.random((5, 3)) * 0.1 + 0.01).astype(np.float32)
bq_o = (bq_rng.random((5, 3)) * 0.2 - 0.1).astype(np.float32)
bq_nib = (bq_q4 & 15).astype(np.uint8)
bq_w4 = (bq_nib[..., 0::2] | (bq_nib[..., 1::2] << 4)).astype(np.uint8)
bq_deq4 = (bq_q4 * bq_s[..., None].astype(np.float64) + bq_o[..., None]).reshape(5, 96)[:, :80]
case("BlockQuantMatMul_int4_offsets", "BlockQuantMatMul", [bq_x, bq_w4, bq_s, bq_o],
     [as32(bq_x.astype(np.float64) @ bq_deq4.T)], {"block_size": "32", "to": "int4", "precision": "float32"}, atol=1e-5)
bq_q8 = bq_rng.integers(-128, 128, size=(5, 3, 32)).astype(np.int8)
bq_bias = f32(5)
bq_xp = np.zeros((2, 96), np.float32)
bq_xp[:, :80] = bq_x.reshape(2, 80)
bq_y8 = np.zeros((2, 5))
for bq_m in range(2):
    for bq_b in range(3):
        bq_blk = bq_xp[bq_m, 32 * bq_b:32 * bq_b + 32]
        bq_amax = np.float32(np.abs(bq_blk).max())
        bq_xq = np.rint(bq_blk * (np.float32(127) / bq_amax)).astype(np.int64)
        bq_sx = float(bq_amax / np.float32(127))
        bq_y8[bq_m] += bq_sx * bq_s[:, bq_b] * (bq_q8[:, bq_b].astype(np.int64) @ bq_xq)
bq_y8 += bq_bias
case("BlockQuantMatMul_int8_int8_activations", "BlockQuantMatMul", [bq_x, bq_q8, bq_s, None, bq_bias],
     [as32(bq_y8.reshape(1, 2, 5))], {"block_size": "32", "to": "int8", "precision": "int8"}, atol=1e-5)
