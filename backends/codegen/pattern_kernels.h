// The Appendix 3 pattern ops the GPU backends run, rendered from one source in either
// kernel dialect (kernel_dialect.h), shapes and strides baked in as the cluster
// renderer bakes them. The opencl backend runs exactly these texts (PoCL in the tests),
// so the CUDA texts differ from tested code only in the dialect's spellings.
//
//  - AddLayerNorm / AddRmsNorm (float32): one work-group per row (grid-stride over rows),
//    the sum stored and read back only by the work-item that wrote it; the LayerNorm mean
//    is taken relative to the row's first sum (a constant row normalises to exactly 0).
//  - RmsNormQuant / AddRmsNormQuant (float32 in, int8/uint8 out, per-tensor scale and
//    zero point): as the norms, then saturate(rint(v / scale) + zp) in float32.
//  - SwiGLU (float32): elementwise, silu(first half) * second half.
//  - MatMulSplit (float32, 2-D weights): 16 x 16 output tiles, K staged in local memory,
//    each element stored into the output that holds its column.
//  - QuantBatchMatMul (int8/uint8 a and b, 2-D b): the same tiles with int32 sums of
//    (a - azp)(b - bzp), then float(acc + B[n]) * float(as * bs[n]), as the reference.
//  - FlashAttention (float32, V1 masked and V2; BNSD, BSND, BSH, K stored transposed):
//    a work-group takes up to kFlashRowsPerGroup query rows of one (batch, head),
//    kFlashLanes work-items a row; keys go in chunks of kFlashLanes, one key a work-item
//    (its score), the chunk's probabilities shared through local memory, and each
//    work-item keeps an online softmax over its own columns of the output row. The score
//    matrix is never stored. A score of -inf adds nothing; a NaN or +inf score makes the
//    row NaN, and so does a row with every key masked: as the unfused softmax.
//
// Launch: reduce = true (work-groups of local_size, grid-stride over `items` groups)
// for the norm, attention and MatMulSplit kernels; elementwise for SwiGLU. Arguments: the outputs,
// then every input slot of the node in order (an absent one gets a null pointer).
#pragma once

#include <string>

#include "backends/codegen/cluster_renderer.h"

namespace gkrt::codegen {

// Work-items that share one attention query row (one key of each chunk, every 32nd
// output column each: a warp on NVIDIA GPUs), and query rows a work-group.
constexpr int kFlashLanes = 32;
constexpr int kFlashRowsPerGroup = 4;
// Local memory a pattern kernel may use, in floats: 30 KiB, under OpenCL's 32 KiB minimum.
constexpr int kPatternLocalFloats = 7680;
// Largest query/value head dim of the attention kernel (q in local memory, 8 output columns a work-item).
constexpr int kFlashMaxHeadDim = 256;

// `node` as kernel `name`; kUnsupported "not a pattern kernel" for other ops, or the
// reason a pattern op's operands do not fit (dtype, head dim, shapes).
StatusOr<RenderedKernel> renderPatternKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                             const KernelDialect& d);

// Whether `status` (from renderPatternKernel) only says the op is not a pattern op.
bool notAPatternKernel(const Status& status);

}  // namespace gkrt::codegen
