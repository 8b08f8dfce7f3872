// The OpenCL backend's hand-written kernels (OpenCL C): tiled GEMM with local memory
// (MatMul/BatchMatMul/Gemm), direct Conv2D (grouped, depthwise, dilated), pooling,
// softmax/log-softmax along any axis, LayerNorm, and the matmul epilogues of the
// Appendix 3 pattern ops (bias, residual, ReLU, GeLU). Built once per device. The other
// pattern ops the backend runs (AddLayerNorm/AddRmsNorm, SwiGLU, FlashAttention) are
// rendered per node, as on cuda (backends/codegen/pattern_kernels.h).
#pragma once

namespace gkrt::opencl {

// Tile edge of gk_matmul; its work-groups are kMatMulTile x kMatMulTile.
constexpr int kMatMulTile = 16;
// Work-group size of gk_layernorm (a power of two).
constexpr int kLayerNormLocalSize = 64;

const char* libraryKernelSource();

}  // namespace gkrt::opencl
