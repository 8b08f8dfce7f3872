// Pieces the GPU pattern-kernel renderers share (pattern_kernels.cc, llm_kernels.cc):
// element C types, the kernel signature, work-group sums and the one-row-a-work-group
// kernel shape of the norms.
#pragma once

#include <string>

#include "backends/codegen/cluster_renderer.h"
#include "backends/codegen/kernel_dialect.h"
#include "backends/codegen/render_helpers.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::codegen {

// The C type of an element type the pattern kernels read or write (float otherwise).
std::string cType(DType t, const KernelDialect& d);
// The kernel's signature and opening brace: y0.. for the outputs, x0.. for every input
// slot (an absent one as a float pointer); const but for the slots in the bit mask
// `writable` (inputs the kernel updates in place).
std::string signature(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d,
                      uint32_t writable = 0);
// kUnsupported unless every input and output of `node` is float32.
Status needFloat32(const ir::Graph& g, const ir::Node& node);
// A tree sum of `v` over the work-group of `local` items into red[0], read back as `out`.
std::string groupSum(const KernelDialect& d, int local, const std::string& v, const std::string& out);
// The attention kernels' online softmax over one chunk of `lanes` keys, after each
// work-item stored its key's score `sc` at sm[sa + t]: the row maximum m (NaN wins),
// the sum l and the output columns acc[0..nv) rescaled, the chunk's probabilities at
// sm[pa + ..]; ends with a barrier.
std::string onlineSoftmaxChunk(const KernelDialect& d, int lanes, int nv);
// Then the probabilities of keys j0 + u < `bound` times their value rows into acc:
// `row_decl` (a statement per key u, may be empty) and `value` (the element e of key u).
std::string accumulateChunk(const KernelDialect& d, int lanes, int nv, int64_t dv, const std::string& bound,
                            const std::string& row_decl, const std::string& value);
// A kernel over rows of r.cols elements, one work-group a row (grid-stride over rows).
RenderedKernel rowKernel(const std::string& name, const ops::NormRows& r);
// Its body's opening: the reduction array `red`, `lid`, `prologue`, then the row loop
// with the row's offset `base`.
std::string rowLoopOpening(const KernelDialect& d, const RenderedKernel& k, const std::string& prologue = "");

}  // namespace gkrt::codegen
