// What a Conv2D kernel on the cpu backend reads, worked out once from the node: the
// input, constant weights, bias, and the epilogue as oneDNN post-ops (a constant
// per-channel Mul right after the convolution folded into the weights and bias, then a
// constant per-channel Add into the bias: a BatchNorm after a convolution, as DenseNet's
// conv -> BN -> ReLU writes it, costs no post-op). Shared by the
// oneDNN convolution (onednn_conv.cc) and the Winograd kernel (winograd_kernel.cc).
#pragma once

#ifdef GKRT_HAVE_DNNL
#include <vector>

#include "backends/cpu/onednn/onednn_post_ops.h"

namespace gkrt::cpu {

struct ConvPlan {
  const ir::Graph* body = nullptr;
  const ir::Node* conv = nullptr;
  Source x;
  const void* weights = nullptr;
  bool has_bias = false;
  Source bias;
  std::vector<float> folded_bias;     // conv bias (* Mul) + a constant per-channel Add, made at compile
  std::vector<float> folded_weights;  // weights * a constant per-channel Mul, made at compile
  std::vector<PostOp> posts;
  int output = -1;  // the node's output tensor (in g)
  int x_tensor = -1;
};

// False when `node` is not a float32 Conv2D (or a Fused node headed by one) whose
// epilogue maps to post-ops. After a copy or move of the plan, folded parts must be
// re-pointed (repointFolded).
bool planConv(const ir::Graph& g, const ir::Node& node, ConvPlan* p);
inline void repointFolded(ConvPlan* p) {
  if (!p->folded_bias.empty()) p->bias.constant = p->folded_bias.data();
  if (!p->folded_weights.empty()) p->weights = p->folded_weights.data();
}

// Whether an operand of shape `s` broadcast against [N, C, H, W] gives one value per
// channel ([C, 1, 1] or [1, C, 1, 1]; [C] would broadcast along W).
bool isPerChannel(const Shape& s, int64_t channels);

}  // namespace gkrt::cpu
#endif
