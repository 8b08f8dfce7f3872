// Renders a fused cluster (or one elementwise or reduce op) as one kernel in a C-like
// dialect (backends/codegen/kernel_dialect.h): the OpenCL backend builds it now, the
// CUDA backend next.
//
// Three kernel shapes:
//  - elementwise/broadcast: one work-item per output element (grid-stride loop); every
//    op is a statement on registers, inputs are read through broadcast strides that are
//    compile-time constants, intermediates never touch memory.
//  - reduce (+ elementwise prologue and epilogue, "stitched"): every reduction of the
//    cluster reduces the same axes of the same shape S; one work-group per output row
//    walks the reduced elements, recomputing the prologue per element, combines in
//    registers then by a tree in local memory; values of reduced shape are then used by
//    the epilogue (row-wise) and by full-shape ops (broadcast back over the row).
//  - GEMM + epilogue (a MatMul/BatchMatMul cluster, `--enable_cluster_ops=MatMul`): a
//    tiled GEMM with A and B staged in local memory; the elementwise tail (bias, an
//    activation, a residual add) runs on each result in its register.
//
//   ASSIGN_OR_RETURN(RenderedKernel k, renderCluster(g, node, "gk0", openclDialect()));
//   // arguments: outputs (float*), the node's inputs (const float*), k.constants.
#pragma once

#include <string>
#include <vector>

#include "backends/codegen/kernel_dialect.h"
#include "runtime/ir/graph.h"

namespace gkrt::codegen {

struct RenderedKernel {
  std::string name;
  std::string source;           // the kernel function; needs the dialect's preamble first
  bool reduce = false;
  bool gemm = false;            // a MatMul/BatchMatMul with an elementwise epilogue
  int64_t items = 0;            // elementwise: output elements; reduce: rows (work-groups);
                                // gemm: work-groups (one per output tile)
  int64_t reduce_size = 0;      // reduce: elements combined per row
  int local_size = 0;           // reduce, gemm: work-group size
  // Arguments after the outputs and inputs: the cluster's non-scalar constants.
  std::vector<const ir::Tensor*> constants;
};

// Work-group size limit of the reduce kernels.
constexpr int kMaxReduceLocalSize = 256;
// Output tile edge of the GEMM kernels; their work-groups are kGemmTile^2.
constexpr int kGemmTile = 16;

// Renders `node` of `g` as kernel `name`; kUnsupported says what it cannot render.
StatusOr<RenderedKernel> renderCluster(const ir::Graph& g, const ir::Node& node, const std::string& name,
                                       const KernelDialect& d);

}  // namespace gkrt::codegen
