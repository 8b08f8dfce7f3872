// Control-flow nodes (If, Loop, Scan) in a session: each subgraph becomes a child
// session for the same backend, options and fusion flags, created (fused, planned,
// compiled) once when the parent session is compiled, together with the node's working
// memory (ir::ControlFlowFrame: carried values, scan slices, the subgraph views); the
// kernel runs the children per branch taken or per iteration. Runs copy values between
// the parent's buffers and the children's inputs and outputs; nothing is compiled or
// allocated at run time.
//
//   if (!node.subgraphs.empty()) ASSIGN_OR_RETURN(kernel, compileControlFlowKernel(graph, node, child_options));
#pragma once

#include <memory>

#include "backends/backend.h"
#include "runtime/session.h"

namespace gkrt {

// `node` is a node of `graph`, whose tensor types size its working memory (its bytes
// go to `*buffer_bytes` when given); its subgraphs must have their input shapes
// inferred (the parent's inferShapes does it). The kernel reads and writes host
// memory: device sessions wrap it in a host fallback kernel (runtime/device_fallback.h).
StatusOr<std::unique_ptr<Kernel>> compileControlFlowKernel(const ir::Graph& graph, const ir::Node& node,
                                                           const SessionOptions& options,
                                                           size_t* buffer_bytes = nullptr);

}  // namespace gkrt
