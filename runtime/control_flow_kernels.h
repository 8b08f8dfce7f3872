// Control-flow nodes (If, Loop, Scan) in a session: each subgraph becomes a child
// session for the same backend, options and fusion flags, created (fused, planned,
// compiled) once when the parent session is compiled; the kernel runs them per branch
// taken or per iteration. Runs copy values between the parent's buffers and the
// children's inputs and outputs; nothing is compiled at run time.
//
//   if (!node.subgraphs.empty()) ASSIGN_OR_RETURN(kernel, compileControlFlowKernel(node, child_options));
#pragma once

#include <memory>

#include "backends/backend.h"
#include "runtime/session.h"

namespace gkrt {

// `node`'s subgraphs must have their input shapes inferred (the parent's inferShapes
// does it). The kernel reads and writes host memory: device sessions wrap it in a
// host fallback kernel (runtime/device_fallback.h).
StatusOr<std::unique_ptr<Kernel>> compileControlFlowKernel(const ir::Node& node, const SessionOptions& options);

}  // namespace gkrt
