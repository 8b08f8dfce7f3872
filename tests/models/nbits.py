"""onnxruntime's MatMulNBits block quantization (the packing of its MLAS kernels) and its
dequantisation in numpy, for the tests that write MatMulNBits files (make_llm.py,
check_contrib_ops.py)."""
import numpy as np

BLOCK = 32


def quantize_nbits(wt, bits, symmetric, block=BLOCK):
    """onnxruntime's MatMulNBits packing (the MLAS kernels that
    onnxruntime.quantization.matmul_nbits_quantizer calls). wt: MatMul B [K, N].
    Returns B uint8 [N, k_blocks, block*bits/8], scales f32 [N, k_blocks],
    zero_points uint8 [N, ceil(k_blocks*bits/8)] (None when symmetric)."""
    from onnxruntime.capi._pybind_state import quantize_matmul_4bits, quantize_matmul_8bits

    K, N = wt.shape
    kb = (K + block - 1) // block
    wt = np.ascontiguousarray(np.pad(wt, ((0, kb * block - K), (0, 0))), dtype=np.float32)
    packed = np.zeros((N, kb, block * bits // 8), np.uint8)
    scales = np.zeros((N, kb), np.float32)
    zp = np.zeros((N, (kb * bits + 7) // 8), np.uint8)
    (quantize_matmul_4bits if bits == 4 else quantize_matmul_8bits)(packed, wt, scales, zp, block, N, K, symmetric)
    return packed, scales, (None if symmetric else zp)


def dequantize_nbits(packed, scales, zp, bits, K):
    """MatMulNBits semantics per ContribOperators.md, in numpy: B[n, k] =
    (q - zero_point) * scale, 4-bit values low nibble first, default zero point
    2^(bits-1). Returns [K, N]."""
    N, kb, _ = packed.shape
    if bits == 4:
        q = np.stack([packed & 15, packed >> 4], axis=-1).reshape(N, kb, -1)
    else:
        q = packed
    if zp is None:
        z = np.full((N, kb), 2 ** (bits - 1), np.float32)
    elif bits == 4:
        z = np.stack([zp & 15, zp >> 4], axis=-1).reshape(N, -1)[:, :kb].astype(np.float32)
    else:
        z = zp[:, :kb].astype(np.float32)
    deq = (q.astype(np.float32) - z[..., None]) * scales[..., None]
    return deq.reshape(N, -1)[:, :K].T
