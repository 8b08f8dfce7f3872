// The cpu kernel of BlockQuantMatMul (runtime/ir/ops/block_quant_matmul.h): weights read
// in their blocks, widened for the whole matrix only for oneDNN's prefill product (4 MB at most).
//  - Up to 4 rows (decode), 4 a pass up to 12 rows with int8 activations and 6 with float
//    ones (block_quant_parts.h): each task takes a range of output columns and streams
//    their blocks once for all rows of a pass. precision int8: the rows are quantized per block first
//    and each block is an integer dot product (AVX2: vpmaddubsw on the nibbles, the
//    scale product as one FMA a block); float32: the block's values widened to float
//    and multiplied with x. The offsets' term is sum(offset * sum of the block of x).
//  - More rows (prefill): each task widens 64 columns at a time to float panels and runs
//    the packed GEMM (backends/cpu/math/gemm.h) on them; from 64 rows, weights of up to
//    4 MB widened, all columns to float32 and multiplied by oneDNN's matmul
//    (block_quant_onednn.h, where it measured faster). float32 whatever the precision (more exact
//    than int8 activations, which the op allows), except with avx512_vnni and precision
//    int8 (block_quant_vnni.cc).
// Allocates nothing per launch. AVX2+FMA when the CPU tier has it (cpu_tier.h), else
// portable loops; GKRT_CPU_ISA=scalar runs those.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace gkrt::cpu {

bool canRunBlockQuantMatMul(const ir::Graph& g, const ir::Node& node);
std::unique_ptr<Kernel> compileBlockQuantMatMul(const ir::Graph& g, const ir::Node& node, ThreadPool& pool);

}  // namespace gkrt::cpu
