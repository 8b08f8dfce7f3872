// The decoder-LLM ops on the GPU backends (opencl and cuda), rendered from one source in
// either kernel dialect (kernel_dialect.h), shapes baked in, so that a decode step runs
// on the device with no host fallback (and cuda can capture it in one CUDA graph):
//
//  - RmsNorm(x, gamma?) (float32): one work-group a row, as AddRmsNorm without the add.
//  - Rotary(x, cos, sin) (float32, "rotate half"): a work-item per pair (j, j + D/2) of
//    a row; the row's cos/sin offset from the broadcast strides of their leading dims.
//  - CachedAttention(q, k, v, cache_k, cache_v, past) (float32 BNSD, past int32/int64
//    read on the device): the first query head of each KV head stores the step's k and v
//    rows into the caches at past + i; every query row then attends causally to
//    positions 0 .. past + i, reading positions below `past` from the caches and the
//    others from k and v (so no work-group reads a cache row written in the same run).
//    The work-group shape is FlashAttention's (pattern_kernels.h): kFlashLanes items a
//    row, keys in chunks staged in local memory, an online softmax. A past outside
//    0 .. capacity - S (the generator never passes one) writes nothing and gives NaN rows.
//  - BlockQuantMatMul(x, w, scales, offsets?, bias?) (4-bit or int8 values): a
//    work-group takes one row of x (staged in local memory; under `precision` int8 its
//    blocks quantized there as the reference quantizes them, so the block sums are the
//    reference's integers) and kBqColumns output columns, kFlashLanes items a column
//    reading its 32-bit words of values coalesced; the column's partial sums meet in
//    local memory.
#pragma once

#include <string>

#include "backends/codegen/cluster_renderer.h"

namespace gkrt::codegen {

// Output columns a work-group of the BlockQuantMatMul kernel.
constexpr int kBqColumns = 8;

// Whether `node` is one of the ops above.
bool isLlmKernelOp(const ir::Node& node);

// `node` as kernel `name` (the pattern kernels' launch: reduce = true, work-groups of
// local_size, grid-stride over `items`; Rotary elementwise), or kUnsupported with the
// reason its operands do not fit.
StatusOr<RenderedKernel> renderLlmKernel(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                         const KernelDialect& d);

}  // namespace gkrt::codegen
