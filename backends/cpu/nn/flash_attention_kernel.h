// The cpu kernel of the FlashAttention pattern op (fusion/passes/pattern_attention_pass.cc):
// softmax(Q K^T * scale + mask) V per (batch, head) in query blocks, the two products on
// the own GEMM's register-tile micro-kernel (gemm.h), the softmax online across key
// blocks, so no more than one query block x key block of scores exists at a time.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

std::unique_ptr<Kernel> makeFlashAttentionKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
