// A matmul as the cpu backend plans it from a node (MatMul, BatchMatMul, Gemm, or a Fused
// cluster of one of them and its elementwise chain): the operands, where their bytes are
// at launch, and the chain as oneDNN post-ops. onednn_kernels.cc plans it; its kernels and
// the int8-digit kernel (quantization/int8_digit_matmul.h) run it.
#pragma once

#ifdef GKRT_HAVE_DNNL
#include <vector>

#include "backends/cpu/onednn/onednn_post_ops.h"

namespace gkrt::cpu {

struct MatMulPlan {
  bool ta = false, tb = false;
  float alpha = 1.0f;
  const ir::Tensor *a = nullptr, *b = nullptr;
  Source sa, sb;
  Shape y;
  std::vector<PostOp> posts;
};

// A binary add whose plain float32 operand holds one value per column of a product
// shaped `y` (shape [N], [1, N], [1, 1, N], ...): the same on every row.
bool rowBias(const PostOp& po, const Shape& y);

}  // namespace gkrt::cpu
#endif
