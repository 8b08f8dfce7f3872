// Floating-point operations a kernel does per run, estimated from its node's shapes:
// for the roofline `gkrt bench --svg` draws (each kernel at its arithmetic intensity).
//
//   double f = kernelFlops(session->compiledGraph(), node);   // 2*M*N*K for a MatMul
//
// GEMMs, convolutions, attention and recurrent cells count their multiply-adds as two
// operations; every other op one per element of its largest input or output; a fused
// node is the sum of its subgraph's ops.
#pragma once

#include "runtime/ir/graph.h"

namespace gkrt::tools {

double kernelFlops(const ir::Graph& g, const ir::Node& n);

}  // namespace gkrt::tools
