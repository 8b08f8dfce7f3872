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
// slot (an absent one as a float pointer).
std::string signature(const ir::Graph& g, const ir::Node& node, const std::string& name, const KernelDialect& d);
// kUnsupported unless every input and output of `node` is float32.
Status needFloat32(const ir::Graph& g, const ir::Node& node);
// A tree sum of `v` over the work-group of `local` items into red[0], read back as `out`.
std::string groupSum(const KernelDialect& d, int local, const std::string& v, const std::string& out);
// A kernel over rows of r.cols elements, one work-group a row (grid-stride over rows).
RenderedKernel rowKernel(const std::string& name, const ops::NormRows& r);
// Its body's opening: the reduction array `red`, `lid`, `prologue`, then the row loop
// with the row's offset `base`.
std::string rowLoopOpening(const KernelDialect& d, const RenderedKernel& k, const std::string& prologue = "");

}  // namespace gkrt::codegen
