// The OpenCL backend's hand-written kernels (OpenCL C): tiled GEMM with local memory
// (MatMul/BatchMatMul/Gemm), direct Conv2D (grouped, depthwise, dilated), pooling,
// softmax/log-softmax along any axis, LayerNorm, and the Appendix 3 pattern ops
// AddLayerNorm/AddRmsNorm, SwiGLU, FlashAttention and the matmul epilogues (bias,
// residual, ReLU, GeLU). Built once per device.
#pragma once

namespace gkrt::opencl {

// Tile edge of gk_matmul; its work-groups are kMatMulTile x kMatMulTile.
constexpr int kMatMulTile = 16;
// Work-group size of gk_layernorm (a power of two).
constexpr int kLayerNormLocalSize = 64;
// Largest value head dim gk_flash_attention keeps in registers (GK_ATTN_MAX_D).
constexpr int kAttentionMaxHeadDim = 256;

const char* libraryKernelSource();

}  // namespace gkrt::opencl
